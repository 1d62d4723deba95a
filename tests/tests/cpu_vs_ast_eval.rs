//! Random kernel ASTs (broadcasts, pads, shrinks, flips, permutes, reductions over one or
//! several axes, several stores, int and float dtypes) under random valid opt sequences:
//! lowered, linearized and interpreted, the result equals the independent AST evaluator's.

use std::sync::Arc;

use wgrad_codegen::ast_eval::eval_ast;
use wgrad_codegen::{CodegenError, LowerError, Opt, OptMode, OptOps, Target, compile};
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Arg, Ops, UOp};
use wgrad_runtime_cpu::{CpuBuffer, run};
use wgrad_shape::{ShapeTracker, Sint};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

fn sints(xs: &[usize]) -> Vec<Sint> {
    xs.iter().map(|&x| Sint::from(x as i64)).collect()
}

fn view(st: ShapeTracker) -> UOp {
    UOp::new(Ops::View, DType::VOID, [], Arg::View(Arc::new(st)))
}

/// One random input: a buffer of `base` elements seen through movement ops as `full`.
fn random_input(r: &mut Rng, full: &[usize]) -> (ShapeTracker, usize) {
    #[derive(Clone, Copy)]
    enum Dim {
        Plain,
        Broadcast,
        Pad(usize, usize),
        Shrink(usize, usize),
    }
    let dims: Vec<Dim> = full
        .iter()
        .map(|&f| match r.below(6) {
            0 => Dim::Broadcast,
            1 if f >= 2 => {
                let low = r.below(f.min(3));
                Dim::Pad(low, (f - 1 - low).min(1))
            }
            2 => Dim::Shrink(r.below(3), r.below(3)),
            _ => Dim::Plain,
        })
        .collect();
    let base: Vec<usize> = dims
        .iter()
        .zip(full)
        .map(|(d, &f)| match *d {
            Dim::Broadcast => 1,
            Dim::Pad(l, h) => f - l - h,
            Dim::Shrink(a, b) => f + a + b,
            Dim::Plain => f,
        })
        .collect();
    let n = base.len();
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        perm.swap(i, r.below(i + 1));
    }
    // the buffer is stored in permuted order; permuting back gives `base`
    let stored: Vec<usize> = perm.iter().map(|&p| base[p]).collect();
    let mut inv = vec![0; n];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    let mut st = ShapeTracker::from_shape(&sints(&stored)).unwrap().permute(&inv).unwrap();
    let shrink: Vec<(Sint, Sint)> = dims
        .iter()
        .zip(&base)
        .map(|(d, &b)| match *d {
            Dim::Shrink(a, bb) => (Sint::from(a as i64), Sint::from((b - bb) as i64)),
            _ => (Sint::from(0), Sint::from(b as i64)),
        })
        .collect();
    st = st.shrink(&shrink).unwrap();
    let pad: Vec<(Sint, Sint)> = dims
        .iter()
        .map(|d| match *d {
            Dim::Pad(l, h) => (Sint::from(l as i64), Sint::from(h as i64)),
            _ => (Sint::from(0), Sint::from(0)),
        })
        .collect();
    st = st.pad(&pad).unwrap();
    st = st.expand(&sints(full)).unwrap();
    if r.chance(30) {
        let flips: Vec<bool> = (0..n).map(|_| r.chance(50)).collect();
        st = st.flip(&flips).unwrap();
    }
    (st, stored.iter().product())
}

/// A random value over the loads, in `dtype`.
fn random_value(r: &mut Rng, loads: &[UOp], dtype: DType, depth: usize) -> UOp {
    if depth == 0 || r.chance(25) {
        return if r.chance(85) {
            loads[r.below(loads.len())].clone()
        } else {
            UOp::constant(dtype, ConstValue::Int(r.below(5) as i64 - 2))
        };
    }
    let a = random_value(r, loads, dtype, depth - 1);
    let b = random_value(r, loads, dtype, depth - 1);
    match r.below(5) {
        0 => &a + &b,
        1 => &a * &b,
        2 => a.maximum(&b),
        3 => a.cmp_lt(&b).where_(&a, &b),
        _ => -&a,
    }
}

