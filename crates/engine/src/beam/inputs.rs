//! A kernel's buffers filled with seeded random values: what a search times its candidates
//! on, and what the winner and the default opts are both run from to compare their results.
//!
//! Invariants:
//! - Every buffer slot of the AST gets a buffer large enough for every view that reads or
//!   writes it (the largest index any valid position reaches, plus one).
//! - Floats are uniform in [-2, 2) (tinygrad's test range: signed, so a wrong index or a
//!   missing term shows), signed integers in [-8, 8), unsigned ones in [0, 16), bools
//!   either; the output buffers too, for kernels that read their own target.
//! - Symbolic variables take the middle of their range, as in tinygrad's search.

use wgrad_dtype::{ConstValue, DType, ScalarType};
use wgrad_ops::{Ops, UOp};
use wgrad_shape::{ShapeTracker, Sint, Variable};

use crate::{Backend, CompiledProgram, DeviceBuffer, EngineError, Launch};

/// tinygrad's forward tolerances (atol, rtol) for an output dtype: f32 and wider 1e-6 and
/// 1e-3, the 16-bit floats 1e-3 and 1e-2.
fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype.scalar() {
        ScalarType::Float16 | ScalarType::BFloat16 => (1e-3, 1e-2),
        _ => (1e-6, 1e-3),
    }
}

