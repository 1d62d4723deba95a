//! [`TinyJit`]: a function of tensors run as usual on its first call, captured on its second
//! and replayed from its third: the kernels and copies the second call ran are launched
//! again with the new inputs' memory swapped in, with no graph building, scheduling or
//! codegen (tinygrad's `TinyJit`).
//!
//! Rules, as tinygrad's:
//! - every call must pass as many input tensors as the first, with the same shapes, dtypes
//!   and devices ([`JitError::InputCount`], [`JitError::InputMismatch`]), and no tensor twice
//!   ([`JitError::DuplicateInput`]); inputs are realized first, and one that is not a whole
//!   buffer (a view) is passed to the function as a contiguous copy;
//! - the returned tensors are realized into buffers of their own; a replay writes the same
//!   buffers and returns the same tensors, so outputs of one call alias those of the next
//!   (copy what must survive the next call); an output that is an input is that call's input;
//! - only tensor work is replayed: host values the function computes, data it uploads and
//!   seeds it bakes into kernels are those of the captured call (random numbers from a host
//!   seed are refused: [`JitError::HostRandom`]); in-place updates (`assign`: optimizer state,
//!   running statistics) are replayed, so they advance every call;
//! - `JIT=0` runs the function every call, checking inputs all the same.

use wgrad_engine::{CapturedJit, EngineError, JitError, JitInput, capture, flags};
use wgrad_ops::UOp;

use crate::Tensor;
use crate::error::{Result, TensorError};

/// A jitted function of tensors; see the module docs. `call` runs it.
///
/// ```
/// use wgrad_tensor::{Tensor, TinyJit};
/// # fn main() -> Result<(), wgrad_tensor::TensorError> {
/// let mut double = TinyJit::new(|x: &[Tensor]| Ok(vec![x[0].mul(2.0)?.add(1.0)?]));
/// for i in 0..4 {
///     let x = Tensor::from_slice(&[i as f32, 1.0], &[2])?;
///     let y = double.call(&[&x])?;
///     assert_eq!(y[0].to_vec::<f32>()?, [2.0 * i as f32 + 1.0, 3.0]);
/// }
/// assert_eq!(double.captured_kernels(), Some(1));
/// # Ok(()) }
/// ```
pub struct TinyJit<F> {
    f: F,
    calls: usize,
    expected: Option<Vec<JitInput>>,
    captured: Option<Captured>,
}

/// What the second call captured.
struct Captured {
    jit: CapturedJit,
    outputs: Vec<Output>,
}

/// Where a replay's output comes from.
enum Output {
    /// The tensor the capture returned (its buffer is written again).
    Held(Tensor),
    /// Input `index` of the call, seen in `shape`.
    Input { index: usize, shape: Vec<usize> },
}

/// An engine error, with the JIT's own errors as [`TensorError::Jit`].
fn jit_error(e: EngineError) -> TensorError {
    match e {
        EngineError::Jit(e) => TensorError::Jit(e),
        e => TensorError::Engine(e),
    }
}

/// How the signature check sees `t`.
fn signature(t: &Tensor) -> JitInput {
    JitInput { shape: t.shape().to_vec(), dtype: t.dtype(), device: t.device().clone() }
}

/// `tensors` realized, each in a whole buffer of its own (a contiguous copy where not).
fn realized(tensors: Vec<Tensor>) -> Result<Vec<Tensor>> {
    if tensors.iter().all(|t| t.buffer().is_some()) {
        return Ok(tensors);
    }
    Tensor::realize_all(&tensors.iter().collect::<Vec<_>>())?;
    let whole: Vec<Tensor> =
        tensors.into_iter().map(|t| if t.buffer().is_some() { t } else { t.contiguous() }).collect();
    Tensor::realize_all(&whole.iter().collect::<Vec<_>>())?;
    Ok(whole)
}

impl<F: FnMut(&[Tensor]) -> Result<Vec<Tensor>>> TinyJit<F> {
    /// Jits `f`, which takes the input tensors and returns the output tensors.
    pub fn new(f: F) -> TinyJit<F> {
        TinyJit { f, calls: 0, expected: None, captured: None }
    }

    /// Calls the function on `inputs` (runs it, captures it, or replays the capture; see the
    /// module docs) and returns its outputs, realized.
    pub fn call(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let inputs = realized(inputs.iter().map(|&t| t.clone()).collect())?;
        let buffers = self.check(&inputs)?;
        if !flags::jit() {
            return self.run(&inputs);
        }
        if let Some(captured) = &self.captured {
            captured.jit.replay(&buffers).map_err(jit_error)?;
            self.calls += 1;
            return Ok(captured.outputs(&inputs));
        }
        if self.calls == 0 {
            let outputs = self.run(&inputs)?;
            self.calls = 1;
            return Ok(outputs);
        }
        let (outputs, work) = capture(|| self.run(&inputs))?;
        let outputs = outputs?;
        let jit = CapturedJit::new(work, &buffers).map_err(jit_error)?;
        let held = outputs
            .iter()
            .map(|t| {
                let buffer = t.buffer();
                match buffers.iter().position(|b| Some(b) == buffer.as_ref()) {
                    Some(index) => Output::Input { index, shape: t.shape().to_vec() },
                    None => Output::Held(t.clone()),
                }
            })
            .collect();
        self.captured = Some(Captured { jit, outputs: held });
        self.calls = 2;
        Ok(outputs)
    }

    /// Calls so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// Kernels a replay launches, once captured.
    pub fn captured_kernels(&self) -> Option<usize> {
        self.captured.as_ref().map(|c| c.jit.kernel_count())
    }

    /// Forgets the capture: the next call runs the function, the one after captures again.
    pub fn reset(&mut self) {
        self.captured = None;
        self.calls = 0;
    }

    /// Checks `inputs` against the first call's and returns their buffers.
    fn check(&mut self, inputs: &[Tensor]) -> Result<Vec<UOp>> {
        let got: Vec<JitInput> = inputs.iter().map(signature).collect();
        let expected = self.expected.get_or_insert_with(|| got.clone());
        if expected.len() != got.len() {
            return Err(JitError::InputCount { expected: expected.len(), got: got.len() }.into());
        }
        if let Some(index) = (0..got.len()).find(|&i| expected[i] != got[i]) {
            let (expected, got) = (Box::new(expected[index].clone()), Box::new(got[index].clone()));
            return Err(JitError::InputMismatch { index, expected, got }.into());
        }
        // each input is a whole buffer now (see `realized`)
        let buffers: Vec<UOp> = inputs.iter().filter_map(Tensor::buffer).collect();
        for (second, b) in buffers.iter().enumerate() {
            if let Some(first) = buffers[..second].iter().position(|a| a == b) {
                return Err(JitError::DuplicateInput { first, second }.into());
            }
        }
        Ok(buffers)
    }

    /// Runs the function and realizes its outputs into buffers of their own.
    fn run(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        realized((self.f)(inputs)?)
    }
}

impl Captured {
    /// The outputs of a replay with `inputs`.
    fn outputs(&self, inputs: &[Tensor]) -> Vec<Tensor> {
        self.outputs
            .iter()
            .map(|o| match o {
                Output::Held(t) => t.clone(),
                Output::Input { index, shape } => {
                    let input = &inputs[*index];
                    input.with(wgrad_engine::lazy::reshape(&input.uop(), shape), shape.clone())
                }
            })
            .collect()
    }
}
