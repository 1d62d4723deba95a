//! The writer: walks a [`Program`]'s uops in order and prints one WGSL statement per uop that
//! computes something (`let alu3 = ...;`), loops and branches as blocks, constants inline.
//!
//! Invariants of the output: every value is a `let` (or a `var` for accumulators and gated
//! loads) named by its role (`gidx0`/`lidx0`, `ridx0`, `acc0`, `val0`, `cast0`, `alu0`,
//! `lanes0` for a vector put together, `data0` for buffer slot 0), except a vector's lanes,
//! which are swizzles of its name (`val0.x`); names are unique and never shadow a builtin or
//! helper; the same program and caps always give the same text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use wgrad_codegen::{BufferArg, Program};
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{
    Arg, GroupOp, NUM_SUBGROUPS, Ops, SUBGROUP_BARRIER, SUBGROUP_ID, SUBGROUP_LANE, UOp, UOpMap, UOpSet,
    bitcast,
};

use crate::alu::Value;
use crate::helpers::{Helper, Helpers};
use crate::literal::literal;
use crate::memory::vector_type;
use crate::names::Namer;
use crate::types::{self, Reg, Storage};
use crate::{Binding, F16Rounding, RenderError, Wgsl, WgslCaps};

/// Renders `program` as a WGSL compute shader for an adapter with `caps`.
pub fn render(program: &Program, caps: &WgslCaps) -> Result<Wgsl, RenderError> {
    let launch = Launch::new(program, caps)?;
    let mut w = Writer::new(program, caps, launch.flatten);
    for (index, u) in program.uops.iter().enumerate() {
        w.uop(index, u)?;
    }
    Ok(w.finish(launch))
}

/// The dispatch shape of a program.
struct Launch {
    workgroups: [u32; 3],
    workgroup_size: [u32; 3],
    /// Whether the grid is dispatched as `[total, 1, 1]` and unflattened in the shader.
    flatten: bool,
}

impl Launch {
    fn new(program: &Program, caps: &WgslCaps) -> Result<Launch, RenderError> {
        let too_large = |what, size| RenderError::Launch { what, size };
        let dims = |size: [usize; 3], what| -> Result<[u32; 3], RenderError> {
            let mut out = [0u32; 3];
            for (o, &s) in out.iter_mut().zip(&size) {
                *o = u32::try_from(s).map_err(|_| too_large(what, size))?;
            }
            Ok(out)
        };
        let global = dims(program.global_size, "global size")?;
        let workgroup_size = dims(program.local_size, "local size")?;
        let flatten = global.iter().any(|&g| g > caps.max_workgroups_per_dim);
        let workgroups = if flatten {
            let total = global.iter().try_fold(1u32, |acc, &g| acc.checked_mul(g));
            [total.ok_or_else(|| too_large("global size", program.global_size))?, 1, 1]
        } else {
            global
        };
        Ok(Launch { workgroups, workgroup_size, flatten })
    }
}

/// The state of rendering one program.
pub(crate) struct Writer<'a> {
    pub(crate) caps: &'a WgslCaps,
    program: &'a Program,
    /// The expression of every rendered uop: its name, or a literal for constants.
    names: UOpMap<String>,
    /// The value of every uop known when rendering (constants, and ops folded on them): WGSL
    /// evaluates `let`s of constants at compile time and rejects overflow and division by
    /// zero there, so known values are folded with `exec_alu` and inlined as literals.
    known: UOpMap<ConstValue>,
    namer: Namer,
    pub(crate) helpers: Helpers,
    /// Module-scope declarations after the buffers (workgroup memories).
    pub(crate) module: Vec<String>,
    /// The body of the entry point, one statement per line.
    body: Vec<String>,
    depth: usize,
    /// Builtins the entry point takes (names from [`BUILTINS`]).
    builtins: BTreeSet<&'static str>,
    /// Buffer slots the body reads or writes.
    pub(crate) touched: BTreeSet<usize>,
    /// Whether any value or buffer is native f16 (`enable f16;`).
    pub(crate) uses_f16: bool,
    /// Whether the kernel uses cooperative matrices (`enable wgpu_cooperative_matrix;`).
    pub(crate) uses_coop: bool,
    flatten: bool,
    /// The lanes of one array element of each buffer slot declared as vectors.
    widths: BTreeMap<usize, u32>,
    /// The lanes of one array element of each workgroup array declared as vectors.
    local_widths: UOpMap<u32>,
    /// The uops whose every use stores them (or a vector of them) into a storage buffer.
    stored: UOpSet,
    /// The comparisons that choose between their own operands (see [`choosing_between_operands`]).
    pub(crate) min_max: UOpSet,
    /// The uops computed from a load, directly or through others (see [`reading_loads`]).
    pub(crate) from_loads: UOpSet,
    /// Whether the uop being rendered may convert to f16 natively (see [`F16Rounding`]).
    pub(crate) native_f16: bool,
}

