//! Buffers and workgroup memory: declarations, loads and stores, with 8- and 16-bit elements
//! packed into `u32` words (see [`crate::types`]).
//!
//! A gated load touches no memory when its gate is false (the index may be out of bounds): it
//! becomes `var valN = 0; if (gate) { valN = ...; }`. A gated store becomes `if (gate) { ... }`.
//!
//! Vector accesses (an `Index` of `T.vec(w).ptr()`, its index counting vectors of `w`): WGSL
//! has no pointer casts, so a buffer is declared `array<vecW<T>>` when every access of the
//! kernel to it is `W` or more lanes wide (`W` the narrowest; plain 32-bit and native f16
//! elements only), and an access of `w > W` lanes is put together from `w / W` array elements.
//! A packed buffer is always scalar words: its vector accesses go lane by lane, and a load of
//! one whole word (four 8-bit lanes, indexed by words) reads that word for every lane. Workgroup
//! arrays are declared `array<vecW<T>, n / W>` when their widest access is `W` (2 or 4) lanes
//! and no cooperative-matrix access uses them; narrower accesses go to `[i >> s][i & (W - 1)]`.
//! Booleans in workgroup memory are `u32` words (0 or 1): an `array<bool, n>` in workgroup
//! memory invented values on NVIDIA's Vulkan driver (H200, fuzz seeds 144671 and 148557: a
//! grouped `any` read `true` where every value was `false`).
//! A store into a packed buffer clears its lane with `atomicAnd` and sets it with `atomicOr`,
//! so threads writing neighbouring elements of one word never race.

use wgrad_codegen::BufferArg;
use wgrad_dtype::{AddrSpace, ConstValue, DType};
use wgrad_ops::{Ops, UOp};

use crate::RenderError;
use crate::helpers::Helper;
use crate::literal::literal;
use crate::types::{Reg, Storage, storage};
use crate::writer::Writer;

/// Where an access goes.
enum Place {
    /// A buffer argument: its name, element dtype, whether it is atomic words, and the lanes
    /// of one array element (`array<vecW<T>>` when `width > 1`).
    Global { name: String, dtype: DType, atomic: bool, width: u32 },
    /// Workgroup memory: its name, the lanes of one array element (`array<vecW<T>>` when
    /// `width > 1`; a narrower access goes to components), and whether it holds booleans as
    /// `u32` words.
    Local { name: String, width: u32, boolean: bool },
}

/// One load or store: where, the index (counting accesses of `lanes` elements), the gate.
struct Access {
    place: Place,
    idx: String,
    /// The index when it is a known constant.
    known: Option<i128>,
    gate: Option<String>,
    lanes: u32,
}

impl Access {
    /// The index of element (or array element of `width` lanes) `part` of this access, when
    /// it is split into `parts`.
    fn part(&self, parts: u32, part: u32) -> String {
        match (parts, self.known) {
            (1, _) => self.idx.clone(),
            (_, Some(c)) => (c * i128::from(parts) + i128::from(part)).to_string(),
            (_, None) if part == 0 => format!("({} * {parts})", self.idx),
            (_, None) => format!("({} * {parts} + {part})", self.idx),
        }
    }
}

/// The swizzle of lanes `from..from + n` of a vector (`.x`, `.zw`).
fn swizzle(from: u32, n: u32) -> String {
    "xyzw".chars().skip(from as usize).take(n as usize).collect()
}