struct Case {
    ast: UOp,
    /// dtype and element count per slot (outputs first).
    buffers: Vec<(DType, usize)>,
}

fn random_case(r: &mut Rng) -> Case {
    let dtype = if r.chance(50) { DType::F32 } else { DType::I32 };
    let ndim = 1 + r.below(3);
    const SIZES: [usize; 10] = [1, 2, 3, 4, 5, 6, 8, 12, 16, 32];
    let full: Vec<usize> = (0..ndim).map(|_| SIZES[r.below(SIZES.len())]).collect();
    let reduce_axes: Vec<usize> = (0..ndim).filter(|_| r.chance(35)).collect();
    let out_shape: Vec<usize> =
        full.iter().enumerate().map(|(i, &f)| if reduce_axes.contains(&i) { 1 } else { f }).collect();
    let n_out = 1 + usize::from(r.chance(25));
    let n_in = 1 + r.below(3);
    let mut buffers: Vec<(DType, usize)> = vec![(dtype, out_shape.iter().product()); n_out];
    let mut loads = vec![];
    for i in 0..n_in {
        let (st, size) = random_input(r, &full);
        let slot = (n_out + i) as i64;
        loads.push(UOp::load(dtype, [UOp::define_global(dtype, slot), view(st)]));
        buffers.push((dtype, size));
    }
    let out_view = view(ShapeTracker::from_shape(&sints(&out_shape)).unwrap());
    let stores = (0..n_out)
        .map(|slot| {
            let mut v = random_value(r, &loads, dtype, 3);
            if !v.toposort().iter().any(|u| u.op() == Ops::Load) {
                v = &v + &loads[0]; // a value needs a load to have a shape
            }
            if !reduce_axes.is_empty() {
                let op = if r.chance(60) { Ops::Add } else { Ops::Max };
                v = v.reduce_axis(op, &reduce_axes);
                if r.chance(40) {
                    v = &v + &UOp::constant(dtype, ConstValue::Int(1));
                }
            }
            UOp::store([UOp::define_global(dtype, slot as i64), out_view.clone(), v])
        })
        .collect::<Vec<_>>();
    Case { ast: UOp::sink(stores), buffers }
}

/// A random opt sequence (invalid ones are simply refused by the kernel and skipped).
fn random_opts(r: &mut Rng) -> Vec<Opt> {
    // weighted: the opts that change lowering the most come up most often
    let ops = [
        OptOps::Upcast,
        OptOps::Upcast,
        OptOps::Unroll,
        OptOps::Unroll,
        OptOps::Local,
        OptOps::Local,
        OptOps::Group,
        OptOps::Group,
        OptOps::Grouptop,
        OptOps::Grouptop,
        OptOps::Padto,
        OptOps::Swap,
        OptOps::Nolocals,
    ];
    (0..r.below(7))
        .map(|_| {
            let op = ops[r.below(ops.len())];
            let arg = match op {
                OptOps::Swap => r.below(3),
                OptOps::Padto => [4, 8][r.below(2)],
                _ => [0, 2, 3, 4, 8][r.below(5)],
            };
            let axis = if matches!(op, OptOps::Group | OptOps::Grouptop | OptOps::Unroll) {
                r.below(2)
            } else {
                r.below(3)
            };
            if op == OptOps::Nolocals { Opt::nolocals() } else { Opt::new(op, axis, arg) }
        })
        .collect()
}

fn input_values(r: &mut Rng, dtype: DType, n: usize) -> Vec<ConstValue> {
    (0..n)
        .map(|_| {
            let v = r.below(17) as i64 - 8;
            if dtype.is_float() { ConstValue::Float(v as f64 / 4.0) } else { ConstValue::Int(v) }
        })
        .collect()
}

