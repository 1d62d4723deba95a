//! ShapeTracker: movement ops checked element by element against the simulation, view
//! stacking and simplification, size, contiguity, real strides and masked axes.

use crate::common;

use common::{Checked, m, s, tracker, view};
use wgrad_shape::{ShapeTracker, Sint};

fn st(shape: &[i64]) -> ShapeTracker {
    ShapeTracker::from_shape(&s(shape)).unwrap()
}

fn some(xs: &[Option<i64>]) -> Vec<Option<Sint>> {
    xs.iter().map(|x| x.map(Sint::from)).collect()
}

// --- single ops on a (7, 4) tracker ---

#[test]
fn noop_is_contiguous() {
    assert!(Checked::new(&[7, 4]).st.contiguous());
}

#[test]
fn reshape_keeps_contiguity() {
    assert!(Checked::new(&[7, 4]).reshape(&[7, 1, 4]).st.contiguous());
    assert!(Checked::new(&[7, 4]).reshape(&[28]).st.contiguous());
}

#[test]
fn permute_breaks_contiguity() {
    assert!(!Checked::new(&[7, 4]).permute(&[1, 0]).st.contiguous());
}

#[test]
fn double_permute_restores_contiguity() {
    assert!(Checked::new(&[7, 4]).permute(&[1, 0]).permute(&[1, 0]).st.contiguous());
}

#[test]
fn shrink_breaks_contiguity() {
    assert!(!Checked::new(&[7, 4]).shrink(&[(1, 2), (0, 4)]).st.contiguous());
}

#[test]
fn permute_of_size_one_dims_stays_contiguous() {
    assert!(Checked::new(&[7, 4]).reshape(&[7, 1, 4]).permute(&[0, 2, 1]).st.contiguous());
    assert!(Checked::new(&[7, 4]).reshape(&[7, 1, 4]).permute(&[0, 1, 2]).st.contiguous());
    assert!(!Checked::new(&[7, 4]).reshape(&[4, 7]).permute(&[1, 0]).st.contiguous());
}

#[test]
fn flips() {
    Checked::new(&[7, 4]).flip(&[true, false]);
    Checked::new(&[7, 4]).flip(&[false, true]);
    Checked::new(&[7, 4]).flip(&[true, true]);
    assert!(Checked::new(&[7, 4]).flip(&[true, true]).flip(&[true, true]).st.contiguous());
}

#[test]
fn slices() {
    Checked::new(&[7, 4]).shrink(&[(1, 7), (0, 4)]);
    Checked::new(&[7, 4]).shrink(&[(0, 7), (1, 3)]);
    Checked::new(&[7, 4]).shrink(&[(2, 3), (1, 2)]);
    Checked::new(&[7, 4]).shrink(&[(1, 5), (1, 3)]).permute(&[1, 0]);
    Checked::new(&[7, 4]).shrink(&[(1, 2), (0, 4)]).expand(&[3, 4]);
}

#[test]
fn expand_then_reshape_and_back() {
    Checked::new(&[7, 4]).reshape(&[7, 4, 1]).expand(&[7, 4, 3]).reshape(&[28, 3]);
    Checked::new(&[7, 4]).reshape(&[1, 28]).expand(&[2, 28]).reshape(&[2, 7, 4]);
}

#[test]
fn combo() {
    Checked::new(&[7, 4])
        .reshape(&[1, 28])
        .expand(&[3, 28])
        .permute(&[1, 0])
        .flip(&[true, false])
        .shrink(&[(2, 20), (1, 3)])
        .pad(&[(1, 1), (0, 2)])
        .reshape(&[20, 2, 2]);
}

// --- padding ---

