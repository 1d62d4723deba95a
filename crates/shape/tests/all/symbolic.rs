//! Symbolic dims: canonical form, simplification, bounds, printing, bind/unbind, and views and
//! trackers over symbolic shapes.

use crate::common;

use common::s;
use wgrad_shape::{IndexAlgebra, ShapeTracker, Sint, VarVals, Variable};

fn var(name: &str, min: i64, max: i64) -> (Variable, Sint) {
    let v = Variable::new(name, min, max).unwrap();
    let x = Sint::var(&v);
    (v, x)
}

#[test]
fn sum_of_products_is_canonical() {
    let (_, a) = var("a", 1, 10);
    let (_, b) = var("b", 1, 10);
    assert_eq!(&a * &b, &b * &a);
    assert_eq!(&a + &b, &b + &a);
    assert_eq!((&a + 1) * 2, &a * 2 + 2);
    assert_eq!(&a - &a, Sint::from(0));
    assert_eq!((&a + &b) * (&a - &b), &a * &a - &b * &b);
}

#[test]
fn division_and_modulo_simplify() {
    let (_, a) = var("a", 1, 10);
    let (_, b) = var("b", 1, 10);
    assert_eq!((&a * 2) / 2, a);
    assert_eq!((&a * 4) % 2, 0);
    assert_eq!((&a * &b) / &a, b);
    assert_eq!((&a * &b) % &b, 0);
    assert_eq!((&a * 6 + 3) / 3, &a * 2 + 1);
    assert_eq!((&a * 4 + 6) % 4, Sint::from(2));
    assert_eq!((&a * 4) / 8, &a / 2);
    assert_eq!((&a / 2) / 3, &a / 6);
    assert_eq!((&a % 8) % 4, &a % 4);
}

#[test]
fn index_style_unravel_simplifies() {
    let (_, i) = var("i", 0, 3);
    let (_, j) = var("j", 0, 3);
    let lin = &i * 4 + &j;
    assert_eq!(&lin / 4, i);
    assert_eq!(&lin % 4, j);
    assert_eq!((&i * 12 + &j * 3) / 6, (&i * 4 + &j) / 2);
}

#[test]
fn constants_fold_with_floor_semantics() {
    assert_eq!(Sint::from(7) / 2, 3);
    assert_eq!(Sint::from(-7) / 2, -4);
    assert_eq!(Sint::from(-7) % 2, 1);
    assert_eq!(Sint::from(3) * 4 + 1, 13);
    assert_eq!([2, 3, 4].map(Sint::from).iter().product::<Sint>(), 24);
}

#[test]
fn bounds() {
    let (_, a) = var("a", 1, 10);
    let (_, b) = var("b", -2, 3);
    assert_eq!(((&a * 2 + 1).vmin(), (&a * 2 + 1).vmax()), (3, 21));
    assert_eq!(((&a * &b).vmin(), (&a * &b).vmax()), (-20, 30));
    assert_eq!(((&a / 3).vmin(), (&a / 3).vmax()), (0, 3));
    assert_eq!(((&a % 4).vmin(), (&a % 4).vmax()), (0, 3));
    assert_eq!((-&a).vmax(), -1);
}

#[test]
fn comparisons_fold_when_bounds_decide() {
    let (_, a) = var("a", 1, 10);
    assert_eq!(a.lt(&Sint::from(11)).as_bool(), Some(true));
    assert_eq!(a.lt(&Sint::from(1)).as_bool(), Some(false));
    assert_eq!(a.lt(&Sint::from(5)).as_bool(), None);
    assert_eq!(a.le(&a).as_bool(), Some(true));
    assert_eq!(a.smax(&Sint::from(0)), Some(a.clone()));
    assert_eq!(a.smin(&Sint::from(0)), Some(Sint::from(0)));
    assert_eq!(a.smax(&Sint::from(5)), None);
}

#[test]
fn comparison_of_linear_index_keeps_only_the_outer_term() {
    let (_, i) = var("i", 0, 15);
    let (_, j) = var("j", 0, 31);
    let (_, k) = var("k", 0, 3);
    let lin = &i * 128 + &j * 4 + &k;
    assert_eq!(lin.lt(&Sint::from(512)), i.lt(&Sint::from(4)));
    assert_eq!(Sint::from(127).lt(&lin), Sint::from(0).lt(&i));
}

#[test]
fn display_like_tinygrad() {
    let (_, a) = var("a", 1, 10);
    let (_, b) = var("b", 1, 10);
    let (_, x) = var("x", 0, 10);
    assert_eq!(a.to_string(), "a");
    assert_eq!((&a * 2).to_string(), "(a*2)");
    assert_eq!((&a * &b + 1).to_string(), "((a*b)+1)");
    assert_eq!((&a - &b).to_string(), "(a-b)");
    assert_eq!((&a * 2 - 3).to_string(), "((a*2)-3)");
    assert_eq!(((&x + 1) / 2).to_string(), "((x+1)//2)");
    assert_eq!((&x % 3).to_string(), "(x%3)");
    assert_eq!(x.lt(&Sint::from(4)).to_string(), "(x<4)");
    assert_eq!(Sint::from(-3).to_string(), "-3");
}

