//! View: canonical form, each movement op's result, merging two views, minify and invert.

use crate::common;

use common::{m, s, view};
use wgrad_shape::{Sint, View, strides_for_shape};

fn contiguous(shape: &[i64]) -> View {
    View::from_shape(&s(shape)).unwrap()
}

// --- canonical form ---

#[test]
fn full_mask_is_dropped() {
    assert_eq!(view(&[2, 2, 2], &[4, 2, 1], 0, Some(&[(0, 2), (0, 2), (0, 2)])).mask(), None);
    assert_eq!(view(&[4, 3, 2], &[1, 4, 10], 0, Some(&[(0, 4), (0, 3), (0, 2)])).mask(), None);
    assert!(view(&[2, 3, 4], &[12, 4, 1], 0, Some(&[(0, 2), (0, 3), (0, 4)])).contiguous());
}

#[test]
fn size_one_dims_get_stride_zero() {
    let v = view(&[1, 3, 1], &[7, 1, 9], 0, None);
    assert_eq!(v.strides(), s(&[0, 1, 0]).as_slice());
    assert!(v.contiguous());
    assert_eq!(strides_for_shape(&s(&[2, 1, 3])), s(&[3, 0, 1]));
}

#[test]
fn zero_in_shape_gives_all_zero_view() {
    let v = view(&[2, 0, 3], &[5, 3, 1], 7, Some(&[(1, 2), (0, 0), (0, 3)]));
    assert_eq!(v.strides(), s(&[0, 0, 0]).as_slice());
    assert_eq!(*v.offset(), 0);
    assert_eq!(v.mask(), None);
    assert!(v.contiguous());
}

#[test]
fn single_element_mask_folds_stride_into_offset() {
    let v = view(&[4, 3], &[3, 1], 0, Some(&[(2, 3), (0, 3)]));
    assert_eq!(v.strides(), s(&[0, 1]).as_slice());
    assert_eq!(*v.offset(), 6);
    assert_eq!(v.mask(), Some(m(&[(2, 3), (0, 3)]).as_slice()));
}

#[test]
fn empty_mask_zeroes_everything() {
    let v = view(&[4, 3], &[3, 1], 5, Some(&[(2, 2), (0, 3)]));
    assert_eq!(v.strides(), s(&[0, 0]).as_slice());
    assert_eq!(*v.offset(), 0);
    assert_eq!(v.mask(), Some(m(&[(0, 0), (0, 0)]).as_slice()));
}

#[test]
fn contiguous_needs_zero_offset_and_default_strides() {
    assert!(contiguous(&[2, 3]).contiguous());
    assert!(!view(&[2, 3], &[3, 1], 1, None).contiguous());
    assert!(!view(&[2, 3], &[1, 2], 0, None).contiguous());
    assert!(view(&[1, 1, 1, 4], &[0, 0, 0, 1], 0, Some(&[(0, 1), (0, 1), (0, 1), (0, 4)])).contiguous());
}

// --- movement ops ---

#[test]
fn permute_moves_strides_and_mask() {
    let v = view(&[2, 3], &[3, 1], 0, Some(&[(0, 1), (1, 3)])).permute(&[1, 0]).unwrap();
    assert_eq!(v.shape(), s(&[3, 2]).as_slice());
    assert_eq!(v.strides(), s(&[1, 0]).as_slice()); // dim of one element: stride folded
    assert_eq!(v.mask(), Some(m(&[(1, 3), (0, 1)]).as_slice()));
}

#[test]
fn expand_broadcasts_with_stride_zero() {
    let v = contiguous(&[1, 3]).expand(&s(&[4, 3])).unwrap();
    assert_eq!(v.strides(), s(&[0, 1]).as_slice());
    assert!(!v.contiguous());
}

#[test]
fn expand_of_masked_size_one_dim() {
    let padded = contiguous(&[1, 2]).pad(&m(&[(0, 0), (1, 0)])).unwrap();
    let v = padded.expand(&s(&[3, 3])).unwrap();
    assert_eq!(v.mask(), Some(m(&[(0, 3), (1, 3)]).as_slice()));
    let empty =
        contiguous(&[1, 1]).pad(&m(&[(1, 0), (0, 0)])).unwrap().shrink(&m(&[(0, 1), (0, 1)])).unwrap();
    assert_eq!(empty.expand(&s(&[4, 2])).unwrap().mask(), Some(m(&[(0, 0), (0, 0)]).as_slice()));
}

