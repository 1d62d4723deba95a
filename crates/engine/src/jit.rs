//! Capture and replay, the engine half of TinyJit.
//!
//! While a thread runs inside [`capture`], every kernel submission and copy that realize
//! executes on that thread is recorded with the memory it bound. [`CapturedJit::new`] turns
//! the record into runs (consecutive kernels of one device become one [`Graph`]: checked
//! once, bind groups made once) and finds where the given input buffers were bound.
//! [`CapturedJit::replay`] runs it all again with new input buffers swapped into those
//! places: no graph building, scheduling, codegen, method cache or hashing, and one
//! submission per device run (one command buffer when the function uses one device).
//!
//! Invariants:
//! - The capture holds every buffer it recorded except the inputs, so intermediates and
//!   outputs keep their memory, and the same memory is written by every replay: outputs of
//!   a replay alias the outputs of the capture (tinygrad's rule).
//! - Host work inside the captured function is not replayed: data uploaded, values read
//!   back and host constants (a learning rate written into a kernel, a random seed) are
//!   those of the capture. A kernel drawing random numbers from a seed baked into it is
//!   refused ([`JitError::HostRandom`]): its replays would repeat the same numbers.
//! - An input that is memory the captured work writes (a previous call's output fed back)
//!   is first copied to memory of its own, so a kernel never reads what it overwrites.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use thiserror::Error;
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp, UOpMap};

use crate::cache::Compiled;
use crate::counters::{count_kernel, count_replay};
use crate::device::{Graph, Swap, open_device};
use crate::realize::print_kernel;
use crate::schedule::ScheduleItem;
use crate::{Backend, DeviceBuffer, DeviceName, EngineError, Launch, buffers, flags};

/// A jitted function's input as the signature check sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitInput {
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its dtype.
    pub dtype: DType,
    /// Its device.
    pub device: DeviceName,
}

impl fmt::Display for JitInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(ToString::to_string).collect();
        write!(f, "({}) {} on {}", dims.join(", "), self.dtype.scalar().long_name(), self.device)
    }
}

/// What can go wrong capturing or replaying a jitted function.
#[derive(Debug, Error)]
pub enum JitError {
    /// A call with another number of input tensors than the first call had.
    #[error("the jitted function was called with {expected} input tensors, now with {got}")]
    InputCount {
        /// Inputs of the first call.
        expected: usize,
        /// Inputs of this call.
        got: usize,
    },
    /// An input whose shape, dtype or device differs from the first call's.
    #[error("jit input {index}: expected {expected}, got {got}")]
    InputMismatch {
        /// Position of the input.
        index: usize,
        /// What the first call had.
        expected: Box<JitInput>,
        /// What this call has.
        got: Box<JitInput>,
    },
    /// The same tensor (buffer) given as two inputs.
    #[error("jit inputs {first} and {second} are the same buffer")]
    DuplicateInput {
        /// The first position.
        first: usize,
        /// The second position.
        second: usize,
    },
    /// An input that is not realized into memory (an internal error of the caller).
    #[error("jit input {index} has no memory")]
    NotRealized {
        /// Position of the input.
        index: usize,
    },
    /// The captured call ran no kernel and no copy.
    #[error("the jitted function ran nothing to capture (no kernels, no copies)")]
    NothingCaptured,
    /// A kernel whose random numbers come from a seed baked into it.
    #[error(
        "kernel {kernel} draws random numbers from a seed baked into it, so every replay would repeat \
         them: draw them outside the jitted function, or from the device's stream (Seed::Stream), whose \
         position advances on the device"
    )]
    HostRandom {
        /// The kernel's name.
        kernel: String,
    },
    /// A capture started inside another capture on the same thread.
    #[error("a jitted function cannot be captured inside another capture")]
    NestedCapture,
}

/// One captured kernel: its AST, compiled program and the memory of each slot.
struct Kernel {
    ast: UOp,
    compiled: Arc<Compiled>,
    buffers: Vec<DeviceBuffer>,
}

/// One recorded step.
enum Step {
    /// Kernels of one device submitted together.
    Kernels { device: DeviceName, kernels: Vec<Kernel> },
    /// A copy of `src` (on `from`) into `dst` (on `to`).
    Copy { from: DeviceName, to: DeviceName, src: DeviceBuffer, dst: DeviceBuffer },
}

thread_local! {
    /// The steps recorded by this thread's capture, while one runs.
    static CAPTURE: RefCell<Option<Vec<Step>>> = const { RefCell::new(None) };
}

fn record(step: Step) {
    CAPTURE.with(|c| {
        if let Some(steps) = c.borrow_mut().as_mut() {
            steps.push(step);
        }
    });
}

fn capturing() -> bool {
    CAPTURE.with(|c| c.borrow().is_some())
}

