//! Arange folding and reduce collapse: `Tensor::arange` as the lowerer sees it folds back to its
//! index, and the one-hot reduce of an embedding becomes one gated load. Each rewrite is
//! checked by evaluating the graph before and after (the loop run iteration by iteration).

use proptest::prelude::*;
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Arg, Ops, UOp, UOpMap, exec_alu};
use wgrad_shape::{ShapeTracker, Sint};

fn sints(xs: &[i64]) -> Vec<Sint> {
    xs.iter().map(|&x| Sint::int(x)).collect()
}

/// `Tensor::arange(n)` as the lowerer sees it at the index `i`: the bits of the constant pattern
/// `[0, 1]` broadcast in blocks of `2^b`, each a masked constant times its weight.
fn arange(n: i64, i: &UOp) -> UOp {
    let bits = (n as u64).next_power_of_two().trailing_zeros() as i64;
    let size = 1i64 << bits;
    let one = UOp::index_const(1);
    (0..bits).fold(UOp::index_const(0), |acc, b| {
        let st = ShapeTracker::from_shape(&sints(&[1]))
            .and_then(|s| s.pad(&[(Sint::int(1), Sint::int(0))]))
            .and_then(|s| s.reshape(&sints(&[1, 2, 1])))
            .and_then(|s| s.expand(&sints(&[size >> (b + 1), 2, 1 << b])))
            .and_then(|s| s.reshape(&sints(&[size])))
            .and_then(|s| s.shrink(&[(Sint::int(0), Sint::int(n))]))
            .unwrap();
        let (_, valid) = st.to_indexed::<UOp>(std::slice::from_ref(i));
        acc + valid.where_(&one, &one.const_like(0)) * (1i64 << b)
    })
}

fn range(n: i64, axis: i64) -> UOp {
    UOp::range(&UOp::index_const(n), axis)
}

/// `buf[idx]` of buffer `slot` holding `dtype`, gated by `valid` if given.
fn load(dtype: DType, slot: i64, idx: UOp, valid: Option<UOp>) -> UOp {
    let buf = UOp::define_global(dtype, slot);
    let src = match valid {
        Some(v) => vec![buf.clone(), idx, v],
        None => vec![buf.clone(), idx],
    };
    UOp::load(dtype, [UOp::new(Ops::Index, buf.dtype(), src, Arg::None)])
}

/// The value of `u` with memory `mem` (by buffer slot) and the loop and thread indices `env`;
/// a `Reduce` runs its loops. A load outside its buffer panics.
fn eval(u: &UOp, mem: &[Vec<ConstValue>], env: &mut UOpMap<ConstValue>) -> ConstValue {
    if let Some(v) = env.get(u) {
        return *v;
    }
    let dt = u.dtype().scalar_dtype();
    match u.op() {
        Ops::Const => u.const_value().unwrap(),
        Ops::Cast => eval(&u.src()[0], mem, env).cast(dt),
        Ops::Load => {
            let index = &u.src()[0];
            let gated = index.src().get(2).is_some_and(|v| !eval(v, mem, env).is_truthy());
            if gated {
                return ConstValue::Int(0).cast(dt);
            }
            let Arg::Int(slot) = index.src()[0].arg() else { panic!("not a buffer") };
            let i = eval(&index.src()[1], mem, env).to_i128();
            let buf = &mem[*slot as usize];
            assert!((0..buf.len() as i128).contains(&i), "load of element {i} of {}", buf.len());
            buf[i as usize]
        }
        Ops::Reduce => {
            let Arg::Op(op) = u.arg() else { panic!("reduce arg") };
            let (values, ranges) = u.reduce_parts();
            let mut points = vec![vec![]];
            for r in ranges {
                let n = r.src()[0].const_int().unwrap() as i64;
                points = points
                    .into_iter()
                    .flat_map(|p: Vec<i64>| (0..n).map(move |v| [p.clone(), vec![v]].concat()))
                    .collect();
            }
            let mut acc = wgrad_ops::identity_element(*op, dt);
            for p in points {
                let mut inner = env.clone();
                inner.extend(ranges.iter().zip(p).map(|(r, v)| (r.clone(), ConstValue::Int(v))));
                for value in values {
                    let v = eval(value, mem, &mut inner);
                    acc = exec_alu(*op, dt, &[acc, v]).unwrap();
                }
            }
            acc
        }
        op => {
            let src: Vec<ConstValue> = u.src().iter().map(|s| eval(s, mem, env)).collect();
            exec_alu(op, u.dtype(), &src).unwrap_or_else(|e| panic!("{op}: {e}"))
        }
    }
}

