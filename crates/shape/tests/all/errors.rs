//! Bad movement-op arguments give typed errors whose messages name the shapes.

use crate::common;

use common::{m, s};
use wgrad_shape::{ShapeError, ShapeTracker, Sint, Variable, View};

fn st(shape: &[i64]) -> ShapeTracker {
    ShapeTracker::from_shape(&s(shape)).unwrap()
}

#[test]
fn negative_dims() {
    let e = ShapeTracker::from_shape(&s(&[2, -1])).unwrap_err();
    assert_eq!(e, ShapeError::NegativeDim { shape: s(&[2, -1]) });
    assert_eq!(e.to_string(), "negative dimension in shape (2, -1)");
    assert!(matches!(st(&[2]).reshape(&s(&[-2, -1])), Err(ShapeError::NegativeDim { .. })));
    assert!(matches!(st(&[1]).expand(&s(&[-3])), Err(ShapeError::NegativeDim { .. })));
}

#[test]
fn reshape_to_another_size() {
    let e = st(&[2, 3]).reshape(&s(&[4, 2])).unwrap_err();
    assert_eq!(e.to_string(), "cannot reshape (2, 3) to (4, 2): sizes differ");
    let p = st(&[2, 3]).permute(&[1, 0]).unwrap();
    assert!(matches!(p.reshape(&s(&[7])), Err(ShapeError::ReshapeSize { .. })));
}

#[test]
fn reshape_non_contiguous_to_mismatched_symbolic_shape() {
    let n = Variable::new("n", 1, 10).unwrap();
    let p = st(&[2, 3]).permute(&[1, 0]).unwrap();
    let e = p.reshape(&[Sint::from(6), Sint::var(&n)]).unwrap_err();
    assert!(matches!(e, ShapeError::SymbolicReshape { .. } | ShapeError::ReshapeSize { .. }), "{e}");
    let e = p.reshape(&[Sint::from(2), n.bind(3).unwrap()]).unwrap_err();
    assert_eq!(e.to_string(), "cannot reshape non-contiguous (3, 2) to symbolic (2, n)");
}

#[test]
fn permute_with_repeated_missing_or_out_of_range_axis() {
    for axes in [&[0, 0][..], &[1][..], &[0, 2][..], &[0, 1, 2][..]] {
        let e = st(&[2, 3]).permute(axes).unwrap_err();
        assert_eq!(e, ShapeError::Permute { axes: axes.to_vec(), shape: s(&[2, 3]) });
    }
    assert_eq!(
        st(&[2, 3]).permute(&[0, 0]).unwrap_err().to_string(),
        "invalid permutation [0, 0] of shape (2, 3)"
    );
}

#[test]
fn expand_of_dim_that_is_not_one() {
    let e = st(&[2, 3]).expand(&s(&[4, 3])).unwrap_err();
    assert_eq!(e.to_string(), "cannot expand (2, 3) to (4, 3)");
    assert!(matches!(st(&[0]).expand(&s(&[3])), Err(ShapeError::Expand { .. })));
}

#[test]
fn shrink_out_of_bounds() {
    for arg in [&[(0, 5), (0, 3)][..], &[(2, 1), (0, 3)][..], &[(-1, 1), (0, 3)][..]] {
        assert!(matches!(st(&[4, 3]).shrink(&m(arg)), Err(ShapeError::Shrink { .. })), "{arg:?}");
    }
    let e = st(&[4, 3]).shrink(&m(&[(0, 5), (0, 3)])).unwrap_err();
    assert_eq!(e.to_string(), "shrink ((0, 5), (0, 3)) out of bounds for shape (4, 3)");
}

#[test]
fn negative_pad() {
    let e = st(&[4]).pad(&m(&[(-1, 0)])).unwrap_err();
    assert_eq!(e.to_string(), "pad ((-1, 0)) is negative for shape (4,)");
}

#[test]
fn wrong_number_of_axes() {
    let t = st(&[2, 3]);
    assert_eq!(
        t.expand(&s(&[2])).unwrap_err(),
        ShapeError::AxisCount { op: "expand", got: 1, shape: s(&[2, 3]) }
    );
    assert!(matches!(t.pad(&m(&[(0, 0)])), Err(ShapeError::AxisCount { op: "pad", .. })));
    assert!(matches!(t.shrink(&m(&[(0, 1)])), Err(ShapeError::AxisCount { op: "shrink", .. })));
    assert!(matches!(t.flip(&[true]), Err(ShapeError::AxisCount { op: "flip", .. })));
    assert_eq!(t.flip(&[true]).unwrap_err().to_string(), "flip got 1 axes for shape (2, 3) (2 axes)");
}

#[test]
fn bad_view_parts() {
    assert!(matches!(
        View::new(&s(&[2, 3]), &s(&[1]), Sint::from(0), None),
        Err(ShapeError::AxisCount { op: "strides", .. })
    ));
    assert!(matches!(
        View::new(&s(&[2]), &s(&[1]), Sint::from(0), Some(&m(&[(0, 3)]))),
        Err(ShapeError::Mask { .. })
    ));
    assert!(matches!(
        View::new(&s(&[2]), &s(&[1]), Sint::from(0), Some(&m(&[]))),
        Err(ShapeError::AxisCount { op: "mask", .. })
    ));
}

#[test]
fn bind_out_of_range() {
    let n = Variable::new("n", 1, 10).unwrap();
    let e = n.bind(11).unwrap_err();
    assert_eq!(e.to_string(), "cannot bind n to 11: outside [1, 10]");
}
