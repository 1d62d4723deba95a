//! Compiling a [`Program`] once into [`CpuProgram`]: a compact instruction array over
//! numbered registers, with jump targets resolved.

use wgrad_codegen::{BufferArg, Program};
use wgrad_dtype::{AddrSpace, ConstValue, DType};
use wgrad_ops::{Arg, GroupOp, NUM_SUBGROUPS, Ops, SUBGROUP_ID, SUBGROUP_LANE, UOp, UOpMap};
use wgrad_shape::Variable;

use crate::CpuError;

/// Where a load or store goes: a buffer argument (by slot) or a workgroup memory.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mem {
    Global(usize),
    Local(usize),
}

/// A hardware index or subgroup builtin. The interpreter's subgroups are runs of the
/// program's `subgroup_size` invocations in order of their flattened local id (the last one
/// shorter where they do not divide the workgroup), or the whole workgroup where the program
/// names no size.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Builtin {
    /// `gidx[dim]`.
    Group(usize),
    /// `lidx[dim]`.
    Local(usize),
    /// `subgroup_id`: the flattened local id over the subgroup size.
    SubgroupId,
    /// `subgroup_invocation_id`: the flattened local id modulo the subgroup size.
    SubgroupLane,
    /// `num_subgroups`: the workgroup's invocations over the subgroup size, rounded up.
    NumSubgroups,
}

/// One instruction; registers and jump targets are indices.
#[derive(Clone, Debug)]
pub(crate) enum Inst {
    /// `dst = ` the builtin's value.
    Special { dst: usize, builtin: Builtin },
    /// `dst = 0`; skip to `exit` when the loop is empty.
    Range { dst: usize, end: usize, exit: usize },
    /// `var += 1`; back to `body` while `var < end`.
    EndRange { var: usize, end: usize, body: usize },
    /// `dst = src` (accumulator init and assignment).
    Copy { dst: usize, src: usize },
    /// `dst = op(src[..n])`.
    Alu { op: Ops, dtype: DType, dst: usize, src: [usize; 3], n: usize },
    /// `dst = src` converted into `dtype`.
    Cast { dst: usize, src: usize, dtype: DType },
    /// `dst = src`'s bits read as `to`.
    Bitcast { dst: usize, src: usize, from: DType, to: DType },
    /// `dst + k = valid ? mem[idx * width + k] : 0` for every lane `k < width`.
    Load { dst: usize, mem: Mem, idx: usize, valid: Option<usize>, dtype: DType, width: usize },
    /// `if valid { mem[idx * width + k] = value + k }` for every lane `k < width`.
    Store { mem: Mem, idx: usize, valid: Option<usize>, value: usize, dtype: DType, width: usize },
    /// `dst + r * n + c = mem[idx + r * stride + c]` (row-major; else `mem[idx + c * stride + r]`)
    /// for a tile of side `n`.
    CoopLoad { dst: usize, mem: Mem, idx: usize, stride: usize, n: usize, row_major: bool, dtype: DType },
    /// Writes the tile at `value` as `CoopLoad` reads one.
    CoopStore { mem: Mem, idx: usize, stride: usize, value: usize, n: usize, row_major: bool, dtype: DType },
    /// `dst = c + a * b` for tiles of side `n`, each sum rounded to `dtype` in order of `k`.
    Wmma { dst: usize, a: usize, b: usize, c: usize, n: usize, dtype: DType },
    /// Wait for every thread of the workgroup.
    Barrier,
    /// A barrier after which every thread's `dst` is `op` over all threads' `src`, in thread
    /// order (the subgroup is the workgroup).
    SubgroupReduce { dst: usize, src: usize, op: Ops, dtype: DType },
    /// Skip to `exit` unless `cond`.
    If { cond: usize, exit: usize },
}

/// A workgroup memory: name and element count.
#[derive(Clone, Debug)]
pub(crate) struct LocalMem {
    pub name: String,
    pub size: usize,
}