#[test]
fn pad_variants() {
    Checked::new(&[7, 4]).pad(&[(1, 1), (2, 2)]);
    Checked::new(&[7, 4]).pad(&[(0, 1), (2, 0)]);
    Checked::new(&[7, 4]).pad(&[(1, 1), (2, 2)]).shrink(&[(0, 9), (2, 8)]);
    Checked::new(&[7, 4]).pad(&[(1, 1), (0, 0)]).pad(&[(0, 0), (1, 1)]);
    Checked::new(&[7, 4]).pad(&[(1, 1), (2, 2)]).permute(&[1, 0]);
    Checked::new(&[7, 4]).pad(&[(1, 1), (2, 2)]).flip(&[true, false]);
    Checked::new(&[7, 1]).pad(&[(1, 0), (0, 0)]).expand(&[8, 3]);
}

#[test]
fn pad_one_by_one_and_two_by_two() {
    Checked::new(&[1, 1]).pad(&[(1, 1), (1, 1)]);
    Checked::new(&[2, 2]).pad(&[(1, 1), (1, 1)]);
}

#[test]
fn reshape_of_padded_view_keeps_one_masked_view() {
    let mut c = Checked::new(&[2, 3]);
    c.pad(&[(1, 1), (0, 0)]).reshape(&[12]);
    assert_eq!(c.views(), 1);
    assert_eq!(c.st.views()[0].mask(), Some(m(&[(3, 9)]).as_slice()));
    Checked::new(&[1, 2]).pad(&[(1, 0), (0, 1)]).reshape(&[3, 2]);
    Checked::new(&[1, 2]).pad(&[(1, 1), (0, 2)]).reshape(&[4, 3]);
    Checked::new(&[1, 1, 1, 2]).pad(&[(0, 2), (1, 2), (2, 2), (0, 4)]).reshape(&[4, 3, 6, 5]);
}

#[test]
fn pad_reshape_splits_masked_dim() {
    let mut c = Checked::new(&[4]);
    c.pad(&[(4, 0)]).reshape(&[2, 4]);
    assert_eq!(c.views(), 1);
    assert_eq!(c.st.views()[0].mask(), Some(m(&[(1, 2), (0, 4)]).as_slice()));
}

// --- view stacking and simplification ---

#[test]
fn reshape_after_permute_needs_two_views() {
    let mut c = Checked::new(&[4, 4, 4]);
    c.permute(&[2, 0, 1]).reshape(&[16, 4]);
    assert_eq!(c.views(), 2);
    c.simplify();
    assert_eq!(c.views(), 2);
}

#[test]
fn reshape_after_permute_that_splits_stays_one_view() {
    let mut c = Checked::new(&[4, 4]);
    c.permute(&[1, 0]).reshape(&[2, 2, 2, 2]);
    assert_eq!(c.views(), 1);
    c.permute(&[2, 3, 0, 1]);
    assert!(c.st.contiguous());
}

#[test]
fn factorize_combine() {
    assert!(Checked::new(&[4, 4, 4]).permute(&[2, 0, 1]).reshape(&[4, 16]).permute(&[1, 0]).st.contiguous());
    assert!(
        Checked::new(&[4, 4, 4])
            .permute(&[2, 0, 1])
            .reshape(&[4, 16, 1, 1])
            .permute(&[1, 0, 2, 3])
            .st
            .contiguous()
    );
    assert_eq!(Checked::new(&[32, 3, 3, 1]).reshape(&[8, 4, 3, 3]).views(), 1);
}

#[test]
fn ones_added_and_removed() {
    let mut c = Checked::new(&[4, 4]);
    c.permute(&[1, 0]).reshape(&[1, 4, 1, 4, 1]);
    assert!(!c.st.contiguous());
    assert!(c.permute(&[0, 3, 2, 1, 4]).st.contiguous());
    let mut c = Checked::new(&[1, 4, 1, 4, 1]);
    c.permute(&[0, 3, 2, 1, 4]).reshape(&[4, 4]);
    assert!(!c.st.contiguous());
    assert!(c.permute(&[1, 0]).st.contiguous());
    assert!(Checked::new(&[1, 16, 1, 1]).reshape(&[16]).st.contiguous());
    assert!(Checked::new(&[1, 16, 9, 9]).permute(&[1, 0, 2, 3]).st.contiguous());
    assert!(!Checked::new(&[2, 16, 9, 9]).permute(&[1, 0, 2, 3]).st.contiguous());
}