impl Writer<'_> {
    /// The declaration of a buffer argument (after its `@group(0) @binding(n)`).
    pub(crate) fn buffer_decl(&self, arg: &BufferArg) -> String {
        let access = if arg.writable { "read_write" } else { "read" };
        let element = match storage(arg.dtype, self.caps) {
            Some(Storage::Native(reg)) => vector_type(reg, self.buffer_width(arg.slot)),
            _ if arg.writable => "atomic<u32>".into(),
            _ => "u32".into(),
        };
        format!("var<storage, {access}> data{}: array<{element}>;", arg.slot)
    }

    /// `var<workgroup> name: array<T, n>;` for a `DefineLocal`.
    pub(crate) fn define_local(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let bad = RenderError::UnsupportedOp { index, op: u.op(), reason: "workgroup memory needs a size" };
        let size = u.dtype().ptr_size().filter(|_| u.dtype().addr_space() == Some(AddrSpace::Local));
        let size = size.ok_or(bad)?;
        let name = self.claim(&u.arg().to_string().replace('"', ""));
        let width = self.local_width(u);
        let reg = match self.reg(u.dtype().base()) {
            Reg::Bool => Reg::U32,
            reg => reg,
        };
        let ty = vector_type(reg, width);
        self.module.push(format!("var<workgroup> {name}: array<{ty}, {}>;", size / width as usize));
        self.name(u, name);
        Ok(())
    }

    /// The buffer, index and gate of the `Index` a load or store goes through. A gated access
    /// with a constant index outside the memory (only reached when the gate is false) indexes
    /// element 0 instead, as WGSL rejects constant out-of-bounds indices.
    fn access(&mut self, index: usize, u: &UOp) -> Result<Access, RenderError> {
        let bad = |reason| RenderError::UnsupportedOp { index, op: u.op(), reason };
        let ptr = &u.src()[0];
        if ptr.op() != Ops::Index {
            return Err(bad("loads and stores go through an Index"));
        }
        let buf = &ptr.src()[0];
        let lanes = ptr.dtype().count();
        let name = self.src(index, ptr, 0)?;
        let gate = if ptr.src().len() > 2 { Some(self.src(index, ptr, 2)?) } else { None };
        let size = buf.dtype().ptr_size().and_then(|n| i128::try_from(n).ok()).unwrap_or(i128::MAX);
        let known =
            self.known(&ptr.src()[1]).filter(|c| !matches!(c, ConstValue::Float(_))).map(ConstValue::to_i128);
        let outside = |c: i128| c < 0 || c.saturating_add(1).saturating_mul(i128::from(lanes)) > size;
        let (idx, known) = match known {
            Some(c) if outside(c) && gate.is_some() => ("0".to_string(), Some(0)),
            Some(c) if outside(c) => return Err(bad("a constant index outside the memory")),
            _ => (self.src(index, ptr, 1)?, known),
        };
        let place = match buf.op() {
            Ops::DefineGlobal => {
                let slot = buf.arg().as_int().and_then(|s| usize::try_from(s).ok()).ok_or(bad("bad slot"))?;
                let arg =
                    self.program_buffer(slot).cloned().ok_or(bad("a buffer missing from the program"))?;
                self.touched.insert(slot);
                let packed = matches!(storage(arg.dtype, self.caps), Some(Storage::Packed { .. }));
                let width = self.buffer_width(slot);
                if !lanes.is_multiple_of(width) {
                    return Err(bad("an access narrower than the buffer's vectors"));
                }
                Place::Global { name, dtype: arg.dtype, atomic: packed && arg.writable, width }
            }
            Ops::DefineLocal => Place::Local {
                name,
                width: self.local_width(buf),
                boolean: buf.dtype().base() == DType::BOOL,
            },
            _ => return Err(bad("loads and stores go to a buffer or workgroup memory")),
        };
        Ok(Access { place, idx, known, gate, lanes })
    }

    /// `let valN = buf[idx];`, or the gated form; a vector wider than the buffer's elements is
    /// put together from them.
    pub(crate) fn load(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let a = self.access(index, u)?;
        let ty = vector_type(self.reg(u.dtype()), a.lanes);
        let value = match &a.place {
            Place::Local { name, width, boolean } if a.lanes == *width => {
                from_word(&format!("{name}[{}]", a.idx), a.lanes, *boolean)
            }
            Place::Local { name, width, boolean } => gather(&ty, a.lanes, |k| {
                from_word(&local_element(name, *width, &a.part(a.lanes, k)), 1, *boolean)
            }),
            Place::Global { name, dtype, atomic, width } => match storage(*dtype, self.caps) {
                Some(Storage::Packed { bits }) => {
                    let get = self.helpers.call(Helper::GetLane { bits });
                    // a vector of one whole word indexes words: every lane reads that word
                    let whole = a.lanes * bits == 32;
                    let lanes: Vec<String> = (0..a.lanes)
                        .map(|k| {
                            let (word, at) = match whole {
                                true => (format!("{name}[{}]", a.idx), k.to_string()),
                                false => {
                                    let at = a.part(a.lanes, k);
                                    (word(name, &at, bits), at)
                                }
                            };
                            let word = if *atomic { format!("atomicLoad(&{word})") } else { word };
                            self.value_from_bits(*dtype, &format!("{get}({word}, {at})"))
                        })
                        .collect();
                    gather(&ty, a.lanes, |k| lanes[k as usize].clone())
                }
                _ => {
                    let parts = a.lanes / width;
                    gather(&ty, parts, |k| format!("{name}[{}]", a.part(parts, k)))
                }
            },
        };
        match a.gate {
            None => self.bind(u, "val", value),
            Some(gate) => {
                let name = self.fresh("val");
                let zero =
                    if a.lanes > 1 { format!("{ty}()") } else { literal(0.into(), self.reg(u.dtype())) };
                self.line(format!("var {name} = {zero};"));
                self.line(format!("if ({gate}) {{ {name} = {value}; }}"));
                self.name(u, name);
            }
        }
        Ok(())
    }

    /// The statements of a store, gated when its index is; a vector wider than the buffer's
    /// elements is stored piece by piece.
    pub(crate) fn store(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let a = self.access(index, u)?;
        let value = self.src(index, u, u.src().len() - 1)?;
        let lane =
            |k: u32, n: u32| if a.lanes == 1 { value.clone() } else { format!("{value}.{}", swizzle(k, n)) };
        let statements = match &a.place {
            Place::Local { name, width, boolean } if a.lanes == *width => {
                vec![format!("{name}[{}] = {};", a.idx, to_word(&value, a.lanes, *boolean))]
            }
            Place::Local { name, width, boolean } => (0..a.lanes)
                .map(|k| {
                    let element = local_element(name, *width, &a.part(a.lanes, k));
                    format!("{element} = {};", to_word(&lane(k, 1), 1, *boolean))
                })
                .collect(),
            Place::Global { name, dtype, atomic, width } => match storage(*dtype, self.caps) {
                Some(Storage::Packed { bits }) if *atomic => {
                    let keep = self.helpers.call(Helper::KeepLane { bits });
                    let put = self.helpers.call(Helper::PutLane { bits });
                    let mut statements = vec![];
                    for k in 0..a.lanes {
                        let at = a.part(a.lanes, k);
                        let word = format!("&{}", word(name, &at, bits));
                        let value_bits = self.bits_of(*dtype, &lane(k, 1));
                        statements.push(format!("atomicAnd({word}, {keep}({at}));"));
                        statements.push(format!("atomicOr({word}, {put}({value_bits}, {at}));"));
                    }
                    statements
                }
                Some(Storage::Packed { .. }) => {
                    let reason = "a store into a buffer the program does not mark writable";
                    return Err(RenderError::UnsupportedOp { index, op: u.op(), reason });
                }
                _ if a.lanes == *width => vec![format!("{name}[{}] = {value};", a.idx)],
                _ => {
                    let parts = a.lanes / width;
                    (0..parts)
                        .map(|k| format!("{name}[{}] = {};", a.part(parts, k), lane(k * width, *width)))
                        .collect()
                }
            },
        };
        match a.gate {
            None => statements.into_iter().for_each(|s| self.line(s)),
            Some(gate) if statements.len() == 1 => self.line(format!("if ({gate}) {{ {} }}", statements[0])),
            Some(gate) => {
                self.line(format!("if ({gate}) {{"));
                statements.into_iter().for_each(|s| self.line(format!("  {s}")));
                self.line("}");
            }
        }
        Ok(())
    }
}

