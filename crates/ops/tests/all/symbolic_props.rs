//! Property: random integer expressions over bounded variables evaluate identically before
//! and after the symbolic rewrite, on random assignments within the bounds.

use proptest::prelude::*;
use wgrad_dtype::ConstValue;
use wgrad_ops::{Arg, Ops, UOp, UOpMap, exec_alu};

const VARS: [(&str, i64, i64); 3] = [("x", 0, 10), ("y", -5, 5), ("z", 0, 3)];

#[derive(Debug, Clone)]
enum E {
    Var(usize),
    Const(i64),
    Add(Box<E>, Box<E>),
    Mul(Box<E>, Box<E>),
    Div(Box<E>, i64),
    Mod(Box<E>, i64),
    Max(Box<E>, Box<E>),
    Neg(Box<E>),
    Select(Box<E>, Box<E>, Box<E>, Box<E>),
}

fn expr() -> impl Strategy<Value = E> {
    let leaf = prop_oneof![(0..3usize).prop_map(E::Var), (-6i64..=8).prop_map(E::Const)];
    let divisor = prop_oneof![1i64..=9, -4i64..=-1];
    leaf.prop_recursive(4, 24, 2, move |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Add(a.into(), b.into())),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Mul(a.into(), b.into())),
            (inner.clone(), divisor.clone()).prop_map(|(a, d)| E::Div(a.into(), d)),
            (inner.clone(), divisor.clone()).prop_map(|(a, d)| E::Mod(a.into(), d)),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Max(a.into(), b.into())),
            inner.clone().prop_map(|a| E::Neg(a.into())),
            (inner.clone(), inner.clone(), inner.clone(), inner.clone()).prop_map(|(a, b, c, d)| E::Select(
                a.into(),
                b.into(),
                c.into(),
                d.into()
            )),
        ]
    })
}

fn build(e: &E) -> UOp {
    match e {
        E::Var(i) => UOp::variable(VARS[*i].0, VARS[*i].1, VARS[*i].2),
        E::Const(c) => UOp::index_const(*c),
        E::Add(a, b) => build(a) + build(b),
        E::Mul(a, b) => build(a) * build(b),
        E::Div(a, d) => build(a).idiv(*d),
        E::Mod(a, d) => build(a) % *d,
        E::Max(a, b) => build(a).maximum(build(b)),
        E::Neg(a) => -build(a),
        E::Select(a, b, c, d) => build(a).cmp_lt(build(b)).where_(&build(c), &build(d)),
    }
}

fn eval(u: &UOp, env: &[i64; 3]) -> ConstValue {
    let mut vals: UOpMap<ConstValue> = UOpMap::default();
    for n in u.toposort() {
        let v = match (n.op(), n.arg()) {
            (Ops::Const, Arg::Const(c)) => *c,
            (Ops::DefineVar, Arg::Var(var)) => {
                let i = VARS.iter().position(|(name, ..)| *name == var.name()).unwrap();
                ConstValue::Int(env[i])
            }
            (op, _) => {
                let args: Vec<ConstValue> = n.src().iter().map(|s| vals[s]).collect();
                exec_alu(op, n.dtype(), &args).unwrap()
            }
        };
        vals.insert(n, v);
    }
    vals[u]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn simplify_preserves_value(e in expr(), x in 0i64..=10, y in -5i64..=5, z in 0i64..=3) {
        let u = build(&e);
        let s = u.simplify();
        let env = [x, y, z];
        prop_assert_eq!(eval(&u, &env), eval(&s, &env), "{} -> {}", u.render(), s.render());
        // the simplified bounds contain the value
        let value = eval(&s, &env).to_i64();
        let (lo, hi) = s.int_bounds().unwrap();
        prop_assert!(lo <= i128::from(value) && i128::from(value) <= hi, "{} not in [{lo}, {hi}] for {}", value, s.render());
    }
}