/// Records the kernels `items` (compiled as `kernels`) that ran on `device` with `memory`.
pub(crate) fn record_kernels(
    device: &DeviceName,
    items: &[ScheduleItem],
    kernels: &[Arc<Compiled>],
    memory: &UOpMap<DeviceBuffer>,
) {
    if !capturing() {
        return;
    }
    let kernels = items
        .iter()
        .zip(kernels)
        .filter_map(|(item, compiled)| match &item.kind {
            crate::ItemKind::Kernel(ast) => Some(Kernel {
                ast: ast.clone(),
                compiled: compiled.clone(),
                buffers: item.bufs.iter().map(|b| memory[b].clone()).collect(),
            }),
            crate::ItemKind::Copy => None,
        })
        .collect();
    record(Step::Kernels { device: device.clone(), kernels });
}

/// Records a copy of `src` on `from` into `dst` on `to`.
pub(crate) fn record_copy(from: &DeviceName, to: &DeviceName, src: &DeviceBuffer, dst: &DeviceBuffer) {
    if capturing() {
        record(Step::Copy { from: from.clone(), to: to.clone(), src: src.clone(), dst: dst.clone() });
    }
}

/// What ran while [`capture`] ran its function.
pub struct Capture {
    steps: Vec<Step>,
}

impl Capture {
    /// Kernels recorded.
    pub fn kernel_count(&self) -> usize {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Kernels { kernels, .. } => kernels.len(),
                Step::Copy { .. } => 0,
            })
            .sum()
    }
}

/// Ends this thread's capture when dropped (also when the function panics).
struct Capturing;

impl Drop for Capturing {
    fn drop(&mut self) {
        CAPTURE.with(|c| c.borrow_mut().take());
    }
}

/// Runs `f`, recording the kernels and copies it realizes on this thread.
pub fn capture<T>(f: impl FnOnce() -> T) -> Result<(T, Capture), JitError> {
    if capturing() {
        return Err(JitError::NestedCapture);
    }
    CAPTURE.with(|c| *c.borrow_mut() = Some(vec![]));
    let guard = Capturing;
    let out = f();
    let steps = CAPTURE.with(|c| c.borrow_mut().take()).unwrap_or_default();
    drop(guard);
    Ok((out, Capture { steps }))
}

/// Where an input's memory was bound: launch `launch` (slot `slot`) of run `run`; for a
/// copy, slot 0 is the destination and 1 the source.
#[derive(Clone, Copy)]
struct Place {
    run: usize,
    launch: usize,
    slot: usize,
}

/// One submission of a replay.
enum Run {
    /// Kernels of one device, prepared.
    Kernels { device: DeviceName, graph: Box<dyn Graph>, kernels: Vec<Arc<Compiled>> },
    /// A copy between devices.
    Copy { from: Arc<dyn Backend>, to: Arc<dyn Backend>, src: DeviceBuffer, dst: DeviceBuffer },
}

/// Captured work, ready to replay with new inputs.
pub struct CapturedJit {
    runs: Vec<Run>,
    /// For each input, the places its memory is bound.
    inputs: Vec<Vec<Place>>,
    /// Memory the captured work writes, other than the inputs'.
    written: Vec<DeviceBuffer>,
    kernels: usize,
}

fn same(a: &DeviceBuffer, b: &DeviceBuffer) -> bool {
    Arc::ptr_eq(&a.raw, &b.raw)
}

/// The memory of each input `BUFFER`.
fn input_memory(inputs: &[UOp]) -> Result<Vec<DeviceBuffer>, JitError> {
    let memory: Vec<DeviceBuffer> = inputs
        .iter()
        .enumerate()
        .map(|(index, b)| buffers::memory(b).ok_or(JitError::NotRealized { index }))
        .collect::<Result<_, _>>()?;
    for (second, b) in memory.iter().enumerate() {
        if let Some(first) = memory[..second].iter().position(|a| same(a, b)) {
            return Err(JitError::DuplicateInput { first, second });
        }
    }
    Ok(memory)
}

/// A kernel drawing random bits where no source of the `Threefry` reads memory: its seed and
/// counter are constants of the kernel.
fn baked_random(ast: &UOp) -> bool {
    let reads = |u: &UOp| u.toposort().iter().any(|x| x.op() == Ops::Load);
    ast.toposort().iter().any(|u| u.op() == Ops::Threefry && !u.src().iter().any(reads))
}

/// The slots a kernel AST stores to.
fn stored_slots(ast: &UOp) -> Vec<usize> {
    ast.src().iter().filter_map(|s| s.src().first()?.arg().as_int().map(|i| i as usize)).collect()
}

