//! Random programs: inputs of random shapes and dtypes, then ops proposed at random and kept
//! when the Tensor API accepts them (built lazily on the CPU device, nothing runs), so every
//! kept step is valid and its shape and dtype are the real ones.

use wgrad_tensor::{DType, DeviceName, Tensor, with_default_device};

use super::program::{Binary, Idx, Op, Program, Reduce, Unary, apply};
use crate::Rng;

/// Values larger than this are not kept (keeps the interpreter fast).
const MAX_NUMEL: usize = 2048;
/// Dims at most.
const MAX_NDIM: usize = 4;

/// The dtypes inputs and casts draw from, float32 most often.
fn dtype(rng: &mut Rng) -> DType {
    match rng.below(20) {
        0..=12 => DType::F32,
        13 | 14 => DType::I32,
        15 | 16 => DType::F16,
        17 => DType::U8,
        _ => DType::BOOL,
    }
}

fn shape(rng: &mut Rng) -> Vec<usize> {
    let ndim = [0, 1, 2, 2, 3, 3, 4][rng.below(7)];
    (0..ndim).map(|_| if rng.chance(3) { 0 } else { 1 + rng.below(5) }).collect()
}

fn pick<T: Copy>(rng: &mut Rng, xs: &[T]) -> T {
    xs[rng.below(xs.len())]
}

/// A step number: the last step half the time (so ops chain into the output), else recent
/// steps more likely.
fn operand(rng: &mut Rng, n: usize) -> usize {
    match rng.chance(50) {
        true => n - 1,
        false => rng.below(n).max(rng.below(n)),
    }
}

fn axis(rng: &mut Rng, ndim: usize) -> isize {
    let a = rng.below(ndim.max(1)) as isize;
    if rng.chance(30) { a - ndim as isize } else { a }
}

fn broadcasts(a: &[usize], b: &[usize]) -> bool {
    a.iter().rev().zip(b.iter().rev()).all(|(&x, &y)| x == y || x == 1 || y == 1)
}

/// A random shape with `numel` elements, as a reshape argument (maybe with one -1).
fn reshape_arg(rng: &mut Rng, numel: usize) -> Vec<isize> {
    let mut rest = numel;
    let mut dims = vec![];
    while dims.len() < MAX_NDIM - 1 && rest > 1 && rng.chance(70) {
        let divisors: Vec<usize> = (2..=rest).filter(|d| rest.is_multiple_of(*d)).take(4).collect();
        let d = pick(rng, &divisors);
        dims.push(d as isize);
        rest /= d;
    }
    dims.push(rest as isize);
    if rng.chance(30) {
        dims.insert(rng.below(dims.len() + 1), 1);
    }
    if numel > 0 && rng.chance(30) {
        let i = rng.below(dims.len());
        dims[i] = -1;
    }
    dims
}

