//! Running a program on one device (forward, then `backward` of the output's sum) and comparing
//! two devices' outcomes with tinygrad's tolerances: forward atol 1e-6 rtol 1e-3 (rtol 1e-2 for
//! half floats), gradients atol 1e-4 rtol 1e-3, integers and bools exactly, NaN only against
//! NaN.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use wgrad_tensor::{DType, DeviceName, Result, Tensor, TensorError, with_default_device};

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

fn outcome(program: &Program) -> Result<Outcome> {
    let mut values: Vec<Tensor> = Vec::with_capacity(program.steps.len());
    for op in &program.steps {
        let t = apply(op, &values)?;
        values.push(t);
    }
    let out = values.last().cloned().ok_or(TensorError::NoTensors("a program"))?;
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
                for p in params {
                    grads.push(match p.grad() {
                        Some(g) => read(&g)?,
                        None => vec![0.0; p.numel()],
                    });
                }
            }
            Err(TensorError::NothingRequiresGrad) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Outcome { shape: out.shape().to_vec(), dtype: out.dtype(), values: forward, grads })
}

/// `program` run on `device`.
pub fn run(program: &Program, device: &DeviceName) -> Run {
    match catch(|| with_default_device(device, || outcome(program))) {
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

fn close(got: f64, want: f64, atol: f64, rtol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= atol + rtol * want.abs()
}

/// The first difference between `got` (the device under test) and `want` (the interpreter).
pub fn compare(got: &Outcome, want: &Outcome) -> Option<String> {
    if got.shape != want.shape || got.dtype != want.dtype {
        return Some(format!("output {:?} {:?} vs {:?} {:?}", got.shape, got.dtype, want.shape, want.dtype));
    }
    let bad = |name: &str, g: &[f64], w: &[f64], exact: bool, atol: f64| -> Option<String> {
        if g.len() != w.len() {
            return Some(format!("{name}: {} vs {} elements", g.len(), w.len()));
        }
        // half floats round each partial sum to 11 bits: tinygrad's half tolerance
        let rtol = if matches!(want.dtype, DType::F16 | DType::BF16) { 1e-2 } else { 1e-3 };
        let i = g.iter().zip(w).position(|(&g, &w)| if exact { g != w } else { !close(g, w, atol, rtol) })?;
        Some(format!("{name}[{i}]: {} vs {} (interpreter)", g[i], w[i]))
    };
    if let Some(d) = bad("output", &got.values, &want.values, !want.dtype.is_float(), 1e-6) {
        return Some(d);
    }
    if got.grads.len() != want.grads.len() {
        return Some(format!("{} vs {} gradients", got.grads.len(), want.grads.len()));
    }
    got.grads
        .iter()
        .zip(&want.grads)
        .enumerate()
        .find_map(|(k, (g, w))| bad(&format!("gradient {k}"), g, w, false, 1e-4))
}