#[test]
fn pad_sets_mask_and_negative_offset() {
    let v = contiguous(&[2, 3]).pad(&m(&[(1, 0), (0, 2)])).unwrap();
    assert_eq!(v.shape(), s(&[3, 5]).as_slice());
    assert_eq!(*v.offset(), -3);
    assert_eq!(v.mask(), Some(m(&[(1, 3), (0, 3)]).as_slice()));
    assert_eq!(contiguous(&[2, 3]).pad(&m(&[(0, 0), (0, 0)])).unwrap(), contiguous(&[2, 3]));
}

#[test]
fn shrink_moves_offset() {
    let v = contiguous(&[4, 5]).shrink(&m(&[(1, 3), (2, 5)])).unwrap();
    assert_eq!(v.shape(), s(&[2, 3]).as_slice());
    assert_eq!(v.strides(), s(&[5, 1]).as_slice());
    assert_eq!(*v.offset(), 7);
    assert_eq!(v.mask(), None);
}

#[test]
fn shrink_of_padded_view_drops_covered_mask() {
    let v = contiguous(&[3]).pad(&m(&[(2, 2)])).unwrap().shrink(&m(&[(2, 5)])).unwrap();
    assert_eq!(v, contiguous(&[3]));
}

#[test]
fn flip_negates_stride_and_mirrors_mask() {
    let v = contiguous(&[2, 3]).flip(&[false, true]).unwrap();
    assert_eq!(v.strides(), s(&[3, -1]).as_slice());
    assert_eq!(*v.offset(), 2);
    let p = contiguous(&[3]).pad(&m(&[(1, 0)])).unwrap().flip(&[true]).unwrap();
    assert_eq!(p.mask(), Some(m(&[(0, 3)]).as_slice()));
    assert_eq!(
        contiguous(&[2, 3]).flip(&[true, true]).unwrap().flip(&[true, true]).unwrap(),
        contiguous(&[2, 3])
    );
}

// --- reshape ---

#[test]
fn reshape_contiguous_is_free() {
    assert_eq!(contiguous(&[2, 3, 4]).reshape(&s(&[6, 4])).unwrap(), Some(contiguous(&[6, 4])));
    assert_eq!(contiguous(&[2, 3]).reshape(&s(&[2, 3])).unwrap(), Some(contiguous(&[2, 3])));
}

#[test]
fn reshape_splits_and_merges_strided_dims() {
    let t = contiguous(&[4, 6]).permute(&[1, 0]).unwrap();
    let v = t.reshape(&s(&[2, 3, 4])).unwrap().unwrap();
    assert_eq!(v.strides(), s(&[3, 1, 6]).as_slice());
    assert_eq!(t.reshape(&s(&[24])).unwrap(), None);
    let b = contiguous(&[1, 4]).expand(&s(&[6, 4])).unwrap();
    assert_eq!(b.reshape(&s(&[2, 3, 2, 2])).unwrap().unwrap().strides(), s(&[0, 0, 2, 1]).as_slice());
}

#[test]
fn reshape_keeps_mask_when_rows_line_up() {
    let v = contiguous(&[2, 3]).pad(&m(&[(1, 1), (0, 0)])).unwrap();
    let r = v.reshape(&s(&[12])).unwrap().unwrap();
    assert_eq!(r.mask(), Some(m(&[(3, 9)]).as_slice()));
    assert_eq!(*r.offset(), -3);
    let back = r.reshape(&s(&[4, 3])).unwrap().unwrap();
    assert_eq!(back, v);
}

#[test]
fn reshape_refuses_mask_that_straddles_rows() {
    let v = contiguous(&[1, 2]).pad(&m(&[(1, 0), (0, 1)])).unwrap();
    assert_eq!(v.reshape(&s(&[3, 2])).unwrap(), None);
}

#[test]
fn reshape_of_all_invalid_view() {
    let v = view(&[4, 5], &[5, 1], 0, Some(&[(0, 0), (0, 0)])).reshape(&s(&[20])).unwrap();
    assert_eq!(v, Some(view(&[20], &[1], 0, Some(&[(0, 0)]))));
}

#[test]
fn reshape_to_scalar_of_empty_mask_needs_new_view() {
    let v = view(&[1], &[0], 0, Some(&[(0, 0)]));
    assert_eq!(v.reshape(&[]).unwrap(), None);
}

