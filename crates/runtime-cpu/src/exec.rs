//! Running a [`CpuProgram`]: workgroups in parallel, the threads of one workgroup stepped
//! round-robin from barrier to barrier.

use std::thread;

use wgrad_codegen::Program;
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{bitcast, exec_alu};
use wgrad_shape::Variable;

use crate::compile::{Builtin, Inst, Mem};
use crate::{CpuBuffer, CpuError, CpuProgram, Memory};

/// Compiles and runs `program` once on `buffers` (indexed by slot; slots the program does
/// not use are ignored) with the variable values `vars`, on every core.
pub fn run(program: &Program, buffers: &mut [CpuBuffer], vars: &[(Variable, i64)]) -> Result<(), CpuError> {
    let workers = thread::available_parallelism().map_or(1, |n| n.get());
    CpuProgram::new(program)?.run(buffers, vars, workers)
}

/// Where a thread stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// At the barrier instruction with this index.
    Barrier(usize),
    /// At the end of the program.
    Done,
}

/// One thread: its registers, program counter and local id.
struct Thread {
    regs: Vec<ConstValue>,
    pc: usize,
    lid: [usize; 3],
}

/// What the threads of one workgroup share.
struct Group<'a> {
    buffers: &'a [&'a CpuBuffer],
    locals: Vec<Vec<u64>>,
    gid: [usize; 3],
}

/// The first element of the access `idx` of `width` lanes (an index counts vectors).
fn element(idx: ConstValue, width: usize) -> i64 {
    idx.to_i64().saturating_mul(width as i64)
}

/// The element `(r, c)` of a tile at `first` whose rows (`row_major`) or columns are `stride` apart.
fn tile_element(first: ConstValue, stride: ConstValue, r: usize, c: usize, row_major: bool) -> i64 {
    let (major, minor) = if row_major { (r, c) } else { (c, r) };
    first.to_i64().saturating_add(stride.to_i64().saturating_mul(major as i64)).saturating_add(minor as i64)
}

fn unflatten(mut i: usize, size: [usize; 3]) -> [usize; 3] {
    size.map(|n| {
        let d = i % n;
        i /= n;
        d
    })
}

impl CpuProgram {
    /// Runs on `buffers` (indexed by slot) with the variable values `vars`, spreading workgroups over up to
    /// `workers` threads (the result does not depend on it unless workgroups race).
    pub fn run(
        &self,
        buffers: &mut [CpuBuffer],
        vars: &[(Variable, i64)],
        workers: usize,
    ) -> Result<(), CpuError> {
        let shared: Vec<&CpuBuffer> = buffers.iter().collect();
        self.run_shared(&shared, vars, workers)
    }