impl<'a> Writer<'a> {
    fn new(program: &'a Program, caps: &'a WgslCaps, flatten: bool) -> Writer<'a> {
        Writer {
            caps,
            program,
            names: UOpMap::default(),
            known: UOpMap::default(),
            namer: Namer::new(program.buffers.iter().map(|b| format!("data{}", b.slot))),
            helpers: Helpers::default(),
            module: Vec::new(),
            body: Vec::new(),
            depth: 0,
            builtins: BTreeSet::new(),
            touched: BTreeSet::new(),
            uses_f16: false,
            uses_coop: false,
            flatten,
            widths: vector_buffers(program, caps),
            local_widths: vector_locals(program, caps),
            stored: match caps.f16_rounding {
                F16Rounding::Stores => only_stored(program),
                F16Rounding::Native | F16Rounding::Software => UOpSet::default(),
            },
            native_f16: false,
            min_max: choosing_between_operands(program),
            from_loads: reading_loads(program),
        }
    }

    /// The lanes of one element of buffer `slot`'s array: 1, or `W` for `array<vecW<T>>`.
    pub(crate) fn buffer_width(&self, slot: usize) -> u32 {
        self.widths.get(&slot).copied().unwrap_or(1)
    }

    /// The lanes of one element of the workgroup array `local`: 1, or `W` for `array<vecW<T>>`.
    pub(crate) fn local_width(&self, local: &UOp) -> u32 {
        self.local_widths.get(local).copied().unwrap_or(1)
    }

    /// The register type of a dtype already checked (void, which holds no value, reads as bool).
    pub(crate) fn reg(&self, dtype: DType) -> Reg {
        types::reg(dtype, self.caps).unwrap_or(Reg::Bool)
    }

    /// The expression of source `i` of `u` (uop `index`).
    pub(crate) fn src(&self, index: usize, u: &UOp, i: usize) -> Result<String, RenderError> {
        self.name_of(index, u, u.src().get(i))
    }

    /// The expression of `v`, a uop that `u` (uop `index`) reads directly or through its
    /// sources (an error when it has none yet, or `v` is none).
    pub(crate) fn name_of(&self, index: usize, u: &UOp, v: Option<&UOp>) -> Result<String, RenderError> {
        let order = RenderError::UnsupportedOp { index, op: u.op(), reason: "a source comes after its user" };
        v.and_then(|v| self.names.get(v)).cloned().ok_or(order)
    }

    /// Emits one statement at the current depth.
    pub(crate) fn line(&mut self, text: impl AsRef<str>) {
        self.body.push(format!("{:width$}{}", "", text.as_ref(), width = 2 * (self.depth + 1)));
    }

    /// Binds `u` to a fresh `let {prefix}N = expr;`.
    pub(crate) fn bind(&mut self, u: &UOp, prefix: &str, expr: String) {
        let name = self.namer.fresh(prefix);
        self.line(format!("let {name} = {expr};"));
        self.names.insert(u.clone(), name);
    }

    /// The value of `u` when it is known at render time.
    pub(crate) fn known(&self, u: &UOp) -> Option<ConstValue> {
        self.known.get(u).copied()
    }

    /// Names `u` with the literal of its known `value`.
    fn fold(&mut self, u: &UOp, value: ConstValue) {
        let text = literal(value, self.reg(u.dtype()));
        self.known.insert(u.clone(), value);
        self.name(u, text);
    }

    /// Names `u` without emitting anything.
    pub(crate) fn name(&mut self, u: &UOp, expr: String) {
        self.names.insert(u.clone(), expr);
    }

    /// A legal, unique identifier made from `wanted`.
    pub(crate) fn claim(&mut self, wanted: &str) -> String {
        self.namer.claim(wanted)
    }

    /// The program's buffer argument of `slot`.
    pub(crate) fn program_buffer(&self, slot: usize) -> Option<&BufferArg> {
        self.program.buffers.iter().find(|b| b.slot == slot)
    }

    /// A fresh name with `prefix` (for `var`s the caller declares).
    pub(crate) fn fresh(&mut self, prefix: &str) -> String {
        self.namer.fresh(prefix)
    }

    fn uop(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let unsupported = |reason| RenderError::UnsupportedOp { index, op: u.op(), reason };
        types::check(u.dtype(), self.caps)?;
        if self.coop(index, u)? {
            return Ok(());
        }
        let vector_op = matches!(
            u.op(),
            Ops::Load | Ops::Vectorize | Ops::Gep | Ops::Index | Ops::DefineAcc | Ops::Assign
        );
        if u.dtype().count() > 1 && !vector_op {
            return Err(unsupported(
                "vectors are only loaded, stored, held in registers and taken apart: lanes compute as scalars",
            ));
        }
        if u.dtype().count() > 4 {
            return Err(unsupported("WGSL vectors have at most 4 lanes"));
        }
        self.uses_f16 |= self.reg(u.dtype().base()) == Reg::F16;
        self.native_f16 = match self.caps.f16_rounding {
            F16Rounding::Native => true,
            F16Rounding::Stores => self.stored.contains(u),
            F16Rounding::Software => false,
        };
        match u.op() {
            Ops::Const => {
                let value = u.arg().as_const().ok_or(unsupported("a constant without a value"))?;
                self.fold(u, value);
            }
            Ops::DefineGlobal => {
                let slot = u.arg().as_int().ok_or(unsupported("a buffer without a slot"))?;
                self.name(u, format!("data{slot}"));
            }
            Ops::DefineLocal => self.define_local(index, u)?,
            Ops::DefineVar => {
                let Arg::Var(v) = u.arg() else { return Err(unsupported("a variable without a name")) };
                let at = self.program.vars.iter().position(|p| p == v).ok_or(unsupported("unlisted var"))?;
                let name = self.namer.claim(v.name());
                let value = match self.reg(u.dtype()) {
                    Reg::I32 => format!("vars[{at}]"),
                    r => format!("{}(vars[{at}])", r.name()),
                };
                self.line(format!("let {name} = {value};"));
                self.name(u, name);
            }
            Ops::Special => self.special(index, u)?,
            Ops::Range => {
                let name = self.namer.fresh("ridx");
                let (ty, end) = (self.reg(u.dtype()), self.src(index, u, 0)?);
                let zero = literal(0.into(), ty);
                self.line(format!("for (var {name}: {} = {zero}; {name} < {end}; {name}++) {{", ty.name()));
                self.depth += 1;
                self.name(u, name);
            }
            Ops::If => {
                let cond = self.src(index, u, 0)?;
                self.line(format!("if ({cond}) {{"));
                self.depth += 1;
            }
            Ops::EndRange | Ops::EndIf => {
                self.depth = self.depth.checked_sub(1).ok_or(unsupported("closes no block"))?;
                self.line("}");
            }
            Ops::DefineAcc => {
                let name = self.namer.fresh("acc");
                let init = self.src(index, u, 0)?;
                self.line(format!(
                    "var {name}: {} = {init};",
                    vector_type(self.reg(u.dtype()), u.dtype().count())
                ));
                self.name(u, name);
            }
            Ops::Assign => {
                let (acc, value) = (self.src(index, u, 0)?, self.src(index, u, 1)?);
                self.line(format!("{acc} = {value};"));
                self.name(u, acc);
            }
            Ops::Load => self.load(index, u)?,
            Ops::Store => self.store(index, u)?,
            Ops::Barrier => {
                let subgroup = matches!(u.arg(), Arg::Str(s) if &**s == SUBGROUP_BARRIER);
                self.line(match subgroup && self.caps.subgroup_barrier {
                    true => "subgroupBarrier();",
                    false => "workgroupBarrier();",
                });
            }
            Ops::SubgroupReduce => self.subgroup_reduce(index, u)?,
            Ops::Vectorize => {
                let lanes =
                    (0..u.src().len()).map(|i| self.src(index, u, i)).collect::<Result<Vec<_>, _>>()?;
                let ty = vector_type(self.reg(u.dtype()), u.dtype().count());
                self.bind(u, "lanes", format!("{ty}({})", lanes.join(", ")));
            }
            Ops::Gep => {
                let Arg::Ints(lanes) = u.arg() else { return Err(unsupported("a Gep without lanes")) };
                let xyzw = lanes.iter().map(|&l| usize::try_from(l).ok().and_then(|l| "xyzw".get(l..=l)));
                let swizzle =
                    xyzw.collect::<Option<String>>().ok_or(unsupported("a lane past the vector"))?;
                let vector = self.src(index, u, 0)?;
                self.name(u, format!("{vector}.{swizzle}"));
            }
            Ops::Index | Ops::Sink | Ops::Noop => {}
            Ops::Cast | Ops::Bitcast => {
                let x = self.src(index, u, 0)?;
                let (from, to) = (u.src()[0].dtype(), u.dtype());
                match self.known(&u.src()[0]) {
                    Some(c) if u.op() == Ops::Cast => self.fold(u, c.cast(to)),
                    Some(c) => self.fold(u, bitcast(c, from, to)),
                    None => {
                        let expr = if u.op() == Ops::Cast {
                            self.cast(&x, from, to)
                        } else {
                            self.bitcast(&x, from, to)
                        };
                        self.bind(u, "cast", expr);
                    }
                }
            }
            op if GroupOp::ALU.contains(op) => match self.alu(index, u)? {
                Value::Known(value) => self.fold(u, value),
                Value::Expr(expr) => self.bind(u, "alu", expr),
            },
            _ => return Err(unsupported("not an op of a linear program")),
        }
        Ok(())
    }

    /// `subgroupAdd`/`subgroupMul`/`subgroupMax` of a 32-bit value (f32 max through
    /// [`Helper::SubgroupMaxNan`], which keeps NaN).
    fn subgroup_reduce(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        self.need_subgroups(index, u)?;
        let x = self.src(index, u, 0)?;
        let reg = self.reg(u.dtype());
        let call = match (u.arg(), reg) {
            (_, r) if !matches!(r, Reg::F32 | Reg::I32 | Reg::U32) || u.dtype().count() != 1 => None,
            (Arg::Op(Ops::Max), Reg::F32) => Some(self.helpers.call(Helper::SubgroupMaxNan)),
            (Arg::Op(Ops::Max), _) => Some("subgroupMax".into()),
            (Arg::Op(Ops::Add), _) => Some("subgroupAdd".into()),
            (Arg::Op(Ops::Mul), _) => Some("subgroupMul".into()),
            _ => None,
        };
        let reason = "not an Add, Max or Mul of one 32-bit value";
        let call = call.ok_or(RenderError::UnsupportedOp { index, op: u.op(), reason })?;
        self.bind(u, "sub", format!("{call}({x})"));
        Ok(())
    }

    /// Refuses `u` unless the adapter has subgroups.
    fn need_subgroups(&self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let reason = "subgroup operations need the adapter's SUBGROUP feature";
        if self.caps.subgroups {
            Ok(())
        } else {
            Err(RenderError::UnsupportedOp { index, op: u.op(), reason })
        }
    }

    /// `gidxN`/`lidxN` from the workgroup and invocation ids (or the flattened grid), and the
    /// subgroup builtins.
    fn special(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let bad = RenderError::UnsupportedOp { index, op: u.op(), reason: "not gidx0..2 or lidx0..2" };
        let Arg::Special(name, _) = u.arg() else { return Err(bad) };
        let builtin = match &**name {
            SUBGROUP_ID => Some("sg_id"),
            SUBGROUP_LANE => Some("sg_lane"),
            NUM_SUBGROUPS => Some("n_sg"),
            _ => None,
        };
        if let Some(builtin) = builtin {
            self.need_subgroups(index, u)?;
            self.builtins.insert(builtin);
            let name = self.namer.claim(name);
            self.line(format!("let {name} = i32({builtin});"));
            self.name(u, name);
            return Ok(());
        }
        let (global, dim) = match (name.strip_prefix("gidx"), name.strip_prefix("lidx")) {
            (Some(d), _) => (true, d),
            (_, Some(d)) => (false, d),
            _ => return Err(bad),
        };
        let dim: usize = dim.parse().ok().filter(|&d| d < 3).ok_or(bad)?;
        let axis = ["x", "y", "z"][dim];
        let value = if !global {
            self.builtins.insert("lid");
            format!("i32(lid.{axis})")
        } else if self.flatten {
            let [x, y, _] = self.program.global_size;
            match dim {
                0 => format!("i32(lin % {x}u)"),
                1 => format!("i32((lin / {x}u) % {y}u)"),
                _ => format!("i32(lin / {}u)", x * y),
            }
        } else if self.program.reversed {
            self.builtins.insert("wid");
            format!("{} - i32(wid.{axis})", self.program.global_size[dim] - 1)
        } else {
            self.builtins.insert("wid");
            format!("i32(wid.{axis})")
        };
        let name = self.namer.claim(name);
        self.line(format!("let {name} = {value};"));
        self.name(u, name);
        Ok(())
    }

    /// The whole shader.
    fn finish(mut self, launch: Launch) -> Wgsl {
        let mut head = String::new();
        if self.uses_f16 {
            head.push_str("enable f16;\n");
        }
        if self.uses_coop {
            head.push_str(crate::COOPERATIVE_MATRIX_ENABLE);
            head.push('\n');
        }
        if self.uses_f16 || self.uses_coop {
            head.push('\n');
        }
        let mut bindings = Vec::new();
        for (binding, arg) in (0u32..).zip(&self.program.buffers) {
            let decl = self.buffer_decl(arg);
            // writing to a String cannot fail
            let _ = writeln!(head, "@group(0) @binding({binding}) {decl}");
            bindings.push(Binding { slot: arg.slot, binding, writable: arg.writable });
        }
        let vars_binding = (!self.program.vars.is_empty()).then_some(bindings.len() as u32);
        if let Some(b) = vars_binding {
            let _ = writeln!(head, "@group(0) @binding({b}) var<storage, read> vars: array<i32>;");
        }
        for decl in &self.module {
            let _ = writeln!(head, "{decl}");
        }
        let entry = self.namer.claim(&self.program.name);
        let mut prelude = Vec::new();
        // every binding must be used, or the pipeline's derived layout leaves it out
        for arg in &self.program.buffers {
            if !self.touched.contains(&arg.slot) {
                prelude.push(format!("  _ = &data{};", arg.slot));
            }
        }
        if launch.flatten {
            self.builtins.extend(["wid", "nwg"]);
            let total = launch.workgroups[0];
            let order = if self.program.reversed { "at" } else { "lin" };
            prelude.push(format!("  let {order} = wid.x + nwg.x * (wid.y + nwg.y * wid.z);"));
            prelude.push(format!("  if ({order} >= {total}u) {{ return; }}"));
            if self.program.reversed {
                prelude.push(format!("  let lin = {}u - at;", total - 1));
            }
        }
        let params: Vec<&str> = BUILTINS
            .iter()
            .filter(|(name, _)| self.builtins.contains(name))
            .map(|(_, param)| *param)
            .collect();
        let [lx, ly, lz] = launch.workgroup_size;
        let source = format!(
            "{head}\n{helpers}@compute @workgroup_size({lx}, {ly}, {lz})\nfn {entry}({params}) {{\n{body}}}\n",
            helpers = self.helpers.render(),
            params = params.join(", "),
            body = prelude.iter().chain(&self.body).map(|l| format!("{l}\n")).collect::<String>(),
        );
        Wgsl {
            source,
            entry,
            workgroups: launch.workgroups,
            workgroup_size: launch.workgroup_size,
            bindings,
            vars_binding,
        }
    }
}