#[test]
fn reshape_of_zero_sized_view() {
    let v = contiguous(&[0, 4]).reshape(&s(&[2, 0, 3])).unwrap().unwrap();
    assert_eq!(v, contiguous(&[2, 0, 3]));
}

// --- minify ---

#[test]
fn minify_merges_zero_strided_and_unit_dims() {
    let target = view(&[2, 2], &[30, 2], 7, None);
    for (shape, strides) in [
        (&[2, 1, 2][..], &[30, 0, 2][..]),
        (&[1, 2, 2], &[0, 30, 2]),
        (&[2, 2, 1], &[30, 2, 0]),
        (&[2, 1, 1, 2], &[30, 0, 0, 2]),
        (&[1, 1, 2, 2], &[0, 0, 30, 2]),
        (&[1, 2, 1, 2], &[0, 30, 0, 2]),
    ] {
        assert_eq!(view(shape, strides, 7, None).minify(), target, "{shape:?}");
    }
}

#[test]
fn minify_rank() {
    assert_eq!(contiguous(&[10, 10]).minify().shape().len(), 1);
    assert_eq!(contiguous(&[10, 10]).permute(&[1, 0]).unwrap().minify().shape().len(), 2);
    assert_eq!(contiguous(&[10, 10, 10, 10]).permute(&[1, 0, 2, 3]).unwrap().minify().shape().len(), 3);
    assert_eq!(view(&[2, 3, 4], &[0, 4, 1], 0, None).minify().shape(), s(&[2, 12]).as_slice());
    assert_eq!(view(&[2, 3, 4], &[0, 0, 1], 0, None).minify().shape(), s(&[6, 4]).as_slice());
    assert_eq!(view(&[2, 3, 4], &[3, 1, 0], 0, None).minify().shape(), s(&[6, 4]).as_slice());
    assert_eq!(view(&[2, 3, 4], &[0, 0, 0], 0, None).minify().shape(), s(&[24]).as_slice());
}

// --- merge (earlier.merge(later)) ---

#[test]
fn merge_contiguous_cases() {
    let v = contiguous(&[4, 6]).permute(&[1, 0]).unwrap();
    assert_eq!(contiguous(&[6, 4]).merge(&v), Some(v.clone()));
    assert_eq!(v.merge(&contiguous(&[6, 4])), Some(v.clone()));
}

#[test]
fn merge_with_mask_projects_onto_later_view() {
    let v0 = view(&[1, 1, 5, 8], &[0, 0, 5, 1], -3, Some(&[(0, 1), (0, 1), (0, 5), (3, 8)]));
    let v1 = view(&[1, 1, 2, 2], &[0, 0, 8, 1], 3, None);
    assert_eq!(v0.merge(&v1), Some(view(&[1, 1, 2, 2], &[0, 0, 5, 1], 0, None)));
    let v0 = view(&[3, 3, 5, 3], &[27, 9, 3, 1], -6, Some(&[(0, 3), (0, 3), (2, 4), (1, 3)]));
    let v1 = view(&[3, 3, 2, 2], &[45, 15, 3, 1], 7, None);
    assert_eq!(v0.merge(&v1), Some(view(&[3, 3, 2, 2], &[27, 9, 3, 1], 1, None)));
    let v0 = view(&[3, 3, 5, 3], &[27, 9, -3, 1], 6, Some(&[(0, 3), (0, 3), (0, 2), (0, 2)]));
    let v1 = view(&[3, 3, 2, 2], &[45, 15, -3, 1], 3, None);
    assert_eq!(v0.merge(&v1), Some(view(&[3, 3, 2, 2], &[27, 9, 3, 1], 3, None)));
}