/// A random op on the values `v` (not necessarily valid: the caller keeps it if it applies).
fn propose(rng: &mut Rng, v: &[Tensor]) -> Op {
    let a = operand(rng, v.len());
    let x = &v[a];
    let (shape, nd, dt) = (x.shape().to_vec(), x.ndim(), x.dtype());
    let partner = |rng: &mut Rng| -> usize {
        let fits: Vec<usize> = (0..v.len()).filter(|&i| broadcasts(&shape, v[i].shape())).collect();
        pick(rng, &fits)
    };
    match rng.below(19) {
        0..=2 => {
            let kinds: &[Unary] = match dt {
                DType::BOOL => &[Unary::Not],
                d if d.is_float() => &[
                    Unary::Neg,
                    Unary::Relu,
                    Unary::Abs,
                    Unary::Square,
                    Unary::Sigmoid,
                    Unary::Tanh,
                    Unary::Exp,
                    Unary::Sin,
                    Unary::SqrtAbs,
                    Unary::LogAbs1,
                ],
                _ => &[Unary::Neg, Unary::Abs, Unary::Square, Unary::Relu],
            };
            Op::Unary(pick(rng, kinds), a)
        }
        3..=5 => {
            let kinds: &[Binary] = match dt {
                d if d.is_float() => &[
                    Binary::Add,
                    Binary::Sub,
                    Binary::Mul,
                    Binary::Maximum,
                    Binary::DivSafe,
                    Binary::Lt,
                    Binary::Eq,
                ],
                DType::BOOL => &[Binary::Xor, Binary::Eq, Binary::Add, Binary::Mul],
                _ => &[
                    Binary::Add,
                    Binary::Sub,
                    Binary::Mul,
                    Binary::Maximum,
                    Binary::Idiv,
                    Binary::Lt,
                    Binary::Xor,
                ],
            };
            Op::Binary(pick(rng, kinds), a, partner(rng))
        }
        6 | 7 => {
            let mut axes: Vec<isize> = (0..nd as isize).filter(|_| rng.chance(50)).collect();
            if axes.len() == nd && nd > 0 && rng.chance(50) {
                axes.clear();
            }
            let kinds = [Reduce::Sum, Reduce::Max, Reduce::Min, Reduce::Mean];
            Op::Reduce(pick(rng, &kinds), a, axes, rng.chance(50))
        }
        8 => Op::Reshape(a, reshape_arg(rng, x.numel())),
        9 => {
            let mut order: Vec<isize> = (0..nd as isize).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i + 1));
            }
            Op::Permute(a, order)
        }
        10 => {
            let mut to: Vec<usize> =
                shape.iter().map(|&d| if d == 1 { 1 + rng.below(4) } else { d }).collect();
            if to.len() < MAX_NDIM && rng.chance(40) {
                to.insert(0, 1 + rng.below(3));
            }
            Op::Expand(a, to)
        }
        11 => Op::Pad(a, shape.iter().map(|_| (rng.below(3), rng.below(3))).collect()),
        12 => Op::Shrink(
            a,
            shape
                .iter()
                .map(|&d| {
                    let begin = rng.below(d / 2 + 1);
                    (begin, (begin + 1 + rng.below(d.max(1))).min(d).max(begin))
                })
                .collect(),
        ),
        13 => Op::Flip(a, (0..nd as isize).filter(|_| rng.chance(50)).collect()),
        14 => {
            let k = shape.last().copied().unwrap_or(1);
            let fits: Vec<usize> = (0..v.len())
                .filter(|&i| v[i].ndim() >= 1 && v[i].shape()[v[i].ndim().saturating_sub(2)] == k)
                .collect();
            if fits.is_empty() { Op::Contiguous(a) } else { Op::Matmul(a, pick(rng, &fits)) }
        }
        15 => Op::Cast(a, dtype(rng)),
        16 => {
            let c = partner(rng);
            Op::Where(c, a, partner(rng))
        }
        17 => match rng.below(3) {
            0 => Op::Cumsum(a, axis(rng, nd)),
            1 => Op::Softmax(a, axis(rng, nd)),
            _ => Op::Argmax(a, axis(rng, nd)),
        },
        _ => {
            let entries = rng.below(nd + 1);
            let idx = shape[..entries]
                .iter()
                .map(|&d| match rng.below(3) {
                    0 => Idx::Int(rng.below(d.max(1)) as isize - if rng.chance(30) { d as isize } else { 0 }),
                    _ => {
                        let step = pick(rng, &[None, Some(1), Some(2), Some(-1), Some(-2)]);
                        let bound = |rng: &mut Rng| rng.chance(50).then(|| rng.below(d + 1) as isize);
                        Idx::Slice(bound(rng), bound(rng), step)
                    }
                })
                .collect();
            Op::Get(a, idx)
        }
    }
}

/// The program of `seed`: 1 to 3 inputs and up to `max_ops` ops.
pub fn generate(seed: u64, max_ops: usize) -> Program {
    let mut rng = Rng(seed ^ 0x5EED_F022_0000_0000);
    with_default_device(&DeviceName::Cpu, || {
        let (mut steps, mut values) = (vec![], vec![]);
        for _ in 0..1 + rng.below(3) {
            let dtype = dtype(&mut rng);
            let grad = dtype.is_float() && rng.chance(70);
            let op = Op::Input { shape: shape(&mut rng), dtype, seed: rng.next_u64() >> 16, grad };
            let Ok(t) = apply(&op, &values) else { continue };
            steps.push(op);
            values.push(t);
        }
        if values.is_empty() {
            let op = Op::Input { shape: vec![3], dtype: DType::F32, seed: 1, grad: true };
            values.push(apply(&op, &values).unwrap_or_else(|e| panic!("a plain input: {e}")));
            steps.push(op);
        }
        let (inputs, want) = (steps.len(), 1 + rng.below(max_ops));
        let mut tries = 0;
        while steps.len() - inputs < want && tries < 20 * max_ops {
            tries += 1;
            let op = propose(&mut rng, &values);
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| apply(&op, &values)));
            match built {
                Ok(Ok(t)) if t.numel() <= MAX_NUMEL && t.ndim() <= MAX_NDIM => {
                    steps.push(op);
                    values.push(t);
                }
                // a panic while only building the graph is a bug worth keeping as the output
                Err(_) => {
                    steps.push(op);
                    break;
                }
                _ => {}
            }
        }
        Program { steps }
    })
}
