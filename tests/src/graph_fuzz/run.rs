//! Running a program on one device (forward, then `backward` of the output's sum) and comparing
//! two devices' outcomes with tinygrad's tolerances: forward atol 1e-6 rtol 1e-3, gradients
//! atol 1e-4 rtol 1e-3, and atol = rtol = 1e-2 for forward and gradients alike when the output
//! depends on a half-precision value (tinygrad's half tolerance); integers and bools exactly;
//! NaN only against NaN. A comparison may allow each number its rounding spread as well
//! (`noise.rs`).

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use wgrad_tensor::{DType, DeviceName, Result, Tensor, TensorError, with_default_device};

use super::noise::{noisy_operands, noisy_output};
use super::program::{Op, Program, apply};

/// The numbers a device computed: the output, then each gradient-requiring input's gradient.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The output's shape and dtype.
    pub shape: Vec<usize>,
    /// Its dtype.
    pub dtype: DType,
    /// Its elements (ints and bools as exact values).
    pub values: Vec<f64>,
    /// The gradients (none when the output is not float or depends on no such input).
    pub grads: Vec<Vec<f64>>,
    /// Whether the output depends on a float16 or bfloat16 value (rounded to 11 or 8 bits).
    pub half: bool,
}

/// How one run ended.
#[derive(Clone, Debug)]
pub enum Run {
    /// It computed.
    Done(Outcome),
    /// A typed error: its variant name and message.
    Error(String, String),
    /// A panic, with its message and location.
    Panic(String),
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`, turning a panic into its message and location (the panic hook records them
/// instead of printing).
pub fn catch<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(info.to_string()));
        }))
    });
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|_| LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| "a panic".into()))
}

/// Elements as f64: floats through float32 (exact for every float dtype here), the rest
/// through int32.
fn read(t: &Tensor) -> Result<Vec<f64>> {
    Ok(match t.dtype().is_float() {
        true => t.cast(DType::F32).to_vec::<f32>()?.into_iter().map(f64::from).collect(),
        false => t.cast(DType::I32).to_vec::<i32>()?.into_iter().map(f64::from).collect(),
    })
}

/// The program's numbers; with `noise`, every use of a rounding step's result is perturbed
/// under that seed (`noise.rs`).
fn outcome(program: &Program, noise: Option<u64>) -> Result<Outcome> {
    let mut values: Vec<Tensor> = Vec::with_capacity(program.steps.len());
    for (step, op) in program.steps.iter().enumerate() {
        let t = match noise {
            Some(seed) => apply(op, &noisy_operands(program, &values, step, seed)?)?,
            None => apply(op, &values)?,
        };
        values.push(t);
    }
    let half = program
        .live_steps()
        .iter()
        .zip(&values)
        .any(|(&live, t)| live && matches!(t.dtype(), DType::F16 | DType::BF16));
    let out = values.last().cloned().ok_or(TensorError::NoTensors("a program"))?;
    let out = match noise {
        Some(seed) => noisy_output(program, out, seed)?,
        None => out,
    };
    let forward = read(&out)?;
    let params: Vec<&Tensor> = program
        .steps
        .iter()
        .zip(&values)
        .filter(|(op, _)| matches!(op, Op::Input { grad: true, .. }))
        .map(|(_, t)| t)
        .collect();
    let mut grads = vec![];
    if out.dtype().is_float() && !params.is_empty() {
        match out.sum(&[], false)?.backward() {
            Ok(()) => {
                // every gradient in one schedule, as an optimizer step realizes them: kernels of
                // different gradients merge there (siblings of one shape)
                let found: Vec<Option<Tensor>> = params.iter().map(|p| p.grad()).collect();
                Tensor::realize_all(&found.iter().flatten().collect::<Vec<_>>())?;
                for (p, g) in params.iter().zip(&found) {
                    grads.push(match g {
                        Some(g) => read(g)?,
                        None => vec![0.0; p.numel()],
                    });
                }
            }
            Err(TensorError::NothingRequiresGrad) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Outcome { shape: out.shape().to_vec(), dtype: out.dtype(), values: forward, grads, half })
}

/// `program` run on `device`.
pub fn run(program: &Program, device: &DeviceName) -> Run {
    run_with_noise(program, device, None)
}

/// `program` run on `device`, with rounding noise under the seed `noise` if given.
pub fn run_with_noise(program: &Program, device: &DeviceName, noise: Option<u64>) -> Run {
    match catch(|| with_default_device(device, || outcome(program, noise))) {
        Ok(Ok(o)) => Run::Done(o),
        Ok(Err(e)) => {
            let debug = format!("{e:?}");
            let kind = debug.split(['(', ' ', '{']).next().unwrap_or_default().to_string();
            let kind = match &e {
                TensorError::Engine(inner) => {
                    let inner = format!("{inner:?}");
                    format!("Engine::{}", inner.split(['(', ' ', '{']).next().unwrap_or_default())
                }
                _ => kind,
            };
            Run::Error(kind, e.to_string())
        }
        Err(panic) => Run::Panic(panic),
    }
}

/// Whether `got` is within `atol + rtol * |want|` of `want` (NaN only matches NaN; an infinite
/// `atol` matches anything).
fn close(got: f64, want: f64, atol: f64, rtol: f64) -> bool {
    (got.is_nan() && want.is_nan())
        || got == want
        || atol == f64::INFINITY
        || (got - want).abs() <= atol + rtol * want.abs()
}

/// The first difference between `got` (the device under test) and `want` (the interpreter),
/// each number allowed twice its `spread` beyond the tolerance (both devices' rounding) when
/// given.
pub fn compare(got: &Outcome, want: &Outcome, spread: Option<&Outcome>) -> Option<String> {
    if got.shape != want.shape || got.dtype != want.dtype {
        return Some(format!("output {:?} {:?} vs {:?} {:?}", got.shape, got.dtype, want.shape, want.dtype));
    }
    let half = got.half || want.half;
    let bad = |name: &str, g: &[f64], w: &[f64], s: Option<&Vec<f64>>, (atol, rtol): (f64, f64)| {
        if g.len() != w.len() {
            return Some(format!("{name}: {} vs {} elements", g.len(), w.len()));
        }
        let slack = |i: usize| s.and_then(|s| s.get(i)).map_or(0.0, |s| 2.0 * s);
        let i = (0..g.len()).find(|&i| !close(g[i], w[i], atol + slack(i), rtol))?;
        Some(format!("{name}[{i}]: {} vs {} (interpreter)", g[i], w[i]))
    };
    let tolerance = |float_tol| match (want.dtype.is_float(), half) {
        (false, _) => (0.0, 0.0),
        (true, true) => (1e-2, 1e-2),
        (true, false) => float_tol,
    };
    let values = spread.map(|s| &s.values);
    if let Some(d) = bad("output", &got.values, &want.values, values, tolerance((1e-6, 1e-3))) {
        return Some(d);
    }
    if got.grads.len() != want.grads.len() {
        return Some(format!("{} vs {} gradients", got.grads.len(), want.grads.len()));
    }
    let grad_tol = if half { (1e-2, 1e-2) } else { (1e-4, 1e-3) };
    (0..got.grads.len()).find_map(|k| {
        let s = spread.and_then(|s| s.grads.get(k));
        bad(&format!("gradient {k}"), &got.grads[k], &want.grads[k], s, grad_tol)
    })
}
