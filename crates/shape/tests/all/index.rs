//! Index and validity expressions: what `to_indexed` emits, printed through a rendering
//! algebra so that every emitted operation is visible (no `*1`, `+0` or full-range checks).

use crate::common;

use common::{m, s, view};
use wgrad_shape::{IndexAlgebra, ShapeTracker, Variable};

/// Prints exactly the operations it is given.
#[derive(Clone, Debug)]
struct Render(String);

impl IndexAlgebra for Render {
    fn int(v: i64) -> Self {
        Render(v.to_string())
    }
    fn bool(v: bool) -> Self {
        Render(v.to_string())
    }
    fn var(v: &Variable) -> Self {
        Render(v.name().to_string())
    }
    fn add(&self, rhs: &Self) -> Self {
        Render(format!("({}+{})", self.0, rhs.0))
    }
    fn mul(&self, rhs: &Self) -> Self {
        Render(format!("({}*{})", self.0, rhs.0))
    }
    fn floordiv(&self, rhs: &Self) -> Self {
        Render(format!("({}//{})", self.0, rhs.0))
    }
    fn rem(&self, rhs: &Self) -> Self {
        Render(format!("({}%{})", self.0, rhs.0))
    }
    fn lt(&self, rhs: &Self) -> Self {
        Render(format!("({}<{})", self.0, rhs.0))
    }
    fn and(&self, rhs: &Self) -> Self {
        Render(format!("({}&{})", self.0, rhs.0))
    }
}

fn idxs(n: usize) -> Vec<Render> {
    (0..n).map(|i| Render(format!("i{i}"))).collect()
}

fn render(st: &ShapeTracker) -> (String, String) {
    let (idx, valid) = st.to_indexed(&idxs(st.shape().len()));
    (idx.0, valid.0)
}

fn st(shape: &[i64]) -> ShapeTracker {
    ShapeTracker::from_shape(&s(shape)).unwrap()
}

#[test]
fn contiguous_skips_unit_stride_and_zero_offset() {
    assert_eq!(render(&st(&[2, 3])), ("((i0*3)+i1)".into(), "true".into()));
    assert_eq!(render(&st(&[5])), ("i0".into(), "true".into()));
    assert_eq!(render(&st(&[])), ("0".into(), "true".into()));
}

#[test]
fn broadcast_and_size_one_dims_emit_nothing() {
    assert_eq!(render(&st(&[1, 3]).expand(&s(&[4, 3])).unwrap()).0, "i1");
    assert_eq!(render(&st(&[3, 1])).0, "i0");
}

#[test]
fn offset_comes_first() {
    let t = st(&[4, 4]).shrink(&m(&[(1, 3), (2, 4)])).unwrap();
    assert_eq!(render(&t).0, "((6+(i0*4))+i1)");
}

#[test]
fn pad_checks_only_the_padded_sides() {
    let t = st(&[4]).pad(&m(&[(1, 0)])).unwrap();
    assert_eq!(render(&t), ("(-1+i0)".into(), "(0<i0)".into()));
    let t = st(&[4]).pad(&m(&[(0, 2)])).unwrap();
    assert_eq!(render(&t), ("i0".into(), "(i0<4)".into()));
    let t = st(&[2, 2]).pad(&m(&[(1, 1), (0, 0)])).unwrap();
    assert_eq!(render(&t).1, "((0<i0)&(i0<3))");
}

#[test]
fn flip_multiplies_by_minus_one() {
    let t = st(&[3]).flip(&[true]).unwrap();
    assert_eq!(render(&t).0, "(2+(i0*-1))");
}

#[test]
fn earlier_views_unravel_with_div_and_mod() {
    let t = st(&[4, 4, 4]).permute(&[2, 0, 1]).unwrap().reshape(&s(&[16, 4])).unwrap();
    assert_eq!(t.views().len(), 2);
    let (idx, valid) = render(&t);
    assert_eq!(valid, "true");
    // the outermost dim needs no %, the innermost no //1
    assert_eq!(idx, "((((i0*4)+i1)//16)+((((i0*4)+i1)%16)*4))");
    assert!(!idx.contains("//1)") && !idx.contains("*1)") && !idx.contains("+0"), "{idx}");
}

#[test]
fn masked_view_with_single_element_dim() {
    let v = view(&[4, 3], &[3, 1], 0, Some(&[(2, 3), (0, 3)]));
    let (idx, valid) = ShapeTracker::from_view(v).to_indexed(&idxs(2));
    assert_eq!(idx.0, "(6+i1)");
    assert_eq!(valid.0, "((1<i0)&(i0<3))");
}