    /// Like [`CpuProgram::run`], on shared buffers (element storage is atomic, so a kernel may
    /// write a buffer others hold; the same buffer may sit in several slots).
    pub fn run_shared(
        &self,
        buffers: &[&CpuBuffer],
        vars: &[(Variable, i64)],
        workers: usize,
    ) -> Result<(), CpuError> {
        self.check_buffers(buffers)?;
        let registers = self.initial_registers(vars)?;
        let groups: usize = self.global_size.iter().product();
        let workers = workers.clamp(1, groups.max(1));
        let chunk = groups.div_ceil(workers);
        let run_chunk = |start: usize| -> Result<(), CpuError> {
            (start..(start + chunk).min(groups)).try_for_each(|g| self.run_group(g, buffers, &registers))
        };
        if workers == 1 {
            return run_chunk(0);
        }
        thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|w| s.spawn(move || run_chunk(w * chunk))).collect();
            // a panicking worker is a bug in the interpreter: pass the panic on
            handles.into_iter().try_for_each(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        })
    }

    fn check_buffers(&self, buffers: &[&CpuBuffer]) -> Result<(), CpuError> {
        let needed = self.buffers.iter().map(|b| b.slot + 1).max().unwrap_or(0);
        if buffers.len() < needed {
            return Err(CpuError::BufferCount { expected: needed, got: buffers.len() });
        }
        for arg in &self.buffers {
            let buf = &buffers[arg.slot];
            if arg.dtype != buf.dtype() {
                return Err(CpuError::BufferDType { slot: arg.slot, expected: arg.dtype, got: buf.dtype() });
            }
            if let Some(expected) = arg.size.filter(|&n| n != buf.len()) {
                return Err(CpuError::BufferSize { slot: arg.slot, expected, got: buf.len() });
            }
        }
        Ok(())
    }

    fn initial_registers(&self, vars: &[(Variable, i64)]) -> Result<Vec<ConstValue>, CpuError> {
        let mut regs = self.registers.clone();
        for (r, v) in &self.vars {
            let name = v.name().to_string();
            let value = vars
                .iter()
                .find(|(w, _)| w == v)
                .map(|&(_, x)| x)
                .ok_or(CpuError::MissingVariable { name })?;
            if value < v.min() || value > v.max() {
                return Err(CpuError::VariableRange {
                    name: v.name().into(),
                    value,
                    min: v.min(),
                    max: v.max(),
                });
            }
            regs[*r] = ConstValue::Int(value).cast(DType::I32);
        }
        Ok(regs)
    }

    /// Runs workgroup `g`: every thread to the next barrier (or subgroup reduce, which is
    /// computed once all threads reach it) in turn, until all finish.
    fn run_group(&self, g: usize, buffers: &[&CpuBuffer], registers: &[ConstValue]) -> Result<(), CpuError> {
        let mut group = Group {
            buffers,
            locals: self.locals.iter().map(|l| vec![0; l.size]).collect(),
            gid: unflatten(g, self.global_size),
        };
        let threads: usize = self.local_size.iter().product();
        let new_thread =
            |t: usize| Thread { regs: registers.to_vec(), pc: 0, lid: unflatten(t, self.local_size) };
        if !self.has_barrier {
            // no barrier: one thread at a time, start to end
            return (0..threads).try_for_each(|t| self.step(&mut new_thread(t), &mut group).map(drop));
        }
        let mut states: Vec<Thread> = (0..threads).map(new_thread).collect();
        loop {
            let stops =
                states.iter_mut().map(|t| self.step(t, &mut group)).collect::<Result<Vec<Stop>, _>>()?;
            if stops.iter().any(|&s| s != stops[0]) {
                return Err(CpuError::BarrierDivergence { group: g });
            }
            match stops[0] {
                Stop::Done => return Ok(()),
                Stop::Barrier(at) => {
                    if let Some(&Inst::SubgroupReduce { dst, src, op, dtype }) = self.insts.get(at) {
                        for subgroup in states.chunks_mut(self.subgroup_size) {
                            let mut values = subgroup.iter().map(|t| t.regs[src]);
                            let first = values.next().unwrap_or(ConstValue::Int(0));
                            let all = values.try_fold(first, |acc, v| exec_alu(op, dtype, &[acc, v]))?;
                            subgroup.iter_mut().for_each(|t| t.regs[dst] = all);
                        }
                    }
                }
            }
        }
    }

    /// Runs `t` until a barrier (which it passes) or the end.
    fn step(&self, t: &mut Thread, group: &mut Group) -> Result<Stop, CpuError> {
        let regs = &mut t.regs;
        while let Some(inst) = self.insts.get(t.pc) {
            t.pc += 1;
            match *inst {
                Inst::Special { dst, builtin } => {
                    let [x, y, z] = self.local_size;
                    let (flat, size) = (t.lid[0] + x * (t.lid[1] + y * t.lid[2]), self.subgroup_size);
                    let id = match builtin {
                        Builtin::Group(dim) => group.gid[dim],
                        Builtin::Local(dim) => t.lid[dim],
                        Builtin::SubgroupId => flat / size,
                        Builtin::SubgroupLane => flat % size,
                        Builtin::NumSubgroups => (x * y * z).div_ceil(size),
                    };
                    regs[dst] = ConstValue::Int(id as i64);
                }
                Inst::Range { dst, end, exit } => {
                    regs[dst] = ConstValue::Int(0);
                    if regs[end].to_i64() <= 0 {
                        t.pc = exit;
                    }
                }
                Inst::EndRange { var, end, body } => {
                    let next = regs[var].to_i64() + 1;
                    regs[var] = ConstValue::Int(next);
                    if next < regs[end].to_i64() {
                        t.pc = body;
                    }
                }
                Inst::Copy { dst, src } => regs[dst] = regs[src],
                Inst::Alu { op, dtype, dst, src, n } => {
                    let operands = src.map(|s| regs[s]);
                    regs[dst] = exec_alu(op, dtype, &operands[..n])?;
                }
                Inst::Cast { dst, src, dtype } => regs[dst] = regs[src].cast(dtype),
                Inst::Bitcast { dst, src, from, to } => regs[dst] = bitcast(regs[src], from, to),
                Inst::Load { dst, mem, idx, valid, dtype, width } => {
                    let ok = valid.is_none_or(|v| regs[v].is_truthy());
                    let first = element(regs[idx], width);
                    for k in 0..width {
                        let bits =
                            if ok { self.read(group, mem, first.saturating_add(k as i64))? } else { 0 };
                        regs[dst + k] = ConstValue::from_bits(bits, dtype);
                    }
                }
                Inst::Store { mem, idx, valid, value, dtype, width } => {
                    if valid.is_none_or(|v| regs[v].is_truthy()) {
                        let first = element(regs[idx], width);
                        for k in 0..width {
                            self.write(
                                group,
                                mem,
                                first.saturating_add(k as i64),
                                regs[value + k].to_bits(dtype),
                            )?;
                        }
                    }
                }
                Inst::CoopLoad { dst, mem, idx, stride, n, row_major, dtype } => {
                    for (r, c) in (0..n).flat_map(|r| (0..n).map(move |c| (r, c))) {
                        let at = tile_element(regs[idx], regs[stride], r, c, row_major);
                        regs[dst + r * n + c] = ConstValue::from_bits(self.read(group, mem, at)?, dtype);
                    }
                }
                Inst::CoopStore { mem, idx, stride, value, n, row_major, dtype } => {
                    for (r, c) in (0..n).flat_map(|r| (0..n).map(move |c| (r, c))) {
                        let at = tile_element(regs[idx], regs[stride], r, c, row_major);
                        self.write(group, mem, at, regs[value + r * n + c].to_bits(dtype))?;
                    }
                }
                Inst::Wmma { dst, a, b, c, n, dtype } => {
                    let mut out = vec![ConstValue::Int(0); n * n];
                    for (i, j) in (0..n).flat_map(|i| (0..n).map(move |j| (i, j))) {
                        let mut acc = regs[c + i * n + j];
                        for k in 0..n {
                            let product = regs[a + i * n + k].to_f64() * regs[b + k * n + j].to_f64();
                            acc = ConstValue::Float(acc.to_f64() + product).cast(dtype);
                        }
                        out[i * n + j] = acc;
                    }
                    regs[dst..dst + n * n].copy_from_slice(&out);
                }
                Inst::Barrier | Inst::SubgroupReduce { .. } => return Ok(Stop::Barrier(t.pc - 1)),
                Inst::If { cond, exit } => {
                    if !regs[cond].is_truthy() {
                        t.pc = exit;
                    }
                }
            }
        }
        Ok(Stop::Done)
    }

    fn out_of_bounds(&self, mem: Mem, index: i64, size: usize) -> CpuError {
        let buffer = match mem {
            Mem::Global(slot) => Memory::Global(slot),
            Mem::Local(l) => Memory::Local(self.locals[l].name.clone()),
        };
        CpuError::OutOfBounds { buffer, index, size }
    }

    fn read(&self, group: &Group, mem: Mem, index: i64) -> Result<u64, CpuError> {
        let i = usize::try_from(index).ok();
        let (bits, size) = match mem {
            Mem::Global(slot) => (i.and_then(|i| group.buffers[slot].bits(i)), group.buffers[slot].len()),
            Mem::Local(l) => (i.and_then(|i| group.locals[l].get(i).copied()), group.locals[l].len()),
        };
        bits.ok_or_else(|| self.out_of_bounds(mem, index, size))
    }

    fn write(&self, group: &mut Group, mem: Mem, index: i64, bits: u64) -> Result<(), CpuError> {
        let i = usize::try_from(index).ok();
        let (ok, size) = match mem {
            Mem::Global(slot) => {
                (i.is_some_and(|i| group.buffers[slot].set_bits(i, bits)), group.buffers[slot].len())
            }
            Mem::Local(l) => {
                let slot = i.and_then(|i| group.locals[l].get_mut(i));
                (slot.map(|s| *s = bits).is_some(), group.locals[l].len())
            }
        };
        if ok { Ok(()) } else { Err(self.out_of_bounds(mem, index, size)) }
    }
}