#[test]
fn bind_and_unbind() {
    let v = Variable::new("n", 1, 10).unwrap();
    let bound = v.bind(4).unwrap();
    assert_eq!(bound.vars().into_iter().collect::<Vec<_>>(), vec![v.clone()]);
    let (plain, vals) = (&bound * 2).unbind();
    assert_eq!(plain, Sint::var(&v) * 2);
    assert_eq!(vals, VarVals::from([(v.clone(), 4)]));
    assert_eq!((&bound * 2).bound_value(), 8);
    assert_ne!(bound, Sint::var(&v));
}

#[test]
fn substitute_gives_values() {
    let (a_var, a) = var("a", 1, 10);
    let (b_var, b) = var("b", 1, 10);
    let e = (&a * &b + 3) / 2;
    let vals = VarVals::from([(a_var.clone(), 3), (b_var, 5)]);
    assert_eq!(e.substitute(&vals), 9);
    assert_eq!(e.substitute(&VarVals::from([(a_var, 2)])), (&b * 2 + 3) / 2);
}

#[test]
fn to_algebra_rebuilds_in_another_algebra() {
    let (a_var, a) = var("a", 1, 10);
    let e = (&a * 3 + 1) % 4;
    let rebuilt: Sint = e.to_algebra();
    assert_eq!(rebuilt, e);
    assert_eq!(<Sint as IndexAlgebra>::var(&a_var), a);
}

// --- symbolic shapes in views and trackers ---

#[test]
fn symbolic_contiguous_tracker() {
    let (_, n) = var("n", 1, 10);
    let st = ShapeTracker::from_shape(&[n.clone(), Sint::from(4)]).unwrap();
    assert!(st.contiguous());
    assert_eq!(st.views()[0].strides(), &[Sint::from(4), Sint::from(1)]);
    assert_eq!(st.size(), 40);
    let flat = st.reshape(&[&n * 4]).unwrap();
    assert!(flat.contiguous());
    let back = flat.reshape(&[n.clone(), Sint::from(2), Sint::from(2)]).unwrap();
    assert_eq!(back.views().len(), 1);
}

#[test]
fn symbolic_permute_and_index() {
    let (nv, n) = var("n", 1, 10);
    let st = ShapeTracker::from_shape(&[n.clone(), Sint::from(3)]).unwrap().permute(&[1, 0]).unwrap();
    assert_eq!(st.views()[0].strides(), &[Sint::from(1), Sint::from(3)]);
    let (i, j) = (Variable::new("i", 0, 2).unwrap(), Variable::new("j", 0, 9).unwrap());
    let (idx, valid) = st.to_indexed(&[Sint::var(&i), Sint::var(&j)]);
    assert_eq!(idx, Sint::var(&i) + Sint::var(&j) * 3);
    assert_eq!(valid, 1);
    assert!(st.vars().contains(&nv));
}

#[test]
fn symbolic_shrink_and_pad() {
    let (_, n) = var("n", 1, 10);
    let st = ShapeTracker::from_shape(&s(&[10, 4])).unwrap();
    let shrunk = st.shrink(&[(Sint::from(0), n.clone()), (Sint::from(0), Sint::from(4))]).unwrap();
    assert_eq!(shrunk.shape(), &[n.clone(), Sint::from(4)]);
    assert_eq!(shrunk.size(), 40);
    let padded = shrunk.pad(&[(Sint::from(1), Sint::from(0)), (Sint::from(0), Sint::from(0))]).unwrap();
    assert_eq!(padded.shape(), &[&n + 1, Sint::from(4)]);
    assert!(padded.views()[0].mask().is_some());
}

#[test]
fn symbolic_expand() {
    let (_, n) = var("n", 1, 10);
    let st = ShapeTracker::from_shape(&s(&[1, 4])).unwrap().expand(&[n.clone(), Sint::from(4)]).unwrap();
    assert_eq!(st.views()[0].strides(), s(&[0, 1]).as_slice());
    assert_eq!(st.shape()[0], n);
}

#[test]
fn bound_tracker_unbinds_to_plain_variables() {
    let v = Variable::new("n", 1, 10).unwrap();
    let bound = v.bind(3).unwrap();
    let st = ShapeTracker::from_shape(&[bound.clone(), Sint::from(4)]).unwrap();
    let (plain, vals) = st.unbind();
    assert_eq!(plain, ShapeTracker::from_shape(&[Sint::var(&v), Sint::from(4)]).unwrap());
    assert_eq!(vals, VarVals::from([(v, 3)]));
}

#[test]
fn non_contiguous_reshape_to_bound_shape_with_same_values() {
    let v = Variable::new("n", 1, 10).unwrap();
    let st = ShapeTracker::from_shape(&s(&[3, 4])).unwrap().permute(&[1, 0]).unwrap();
    let r = st.reshape(&[Sint::from(4), v.bind(3).unwrap()]).unwrap();
    assert_eq!(r.views().len(), 1);
    assert_eq!(r.views()[0].strides(), s(&[1, 4]).as_slice());
    assert!(st.reshape(&[Sint::from(4), v.bind(4).unwrap()]).is_err());
}

#[test]
fn real_strides_of_symbolic_view() {
    let (_, n) = var("n", 1, 10);
    let st = ShapeTracker::from_shape(&[Sint::from(2), n.clone()]).unwrap();
    assert_eq!(st.real_strides(false), vec![Some(n.clone()), Some(Sint::from(1))]);
    assert_eq!(st.unit_stride_axes(false), vec![1]);
}