#[test]
fn merge_keeps_mask_in_final_view() {
    let v0 = view(&[3, 3, 4, 4], &[27, 9, 3, 1], -5, Some(&[(0, 3), (0, 3), (2, 4), (0, 2)]));
    let v1 = view(&[3, 3, 4, 2], &[48, 16, 4, 1], 0, None);
    assert_eq!(
        v0.merge(&v1),
        Some(view(&[3, 3, 4, 2], &[27, 9, 3, 1], -5, Some(&[(0, 3), (0, 3), (2, 4), (0, 2)])))
    );
    let v0 = view(&[3, 3, 5, 3], &[27, 9, -3, 1], 6, Some(&[(0, 3), (0, 3), (0, 2), (1, 3)]));
    let v1 = view(&[3, 3, 3, 3], &[45, 15, 3, 1], 6, None);
    assert_eq!(
        v0.merge(&v1),
        Some(view(&[3, 3, 3, 3], &[0, 0, 0, 0], 0, Some(&[(0, 0), (0, 0), (0, 0), (0, 0)])))
    );
    let v0 = view(&[1, 1, 6, 5], &[0, 0, 5, 1], -5, Some(&[(0, 1), (0, 1), (1, 6), (0, 5)]));
    let v1 = view(&[1, 1, 6, 3], &[0, 0, 5, -1], 3, None);
    assert_eq!(
        v0.merge(&v1),
        Some(view(&[1, 1, 6, 3], &[0, 0, 5, -1], -2, Some(&[(0, 1), (0, 1), (1, 6), (0, 3)])))
    );
}

#[test]
fn merge_into_padded_area() {
    let v0 = view(&[2], &[0], 0, Some(&[(1, 2)]));
    assert_eq!(v0.merge(&contiguous(&[1])), Some(view(&[1], &[0], 0, Some(&[(0, 0)]))));
    let v0 = view(&[2, 4], &[0, 1], 4, Some(&[(0, 1), (0, 4)]));
    let v1 = view(&[1, 4], &[0, 1], 4, None);
    assert_eq!(v0.merge(&v1), Some(view(&[1, 4], &[0, 0], 0, Some(&[(0, 0), (0, 0)]))));
    let v0 = view(&[2], &[0], 0, Some(&[(0, 1)]));
    let v1 = view(&[1, 1, 1], &[0, 0, 0], 1, None);
    assert_eq!(v0.merge(&v1), Some(view(&[1, 1, 1], &[0, 0, 0], 0, Some(&[(0, 0), (0, 0), (0, 0)]))));
}

#[test]
fn merge_with_empty_later_view() {
    let v0 = view(&[1, 1, 10, 7], &[0, 0, 5, 1], -15, Some(&[(0, 1), (0, 1), (3, 8), (0, 5)]));
    assert_eq!(v0.merge(&contiguous(&[0, 0, 0, 0])), Some(contiguous(&[0, 0, 0, 0])));
}

#[test]
fn merge_to_scalar() {
    let v0 = view(&[3, 5], &[0, 1], 0, Some(&[(0, 1), (0, 5)]));
    assert_eq!(v0.merge(&contiguous(&[])), Some(contiguous(&[])));
    let v0 = view(&[2], &[0], 0, Some(&[(1, 2)]));
    assert_eq!(v0.merge(&contiguous(&[])), None);
}

#[test]
fn merge_refuses_when_later_view_crosses_rows() {
    let v0 = contiguous(&[4, 4, 4]).permute(&[2, 0, 1]).unwrap();
    let v1 = contiguous(&[16, 4]);
    assert_eq!(v0.merge(&v1), None);
}

// --- invert ---

#[test]
fn invert_undoes_permute_and_flip() {
    let v = contiguous(&[2, 3]).permute(&[1, 0]).unwrap().flip(&[true, false]).unwrap();
    let inv = v.invert(&s(&[2, 3])).unwrap();
    assert_eq!(v.merge(&inv), Some(contiguous(&[2, 3])));
}

#[test]
fn invert_refuses_non_bijections() {
    assert_eq!(contiguous(&[4]).shrink(&m(&[(1, 3)])).unwrap().invert(&s(&[4])), None);
    assert_eq!(contiguous(&[1, 4]).expand(&s(&[2, 4])).unwrap().invert(&s(&[1, 4])), None);
    assert_eq!(view(&[2, 3], &[4, 1], 0, None).invert(&s(&[6])), None);
}

#[test]
fn invert_of_pad_is_shrink() {
    let v = contiguous(&[3]).pad(&m(&[(1, 2)])).unwrap();
    let inv = v.invert(&s(&[3])).unwrap();
    assert_eq!(inv.shape(), s(&[3]).as_slice());
    assert_eq!(v.merge(&inv), Some(contiguous(&[3])));
}

#[test]
fn views_are_values() {
    let v = contiguous(&[2, 3]);
    let p = v.permute(&[1, 0]).unwrap();
    assert_eq!(v, contiguous(&[2, 3]));
    assert_ne!(p, v);
    assert_eq!(View::new(&s(&[2]), &s(&[1]), Sint::from(0), None).unwrap(), contiguous(&[2]));
}