/// The buffers worth declaring as arrays of vectors: every access of the kernel to them is at
/// least 2 lanes wide (the narrowest decides, and must be 2 or 4), and their storage is plain
/// 32-bit or native f16 elements.
fn vector_buffers(program: &Program, caps: &WgslCaps) -> BTreeMap<usize, u32> {
    let mut narrowest: BTreeMap<usize, u32> = BTreeMap::new();
    // a tile access reads or writes single elements
    let accesses = program
        .uops
        .iter()
        .filter(|u| matches!(u.op(), Ops::Load | Ops::Store | Ops::CoopLoad | Ops::CoopStore));
    for ptr in accesses.filter_map(|u| u.src().first()).filter(|p| p.op() == Ops::Index) {
        let buf = &ptr.src()[0];
        let Some(slot) = buf.arg().as_int().and_then(|s| usize::try_from(s).ok()) else { continue };
        if buf.op() == Ops::DefineGlobal {
            let w = narrowest.entry(slot).or_insert(u32::MAX);
            *w = (*w).min(ptr.dtype().count());
        }
    }
    let plain = |slot: &usize| {
        let arg = program.buffers.iter().find(|b| b.slot == *slot);
        let storage = arg.and_then(|b| types::storage(b.dtype, caps));
        matches!(storage, Some(Storage::Native(Reg::F32 | Reg::I32 | Reg::U32 | Reg::F16)))
    };
    // vec3 arrays have a 16-byte stride: only pairs and quads match the buffer's layout
    narrowest.retain(|slot, w| matches!(*w, 2 | 4) && plain(slot));
    narrowest
}