fn has(u: &UOp, op: Ops) -> bool {
    u.toposort().iter().any(|x| x.op() == op)
}

#[test]
fn arange_folds_back_to_its_index() {
    for n in (1..=130).chain([1000, 30522, 65536]) {
        let r = range(n, 0);
        assert_eq!(arange(n, &r).simplify(), r.simplify(), "arange({n})");
        let g = UOp::special("gidx0", n);
        assert_eq!(arange(n, &g).simplify(), g.simplify(), "arange({n}) over a thread index");
    }
    // an unrolled loop: lane k of a loop unrolled by 4
    for k in 0..4 {
        let i = range(250, 0) * 4 + k;
        assert_eq!(arange(1000, &i).simplify(), i.simplify(), "lane {k}");
    }
}

#[test]
fn digits_join_in_any_order_and_scale() {
    let x = UOp::variable("x", -50, 200);
    let d = |div: i64, m: i64| (x.idiv(div) % m) * div;
    let joined = (d(4, 2) * 3 + &x % 2 * 3 + d(2, 2) * 3).simplify();
    assert_eq!(joined.render(), "((x%8)*3)");
    assert_eq!((&x % 6 + x.idiv(6) * 6).simplify(), x);
    assert_eq!((x.idiv(6) * 6 + (&x % 3) + (x.idiv(3) % 2) * 3).simplify(), x);
    // not the digits right above: unchanged
    let apart = &x % 2 + (x.idiv(4) % 2) * 4;
    assert_eq!(apart.simplify().render(), "((((x//4)%2)*4)+(x%2))");
}

/// `sum over r < vocab of (ids[t] == arange(r) ? table[r * dim + d] : 0)`: the embedding of token
/// `t` at column `d`, lowered without opts.
fn embedding(vocab: i64, dim: i64, t: &UOp, d: &UOp) -> (UOp, UOp) {
    let r = range(vocab, 2);
    let id = load(DType::I32, 1, t.clone(), None);
    let row = load(DType::F32, 2, &r * dim + d, None);
    let picked = id.cmp_ne(arange(vocab, &r)).logical_not().where_(&row, &row.const_like(0.0));
    (UOp::new(Ops::Reduce, DType::F32, [picked, r.clone()], Arg::Op(Ops::Add)), r)
}

#[test]
fn embedding_reduce_collapses_into_one_gated_load() {
    let (t, d) = (UOp::special("gidx1", 16), UOp::special("gidx0", 384));
    let (sum, _) = embedding(30522, 384, &t, &d);
    let folded = sum.simplify();
    assert!(!has(&folded, Ops::Reduce) && !has(&folded, Ops::Range), "{}", folded.listing());
    let loads: Vec<UOp> = folded.toposort().into_iter().filter(|u| u.op() == Ops::Load).collect();
    assert_eq!(loads.len(), 2, "the id and one row element: {}", folded.listing());
    assert_eq!(folded.op(), Ops::Load, "the row load is gated, no select: {}", folded.listing());
    assert_eq!(folded.src()[0].src().len(), 3, "gated: {}", folded.listing());
}