/// SplitMix64: the next value of a small, well-mixed, seedable sequence.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `len` random elements of `dtype` (module docs), little-endian.
fn random_bytes(dtype: DType, len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let size = dtype.itemsize();
    let mut out = Vec::with_capacity(len * size);
    for _ in 0..len {
        let r = splitmix(&mut state);
        let value = match dtype.scalar() {
            ScalarType::Bool => ConstValue::Bool(r & 1 == 1),
            _ if dtype.is_float() => ConstValue::Float((r >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0),
            _ if dtype.is_unsigned() => ConstValue::UInt(r % 16),
            _ => ConstValue::Int((r % 16) as i64 - 8),
        };
        out.extend_from_slice(&value.to_bits(dtype).to_le_bytes()[..size]);
    }
    out
}

/// Elements of the buffer `st` indexes: the bound of its index over the positions of a view
/// that is valid somewhere, plus one (padding may make it a little larger than needed).
fn span(st: &ShapeTracker) -> usize {
    let idxs: Vec<Sint> = st
        .shape()
        .iter()
        .enumerate()
        .map(|(d, s)| {
            Variable::new(&format!("beam_idx{d}"), 0, s.vmax() - 1).map_or(Sint::int(0), |v| Sint::var(&v))
        })
        .collect();
    let (idx, valid) = st.to_indexed(&idxs);
    if valid.vmax() == 0 { 1 } else { usize::try_from(idx.vmax() + 1).unwrap_or(1).max(1) }
}

/// The buffers of one kernel AST with their random contents.
pub(crate) struct Inputs {
    buffers: Vec<DeviceBuffer>,
    contents: Vec<Vec<u8>>,
}

impl Inputs {
    /// A buffer per slot of `ast` on `backend`, filled from `seed`.
    pub(crate) fn new(ast: &UOp, backend: &dyn Backend, seed: u64) -> Result<Inputs, EngineError> {
        let mut slots: Vec<(DType, usize)> = vec![];
        for u in ast.toposort().iter().filter(|u| matches!(u.op(), Ops::Load | Ops::Store)) {
            let (buf, view) = (&u.src()[0], &u.src()[1]);
            let (Some(slot), Some(st)) = (buf.arg().as_int(), view.arg().as_view()) else { continue };
            if buf.op() != Ops::DefineGlobal || view.op() != Ops::View {
                continue;
            }
            let slot =
                usize::try_from(slot).map_err(|_| EngineError::Runtime(format!("buffer slot {slot}")))?;
            if slots.len() <= slot {
                slots.resize(slot + 1, (DType::U8, 1));
            }
            slots[slot] = (buf.dtype().base().scalar_dtype(), slots[slot].1.max(span(st)));
        }
        let contents: Vec<Vec<u8>> =
            slots.iter().zip(0..).map(|(&(dtype, len), i)| random_bytes(dtype, len, seed ^ i)).collect();
        let buffers =
            slots.iter().map(|&(dtype, len)| backend.alloc(dtype, len)).collect::<Result<Vec<_>, _>>()?;
        let inputs = Inputs { buffers, contents };
        inputs.reset(backend)?;
        Ok(inputs)
    }

    /// Writes the random contents into every buffer again.
    pub(crate) fn reset(&self, backend: &dyn Backend) -> Result<(), EngineError> {
        self.buffers.iter().zip(&self.contents).try_for_each(|(b, bytes)| backend.copy_in(b, bytes))
    }

    /// A launch of `program` on these buffers, its variables at the middle of their ranges.
    pub(crate) fn launch<'a>(&'a self, program: &'a CompiledProgram) -> Launch<'a> {
        let vars = program.program.vars.iter().map(|v| (v.min() + v.max()) / 2).collect();
        Launch { program, buffers: self.buffers.iter().collect(), vars }
    }

    /// Each buffer `program` writes, by slot, after running it once from the random contents.
    fn outputs(
        &self,
        backend: &dyn Backend,
        program: &CompiledProgram,
    ) -> Result<Vec<(usize, Vec<u8>)>, EngineError> {
        self.reset(backend)?;
        backend.run(&[self.launch(program)], false)?;
        let written = program.program.buffers.iter().filter(|b| b.writable);
        written.map(|b| Ok((b.slot, backend.copy_out(&self.buffers[b.slot])?))).collect()
    }
}

/// Runs `reference` and `candidate` from the same inputs: `None` when every buffer they
/// write agrees within tinygrad's tolerances, else what differs. A float result passes
/// when `|c - r| <= atol + rtol * max(|r|, rms)`, `rms` that of the reference's buffer:
/// where a long reduction's result is near zero, a different summation order leaves no
/// relative precision, so it is judged on the buffer's scale (NaN equals NaN).
pub(crate) fn compare_results(
    backend: &dyn Backend,
    inputs: &Inputs,
    reference: &CompiledProgram,
    candidate: &CompiledProgram,
) -> Result<Option<String>, EngineError> {
    let want = inputs.outputs(backend, reference)?;
    let got = inputs.outputs(backend, candidate)?;
    for ((slot, want), (_, got)) in want.iter().zip(&got) {
        let dtype = inputs.buffers[*slot].dtype;
        if let Some(diff) = compare(dtype, want, got) {
            return Ok(Some(format!("buffer {slot}: {diff}")));
        }
    }
    Ok(None)
}

/// The elements of `dtype` in `bytes`.
fn values(dtype: DType, bytes: &[u8]) -> Vec<ConstValue> {
    let size = dtype.itemsize();
    let bits = |c: &[u8]| c.iter().rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    bytes.chunks_exact(size).map(|c| ConstValue::from_bits(bits(c), dtype)).collect()
}

/// `None` when `got` matches `want` (see [`compare_results`]), else the first mismatch and
/// how many there are.
fn compare(dtype: DType, want: &[u8], got: &[u8]) -> Option<String> {
    let (want, got) = (values(dtype, want), values(dtype, got));
    let floats = |v: &[ConstValue]| -> Vec<f64> { v.iter().map(|c| c.to_f64()).collect() };
    let bad: Vec<usize> = if dtype.is_float() {
        let (want, got) = (floats(&want), floats(&got));
        let finite: Vec<f64> = want.iter().copied().filter(|x| x.is_finite()).collect();
        let rms = (finite.iter().map(|x| x * x).sum::<f64>() / finite.len().max(1) as f64).sqrt();
        let (atol, rtol) = tolerance(dtype);
        let close = |w: f64, g: f64| {
            w == g || (w.is_nan() && g.is_nan()) || (g - w).abs() <= atol + rtol * w.abs().max(rms)
        };
        (0..want.len()).filter(|&i| !close(want[i], got[i])).collect()
    } else {
        (0..want.len()).filter(|&i| want[i] != got[i]).collect()
    };
    let first = *bad.first()?;
    Some(format!(
        "element {first} is {} where the default opts give {} ({} of {} elements differ)",
        got[first].to_f64(),
        want[first].to_f64(),
        bad.len(),
        want.len()
    ))
}

#[cfg(test)]
mod tests {
    use wgrad_codegen::{Opt, OptMode, OptOps, compile};

    use super::*;
    use crate::device::CpuBackend;

    /// A reduce by `op` of a (64, 16) f32 buffer along its rows.
    fn row_reduce(op: Ops) -> UOp {
        let st = |shape: &[i64]| {
            ShapeTracker::from_shape(&shape.iter().map(|&x| Sint::int(x)).collect::<Vec<_>>())
        };
        let x = UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), UOp::view(st(&[64, 16]).unwrap())]);
        let out = UOp::view(st(&[64, 1]).unwrap());
        UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), out, x.reduce_axis(op, &[1])])])
    }

    #[test]
    fn different_results_are_caught_and_other_opts_of_one_kernel_pass() {
        let cpu = CpuBackend::new();
        let program = |ast: &UOp, opts: Vec<Opt>| {
            cpu.compile(&compile(ast, cpu.target(), &OptMode::Given(opts), "k").unwrap().1).unwrap()
        };
        let sum = row_reduce(Ops::Add);
        let inputs = Inputs::new(&sum, &cpu, 1).unwrap();
        let plain = program(&sum, vec![]);
        let unrolled = program(&sum, vec![Opt::new(OptOps::Unroll, 0, 4), Opt::new(OptOps::Upcast, 0, 4)]);
        assert_eq!(compare_results(&cpu, &inputs, &plain, &unrolled).unwrap(), None);
        let max = program(&row_reduce(Ops::Max), vec![]);
        let diff = compare_results(&cpu, &inputs, &plain, &max).unwrap().unwrap();
        assert!(diff.starts_with("buffer 0: element 0 is "), "{diff}");
    }

    fn f32s(xs: &[f32]) -> Vec<u8> {
        xs.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn floats_match_within_tolerance_and_on_the_buffer_scale() {
        let want = f32s(&[100.0, -100.0, 0.001, f32::NAN, f32::INFINITY]);
        assert_eq!(compare(DType::F32, &want, &want), None);
        // 1e-3 relative, and near zero 1e-3 of the rms (about 70)
        let close = f32s(&[100.09, -100.09, 0.05, f32::NAN, f32::INFINITY]);
        assert_eq!(compare(DType::F32, &want, &close), None);
        let far = f32s(&[100.2, -100.0, 0.5, 1.0, f32::INFINITY]);
        let diff = compare(DType::F32, &want, &far).unwrap();
        assert!(
            diff.starts_with("element 0 is 100.19999694824219 where") && diff.contains("(3 of 5"),
            "{diff}"
        );
    }

    #[test]
    fn integers_and_bools_match_exactly() {
        let ints = |xs: &[i32]| -> Vec<u8> { xs.iter().flat_map(|x| x.to_le_bytes()).collect() };
        assert_eq!(compare(DType::I32, &ints(&[1, -2, 3]), &ints(&[1, -2, 3])), None);
        assert!(compare(DType::I32, &ints(&[1, -2, 3]), &ints(&[1, -2, 4])).is_some());
        assert!(compare(DType::BOOL, &[1, 0], &[1, 1]).is_some());
    }

    #[test]
    fn random_values_stay_in_their_ranges() {
        let floats = values(DType::F16, &random_bytes(DType::F16, 1000, 7));
        assert!(floats.iter().all(|v| (-2.0..2.0).contains(&v.to_f64())));
        assert!(floats.iter().any(|v| v.to_f64() < -1.5) && floats.iter().any(|v| v.to_f64() > 1.5));
        let ints = values(DType::I8, &random_bytes(DType::I8, 1000, 7));
        assert!(ints.iter().all(|v| (-8..8).contains(&v.to_i64())));
        let bytes = random_bytes(DType::U32, 1000, 7);
        assert!(values(DType::U32, &bytes).iter().all(|v| v.to_i64() < 16));
        assert_eq!(bytes, random_bytes(DType::U32, 1000, 7), "seeded");
    }

    #[test]
    fn a_span_covers_every_valid_position() {
        let shape = |xs: &[i64]| xs.iter().map(|&x| Sint::int(x)).collect::<Vec<_>>();
        let st = ShapeTracker::from_shape(&shape(&[4, 5])).unwrap();
        assert_eq!(span(&st), 20);
        assert_eq!(span(&st.permute(&[1, 0]).unwrap()), 20);
        let broadcast = ShapeTracker::from_shape(&shape(&[5, 1])).unwrap().expand(&shape(&[5, 7])).unwrap();
        assert_eq!(span(&broadcast), 5);
        let padded = st.pad(&[(Sint::int(1), Sint::int(2)), (Sint::int(0), Sint::int(0))]).unwrap();
        // the index's bound ignores the mask, so padding may count a little more (never less)
        assert_eq!(span(&padded), 30);
        assert_eq!(
            span(&st.shrink(&[(Sint::int(1), Sint::int(2)), (Sint::int(0), Sint::int(5))]).unwrap()),
            10
        );
    }
}