#[test]
fn big_permute_reshape_chains_stay_contiguous() {
    let mut c = Checked::new(&[4, 16, 4]);
    c.reshape(&[1, 4, 8, 8]).permute(&[0, 3, 1, 2]).reshape(&[1, 8, 1, 4, 8]).permute(&[0, 3, 4, 1, 2]);
    assert!(c.st.contiguous());
    c.reshape(&[4, 16, 4]);
    assert!(c.st.contiguous());
}

#[test]
fn expand_contract_simplifies_to_one_view() {
    let mut c = Checked::new(&[1, 10]);
    c.expand(&[10, 10]).reshape(&[100]);
    assert_eq!(c.views(), 2);
    c.reshape(&[10, 10]).simplify();
    assert_eq!(c.views(), 1);
    let mut c = Checked::new(&[1, 10]);
    c.expand(&[10, 10]).reshape(&[100]).reshape(&[2, 5, 2, 5]).simplify();
    assert_eq!(c.views(), 1);
}

#[test]
fn expand_contract_that_stays_two_views() {
    let mut c = Checked::new(&[1, 10]);
    c.expand(&[10, 10]).reshape(&[100]).reshape(&[5, 20]).simplify();
    assert_eq!(c.views(), 2);
}

#[test]
fn reshape_doesnt_multiview_with_broadcast_dims() {
    let v = view(&[4, 4, 2, 2, 2], &[0, 8, 0, 4, 1], 0, None);
    let st = ShapeTracker::from_view(v).reshape(&s(&[2, 2, 4, 2, 2, 2])).unwrap();
    assert_eq!(st.views().len(), 1);
}

#[test]
fn reshape_across_a_masked_row_needs_a_new_view() {
    let v = view(&[2, 6, 2, 2], &[16, 4, 2, 1], 0, Some(&[(0, 2), (0, 4), (0, 2), (0, 2)]));
    let st = ShapeTracker::from_view(v).reshape(&s(&[2, 4, 3, 2])).unwrap();
    assert_eq!(st.views().len(), 2);
}

#[test]
fn reshape_of_all_invalid_keeps_empty_mask() {
    let v = view(&[1, 1, 5], &[0, 0, 1], -5, Some(&[(1, 1), (0, 1), (0, 5)]));
    let st = ShapeTracker::from_view(v).reshape(&s(&[5])).unwrap();
    assert_eq!(st.views().len(), 1);
    assert_eq!(st.views()[0].mask(), Some(m(&[(0, 0)]).as_slice()));
}

#[test]
fn fuzz_regressions() {
    Checked::new(&[3, 3, 3])
        .shrink(&[(1, 2), (1, 3), (1, 3)])
        .reshape(&[1, 4])
        .shrink(&[(0, 1), (1, 3)])
        .simplify();
    Checked::new(&[3, 3, 3])
        .flip(&[true, false, true])
        .reshape(&[3, 9])
        .shrink(&[(1, 2), (1, 5)])
        .flip(&[true, true]);
    Checked::new(&[3, 3, 3])
        .shrink(&[(0, 2), (0, 2), (0, 1)])
        .permute(&[1, 0, 2])
        .reshape(&[4])
        .shrink(&[(0, 3)])
        .flip(&[true]);
    Checked::new(&[3, 3, 3])
        .reshape(&[3, 3, 3, 1])
        .pad(&[(0, 0), (0, 0), (0, 0), (1, 1)])
        .shrink(&[(0, 2), (1, 2), (0, 2), (0, 1)])
        .expand(&[2, 1, 2, 3]);
}