/// A [`Program`] compiled for the interpreter; compile once, run many times.
#[derive(Clone, Debug)]
pub struct CpuProgram {
    pub(crate) insts: Vec<Inst>,
    /// Initial register file: constants set, everything else zero.
    pub(crate) registers: Vec<ConstValue>,
    /// Registers holding variables.
    pub(crate) vars: Vec<(usize, Variable)>,
    pub(crate) buffers: Vec<BufferArg>,
    pub(crate) locals: Vec<LocalMem>,
    pub(crate) global_size: [usize; 3],
    pub(crate) local_size: [usize; 3],
    /// Invocations a subgroup has (the workgroup's, where the program names none).
    pub(crate) subgroup_size: usize,
    pub(crate) has_barrier: bool,
}

/// State of the compilation: registers, memories and open blocks.
struct Compiler {
    out: CpuProgram,
    regs: UOpMap<usize>,
    mems: UOpMap<Mem>,
    /// Instruction index of every open `Range`/`If`.
    blocks: UOpMap<usize>,
}

impl CpuProgram {
    /// Compiles `program`; fails on uops the interpreter does not run.
    pub fn new(program: &Program) -> Result<CpuProgram, CpuError> {
        let out = CpuProgram {
            insts: Vec::with_capacity(program.uops.len()),
            registers: Vec::new(),
            vars: Vec::new(),
            buffers: program.buffers.clone(),
            locals: Vec::new(),
            global_size: program.global_size,
            local_size: program.local_size,
            subgroup_size: program.subgroup_size.unwrap_or(program.local_size.iter().product()).max(1),
            has_barrier: false,
        };
        let mut c =
            Compiler { out, regs: UOpMap::default(), mems: UOpMap::default(), blocks: UOpMap::default() };
        for (index, u) in program.uops.iter().enumerate() {
            c.uop(index, u)?;
        }
        Ok(c.out)
    }

    /// The buffer arguments it takes, in order.
    pub fn buffers(&self) -> &[BufferArg] {
        &self.buffers
    }
}

impl Compiler {
    fn reg(&self, index: usize, u: &UOp) -> Result<usize, CpuError> {
        self.regs.get(u).copied().ok_or(CpuError::Order { index })
    }

    /// Fresh registers for `u`: one per lane, consecutive.
    fn new_reg(&mut self, u: &UOp, init: ConstValue) -> usize {
        let r = self.out.registers.len();
        let lanes = u.dtype().count() as usize;
        self.out.registers.extend(std::iter::repeat_n(init, lanes));
        self.regs.insert(u.clone(), r);
        r
    }

    /// `dst + k = src + k` for every lane `k < count`.
    fn copy_lanes(&mut self, dst: usize, src: usize, count: u32) {
        self.out.insts.extend((0..count as usize).map(|k| Inst::Copy { dst: dst + k, src: src + k }));
    }

    fn block(&mut self, index: usize, u: &UOp) -> Result<usize, CpuError> {
        self.blocks.remove(u).ok_or(CpuError::Order { index })
    }

    /// The memory, index and validity registers of the pointer a load or store goes through
    /// (its vector width is the pointer's).
    fn access(&self, index: usize, ptr: &UOp) -> Result<(Mem, usize, Option<usize>), CpuError> {
        let unsupported = CpuError::Unsupported { index, op: ptr.op() };
        if ptr.op() != Ops::Index {
            return Err(unsupported);
        }
        let mem = *self.mems.get(&ptr.src()[0]).ok_or(unsupported)?;
        let idx = self.reg(index, &ptr.src()[1])?;
        let valid = ptr.src().get(2).map(|v| self.reg(index, v)).transpose()?;
        Ok((mem, idx, valid))
    }

