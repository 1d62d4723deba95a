//! Ops against plain f64 references on every device, with tinygrad's tolerances: the forward
//! value (shape, dtype, values), and the gradient of `out.sum()` by every float input against
//! central differences of the reference's sum.

use wgrad_tensor::{DType, Result, Tensor, with_default_device};

use super::devices;

/// tinygrad's forward tolerance: `(atol, rtol)`.
pub const FORWARD: (f64, f64) = (1e-6, 1e-3);
/// tinygrad's gradient tolerance: `(atol, rtol)`.
pub const GRADIENT: (f64, f64) = (1e-4, 1e-3);

/// Deterministic values in `[-2, 2)`, `n` of them.
pub fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729 + 17) % 4000) as f32 / 1000.0 - 2.0).collect()
}

/// Pseudo-random values in `[-2, 2)` with no linear pattern (a hash of the position), for
/// ops that need matrices of full rank.
pub fn noise(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let mut z = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ (seed as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 31)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// `n` distinct values in `[-2, 2)` in a scrambled order (no ties for sorts and maxima).
pub fn distinct(n: usize, seed: usize) -> Vec<f32> {
    let step = 4.0 / n.max(1) as f32;
    let stride = [7, 11, 13, 17, 19, 23].into_iter().find(|p| !n.is_multiple_of(*p)).unwrap_or(1);
    (0..n).map(|i| ((i * stride + seed) % n) as f32 * step - 2.0 + step / 3.0).collect()
}

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The elements of `t` as f64s (float32, int32, int64 and bool tensors).
pub fn values(t: &Tensor) -> Vec<f64> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect(),
        DType::I32 => t.to_vec::<i32>().unwrap().into_iter().map(f64::from).collect(),
        DType::I64 => t.to_vec::<i64>().unwrap().into_iter().map(|v| v as f64).collect(),
        DType::U32 => t.to_vec::<u32>().unwrap().into_iter().map(f64::from).collect(),
        DType::BOOL => t.to_vec::<bool>().unwrap().into_iter().map(|b| f64::from(u8::from(b))).collect(),
        d => panic!("values: unexpected dtype {d}"),
    }
}

/// `got` against `want` elementwise with numpy's `isclose` (NaNs equal, infinities exact).
pub fn assert_close(what: &str, got: &[f64], want: &[f64], (atol, rtol): (f64, f64)) {
    assert_eq!(got.len(), want.len(), "{what}: {} values, want {}", got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan())
            || (w.is_infinite() && g == w)
            || (w.is_finite() && (g - w).abs() <= atol + rtol * w.abs());
        assert!(ok, "{what}[{i}]: got {g}, want {w}\n got {got:?}\nwant {want:?}");
    }
}

/// Runs `f` once per device with that device as the default, naming it.
pub fn on_devices(mut f: impl FnMut(&str)) {
    for device in devices() {
        with_default_device(&device, || f(&device.to_string()));
    }
}

/// One op checked against its reference.
pub struct Check {
    /// The case's name, for messages.
    pub name: String,
    /// The float32 inputs: values and shape.
    pub inputs: Vec<(Vec<f32>, Vec<usize>)>,
    /// The output's expected shape.
    pub shape: Vec<usize>,
    /// Whether to check the gradients too.
    pub grads: bool,
}

impl Check {
    /// A case of `inputs` whose output has `shape`, gradients checked.
    pub fn new(name: &str, inputs: Vec<(Vec<f32>, Vec<usize>)>, shape: &[usize]) -> Check {
        Check { name: name.to_string(), inputs, shape: shape.to_vec(), grads: true }
    }

    /// The same case without gradients (integer or boolean outputs, piecewise-constant ops).
    pub fn forward_only(mut self) -> Self {
        self.grads = false;
        self
    }

    /// Runs `op` on every device and compares it with `reference` (which gets the inputs as
    /// f64 and returns the output, row-major).
    pub fn run(&self, op: impl Fn(&[Tensor]) -> Result<Tensor>, reference: impl Fn(&[Vec<f64>]) -> Vec<f64>) {
        let host: Vec<Vec<f64>> =
            self.inputs.iter().map(|(v, _)| v.iter().map(|&x| f64::from(x)).collect()).collect();
        let want = reference(&host);
        let numeric: Vec<Vec<f64>> = match self.grads {
            true => (0..host.len()).map(|k| numeric_gradient(&host, k, &reference)).collect(),
            false => vec![],
        };
        on_devices(|device| {
            let name = format!("{} on {device}", self.name);
            let xs: Vec<Tensor> =
                self.inputs.iter().map(|(v, s)| Tensor::from_slice(v, s).unwrap()).collect();
            let out = op(&xs).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(out.shape(), self.shape, "{name}: shape");
            assert_close(&name, &values(&out), &want, FORWARD);
            if !self.grads {
                return;
            }
            let targets: Vec<&Tensor> = xs.iter().collect();
            let grads = out.sum(&[], false).unwrap().gradient(&targets, None).unwrap();
            for (k, g) in grads.iter().enumerate() {
                assert_close(&format!("{name}: d/dx{k}"), &values(g), &numeric[k], GRADIENT);
            }
        });
    }
}

/// The gradient of `sum(reference(inputs))` by input `k`, by central differences in f64.
fn numeric_gradient(inputs: &[Vec<f64>], k: usize, reference: &impl Fn(&[Vec<f64>]) -> Vec<f64>) -> Vec<f64> {
    let mut xs = inputs.to_vec();
    (0..inputs[k].len())
        .map(|i| {
            let (x, h) = (inputs[k][i], 1e-6 * inputs[k][i].abs().max(1.0));
            xs[k][i] = x + h;
            let up: f64 = reference(&xs).iter().sum();
            xs[k][i] = x - h;
            let down: f64 = reference(&xs).iter().sum();
            xs[k][i] = x;
            (up - down) / (2.0 * h)
        })
        .collect()
}
