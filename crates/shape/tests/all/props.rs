//! Property tests: random chains of movement ops against a brute-force simulation that
//! materializes the buffer's element ids (-1 for padding) and moves them around.

use crate::common;

use common::{Arr, Op, check, positions, sints};
use proptest::prelude::*;
use wgrad_shape::{ShapeTracker, Sint, VarVals, Variable};

/// splitmix64: turns one proptest seed into a stream of choices.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n.max(1) as u64) as usize
    }
}

const MAX_ELEMS: usize = 64;

/// A random valid op for `shape`; `allowed` picks from the kinds in order reshape, permute,
/// expand, pad, shrink, flip.
fn random_op(shape: &[usize], seed: u64, allowed: &[usize]) -> Op {
    let mut r = Rng(seed);
    let n: usize = shape.iter().product();
    match allowed[r.below(allowed.len())] {
        0 => {
            let mut dims = vec![];
            if n == 0 {
                dims.push(0);
                (0..r.below(3)).for_each(|_| dims.push(r.below(4) + 1));
            } else {
                let mut rest = n;
                while rest > 1 && dims.len() < 3 {
                    let divs: Vec<usize> = (2..=rest).filter(|d| rest.is_multiple_of(*d)).collect();
                    let d = divs[r.below(divs.len())];
                    dims.push(d);
                    rest /= d;
                }
                if rest > 1 {
                    dims.push(rest);
                }
                while dims.len() < 4 && r.below(3) == 0 {
                    dims.push(1);
                }
            }
            for i in (1..dims.len()).rev() {
                dims.swap(i, r.below(i + 1));
            }
            Op::Reshape(dims)
        }
        1 => {
            let mut ax: Vec<usize> = (0..shape.len()).collect();
            for i in (1..ax.len()).rev() {
                ax.swap(i, r.below(i + 1));
            }
            Op::Permute(ax)
        }
        2 => {
            let (mut out, mut size) = (shape.to_vec(), n);
            for d in out.iter_mut().filter(|d| **d == 1) {
                let e = r.below(4) + 1;
                if size * e <= MAX_ELEMS {
                    *d = e;
                    size *= e;
                }
            }
            Op::Expand(out)
        }
        3 => {
            let arg: Vec<(usize, usize)> = shape.iter().map(|_| (r.below(3), r.below(3))).collect();
            let grown: usize = shape.iter().zip(&arg).map(|(s, (b, e))| s + b + e).product();
            if grown > MAX_ELEMS { Op::Pad(shape.iter().map(|_| (0, 0)).collect()) } else { Op::Pad(arg) }
        }
        4 => Op::Shrink(
            shape
                .iter()
                .map(|&s| match (s, r.below(8)) {
                    (0, _) => (0, 0),
                    (_, 0) => (s / 2, s / 2), // now and then an empty window
                    _ => {
                        let b = r.below(s);
                        (b, b + 1 + r.below(s - b))
                    }
                })
                .collect(),
        ),
        _ => Op::Flip(shape.iter().map(|_| r.below(2) == 1).collect()),
    }
}

fn initial_shape() -> impl Strategy<Value = Vec<usize>> {
    let dim = prop_oneof![1 => Just(0usize), 12 => 1usize..=5];
    prop::collection::vec(dim, 0..=4).prop_map(|mut s| {
        while s.iter().product::<usize>() > MAX_ELEMS {
            let i = (0..s.len()).max_by_key(|i| s[*i]).unwrap_or(0);
            s[i] -= 1;
        }
        s
    })
}

fn run_chain(shape: &[usize], seeds: &[u64], allowed: &[usize]) -> (ShapeTracker, Arr, Vec<Op>) {
    let mut st = ShapeTracker::from_shape(&sints(shape)).unwrap();
    let mut arr = Arr::new(shape);
    let mut ops = vec![];
    for seed in seeds {
        let op = random_op(&arr.shape, *seed, allowed);
        st = op.apply_tracker(&st);
        arr = op.apply_arr(&arr);
        ops.push(op);
    }
    (st, arr, ops)
}

/// The same check through symbolic `Sint` indices, substituted per element.
fn check_symbolic(st: &ShapeTracker, arr: &Arr) -> Result<(), TestCaseError> {
    let vars: Vec<Variable> = arr
        .shape
        .iter()
        .enumerate()
        .map(|(i, s)| Variable::new(&format!("i{i}"), 0, (*s as i64 - 1).max(0)).unwrap())
        .collect();
    let (idx, valid) = st.to_indexed(&vars.iter().map(Sint::var).collect::<Vec<_>>());
    for p in positions(&arr.shape) {
        let vals: VarVals = vars.iter().cloned().zip(p.iter().map(|x| *x as i64)).collect();
        let want = arr.at(&p);
        prop_assert_eq!(valid.substitute(&vals).as_bool(), Some(want >= 0), "valid {} at {:?}", valid, p);
        if want >= 0 {
            prop_assert_eq!(idx.substitute(&vals).as_int(), Some(want), "index {} at {:?}", idx, p);
        }
    }
    Ok(())
}

/// Every op kind, reshape twice as likely: it is what stacks views.
const ALL: [usize; 7] = [0, 0, 1, 2, 3, 4, 5];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn tracker_matches_simulation(shape in initial_shape(), seeds in prop::collection::vec(any::<u64>(), 0..=8)) {
        let (st, arr, _) = run_chain(&shape, &seeds, &ALL);
        check(&st, &arr).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn symbolic_index_matches_simulation(shape in initial_shape(), seeds in prop::collection::vec(any::<u64>(), 0..=8)) {
        let (st, arr, _) = run_chain(&shape, &seeds, &ALL);
        check_symbolic(&st, &arr)?;
    }

    #[test]
    fn simplify_keeps_index_and_valid(shape in initial_shape(), seeds in prop::collection::vec(any::<u64>(), 0..=8)) {
        let (st, arr, _) = run_chain(&shape, &seeds, &ALL);
        let simple = st.simplify();
        prop_assert!(simple.views().len() <= st.views().len());
        check(&simple, &arr).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn invert_composes_to_identity(shape in initial_shape(), seeds in prop::collection::vec(any::<u64>(), 0..=8), all in any::<bool>()) {
        let allowed: &[usize] = if all { &ALL } else { &[0, 1, 5] };
        let (st, _, _) = run_chain(&shape, &seeds, allowed);
        let inv = st.invert(&sints(&shape));
        prop_assert!(all || inv.is_some(), "permute/flip/reshape chains invert: {:?}", st.views());
        if let Some(inv) = inv {
            let both = st.compose(&inv);
            check(&both, &Arr::new(&shape)).map_err(TestCaseError::fail)?;
        }
    }
}
