//! How much a program's numbers depend on rounding. A device may round differently from the
//! interpreter (WGSL allows a few ulp for division and transcendentals, and compilers fuse
//! multiplies into adds), and a program can amplify a difference of one ulp without bound: a
//! cancellation (`cumsum` of `x` and `-x` is exactly 0 on one device and 1e-8 on another), the
//! kink of `abs` or `relu` at that zero (a gradient of 0 against 1), a comparison of two values
//! equal only when rounded alike. No fixed tolerance tells such a program from a bug.
//!
//! So the interpreter runs it again with every rounding step's result ([`Op::rounds`](super::Op::rounds)) multiplied
//! by `1 + k ulp` of its dtype, `k` a random integer in `[-ULPS, ULPS]` per element (multiplying
//! keeps exact zeros and signs), drawn anew for each step that reads it: a device that fuses a
//! value into several consumers computes it once for each and may round each differently (a
//! multiply contracted into an add in one and not the other), so `x - flip(x)` of a mean is not
//! always 0 there (fuzz seeds 315613 and 332897 on an H200). How far each number moves over a few
//! such runs is its *spread*, and a device may differ from the interpreter by twice that (both
//! round) beyond the tolerance.
//! A number that rounding cannot move is still compared at the plain tolerance; a difference
//! there is a bug.

use wgrad_tensor::{DType, DeviceName, Result, Tensor};

use super::program::{Op, Program};
use super::run::{Outcome, Run, run_with_noise};
use crate::Rng;

/// Noisy runs whose spread is taken (only for a program that differs, so they cost little):
/// a cancellation's noise shows in few runs (seed 194506, the gradient of a summed softmax:
/// one element moved in 2 of 12).
const RUNS: u64 = 16;
/// The largest perturbation, in ulps of the value's dtype.
const ULPS: usize = 4;

/// `values` (the results of the steps before `step`) as step `step` reads them in the noisy run
/// `seed`: each operand that rounds times `1 + k ulp` per element, drawn for this use alone.
pub(super) fn noisy_operands(
    program: &Program,
    values: &[Tensor],
    step: usize,
    seed: u64,
) -> Result<Vec<Tensor>> {
    let mut view = values.to_vec();
    for i in program.steps[step].operands() {
        if program.steps[i].rounds() {
            view[i] = perturb(&values[i], use_key(i, step), seed)?;
        }
    }
    Ok(view)
}

/// The output `out` of `program` as the user reads it in the noisy run `seed` (one more use).
pub(super) fn noisy_output(program: &Program, out: Tensor, seed: u64) -> Result<Tensor> {
    let last = program.steps.len() - 1;
    match program.steps.last().is_some_and(Op::rounds) {
        true => perturb(&out, use_key(last, last + 1), seed),
        false => Ok(out),
    }
}

/// The noise stream of step `producer`'s result as step `consumer` reads it.
fn use_key(producer: usize, consumer: usize) -> u64 {
    (producer as u64) << 32 | consumer as u64
}

/// `value` times `1 + k ulp` per element, `k` drawn from `seed` and `key`.
fn perturb(value: &Tensor, key: u64, seed: u64) -> Result<Tensor> {
    let ulp = match value.dtype() {
        DType::F16 => 2f32.powi(-10),
        DType::BF16 => 2f32.powi(-7),
        DType::F32 => 2f32.powi(-23),
        _ => return Ok(value.clone()),
    };
    let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ key);
    let factors: Vec<f32> =
        (0..value.numel()).map(|_| 1.0 + (rng.below(2 * ULPS + 1) as f32 - ULPS as f32) * ulp).collect();
    // 1 + k ulp is exact in the value's dtype, so the cast keeps it
    value.mul(Tensor::from_vec(factors, value.shape())?.cast(value.dtype()))
}

/// How far each number of `clean` (the interpreter's outcome of `program`) moves under rounding
/// noise: the largest distance over the noisy runs (infinite where a NaN appears or goes);
/// `None` when a noisy run fails or changes the outcome's shape.
pub fn spread(program: &Program, clean: &Outcome) -> Option<Outcome> {
    let zeros = |v: &[f64]| vec![0.0; v.len()];
    let mut spread = Outcome {
        values: zeros(&clean.values),
        grads: clean.grads.iter().map(|g| zeros(g)).collect(),
        ..clean.clone()
    };
    for seed in 1..=RUNS {
        let Run::Done(noisy) = run_with_noise(program, &DeviceName::Cpu, Some(seed)) else { return None };
        let same_shape = |a: &[f64], b: &[f64]| a.len() == b.len();
        if noisy.shape != clean.shape
            || noisy.grads.len() != clean.grads.len()
            || !same_shape(&noisy.values, &clean.values)
            || noisy.grads.iter().zip(&clean.grads).any(|(n, c)| !same_shape(n, c))
        {
            return None;
        }
        widen(&mut spread.values, &noisy.values, &clean.values);
        for (s, (n, c)) in spread.grads.iter_mut().zip(noisy.grads.iter().zip(&clean.grads)) {
            widen(s, n, c);
        }
    }
    Some(spread)
}

/// Raises each `spread` to the distance between `noisy` and `clean` where that is larger.
fn widen(spread: &mut [f64], noisy: &[f64], clean: &[f64]) {
    for ((s, &n), &c) in spread.iter_mut().zip(noisy).zip(clean) {
        let d = if n == c || (n.is_nan() && c.is_nan()) { 0.0 } else { (n - c).abs() };
        *s = if d.is_nan() { f64::INFINITY } else { s.max(d) };
    }
}