#[test]
fn zero_masks() {
    let mut c = Checked::new(&[3, 2]);
    c.pad(&[(0, 0), (2, 2)]).shrink(&[(0, 3), (0, 2)]);
    assert_eq!(c.st.views()[0].mask(), Some(m(&[(0, 0), (0, 0)]).as_slice()));
    Checked::new(&[3, 2]).pad(&[(0, 0), (2, 2)]).shrink(&[(0, 3), (0, 2)]).reshape(&[6]);
}

#[test]
fn zero_sized_shapes() {
    Checked::new(&[0, 3]).reshape(&[3, 0]).permute(&[1, 0]).pad(&[(1, 1), (0, 0)]);
    Checked::new(&[4, 3]).shrink(&[(1, 1), (0, 3)]).reshape(&[0]).pad(&[(2, 0)]);
    let st = st(&[0, 3]);
    assert_eq!(st.views()[0].strides(), s(&[0, 0]).as_slice());
    assert!(st.contiguous());
}

#[test]
fn splitting_and_combining_big() {
    Checked::new(&[64, 32]).reshape(&[4, 16, 2, 16]).permute(&[1, 3, 0, 2]).reshape(&[256, 8]);
    Checked::new(&[1, 4, 64]).permute(&[2, 0, 1]).reshape(&[64, 4]);
}

// --- compose, equality, invert ---

#[test]
fn equality_is_structural() {
    assert_eq!(st(&[10, 10]), st(&[10, 10]));
    assert_ne!(st(&[10, 10]), st(&[100]));
    assert_eq!(ShapeTracker::from_view(view(&[3], &[1], 0, None)), st(&[3]));
}

#[test]
fn compose_applies_other_on_top() {
    let a = st(&[4, 4]).permute(&[1, 0]).unwrap();
    let b = st(&[4, 4]).permute(&[1, 0]).unwrap();
    let both = a.compose(&b);
    assert_eq!(both.views().len(), 1);
    assert!(both.contiguous());
}

#[test]
fn invert_of_permute_and_flip() {
    let t = st(&[2, 3, 4]).permute(&[2, 0, 1]).unwrap().flip(&[true, false, true]).unwrap();
    let inv = t.invert(&s(&[2, 3, 4])).unwrap();
    assert!(t.compose(&inv).contiguous());
}

#[test]
fn invert_refuses_shrink_and_expand() {
    assert!(st(&[4, 4]).shrink(&m(&[(0, 2), (0, 4)])).unwrap().invert(&s(&[4, 4])).is_none());
    assert!(st(&[1, 4]).expand(&s(&[4, 4])).unwrap().invert(&s(&[1, 4])).is_none());
}

// --- size, contiguity, consecutive ---

#[test]
fn sizes() {
    assert_eq!(st(&[10, 10]).size(), 100);
    assert_eq!(st(&[10, 0]).size(), 0);
    assert_eq!(st(&[1, 10]).expand(&s(&[10, 10])).unwrap().size(), 100);
    assert_eq!(st(&[1, 10]).expand(&s(&[10, 10])).unwrap().reshape(&s(&[100])).unwrap().size(), 100);
    assert_eq!(st(&[10, 10]).shrink(&m(&[(2, 5), (0, 10)])).unwrap().size(), 30);
    assert_eq!(st(&[10, 10]).shrink(&m(&[(0, 10), (3, 4)])).unwrap().size(), 10);
    assert_eq!(st(&[10, 10]).pad(&m(&[(1, 1), (0, 0)])).unwrap().size(), 120);
    assert_eq!(st(&[10, 10]).pad(&m(&[(1, 1), (0, 0)])).unwrap().reshape(&s(&[120])).unwrap().size(), 120);
    assert_eq!(st(&[10, 10]).flip(&[true, false]).unwrap().size(), 100);
}

#[test]
fn consecutive() {
    let t = st(&[16]);
    assert!(t.consecutive() && t.contiguous());
    let sliced = t.shrink(&m(&[(4, 12)])).unwrap();
    assert!(sliced.consecutive() && !sliced.contiguous());
    let padded = t.pad(&m(&[(1, 1)])).unwrap();
    assert!(!padded.consecutive());
    let constant = st(&[1]).expand(&s(&[16])).unwrap();
    assert!(!constant.consecutive());
    assert!(st(&[1, 1, 16]).consecutive());
}

