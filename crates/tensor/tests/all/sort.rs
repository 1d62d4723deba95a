//! Sorting and selection against host references on every device: sort (stable, both
//! orders, NaN last), argsort, topk, scatter and scatter_reduce, masked_select, nonzero, and
//! `set` with tensor indices; gradients where they exist; typed errors.

use crate::common;

use common::reference::{Check, data, distinct, on_devices, strides, values};
use wgrad_tensor::{DType, Index, ScatterReduce, Tensor, TensorError};

/// The stable sort of each line along `axis` on the host: values and indices.
fn host_sort(x: &[f64], shape: &[usize], axis: usize, descending: bool) -> (Vec<f64>, Vec<f64>) {
    let (st, n) = (strides(shape), shape[axis]);
    let (mut v, mut i) = (x.to_vec(), vec![0.0; x.len()]);
    for start in (0..x.len()).filter(|s| (s / st[axis]) % n == 0) {
        let at: Vec<usize> = (0..n).map(|k| start + k * st[axis]).collect();
        let mut order: Vec<usize> = (0..n).collect();
        let key = |k: usize| x[at[k]];
        order.sort_by(|&a, &b| {
            let (ka, kb) = (key(a), key(b));
            let o = ka.partial_cmp(&kb).unwrap_or_else(|| ka.is_nan().cmp(&kb.is_nan()));
            if descending { o.reverse() } else { o }
        });
        for (k, &o) in order.iter().enumerate() {
            v[at[k]] = x[at[o]];
            i[at[k]] = o as f64;
        }
    }
    (v, i)
}

/// Weights that make a gradient tell places apart: `1, 2, 3, ..` in `shape`.
fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((1..=n).map(|v| v as f32).collect(), shape).unwrap()
}

#[test]
fn sort_matches_the_host_forward_and_backward() {
    for (shape, axis) in
        [(&[1usize][..], 0isize), (&[5], 0), (&[3, 6], 1), (&[3, 6], 0), (&[2, 3, 4], 1), (&[2, 9], -1)]
    {
        let n: usize = shape.iter().product();
        let a = if axis < 0 { (axis + shape.len() as isize) as usize } else { axis as usize };
        for descending in [false, true] {
            let name = format!("sort {shape:?} axis {axis} descending {descending}");
            let w: Vec<f64> = (1..=n).map(|v| v as f64).collect();
            Check::new(&name, vec![(distinct(n, 2), shape.to_vec())], shape).run(
                |t| t[0].sort(axis, descending)?.0.mul(ramp(shape)),
                |h| host_sort(&h[0], shape, a, descending).0.iter().zip(&w).map(|(v, w)| v * w).collect(),
            );
            // ties and repeats: the indices keep the original order among equals
            let ties: Vec<f32> = data(n, 5).iter().map(|v| v.round()).collect();
            let host: Vec<f64> = ties.iter().map(|&v| f64::from(v)).collect();
            let (want_v, want_i) = host_sort(&host, shape, a, descending);
            on_devices(|device| {
                let x = Tensor::from_slice(&ties, shape).unwrap();
                let (v, i) = x.sort(axis, descending).unwrap();
                assert_eq!(i.dtype(), DType::I32);
                assert_eq!((values(&v), values(&i)), (want_v.clone(), want_i.clone()), "{device} {name}");
                assert_eq!(values(&x.argsort(axis, descending).unwrap()), want_i, "{device} {name}");
            });
        }
    }
}

#[test]
fn sort_orders_integers_nans_and_infinities() {
    on_devices(|device| {
        let x = Tensor::from_slice(&[3.0f32, f32::NAN, -1.0, f32::INFINITY, f32::NEG_INFINITY, 0.0], &[6])
            .unwrap();
        let (v, i) = x.sort(0, false).unwrap();
        let v = v.to_vec::<f32>().unwrap();
        assert_eq!(v[..5], [f32::NEG_INFINITY, -1.0, 0.0, 3.0, f32::INFINITY], "{device}");
        assert!(v[5].is_nan(), "{device}: NaN sorts last");
        assert_eq!(i.to_vec::<i32>().unwrap(), [4, 2, 5, 0, 3, 1], "{device}");
        assert_eq!(x.argsort(0, true).unwrap().to_vec::<i32>().unwrap(), [1, 3, 0, 5, 2, 4], "{device}");
        // extreme integers next to the padding of a length that is not a power of two
        let big = Tensor::from_slice(&[i32::MAX, i32::MIN, 0, i32::MAX, -5], &[5]).unwrap();
        let (v, i) = big.sort(0, false).unwrap();
        assert_eq!(v.to_vec::<i32>().unwrap(), [i32::MIN, -5, 0, i32::MAX, i32::MAX], "{device}");
        assert_eq!(i.to_vec::<i32>().unwrap(), [1, 4, 2, 0, 3], "{device}");
        let (v, i) = big.topk(2, 0, true).unwrap();
        assert_eq!(
            (v.to_vec::<i32>().unwrap(), i.to_vec::<i32>().unwrap()),
            (vec![i32::MAX; 2], vec![0, 3]),
            "{device}"
        );
        let b = Tensor::from_slice(&[true, false, true, false], &[4]).unwrap();
        assert_eq!(b.argsort(0, false).unwrap().to_vec::<i32>().unwrap(), [1, 3, 0, 2], "{device}");
        let scalar = Tensor::scalar(1.5f32).unwrap();
        assert_eq!(scalar.sort(0, false).unwrap().1.item::<i32>().unwrap(), 0, "{device}");
    });
}