/// The uops of `program` whose every use is a store of them into a storage buffer (as its
/// value), or a vector of lanes that is: a native `f16(x)` there reaches memory as it
/// rounded, with nothing in between that a compiler could fold.
fn only_stored(program: &Program) -> UOpSet {
    let mut users: UOpMap<Vec<&UOp>> = UOpMap::default();
    for u in &program.uops {
        for s in u.src() {
            users.entry(s.clone()).or_default().push(u);
        }
    }
    let into_global = |store: &UOp| {
        store
            .src()
            .first()
            .filter(|p| p.op() == Ops::Index)
            .is_some_and(|p| p.src()[0].op() == Ops::DefineGlobal)
    };
    let mut stored = UOpSet::default();
    for u in program.uops.iter().rev() {
        let stores = |v: &&UOp| match v.op() {
            Ops::Store => {
                into_global(v)
                    && v.src().last() == Some(u)
                    && v.src()[..v.src().len() - 1].iter().all(|s| s != u)
            }
            Ops::Vectorize => stored.contains(*v),
            _ => false,
        };
        if users.get(u).is_some_and(|vs| vs.iter().all(stores)) {
            stored.insert(u.clone());
        }
    }
    stored
}

/// The comparisons of `program` that a `Where` reads to choose between the two values compared
/// (`select(b, a, a < b)`, through casts): a min or a max, which a device compiler may turn into
/// its NaN-ignoring builtin (NVIDIA's does) unless the comparison checks for NaN itself.
fn choosing_between_operands(program: &Program) -> UOpSet {
    let uncast = |u: &UOp| {
        let mut u = u.clone();
        while u.op() == Ops::Cast {
            u = u.src()[0].clone();
        }
        u
    };
    program
        .uops
        .iter()
        .filter(|w| w.op() == Ops::Where && w.src()[0].op() == Ops::CmpLt)
        .filter(|w| {
            let compared: Vec<UOp> = w.src()[0].src().iter().map(uncast).collect();
            w.src()[1..].iter().all(|v| compared.contains(&uncast(v)))
        })
        .map(|w| w.src()[0].clone())
        .collect()
}