    fn uop(&mut self, index: usize, u: &UOp) -> Result<(), CpuError> {
        let unsupported = CpuError::Unsupported { index, op: u.op() };
        // vectors are values of loads and of the Vectorizes stores take, read through Geps, held
        // in registers (a staged copy's run loaded a step ahead), and cooperative-matrix tiles
        // (every thread holds the whole tile)
        let vector_ops = [
            Ops::Load,
            Ops::Vectorize,
            Ops::Gep,
            Ops::Index,
            Ops::CoopLoad,
            Ops::Wmma,
            Ops::DefineAcc,
            Ops::Assign,
        ];
        let zero_tile = u.op() == Ops::Const && wgrad_ops::coop_side(u.dtype()).is_some();
        if u.dtype().count() > 1 && !vector_ops.contains(&u.op()) && !zero_tile {
            return Err(unsupported);
        }
        let dtype = u.dtype();
        let src: &[UOp] = u.src();
        let inst = match u.op() {
            Ops::Const => {
                self.new_reg(u, u.arg().as_const().ok_or(unsupported)?);
                return Ok(());
            }
            Ops::DefineVar => {
                let Arg::Var(v) = u.arg() else { return Err(unsupported) };
                let r = self.new_reg(u, ConstValue::Int(0));
                self.out.vars.push((r, v.clone()));
                return Ok(());
            }
            Ops::DefineGlobal => {
                let slot = u.arg().as_int().and_then(|s| usize::try_from(s).ok()).ok_or(unsupported)?;
                self.mems.insert(u.clone(), Mem::Global(slot));
                return Ok(());
            }
            Ops::DefineLocal => {
                let size = dtype.ptr_size().filter(|_| dtype.addr_space() == Some(AddrSpace::Local));
                let size = size.ok_or(unsupported)?;
                self.mems.insert(u.clone(), Mem::Local(self.out.locals.len()));
                self.out.locals.push(LocalMem { name: u.arg().to_string(), size });
                return Ok(());
            }
            // pointers are resolved by the loads and stores that use them
            Ops::Index | Ops::Sink | Ops::Noop => return Ok(()),
            Ops::EndIf => {
                let start = self.block(index, &src[0])?;
                let exit = self.out.insts.len();
                if let Inst::If { exit: e, .. } = &mut self.out.insts[start] {
                    *e = exit;
                }
                return Ok(());
            }
            Ops::Special => {
                let Arg::Special(name, _) = u.arg() else { return Err(unsupported) };
                let dim = || name.get(4..).and_then(|d| d.parse().ok()).filter(|&d: &usize| d < 3);
                let builtin = match &**name {
                    SUBGROUP_ID => Builtin::SubgroupId,
                    SUBGROUP_LANE => Builtin::SubgroupLane,
                    NUM_SUBGROUPS => Builtin::NumSubgroups,
                    n if n.starts_with("lidx") => Builtin::Local(dim().ok_or(unsupported)?),
                    n if n.starts_with("gidx") => Builtin::Group(dim().ok_or(unsupported)?),
                    _ => return Err(unsupported),
                };
                Inst::Special { dst: self.new_reg(u, ConstValue::Int(0)), builtin }
            }
            Ops::Range => {
                let end = self.reg(index, &src[0])?;
                self.blocks.insert(u.clone(), self.out.insts.len());
                Inst::Range { dst: self.new_reg(u, ConstValue::Int(0)), end, exit: 0 }
            }
            Ops::EndRange => {
                let start = self.block(index, &src[0])?;
                let (var, end) = (self.reg(index, &src[0])?, self.reg(index, &src[0].src()[0])?);
                let exit = self.out.insts.len() + 1;
                if let Inst::Range { exit: e, .. } = &mut self.out.insts[start] {
                    *e = exit;
                }
                Inst::EndRange { var, end, body: start + 1 }
            }
            Ops::If => {
                self.blocks.insert(u.clone(), self.out.insts.len());
                Inst::If { cond: self.reg(index, &src[0])?, exit: 0 }
            }
            Ops::DefineAcc => {
                let init = self.reg(index, &src[0])?;
                let dst = self.new_reg(u, ConstValue::Int(0));
                self.copy_lanes(dst, init, dtype.count());
                return Ok(());
            }
            Ops::Assign => {
                let dst = self.reg(index, &src[0])?;
                self.regs.insert(u.clone(), dst);
                let value = self.reg(index, &src[1])?;
                self.copy_lanes(dst, value, dtype.count());
                return Ok(());
            }
            Ops::CoopLoad | Ops::CoopStore => {
                let Arg::Coop(coop) = u.arg() else { return Err(unsupported) };
                let (mem, idx, _) = self.access(index, &src[0])?;
                let stride = self.reg(index, &src[if u.op() == Ops::CoopLoad { 1 } else { 2 }])?;
                let dtype = src[0].dtype().base();
                let tile =
                    if u.op() == Ops::CoopLoad { dtype.vec(u.dtype().count()) } else { src[1].dtype() };
                let n = wgrad_ops::coop_side(tile).ok_or(unsupported)? as usize;
                let row_major = coop.row_major;
                if u.op() == Ops::CoopStore {
                    let value = self.reg(index, &src[1])?;
                    Inst::CoopStore { mem, idx, stride, value, n, row_major, dtype }
                } else {
                    let dst = self.new_reg(u, ConstValue::Int(0));
                    Inst::CoopLoad { dst, mem, idx, stride, n, row_major, dtype }
                }
            }
            Ops::Wmma => {
                let n = wgrad_ops::coop_side(dtype).ok_or(unsupported)? as usize;
                let [a, b, c] = [0, 1, 2].map(|i| self.reg(index, &src[i]));
                let (a, b, c) = (a?, b?, c?);
                Inst::Wmma {
                    dst: self.new_reg(u, ConstValue::Int(0)),
                    a,
                    b,
                    c,
                    n,
                    dtype: dtype.scalar_dtype(),
                }
            }
            Ops::Cast => {
                Inst::Cast { src: self.reg(index, &src[0])?, dst: self.new_reg(u, ConstValue::Int(0)), dtype }
            }
            Ops::Bitcast => {
                let from = src[0].dtype();
                Inst::Bitcast {
                    src: self.reg(index, &src[0])?,
                    dst: self.new_reg(u, ConstValue::Int(0)),
                    from,
                    to: dtype,
                }
            }
            Ops::Load => {
                let (mem, idx, valid) = self.access(index, &src[0])?;
                let (dtype, width) = (dtype.scalar_dtype(), dtype.count() as usize);
                Inst::Load { dst: self.new_reg(u, ConstValue::Int(0)), mem, idx, valid, dtype, width }
            }
            Ops::Store => {
                let (mem, idx, valid) = self.access(index, &src[0])?;
                let value = self.reg(index, src.last().ok_or(unsupported)?)?;
                let pointee = src[0].dtype().base();
                let (dtype, width) = (pointee.scalar_dtype(), pointee.count() as usize);
                Inst::Store { mem, idx, valid, value, dtype, width }
            }
            Ops::Gep => {
                let Arg::Ints(lanes) = u.arg() else { return Err(unsupported) };
                let base = self.reg(index, &src[0])?;
                let width = src[0].dtype().count() as usize;
                let picked: Option<Vec<usize>> =
                    lanes.iter().map(|&l| usize::try_from(l).ok().filter(|&l| l < width)).collect();
                let picked = picked.ok_or(unsupported)?;
                if let [lane] = picked[..] {
                    // one lane is a register of the vector: nothing to run
                    self.regs.insert(u.clone(), base + lane);
                    return Ok(());
                }
                let dst = self.new_reg(u, ConstValue::Int(0));
                for (k, lane) in picked.into_iter().enumerate() {
                    self.out.insts.push(Inst::Copy { dst: dst + k, src: base + lane });
                }
                return Ok(());
            }
            Ops::Vectorize => {
                let lanes = src.iter().map(|s| self.reg(index, s)).collect::<Result<Vec<_>, _>>()?;
                let dst = self.new_reg(u, ConstValue::Int(0));
                for (k, lane) in lanes.into_iter().enumerate() {
                    self.out.insts.push(Inst::Copy { dst: dst + k, src: lane });
                }
                return Ok(());
            }
            Ops::Barrier => {
                self.out.has_barrier = true;
                Inst::Barrier
            }
            Ops::SubgroupReduce => {
                let Arg::Op(op) = *u.arg() else { return Err(unsupported) };
                self.out.has_barrier = true;
                let src = self.reg(index, &src[0])?;
                Inst::SubgroupReduce { dst: self.new_reg(u, ConstValue::Int(0)), src, op, dtype }
            }
            op if GroupOp::ALU.contains(op) => {
                let mut regs = [0; 3];
                for (r, s) in regs.iter_mut().zip(src) {
                    *r = self.reg(index, s)?;
                }
                Inst::Alu {
                    op,
                    dtype,
                    dst: self.new_reg(u, ConstValue::Int(0)),
                    src: regs,
                    n: src.len().min(3),
                }
            }
            _ => return Err(unsupported),
        };
        self.out.insts.push(inst);
        Ok(())
    }
}