#[test]
fn topk_matches_the_host() {
    let (shape, n) = ([4, 7], 28);
    for (k, largest) in [(1, true), (3, true), (7, false), (2, false)] {
        let name = format!("topk k={k} largest={largest}");
        Check::new(&name, vec![(distinct(n, 4), shape.to_vec())], &[4, k]).run(
            |t| t[0].topk(k, 1, largest)?.0.mul(ramp(&[4, k])),
            |h| {
                let (v, _) = host_sort(&h[0], &shape, 1, largest);
                v.chunks(7)
                    .flat_map(|r| r[..k].to_vec())
                    .enumerate()
                    .map(|(j, v)| v * (j + 1) as f64)
                    .collect()
            },
        );
    }
    let x = Tensor::from_slice(&data(6, 1), &[2, 3]).unwrap();
    let err = x.topk(4, 1, true).unwrap_err();
    assert!(matches!(err, TensorError::Argument { op: "topk", .. }), "{err}");
    assert!(err.to_string().contains("k = 4"), "{err}");
    assert!(matches!(x.sort(2, false), Err(TensorError::Axis { op: "sort", .. })));
}

/// `scatter_reduce` on the host: `out` starts as `x` (or as nothing where written, without
/// `include_self`), and each `src` element along `axis` goes to its index.
fn host_scatter(
    (x, shape): (&[f64], &[usize]),
    axis: usize,
    (index, index_shape): (&[i32], &[usize]),
    (src, src_shape): (&[f64], &[usize]),
    reduce: Option<(ScatterReduce, bool)>,
) -> Vec<f64> {
    let (xs, is, ss) = (strides(shape), strides(index_shape), strides(src_shape));
    let mut hits: Vec<Vec<f64>> = vec![vec![]; x.len()];
    for (flat, &i) in index.iter().enumerate() {
        let coords: Vec<usize> = (0..index_shape.len()).map(|d| flat / is[d] % index_shape[d]).collect();
        let to: usize =
            coords.iter().enumerate().map(|(d, &c)| if d == axis { i as usize } else { c } * xs[d]).sum();
        let from: usize = coords.iter().enumerate().map(|(d, &c)| c * ss[d]).sum();
        hits[to].push(src[from]);
    }
    x.iter()
        .zip(hits)
        .map(|(&own, h)| match reduce {
            None => h.last().copied().unwrap_or(own),
            Some((r, include)) => {
                let all: Vec<f64> = if include || h.is_empty() { [vec![own], h].concat() } else { h };
                match r {
                    ScatterReduce::Sum => all.iter().sum(),
                    ScatterReduce::Prod => all.iter().product(),
                    ScatterReduce::Mean => all.iter().sum::<f64>() / all.len() as f64,
                    ScatterReduce::Amax => all.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    ScatterReduce::Amin => all.iter().copied().fold(f64::INFINITY, f64::min),
                }
            }
        })
        .collect()
}

