//! Realize: schedule lazy nodes, give the new buffers memory (the planner), compile each
//! kernel once (the method cache), launch every kernel of a device together, copy between
//! devices, and count and print what ran (DEBUG=1, 2).
//!
//! Realizing is two steps so that callers can swap their lazy nodes for the results in
//! between: [`prepare`] schedules; [`Realization::run`] then keeps an intermediate buffer
//! only if some lazy graph still holds the node it computes, and plans the rest as scratch.

use std::time::Duration;

use wgrad_ops::{Estimate, UOp, UOpMap, UOpSet};

use crate::cache::{Compiled, compiled, generated};
use crate::counters::count_kernel;
use crate::device::open_device;
use crate::lazy::{device_of, reshape};
use crate::memory::MemoryPlan;
use crate::schedule::{ItemKind, KernelLimits, Schedule, ScheduleItem, schedule_with};
use crate::{Backend, DeviceBuffer, DeviceName, EngineError, Launch, buffers, flags, jit, memory, realized};

/// A schedule waiting to run.
pub struct Realization {
    schedule: Schedule,
}

/// The schedule of `targets` (lazy UOps) on their devices, not run yet.
pub fn prepare(targets: &[UOp]) -> Result<Realization, EngineError> {
    let mut limits = KernelLimits::UNLIMITED;
    for t in targets {
        limits = limits.min(open_device(&device_of(t)?)?.kernel_limits());
    }
    let schedule = schedule_with(targets, limits)?;
    if flags::debug() >= 1 && schedule.kernel_count() > 0 {
        eprintln!("scheduled {} kernels", schedule.kernel_count());
    }
    Ok(Realization { schedule })
}

/// Schedules and runs `targets`, returning the lazy UOps of their values.
pub fn realize(targets: &[UOp]) -> Result<Vec<UOp>, EngineError> {
    let r = prepare(targets)?;
    let results = r.results().to_vec();
    r.run()?;
    Ok(results)
}

impl Realization {
    /// For each target, the lazy UOp of its value once run (a `RESHAPE(BUFFER)`, or the
    /// target itself when there was nothing to compute).
    pub fn results(&self) -> &[UOp] {
        &self.schedule.results
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Runs the schedule and records its results; says how much memory its new buffers got.
    pub fn run(self) -> Result<MemoryPlan, EngineError> {
        self.run_with(Submit::Now)
    }

    /// As [`Realization::run`], for a caller that reads a result back next ([`download`]):
    /// the kernels are recorded to go to the device with that readback, one submission for
    /// both (see [`Backend::record`]).
    ///
    /// [`download`]: crate::download
    pub fn run_for_readback(self) -> Result<MemoryPlan, EngineError> {
        self.run_with(Submit::WithReadback)
    }

    fn run_with(self, submit: Submit) -> Result<MemoryPlan, EngineError> {
        // results nothing holds any more give their buffers up, then the memory goes
        realized::sweep();
        buffers::sweep();
        let outputs = &self.schedule.outputs;
        let kept: Vec<bool> = outputs
            .iter()
            .map(|o| o.targets > 0 || o.existing || o.keys.iter().any(|(k, _)| k.is_alive()))
            .collect();
        let fresh: UOpSet = outputs.iter().filter(|o| !o.existing).map(|o| o.buffer.clone()).collect();
        let scratch: UOpSet =
            outputs.iter().zip(&kept).filter(|(_, k)| !**k).map(|(o, _)| o.buffer.clone()).collect();
        let (mut memory, plan) = memory::plan(&self.schedule.items, &fresh, &scratch)?;
        for item in &self.schedule.items {
            for b in &item.bufs {
                if !memory.contains_key(b) {
                    let mem = buffers::memory(b)
                        .ok_or_else(|| EngineError::Unschedulable("a buffer without memory".into()))?;
                    memory.insert(b.clone(), mem);
                }
            }
        }
        run_items(&self.schedule.items, &memory, submit)?;
        // results that read what an assign overwrote are stale now, earlier ones and this
        // schedule's alike (except the assigns' own)
        let written: Vec<UOp> = outputs.iter().filter(|o| o.existing).map(|o| o.buffer.clone()).collect();
        realized::forget_readers(&written);
        for (o, keep) in outputs.iter().zip(kept) {
            if !keep {
                continue;
            }
            buffers::bind(&o.buffer, memory[&o.buffer].clone());
            // a new buffer with more than one holder is shared (an assign's target keeps its
            // owner: who holds the assign holds that tensor's value)
            if !o.existing && o.targets > 1 {
                buffers::share(&o.buffer);
            }
            for (key, shape) in &o.keys {
                let Some(key) = key.upgrade() else { continue };
                let stale = !o.existing && realized::buffers_read(&key).iter().any(|b| written.contains(b));
                if stale {
                    continue;
                }
                // marked before it is recorded: no other holder can take it unmarked
                if !o.existing {
                    buffers::share(&o.buffer);
                }
                realized::register(&key, reshape(&o.buffer, shape));
            }
        }
        Ok(plan)
    }
}

/// When the kernels of a realize go to the device.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Submit {
    /// Now (the device coalesces them with later work while it is busy).
    Now,
    /// With the readback that follows.
    WithReadback,
}