/// `T` for one lane, `vecN<T>` for more.
pub(crate) fn vector_type(reg: Reg, lanes: u32) -> String {
    if lanes == 1 { reg.name().to_string() } else { format!("vec{lanes}<{}>", reg.name()) }
}

/// A value of type `ty` put together from `parts` expressions (the expression itself for one).
fn gather(ty: &str, parts: u32, part: impl Fn(u32) -> String) -> String {
    if parts == 1 {
        return part(0);
    }
    format!("{ty}({})", (0..parts).map(part).collect::<Vec<_>>().join(", "))
}

/// A value of `lanes` lanes as stored in workgroup memory: booleans as `u32` words.
fn to_word(value: &str, lanes: u32, boolean: bool) -> String {
    match (boolean, lanes) {
        (false, _) => value.to_string(),
        (true, 1) => format!("select(0u, 1u, {value})"),
        (true, n) => format!("select(vec{n}<u32>(), vec{n}<u32>(1u), {value})"),
    }
}

/// A value of `lanes` lanes read from workgroup memory: booleans from `u32` words.
fn from_word(word: &str, lanes: u32, boolean: bool) -> String {
    match (boolean, lanes) {
        (false, _) => word.to_string(),
        (true, 1) => format!("({word} != 0u)"),
        (true, n) => format!("({word} != vec{n}<u32>())"),
    }
}

/// Element `idx` of a workgroup array of `width`-lane vectors (a component when `width > 1`).
fn local_element(name: &str, width: u32, idx: &str) -> String {
    match width {
        1 => format!("{name}[{idx}]"),
        w => format!("{name}[({idx}) >> {}u][({idx}) & {}]", w.trailing_zeros(), w - 1),
    }
}

/// The word holding element `idx` of a packed buffer of `bits`-bit elements.
fn word(name: &str, idx: &str, bits: u32) -> String {
    format!("{name}[{idx} >> {}u]", if bits == 8 { 2 } else { 1 })
}