#[test]
fn scatter_and_scatter_reduce_match_the_host() {
    // a (3, 5) target, a (2, 4) index along axis 0 (with repeats) into a (2, 5) source
    let (shape, index_shape, src_shape) = ([3usize, 5], [2usize, 4], [2usize, 5]);
    let index = [0i32, 2, 1, 0, 0, 2, 2, 1];
    let idx = || Tensor::from_slice(&index, &index_shape).unwrap();
    let inputs = || vec![(distinct(15, 1), shape.to_vec()), (distinct(10, 3), src_shape.to_vec())];
    let host = |h: &[Vec<f64>], reduce| {
        host_scatter((&h[0], &shape), 0, (&index, &index_shape), (&h[1], &src_shape), reduce)
    };
    Check::new("scatter", inputs(), &shape).run(|t| t[0].scatter(0, &idx(), &t[1]), |h| host(h, None));
    for reduce in [
        ScatterReduce::Sum,
        ScatterReduce::Prod,
        ScatterReduce::Mean,
        ScatterReduce::Amax,
        ScatterReduce::Amin,
    ] {
        for include_self in [true, false] {
            let name = format!("scatter_reduce {reduce:?} include_self={include_self}");
            Check::new(&name, inputs(), &shape).run(
                |t| t[0].scatter_reduce(0, &idx(), &t[1], reduce, include_self),
                |h| host(h, Some((reduce, include_self))),
            );
        }
    }
    // along axis 1, a scalar source, and integers
    on_devices(|device| {
        let x = Tensor::zeros(&[2, 4], DType::I32).unwrap();
        let i = Tensor::from_slice(&[3i32, 0, 1, 1], &[2, 2]).unwrap();
        let got = x.scatter(1, &i, 7).unwrap().to_vec::<i32>().unwrap();
        assert_eq!(got, [7, 0, 0, 7, 0, 7, 0, 0], "{device}");
        let src = Tensor::from_slice(&[1i32, 2, 3, 4], &[2, 2]).unwrap();
        let got = x.scatter_reduce(1, &i, &src, ScatterReduce::Sum, true).unwrap().to_vec::<i32>().unwrap();
        assert_eq!(got, [2, 0, 0, 1, 0, 7, 0, 0], "{device}");
    });
}

#[test]
fn scatter_refuses_bad_indices_and_shapes() {
    let x = Tensor::zeros(&[3, 4], DType::F32).unwrap();
    let src = Tensor::ones(&[2, 4], DType::F32).unwrap();
    let idx = |v: &[i32], s: &[usize]| Tensor::from_slice(v, s).unwrap();
    let err = x.scatter(0, &idx(&[0, 3], &[1, 2]), &src).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { op: "scatter", .. }), "{err}");
    assert!(err.to_string().contains("out of range"), "{err}");
    let err = x.scatter_reduce(0, &idx(&[-1], &[1, 1]), &src, ScatterReduce::Sum, true).unwrap_err();
    assert!(err.to_string().contains("[-1, -1] are out of range for a dim of 3"), "{err}");
    let err = x.scatter(0, &src, &src).unwrap_err();
    assert!(matches!(err, TensorError::DType { op: "scatter", .. }), "{err}");
    let err = x.scatter(0, &idx(&[0; 5], &[1, 5]), &src).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { .. }), "{err}");
    let err = x.scatter(0, &idx(&[0; 3], &[3, 1]), &src).unwrap_err();
    assert!(err.to_string().contains("src dims"), "{err}");
    let err = x.scatter(0, &idx(&[0; 2], &[2]), &src).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { .. }), "{err}");
    let err = x.scatter(0, &idx(&[0; 2], &[1, 2]), src.int()).unwrap_err();
    assert!(matches!(err, TensorError::DType { .. }), "{err}");
    assert!(matches!(x.scatter(2, &idx(&[0; 2], &[1, 2]), &src), Err(TensorError::Axis { .. })));
}

#[test]
fn masked_select_and_nonzero() {
    on_devices(|device| {
        let x = Tensor::from_slice(&[0i32, 1, 2, 3, 4, 5, 6, 7, 8], &[3, 3]).unwrap();
        let mask = Tensor::from_slice(&[true, false, true, false, true, false, false, false, true], &[3, 3])
            .unwrap();
        assert_eq!(x.masked_select(&mask).unwrap().to_vec::<i32>().unwrap(), [0, 2, 4, 8], "{device}");
        let sized = x.masked_select_sized(&mask, 6, -1).unwrap();
        assert_eq!(sized.to_vec::<i32>().unwrap(), [0, 2, 4, 8, -1, -1], "{device}");
        assert_eq!(x.masked_select_sized(&mask, 2, -1).unwrap().to_vec::<i32>().unwrap(), [0, 2], "{device}");
        // a broadcast mask, and a mask selecting nothing
        let row = Tensor::from_slice(&[false, true, true], &[3]).unwrap();
        assert_eq!(x.masked_select(&row).unwrap().to_vec::<i32>().unwrap(), [1, 2, 4, 5, 7, 8], "{device}");
        let none = x.masked_select(&x.lt(0).unwrap()).unwrap();
        assert_eq!(none.shape(), &[0], "{device}");
        let y = Tensor::from_slice(&[1.0f32, 0.0, 2.0, 0.0, 0.0, 3.0], &[2, 3]).unwrap();
        let nz = y.nonzero().unwrap();
        assert_eq!(
            (nz.shape(), nz.to_vec::<i32>().unwrap()),
            (&[3, 2][..], vec![0, 0, 0, 2, 1, 2]),
            "{device}"
        );
        let nz = y.nonzero_sized(4, -1).unwrap();
        assert_eq!(nz.to_vec::<i32>().unwrap(), [0, 0, 0, 2, 1, 2, -1, -1], "{device}");
        let v = Tensor::from_slice(&[0.0f32, 5.0, 0.0, 1.0], &[4]).unwrap();
        assert_eq!(v.nonzero().unwrap().to_vec::<i32>().unwrap(), [1, 3], "{device}");
        assert_eq!(Tensor::scalar(2.0f32).unwrap().nonzero().unwrap().shape(), &[1, 0], "{device}");
    });
    // gradients flow to the selected elements
    let w = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let m = Tensor::from_slice(&[true, false, true, true], &[4]).unwrap();
    let picked =
        w.masked_select(&m).unwrap().mul(Tensor::from_slice(&[1.0f32, 10.0, 100.0], &[3]).unwrap()).unwrap();
    let g = picked.sum(&[], false).unwrap().gradient(&[&w], None).unwrap();
    assert_eq!(g[0].to_vec::<f32>().unwrap(), [1.0, 0.0, 10.0, 100.0]);
    let err = w.masked_select(&w).unwrap_err();
    assert!(matches!(err, TensorError::DType { op: "masked_select", .. }), "{err}");
    let err = w.masked_select(&Tensor::from_slice(&[true; 3], &[3]).unwrap()).unwrap_err();
    assert!(matches!(err, TensorError::Broadcast { op: "masked_select", .. }), "{err}");
}