fn close(a: ConstValue, b: ConstValue) -> bool {
    match (a, b) {
        (ConstValue::Float(x), ConstValue::Float(y)) => {
            (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-6 + 1e-3 * y.abs()
        }
        _ => a == b,
    }
}

/// Compiles `case` with `mode` for the generic GPU target, runs it on the interpreter and
/// compares with the evaluator.
fn check(case: &Case, mode: &OptMode, inputs: &[Vec<ConstValue>], label: &str) {
    check_on(&Target::generic_gpu(), case, mode, inputs, label);
}

fn check_on(target: &Target, case: &Case, mode: &OptMode, inputs: &[Vec<ConstValue>], label: &str) {
    let mut expected: Vec<Vec<ConstValue>> = case
        .buffers
        .iter()
        .zip(inputs)
        .map(
            |(&(dt, n), inp)| if inp.is_empty() { vec![ConstValue::Int(0).cast(dt); n] } else { inp.clone() },
        )
        .collect();
    eval_ast(&case.ast, &mut expected).unwrap_or_else(|e| panic!("{label}: evaluator failed: {e}"));
    let (k, program) = match compile(&case.ast, target, mode, "k") {
        Ok(done) => done,
        // a grid too large for a tiny target is a typed refusal, not a wrong answer
        Err(CodegenError::Lower(LowerError::LaunchTooLarge { .. })) if target.name == "tiny" => return,
        Err(e) => panic!("{label}: compile failed: {e}"),
    };
    let mut bufs: Vec<CpuBuffer> =
        case.buffers
            .iter()
            .zip(inputs)
            .map(|(&(dt, n), inp)| {
                if inp.is_empty() { CpuBuffer::zeros(dt, n) } else { CpuBuffer::from_values(dt, inp.clone()) }
            })
            .collect();
    run(&program, &mut bufs, &[])
        .unwrap_or_else(|e| panic!("{label}: run failed: {e}\n{}", k.describe_opts()));
    for (slot, (buf, want)) in bufs.iter().zip(&expected).enumerate() {
        let got = buf.to_values();
        let bad = got.iter().zip(want).position(|(&g, &w)| !close(g, w));
        assert!(
            bad.is_none(),
            "{label}: slot {slot} differs at {bad:?}: got {:?}, want {:?}\nopts {} shape {}\n{}",
            got,
            want,
            k.describe_opts(),
            k.describe(),
            program
        );
    }
}

#[test]
fn random_kernels_match_the_ast_evaluator() {
    let cases = std::env::var("WGRAD_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(500u64);
    for seed in 0..cases {
        let mut r = Rng(seed);
        let case = random_case(&mut r);
        let inputs: Vec<Vec<ConstValue>> = case
            .buffers
            .iter()
            .enumerate()
            .map(|(i, &(dt, n))| if i < case_outputs(&case) { vec![] } else { input_values(&mut r, dt, n) })
            .collect();
        check(&case, &OptMode::NoOpt, &inputs, &format!("seed {seed} noopt"));
        check(&case, &OptMode::Heuristic, &inputs, &format!("seed {seed} heuristic"));
        check_on(&Target::tiny(), &case, &OptMode::Heuristic, &inputs, &format!("seed {seed} tiny target"));
        check_on(
            &Target::no_locals(),
            &case,
            &OptMode::Heuristic,
            &inputs,
            &format!("seed {seed} no locals"),
        );
        // a random opt sequence: keep the prefix of opts the kernel accepts
        let mut accepted = vec![];
        for opt in random_opts(&mut r) {
            let mut trial = accepted.clone();
            trial.push(opt);
            if compile(&case.ast, &Target::generic_gpu(), &OptMode::Given(trial.clone()), "k").is_ok() {
                accepted = trial;
            }
        }
        check(&case, &OptMode::Given(accepted.clone()), &inputs, &format!("seed {seed} opts {accepted:?}"));
    }
}

/// Number of output buffers: the stores' slots come first.
fn case_outputs(case: &Case) -> usize {
    case.ast.src().len()
}