#[test]
fn other_reduces_stay() {
    let r = range(100, 1);
    let x = load(DType::F32, 1, r.clone(), None);
    // a masked sum keeps a range of iterations, not one
    let masked = r.cmp_lt(UOp::special("gidx0", 100)).where_(&x, &x.const_like(0.0));
    let red = UOp::new(Ops::Reduce, DType::F32, [masked, r.clone()], Arg::Op(Ops::Add));
    assert!(has(&red.simplify(), Ops::Reduce));
    // a max over one-hot rows is not a sum
    let hot = UOp::special("gidx0", 100).cmp_ne(&r).where_(&x.const_like(0.0), &x);
    let red = UOp::new(Ops::Reduce, DType::F32, [hot, r.clone()], Arg::Op(Ops::Max));
    assert!(has(&red.simplify(), Ops::Reduce));
}

/// The shapes of picked value the property test builds.
#[derive(Debug, Clone, Copy)]
enum Picked {
    /// `table[r*dim + d]`
    Row,
    /// `table[r*dim + d] * 2 + 1`, nonzero at a zero load
    Affine,
    /// `half(table[r*dim + d])` summed in float32 (`sum` of a half tensor)
    Half,
    /// `table[r*dim + d]` where also `d < 2`: a second condition
    Masked,
    /// `table[(r + shift)*dim + d]` compared as `ids[t] != r + shift`: an offset index
    Shifted,
}

fn picked() -> impl Strategy<Value = Picked> {
    prop_oneof![
        Just(Picked::Row),
        Just(Picked::Affine),
        Just(Picked::Half),
        Just(Picked::Masked),
        Just(Picked::Shifted)
    ]
}

/// The one-hot sum of `kind` over a vocabulary of `vocab` rows of `dim`; the token `t` and
/// column `d` are thread indices.
fn one_hot_sum(kind: Picked, vocab: i64, dim: i64, t: &UOp, d: &UOp) -> UOp {
    let r = range(vocab, 2);
    let id = load(DType::I32, 1, t.clone(), None);
    let (at, shift) = match kind {
        Picked::Shifted => (&r + 3, 3),
        _ => (r.clone(), 0),
    };
    let row = load(DType::F32, 2, &at * dim + d - shift * dim, None);
    let eq = id.cmp_ne(arange(vocab, &r) + shift).logical_not();
    let (cond, value) = match kind {
        Picked::Row | Picked::Shifted => (eq, row),
        Picked::Affine => (eq, &row * 2.0 + 1.0),
        Picked::Half => (eq, row.cast(DType::F16).cast(DType::F32)),
        Picked::Masked => (&eq & &d.cmp_lt(2), row),
    };
    let picked = cond.where_(&value, &value.const_like(0.0));
    UOp::new(Ops::Reduce, DType::F32, [picked, r], Arg::Op(Ops::Add))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The collapsed sum equals the loop for ids inside and outside the vocabulary (zero rows),
    /// and no load leaves its buffer.
    #[test]
    fn collapsed_sums_equal_their_loops(
        kind in picked(),
        vocab in 2i64..40,
        dim in 1i64..4,
        ids in proptest::collection::vec(-4i64..44, 1..4),
        seed in 0u64..1000,
    ) {
        let (t, d) = (UOp::special("gidx1", ids.len() as i64), UOp::special("gidx0", dim));
        let sum = one_hot_sum(kind, vocab, dim, &t, &d);
        let folded = sum.simplify();
        prop_assert!(!has(&folded, Ops::Reduce), "{:?}: {}", kind, folded.listing());
        let table: Vec<ConstValue> = (0..vocab * dim)
            .map(|i| ConstValue::Float(((i as u64 * 7919 + seed) % 97) as f64 / 8.0 - 6.0))
            .collect();
        let mem = vec![vec![], ids.iter().map(|&i| ConstValue::Int(i)).collect(), table];
        for ti in 0..ids.len() as i64 {
            for di in 0..dim {
                let mut env = UOpMap::default();
                env.insert(t.clone(), ConstValue::Int(ti));
                env.insert(d.clone(), ConstValue::Int(di));
                let (want, got) = (eval(&sum, &mem, &mut env.clone()), eval(&folded, &mem, &mut env));
                prop_assert_eq!(want, got, "{:?} id {} column {}", kind, ids[ti as usize], di);
            }
        }
    }
}