/// `x[index] = value` on the host for a 2-d iota with one tensor index per listed dim.
#[test]
fn set_with_tensor_indices_writes_the_picked_elements() {
    on_devices(|device| {
        let fresh = || {
            let x = Tensor::from_vec((0..20).map(|v| v as f32).collect(), &[4, 5]).unwrap().contiguous();
            x.realize().unwrap();
            x
        };
        let t = |v: &[i32], s: &[usize]| Index::Tensor(Tensor::from_slice(v, s).unwrap());
        // rows 3 and -4 (= 0), every column: a (2, 5) value
        let x = fresh();
        let value = Tensor::from_vec((100..110).map(|v| v as f32).collect(), &[2, 5]).unwrap();
        x.set(&[t(&[3, -4], &[2])], &value).unwrap();
        let mut want: Vec<f32> = (0..20).map(|v| v as f32).collect();
        want[15..20].copy_from_slice(&[100., 101., 102., 103., 104.]);
        want[0..5].copy_from_slice(&[105., 106., 107., 108., 109.]);
        assert_eq!(x.to_vec::<f32>().unwrap(), want, "{device}");
        // paired indices (points), a repeated point: the last write wins; a broadcast scalar
        let x = fresh();
        let value = Tensor::from_slice(&[-1.0f32, -2.0, -3.0], &[3]).unwrap();
        x.set(&[t(&[1, 2, 1], &[3]), t(&[4, 0, 4], &[3])], &value).unwrap();
        let mut want: Vec<f32> = (0..20).map(|v| v as f32).collect();
        want[9] = -3.0;
        want[10] = -2.0;
        assert_eq!(x.to_vec::<f32>().unwrap(), want, "{device}");
        // a slice and a tensor: columns 1 and 3 of rows 1..3, set to a scalar
        let x = fresh();
        x.set(
            &[Index::parse("1:3").unwrap().remove(0), t(&[3, 1], &[2])],
            &Tensor::full(&[], 0.5f32).unwrap(),
        )
        .unwrap();
        let mut want: Vec<f32> = (0..20).map(|v| v as f32).collect();
        for i in [6, 8, 11, 13] {
            want[i] = 0.5;
        }
        assert_eq!(x.to_vec::<f32>().unwrap(), want, "{device}");
        // separated tensor entries put the batch in front: value (2, 1) broadcast over 1 column
        let y = Tensor::from_vec((0..24).map(|v| v as f32).collect(), &[2, 3, 4]).unwrap().contiguous();
        y.realize().unwrap();
        let v = Tensor::from_slice(&[-1.0f32, -2.0], &[2, 1]).unwrap();
        y.set(&[t(&[0, 1], &[2]), Index::parse("1:2").unwrap().remove(0), t(&[3, 0], &[2])], &v).unwrap();
        let mut want: Vec<f32> = (0..24).map(|v| v as f32).collect();
        want[7] = -1.0;
        want[16] = -2.0;
        assert_eq!(y.to_vec::<f32>().unwrap(), want, "{device}");
        // a value that does not broadcast to the picked shape
        let err = x.set(&[t(&[0, 1], &[2])], &Tensor::ones(&[3, 5], DType::F32).unwrap()).unwrap_err();
        assert!(matches!(err, TensorError::Assign { .. }), "{err}");
    });
}