/// Runs `items` in order: runs of kernels on one device in one submission.
fn run_items(
    items: &[ScheduleItem],
    memory: &UOpMap<DeviceBuffer>,
    submit: Submit,
) -> Result<(), EngineError> {
    let mut start = 0;
    while start < items.len() {
        let item = &items[start];
        let backend = open_device(&item.device)?;
        if matches!(item.kind, ItemKind::Copy) {
            let (src, dst) = (&item.bufs[1], &item.bufs[0]);
            let from = device_of(src)?;
            let bytes = open_device(&from)?.copy_out(&memory[src])?;
            backend.copy_in(&memory[dst], &bytes)?;
            jit::record_copy(&from, &item.device, &memory[src], &memory[dst]);
            start += 1;
            continue;
        }
        let end = (start..items.len())
            .find(|&i| matches!(items[i].kind, ItemKind::Copy) || items[i].device != item.device)
            .unwrap_or(items.len());
        launch(&items[start..end], memory, backend.as_ref(), submit)?;
        start = end;
    }
    Ok(())
}

/// Compiles and launches the kernels `items` (all on `backend`) as one submission.
fn launch(
    items: &[ScheduleItem],
    memory: &UOpMap<DeviceBuffer>,
    backend: &dyn Backend,
    submit: Submit,
) -> Result<(), EngineError> {
    let asts: Vec<&UOp> = items
        .iter()
        .filter_map(|item| match &item.kind {
            ItemKind::Kernel(ast) => Some(ast),
            ItemKind::Copy => None,
        })
        .collect();
    // a memory-bound kernel takes its grid opposite to the kernel before it, so it starts on
    // what that one touched last, still in a GPU's L2 cache; products keep the order their
    // tiles were measured in (reversed, MNIST's convolutions ran up to 4% slower on an H200),
    // and so does every kernel of a submission with tensor-core products (there a forward
    // product after a reversed kernel ran slower: MiniLM's f16 QKV 89 -> 109 us, for a reason
    // not found)
    let device = &items[0].device;
    let generated = asts.iter().map(|ast| generated(ast, device, backend)).collect::<Result<Vec<_>, _>>()?;
    let alternate = backend.alternates_grids() && !generated.iter().any(|g| g.tensor_cores);
    let mut after_reversed = false;
    let mut kernels = Vec::with_capacity(asts.len());
    for (ast, g) in asts.iter().zip(&generated) {
        let reversed = alternate && !after_reversed && memory_bound(&g.estimate);
        kernels.push(compiled(ast, device, backend, reversed)?);
        after_reversed = reversed;
    }
    let launches: Vec<Launch<'_>> = items
        .iter()
        .zip(&kernels)
        .map(|(item, k)| Launch {
            program: &k.program,
            buffers: item.bufs.iter().map(|b| &memory[b]).collect(),
            vars: vec![],
        })
        .collect();
    let (debug, timed) = (flags::debug(), flags::timing());
    let times = match submit {
        Submit::WithReadback if !timed => backend.record(&launches).map(|()| vec![None; launches.len()])?,
        _ => backend.run(&launches, timed)?,
    };
    jit::record_kernels(&items[0].device, items, &kernels, memory);
    for ((item, k), time) in items.iter().zip(&kernels).zip(times) {
        let bytes = k.estimate.bytes_read + k.estimate.bytes_written;
        count_kernel(k.estimate.flops, bytes, time);
        if debug >= 2 {
            print_kernel(&item.device, k, item.bufs.len(), time);
        }
    }
    Ok(())
}

/// Whether a kernel of this estimate moves more bytes than its arithmetic can hide: under 8
/// operations a byte (an H200's f32 roofline turns at about 14).
fn memory_bound(e: &Estimate) -> bool {
    e.flops < 8 * (e.bytes_read + e.bytes_written)
}

/// The DEBUG=2 line of one kernel: device, number, name, buffers, memory, time, rates.
pub(crate) fn print_kernel(device: &DeviceName, k: &Compiled, buffers: usize, time: Option<Duration>) {
    let c = crate::counters();
    let secs = time.map_or(0.0, |t| t.as_secs_f64());
    let rate = |x: u64| if secs > 0.0 { x as f64 / secs / 1e9 } else { 0.0 };
    let bytes = k.estimate.bytes_read + k.estimate.bytes_written;
    eprintln!(
        "*** {:<8} {:>5} {:<28} arg {:>2} mem {:>6.2} GB tm {:>10.2}us/{:>9.2}ms ({:>8.2} GFLOPS {:>7.2} GB/s)",
        device.to_string(),
        c.kernels,
        k.name,
        buffers,
        c.memory_used as f64 / 1e9,
        secs * 1e6,
        c.kernel_time.as_secs_f64() * 1e3,
        rate(k.estimate.flops),
        rate(bytes),
    );
}