// --- real strides ---

#[test]
fn real_strides_of_one_view_are_its_strides() {
    let t = st(&[2, 3]).permute(&[1, 0]).unwrap();
    assert_eq!(t.real_strides(false), some(&[Some(1), Some(3)]));
    assert_eq!(t.unit_stride_axes(false), vec![0]);
}

#[test]
fn real_strides_with_masked_first_view() {
    let t = tracker(&[view(&[2048], &[1], 0, Some(&[(0, 512)])), view(&[16, 32, 4], &[128, 4, 1], 0, None)]);
    assert_eq!(t.real_strides(false), some(&[None, Some(4), Some(1)]));
    assert_eq!(t.real_strides(true), some(&[Some(128), Some(4), Some(1)]));
    assert_eq!(t.unit_stride_axes(false), vec![2]);
}

#[test]
fn real_strides_that_do_not_simplify() {
    let t = tracker(&[
        view(&[8, 3, 1, 2, 11, 1], &[33, 11, 0, 0, 1, 0], 0, None),
        view(&[8, 6, 11], &[66, 11, 1], 0, None),
    ]);
    assert_eq!(t.real_strides(false), some(&[Some(33), None, Some(1)]));
    assert_eq!(t.simplify().views().len(), 2);
    let t = tracker(&[
        view(&[2, 2, 4, 3, 3], &[72, 9, 18, -3, -1], 8, None),
        view(&[4, 4, 3, 3], &[36, 9, 3, 1], 0, None),
    ]);
    assert_eq!(t.real_strides(false), some(&[None, Some(18), Some(-3), Some(-1)]));
    assert_eq!(t.simplify().views().len(), 2);
}

#[test]
fn real_strides_match_the_simplified_view() {
    for t in [
        tracker(&[
            view(&[1, 3, 2, 11, 4, 28], &[0, 308, 0, 28, 0, 1], 0, None),
            view(&[1, 3, 2, 11, 26, 1, 1, 3], &[0, 2464, 0, 112, 1, 0, 0, 29], 0, None),
        ]),
        tracker(&[
            view(&[8, 3, 3, 11, 2, 28], &[924, 308, 0, 28, 0, 1], 0, None),
            view(&[8, 1, 6, 10, 28, 3, 2, 1], &[5544, 0, 0, 56, 1, 1848, 672, 0], 0, None),
        ]),
    ] {
        let simple = t.simplify();
        assert_eq!(simple.views().len(), 1);
        let want: Vec<Option<Sint>> = simple.views()[0].strides().iter().cloned().map(Some).collect();
        assert_eq!(t.real_strides(false), want);
    }
}

#[test]
fn real_strides_of_padded_conv() {
    let t = tracker(&[
        view(&[6, 2, 5, 14], &[90, 45, 1, 5], 0, Some(&[(0, 6), (0, 2), (0, 5), (0, 9)])),
        view(&[6, 2, 78], &[140, 70, 1], 0, Some(&[(0, 6), (0, 2), (0, 70)])),
        view(&[6, 2, 13, 6], &[156, 78, 1, 13], 0, None),
    ]);
    assert_eq!(t.real_strides(false), some(&[Some(90), Some(45), None, None]));
}

// --- masked axes ---

#[test]
fn axis_is_masked() {
    let t = st(&[10, 10, 10, 10]).pad(&m(&[(0, 1), (0, 0), (2, 0), (0, 0)])).unwrap();
    assert!(t.axis_is_masked(0));
    assert!(!t.axis_is_masked(1));
    assert!(t.axis_is_masked(2));
    assert!(!t.axis_is_masked(3));
    assert!(t.has_mask());
    assert!(!st(&[10, 10]).has_mask());
}