impl CapturedJit {
    /// The captured work of `capture`, with the memory of the `BUFFER`s `inputs` as the
    /// places each replay fills with its own inputs.
    pub fn new(capture: Capture, inputs: &[UOp]) -> Result<CapturedJit, EngineError> {
        let memory = input_memory(inputs)?;
        let input_of = |b: &DeviceBuffer| memory.iter().position(|m| same(m, b));
        let mut places: Vec<Vec<Place>> = vec![vec![]; inputs.len()];
        let mut written: Vec<DeviceBuffer> = vec![];
        let mut write = |b: &DeviceBuffer| {
            if input_of(b).is_none() && !written.iter().any(|w| same(w, b)) {
                written.push(b.clone());
            }
        };
        // consecutive kernel steps of one device become one run
        let mut merged: Vec<Step> = vec![];
        for step in capture.steps {
            match (merged.last_mut(), step) {
                (Some(Step::Kernels { device, kernels }), Step::Kernels { device: d, kernels: more })
                    if *device == d =>
                {
                    kernels.extend(more);
                }
                (_, step) => merged.push(step),
            }
        }
        if merged.is_empty() {
            return Err(JitError::NothingCaptured.into());
        }
        let mut runs = Vec::with_capacity(merged.len());
        let mut count = 0;
        for (r, step) in merged.into_iter().enumerate() {
            match step {
                Step::Kernels { device, kernels } => {
                    let backend = open_device(&device)?;
                    for (l, k) in kernels.iter().enumerate() {
                        if baked_random(&k.ast) {
                            return Err(JitError::HostRandom { kernel: k.compiled.name.clone() }.into());
                        }
                        for (slot, b) in k.buffers.iter().enumerate() {
                            if let Some(i) = input_of(b) {
                                places[i].push(Place { run: r, launch: l, slot });
                            }
                        }
                        stored_slots(&k.ast).iter().for_each(|&s| write(&k.buffers[s]));
                    }
                    let launches: Vec<Launch<'_>> = kernels
                        .iter()
                        .map(|k| Launch {
                            program: &k.compiled.program,
                            buffers: k.buffers.iter().collect(),
                            vars: vec![],
                        })
                        .collect();
                    let graph = backend.graph(&launches)?;
                    count += kernels.len();
                    let kernels = kernels.into_iter().map(|k| k.compiled).collect();
                    runs.push(Run::Kernels { device, graph, kernels });
                }
                Step::Copy { from, to, src, dst } => {
                    for (slot, b) in [&dst, &src].into_iter().enumerate() {
                        if let Some(i) = input_of(b) {
                            places[i].push(Place { run: r, launch: 0, slot });
                        }
                    }
                    write(&dst);
                    runs.push(Run::Copy { from: open_device(&from)?, to: open_device(&to)?, src, dst });
                }
            }
        }
        if flags::debug() >= 1 {
            eprintln!("jit captured {count} kernels in {} runs with {} inputs", runs.len(), inputs.len());
        }
        Ok(CapturedJit { runs, inputs: places, written, kernels: count })
    }

    /// Kernels one replay launches.
    pub fn kernel_count(&self) -> usize {
        self.kernels
    }

    /// Runs the captured work again with the memory of the `BUFFER`s `inputs` in place of the
    /// captured inputs' (same count, order, dtypes and sizes as at capture: the caller checks
    /// shapes).
    pub fn replay(&self, inputs: &[UOp]) -> Result<(), EngineError> {
        if inputs.len() != self.inputs.len() {
            return Err(JitError::InputCount { expected: self.inputs.len(), got: inputs.len() }.into());
        }
        let mut memory = input_memory(inputs)?;
        for (m, input) in memory.iter_mut().zip(inputs) {
            if self.written.iter().any(|w| same(w, m)) {
                *m = private_copy(m, &crate::lazy::device_of(input)?)?;
            }
        }
        let mut swaps: Vec<Vec<Swap<'_>>> = (0..self.runs.len()).map(|_| vec![]).collect();
        for (places, buffer) in self.inputs.iter().zip(&memory) {
            for p in places {
                swaps[p.run].push(Swap { launch: p.launch, slot: p.slot, buffer });
            }
        }
        let (debug, timed) = (flags::debug(), flags::timing());
        for (run, mut swaps) in self.runs.iter().zip(swaps) {
            match run {
                Run::Kernels { device, graph, kernels } => {
                    swaps.sort_by_key(|s| s.launch);
                    let times = graph.run(&swaps, timed)?;
                    for (k, time) in kernels.iter().zip(times) {
                        count_kernel(
                            k.estimate.flops,
                            k.estimate.bytes_read + k.estimate.bytes_written,
                            time,
                        );
                        if debug >= 2 {
                            print_kernel(device, k, k.program.program.buffers.len(), time);
                        }
                    }
                }
                Run::Copy { from, to, src, dst } => {
                    let pick =
                        |slot, captured| swaps.iter().find(|s| s.slot == slot).map_or(captured, |s| s.buffer);
                    to.copy_in(pick(0, dst), &from.copy_out(pick(1, src))?)?;
                }
            }
        }
        count_replay();
        Ok(())
    }
}

/// A copy of the input memory `m` on `device` in memory of its own (through the host: the
/// rare case of a call's output fed back as an input).
fn private_copy(m: &DeviceBuffer, device: &DeviceName) -> Result<DeviceBuffer, EngineError> {
    let backend = open_device(device)?;
    let copy = backend.alloc(m.dtype, m.len)?;
    backend.copy_in(&copy, &backend.copy_out(m)?)?;
    Ok(copy)
}