/// The uops of `program` that are loads or read one through their sources, in one pass over
/// its order (a source comes before its users).
fn reading_loads(program: &Program) -> UOpSet {
    let mut from_loads = UOpSet::default();
    for u in &program.uops {
        if u.op() == Ops::Load || u.src().iter().any(|s| from_loads.contains(s)) {
            from_loads.insert(u.clone());
        }
    }
    from_loads
}

/// The workgroup arrays worth declaring as arrays of vectors: the widest access to them is 2 or
/// 4 lanes and divides their size, no cooperative-matrix access reads or writes them, and their
/// elements are plain 32-bit or native f16 registers. Narrower accesses go to vector components.
fn vector_locals(program: &Program, caps: &WgslCaps) -> UOpMap<u32> {
    let mut widest: UOpMap<u32> = UOpMap::default();
    let mut refused = vec![];
    for u in &program.uops {
        let Some(ptr) = u.src().first().filter(|p| p.op() == Ops::Index) else { continue };
        let buf = &ptr.src()[0];
        if buf.op() != Ops::DefineLocal {
            continue;
        }
        match u.op() {
            Ops::Load | Ops::Store => {
                let w = widest.entry(buf.clone()).or_insert(1);
                *w = (*w).max(ptr.dtype().count());
            }
            _ => refused.push(buf.clone()),
        }
    }
    let plain = |buf: &UOp| {
        matches!(types::reg(buf.dtype().base(), caps), Some(Reg::F32 | Reg::I32 | Reg::U32 | Reg::F16))
    };
    let size = |buf: &UOp| buf.dtype().ptr_size().unwrap_or(0);
    widest.retain(|buf, w| {
        matches!(*w, 2 | 4) && size(buf) % *w as usize == 0 && plain(buf) && !refused.contains(buf)
    });
    widest
}

/// The entry point's builtin parameters, in order: name and declaration.
const BUILTINS: [(&str, &str); 6] = [
    ("wid", "@builtin(workgroup_id) wid: vec3<u32>"),
    ("lid", "@builtin(local_invocation_id) lid: vec3<u32>"),
    ("nwg", "@builtin(num_workgroups) nwg: vec3<u32>"),
    ("sg_id", "@builtin(subgroup_id) sg_id: u32"),
    ("sg_lane", "@builtin(subgroup_invocation_id) sg_lane: u32"),
    ("n_sg", "@builtin(num_subgroups) n_sg: u32"),
];
