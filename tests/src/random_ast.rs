//! Random kernel ASTs: inputs seen through broadcasts, pads, shrinks, flips and permutes;
//! elementwise trees (arithmetic, max, where, comparisons, integer division and modulo, and for
//! floats exp2/log2/sin/sqrt/recip); reductions over one or several axes, some with a reduce
//! over the same axes nested in their source; one or two stores;
//! f32 or i32. With their input data and random opt sequences, so runtimes can be compared
//! with each other and with `ast_eval`.

use wgrad_codegen::{Opt, OptMode, OptOps, Target, compile};
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Ops, UOp};
use wgrad_runtime_cpu::CpuBuffer;
use wgrad_shape::{ShapeTracker, Sint};

use crate::Rng;

/// One random kernel: its AST and the buffers it takes, outputs first.
pub struct Case {
    /// The kernel AST (a `Sink` of `Store`s into slots `0..outputs`).
    pub ast: UOp,
    /// dtype and element count per slot.
    pub buffers: Vec<(DType, usize)>,
    /// How many leading slots are outputs.
    pub outputs: usize,
}

impl Case {
    /// A random case.
    pub fn random(r: &mut Rng) -> Case {
        let dtype = if r.chance(50) { DType::F32 } else { DType::I32 };
        let ndim = 1 + r.below(3);
        const SIZES: [usize; 10] = [1, 2, 3, 4, 5, 6, 8, 12, 16, 32];
        let full: Vec<usize> = (0..ndim).map(|_| SIZES[r.below(SIZES.len())]).collect();
        let reduce_axes: Vec<usize> = (0..ndim).filter(|_| r.chance(35)).collect();
        let out_shape: Vec<usize> =
            full.iter().enumerate().map(|(i, &f)| if reduce_axes.contains(&i) { 1 } else { f }).collect();
        let outputs = 1 + usize::from(r.chance(25));
        let mut buffers: Vec<(DType, usize)> = vec![(dtype, out_shape.iter().product()); outputs];
        let mut loads = vec![];
        for i in 0..1 + r.below(3) {
            let (st, size) = random_input(r, &full);
            let slot = (outputs + i) as i64;
            loads.push(UOp::load(dtype, [UOp::define_global(dtype, slot), UOp::view(st)]));
            buffers.push((dtype, size));
        }
        let out_view = UOp::view(ShapeTracker::from_shape(&sints(&out_shape)).expect("valid shape"));
        let stores = (0..outputs)
            .map(|slot| {
                let mut v = random_value(r, &loads, dtype, 3);
                if !v.toposort().iter().any(|u| u.op() == Ops::Load) {
                    v = &v + &loads[0]; // a value needs a load to have a shape
                }
                if !reduce_axes.is_empty() {
                    // a reduce over the same axes nested in this one's source, read broadcast
                    // (a softmax's max inside its sum), as the scheduler fuses it: short ones
                    // (the evaluator recomputes it per element), drawing nothing from `r`
                    let reduced: usize = reduce_axes.iter().map(|&a| full[a]).product();
                    if reduced <= 64 && loads.len() > 1 {
                        let inner_op = if slot == 0 { Ops::Max } else { Ops::Add };
                        v = &v + &(&loads[1] * &loads[0]).reduce_axis(inner_op, &reduce_axes);
                    }
                    let op = if r.chance(60) { Ops::Add } else { Ops::Max };
                    v = v.reduce_axis(op, &reduce_axes);
                    if r.chance(40) {
                        v = &v + &UOp::constant(dtype, ConstValue::Int(1));
                    }
                }
                UOp::store([UOp::define_global(dtype, slot as i64), out_view.clone(), v])
            })
            .collect::<Vec<_>>();
        Case { ast: UOp::sink(stores), buffers, outputs }
    }

    /// Input data per slot (outputs get an empty list): small values (cast to the slot's
    /// dtype, so unsigned ones wrap), floats in quarters.
    pub fn inputs(&self, r: &mut Rng) -> Vec<Vec<ConstValue>> {
        self.buffers
            .iter()
            .enumerate()
            .map(|(i, &(dtype, n))| {
                if i < self.outputs {
                    return vec![];
                }
                (0..n)
                    .map(|_| {
                        let v = r.below(17) as i64 - 8;
                        if dtype.is_float() {
                            ConstValue::Float(v as f64 / 4.0)
                        } else {
                            ConstValue::Int(v).cast(dtype)
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// The case's buffers on the host, by slot: outputs zeroed, inputs holding `inputs`.
    pub fn cpu_buffers(&self, inputs: &[Vec<ConstValue>]) -> Vec<CpuBuffer> {
        self.buffers
            .iter()
            .zip(inputs)
            .map(|(&(dt, n), inp)| {
                if inp.is_empty() { CpuBuffer::zeros(dt, n) } else { CpuBuffer::from_values(dt, inp.clone()) }
            })
            .collect()
    }

    /// A random opt sequence that `target` accepts for this case (the accepted prefix of each
    /// random step, so refused opts are skipped).
    pub fn random_opts(&self, r: &mut Rng, target: &Target) -> OptMode {
        let mut accepted = vec![];
        for opt in random_opts(r) {
            let mut trial = accepted.clone();
            trial.push(opt);
            if compile(&self.ast, target, &OptMode::Given(trial.clone()), "k").is_ok() {
                accepted = trial;
            }
        }
        OptMode::Given(accepted)
    }
}

fn sints(xs: &[usize]) -> Vec<Sint> {
    xs.iter().map(|&x| Sint::from(x as i64)).collect()
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
    let expect = "movement ops within bounds";
    let mut st = ShapeTracker::from_shape(&sints(&stored)).expect(expect).permute(&inv).expect(expect);
    let shrink: Vec<(Sint, Sint)> = dims
        .iter()
        .zip(&base)
        .map(|(d, &b)| match *d {
            Dim::Shrink(a, bb) => (Sint::from(a as i64), Sint::from((b - bb) as i64)),
            _ => (Sint::from(0), Sint::from(b as i64)),
        })
        .collect();
    st = st.shrink(&shrink).expect(expect);
    let pad: Vec<(Sint, Sint)> = dims
        .iter()
        .map(|d| match *d {
            Dim::Pad(l, h) => (Sint::from(l as i64), Sint::from(h as i64)),
            _ => (Sint::from(0), Sint::from(0)),
        })
        .collect();
    st = st.pad(&pad).expect(expect).expand(&sints(full)).expect(expect);
    if r.chance(30) {
        let flips: Vec<bool> = (0..n).map(|_| r.chance(50)).collect();
        st = st.flip(&flips).expect(expect);
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
    match (r.below(8), dtype.is_float()) {
        (0 | 1, _) => &a + &b,
        (2, _) => &a * &b,
        (3, _) => a.maximum(&b),
        (4, _) => a.cmp_lt(&b).where_(&a, &b),
        (5, _) => -&a,
        (6, true) => [UOp::exp2, UOp::log2, UOp::sin, UOp::sqrt, UOp::recip][r.below(5)](&a),
        (6, false) => a.idiv(&b),
        (_, true) => a.cmp_ne(&b).where_(&(&a - &b), &a),
        (_, false) => &a % &b,
    }
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
