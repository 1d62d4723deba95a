//! Indexing (`get`, `set`, `Index::parse`), gather, one-hot, embedding, triangles, argmin,
//! split/chunk and einsum against host computations, on every device; typed errors.

use crate::common;

use common::devices;

use wgrad_ops::Ops;
use wgrad_tensor::{DType, Index, Tensor, TensorError, with_default_device};

/// `0, 1, 2, ..` as f32s in `shape`.
fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|v| v as f32).collect(), shape).unwrap()
}

fn on_devices(f: impl Fn(&str)) {
    for device in devices() {
        with_default_device(&device, || f(&device.to_string()));
    }
}

/// The positions Python's `start:stop:step` picks from a dim of `d`, found by filtering.
fn slice_positions(d: usize, start: Option<isize>, stop: Option<isize>, step: isize) -> Vec<usize> {
    let d_ = d as isize;
    let norm = |v: isize, lo: isize, hi: isize| (if v < 0 { v + d_ } else { v }).clamp(lo, hi);
    if step > 0 {
        let (a, b) = (start.map_or(0, |v| norm(v, 0, d_)), stop.map_or(d_, |v| norm(v, 0, d_)));
        (0..d_).filter(|&p| p >= a && p < b && (p - a) % step == 0).map(|p| p as usize).collect()
    } else {
        let (a, b) =
            (start.map_or(d_ - 1, |v| norm(v, -1, d_ - 1)), stop.map_or(-1, |v| norm(v, -1, d_ - 1)));
        (0..d_).rev().filter(|&p| p <= a && p > b && (a - p) % -step == 0).map(|p| p as usize).collect()
    }
}

/// `x[index]` on the host for a 3-d iota of `shape` and an index of ints and slices, one
/// entry per dim: the flat positions picked, row-major.
fn host_get(shape: &[usize], index: &[Index]) -> Vec<f32> {
    let picks: Vec<Vec<usize>> = index
        .iter()
        .zip(shape)
        .map(|(i, &d)| match i {
            Index::Int(v) => vec![if *v < 0 { (*v + d as isize) as usize } else { *v as usize }],
            Index::Slice { start, stop, step } => slice_positions(d, *start, *stop, step.unwrap_or(1)),
            _ => unreachable!(),
        })
        .collect();
    let mut out = vec![];
    for &a in &picks[0] {
        for &b in &picks[1] {
            for &c in &picks[2] {
                out.push(((a * shape[1] + b) * shape[2] + c) as f32);
            }
        }
    }
    out
}

#[test]
fn basic_indexing_matches_the_host() {
    let shape = [5, 6, 7];
    let texts = [
        "[1:, ::2, -3:]",
        "[::-1, 1:5:2, :]",
        "[2, :, 3]",
        "[-1, ::-2, 6:1:-3]",
        "[4:1:-1, -5:, 1::3]",
        "[10:, :, :]",
        "[:, -100:100, ::-4]",
        "[0, 0, -7]",
    ];
    on_devices(|device| {
        let x = iota(&shape);
        for text in texts {
            let index = Index::parse(text).unwrap();
            let y = x.get(&index).unwrap();
            assert_eq!(y.to_vec::<f32>().unwrap(), host_get(&shape, &index), "{device} {text}");
        }
        // new axes and the ellipsis only reshape
        let y = x.get(&Index::parse("[None, ..., 2, None]").unwrap()).unwrap();
        assert_eq!(y.shape(), &[1, 5, 6, 1]);
        assert_eq!(y.to_vec::<f32>().unwrap(), host_get(&shape, &Index::parse("[:, :, 2]").unwrap()));
        let y = x.get(&Index::parse("[1]").unwrap()).unwrap();
        assert_eq!(y.shape(), &[6, 7]);
    });
}

#[test]
fn tensor_indices_pick_and_broadcast() {
    on_devices(|device| {
        let x = iota(&[4, 5, 6]);
        let i = Tensor::from_vec(vec![3i32, -1, 0], &[3]).unwrap();
        let j = Tensor::from_vec(vec![1i32, 4], &[2, 1]).unwrap();
        // adjacent tensor entries: their (2, 3) batch replaces dims 1 and 2
        let y = x.get(&[Index::all(), Index::Tensor(j.clone()), Index::Tensor(i.clone())]).unwrap();
        assert_eq!(y.shape(), &[4, 2, 3], "{device}");
        let v = y.to_vec::<f32>().unwrap();
        let want: Vec<f32> = (0..4)
            .flat_map(|a| {
                [1, 4]
                    .into_iter()
                    .flat_map(move |b| [3, 5, 0].into_iter().map(move |c| (a * 30 + b * 6 + c) as f32))
            })
            .collect();
        assert_eq!(v, want, "{device}");
        // separated by a slice: the batch goes in front
        let y = x
            .get(&[
                Index::Tensor(i.clone()),
                Index::all(),
                Index::Tensor(Tensor::from_vec(vec![5i32, 0, 2], &[3]).unwrap()),
            ])
            .unwrap();
        assert_eq!(y.shape(), &[3, 5], "{device}");
        let want: Vec<f32> = [(3, 5), (3, 0), (0, 2)]
            .into_iter()
            .flat_map(|(a, c)| (0..5).map(move |b| (a * 30 + b * 6 + c) as f32))
            .collect();
        assert_eq!(y.to_vec::<f32>().unwrap(), want, "{device}");
        // mixed with an int and a stepped slice, and gradients through it
        let w = iota(&[4, 5, 6]);
        w.set_requires_grad(true).unwrap();
        let y = w
            .get(&[
                Index::Int(1),
                Index::Tensor(Tensor::from_vec(vec![2i32, 2], &[2]).unwrap()),
                Index::parse("::3").unwrap().remove(0),
            ])
            .unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![42.0, 45.0, 42.0, 45.0], "{device}");
        y.sum(&[], false).unwrap().backward().unwrap();
        let g = w.grad().unwrap().to_vec::<f32>().unwrap();
        let hits: Vec<(usize, f32)> = g.iter().copied().enumerate().filter(|(_, v)| *v != 0.0).collect();
        assert_eq!(hits, vec![(42, 2.0), (45, 2.0)], "{device}");
    });
}

#[test]
fn set_writes_through_the_views() {
    on_devices(|device| {
        let x = iota(&[4, 5]).contiguous();
        x.realize().unwrap();
        x.set(
            &Index::parse("[1:3, ::-2]").unwrap(),
            &Tensor::from_vec(vec![-1.0f32, -2.0, -3.0], &[3]).unwrap(),
        )
        .unwrap();
        x.set(&Index::parse("[3]").unwrap(), &Tensor::full(&[], 9i32).unwrap()).unwrap();
        let want = [
            0., 1., 2., 3., 4., //
            -3., 6., -2., 8., -1., //
            -3., 11., -2., 13., -1., //
            9., 9., 9., 9., 9.,
        ];
        assert_eq!(x.to_vec::<f32>().unwrap(), want, "{device}");
        let wrong = Tensor::full(&[3], 1.0f32).unwrap();
        assert!(matches!(x.set(&Index::parse("[:, 1:]").unwrap(), &wrong), Err(TensorError::Assign { .. })));
    });
}

#[test]
fn parse_reads_python_indices() {
    let parsed = Index::parse("[ -2, 1:, ::-1, None, ..., :3:2 ]").unwrap();
    let text = format!("{parsed:?}");
    assert_eq!(
        text,
        "[Int(-2), Slice { start: Some(1), stop: None, step: None }, Slice { start: None, stop: None, step: Some(-1) }, \
         NewAxis, Ellipsis, Slice { start: None, stop: Some(3), step: Some(2) }]"
    );
    for bad in ["[1:2:3:4]", "[a]", "[1,,2]"] {
        assert!(matches!(Index::parse(bad), Err(TensorError::Parse { .. })), "{bad}");
    }
    let x = Tensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap();
    assert!(x.get(&Index::parse("[2]").unwrap()).is_err());
    assert!(x.get(&Index::parse("[0, 0, 0]").unwrap()).is_err());
    assert!(x.get(&Index::parse("[..., 0, ...]").unwrap()).is_err());
    assert!(x.get(&Index::parse("[::0]").unwrap()).is_err());
}

#[test]
fn gather_one_hot_embedding() {
    on_devices(|device| {
        let x = iota(&[3, 4]);
        let idx = Tensor::from_vec(vec![3i32, 0, 1, 1, 2, 3], &[3, 2]).unwrap();
        assert_eq!(
            x.gather(1, &idx).unwrap().to_vec::<f32>().unwrap(),
            vec![3., 0., 5., 5., 10., 11.],
            "{device}"
        );
        let rows = Tensor::from_vec(vec![2i32, 0, 1], &[1, 3]).unwrap();
        assert_eq!(x.gather(0, &rows).unwrap().to_vec::<f32>().unwrap(), vec![8., 1., 6.], "{device}");
        let labels = Tensor::from_vec(vec![2i32, 0], &[2]).unwrap();
        let hot = labels.one_hot(3).unwrap();
        assert_eq!(
            (hot.dtype(), hot.to_vec::<i32>().unwrap()),
            (DType::I32, vec![0, 0, 1, 1, 0, 0]),
            "{device}"
        );
        let ids = Tensor::from_vec(vec![1i32, 1, 0, 2], &[2, 2]).unwrap();
        let e = ids.embedding(&x.get(&Index::parse("[:, :2]").unwrap()).unwrap()).unwrap();
        assert_eq!(e.shape(), &[2, 2, 2]);
        assert_eq!(e.to_vec::<f32>().unwrap(), vec![4., 5., 4., 5., 0., 1., 8., 9.], "{device}");
    });
    let x = iota(&[3, 4]);
    assert!(matches!(
        x.gather(1, &Tensor::from_vec(vec![0i32; 8], &[4, 2]).unwrap()),
        Err(TensorError::Shapes { .. })
    ));
    assert!(matches!(x.gather(2, &x), Err(TensorError::Axis { .. })));
    assert!(matches!(x.one_hot(3), Err(TensorError::DType { .. })));
    assert!(matches!(Tensor::arange(3).unwrap().embedding(&iota(&[2])), Err(TensorError::Shapes { .. })));
}

#[test]
fn embedding_of_a_large_vocabulary_is_one_kernel() {
    // ids outside the table (negative, past the end) pick zero rows, as tinygrad's one-hot does
    let (vocab, dim) = (30522, 8);
    let ids = [12345i32, -1, 0, 30521, 30522, 7];
    on_devices(|device| {
        let table = iota(&[vocab, dim]);
        let e = Tensor::from_vec(ids.to_vec(), &[2, 3]).unwrap().embedding(&table).unwrap();
        assert_eq!(e.schedule(32).unwrap().kernel_count(), 1, "{device}");
        let want: Vec<f32> = ids
            .iter()
            .flat_map(|&id| {
                (0..dim).map(move |d| {
                    if (0..vocab as i32).contains(&id) { (id as usize * dim + d) as f32 } else { 0.0 }
                })
            })
            .collect();
        assert_eq!(e.to_vec::<f32>().unwrap(), want, "{device}");
    });
}

#[test]
fn triangles_argmin_split_chunk() {
    on_devices(|device| {
        let x = iota(&[2, 3, 4]);
        let host = |keep: &dyn Fn(isize, isize) -> bool| -> Vec<f32> {
            (0..24)
                .map(|v| if keep((v / 4 % 3) as isize, (v % 4) as isize) { v as f32 } else { 0.0 })
                .collect()
        };
        for d in [-2isize, 0, 1, 3] {
            assert_eq!(
                x.triu(d).unwrap().to_vec::<f32>().unwrap(),
                host(&|r, c| c - r >= d),
                "{device} triu {d}"
            );
            assert_eq!(
                x.tril(d).unwrap().to_vec::<f32>().unwrap(),
                host(&|r, c| c - r <= d),
                "{device} tril {d}"
            );
        }
        let v = Tensor::from_vec(vec![3.0f32, -1.0, 2.0, -1.0, 5.0, 0.0], &[2, 3]).unwrap();
        assert_eq!(v.argmin(1, false).unwrap().to_vec::<i32>().unwrap(), vec![1, 0], "{device}");
        assert_eq!(v.argmin(0, true).unwrap().to_vec::<i32>().unwrap(), vec![1, 0, 1], "{device}");
        let i = Tensor::from_vec(vec![4i32, -7, 9, -7], &[4]).unwrap();
        assert_eq!(i.argmin(0, false).unwrap().item::<i32>().unwrap(), 1, "{device}");
        let u = Tensor::from_vec(vec![4u32, 7, 2, 2], &[4]).unwrap();
        assert_eq!(u.argmin(0, false).unwrap().item::<i32>().unwrap(), 2, "{device}");
        let b = Tensor::from_vec(vec![true, false, false], &[3]).unwrap();
        assert_eq!(b.argmin(0, false).unwrap().item::<i32>().unwrap(), 1, "{device}");
        let parts = x.split(&[1, 3], -1).unwrap();
        assert_eq!(parts[1].shape(), &[2, 3, 3]);
        assert_eq!(parts[0].to_vec::<f32>().unwrap(), vec![0., 4., 8., 12., 16., 20.], "{device}");
        let chunks = x.chunk(2, 1).unwrap();
        assert_eq!(chunks.iter().map(|c| c.shape()[1]).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(
            chunks[1].to_vec::<f32>().unwrap(),
            vec![8., 9., 10., 11., 20., 21., 22., 23.],
            "{device}"
        );
    });
    let x = iota(&[2, 3]);
    assert!(matches!(x.split(&[1, 1], 1), Err(TensorError::Movement { .. })));
    assert!(matches!(x.chunk(0, 0), Err(TensorError::Movement { .. })));
    assert!(matches!(x.argmin(2, false), Err(TensorError::Axis { .. })));
    assert!(matches!(iota(&[3]).triu(0), Err(TensorError::Axis { .. })));
}

/// `einsum` on the host: every assignment of the letters, the product summed into the
/// output positions.
fn host_einsum(inputs: &[&str], output: &str, operands: &[(&[usize], Vec<f32>)]) -> Vec<f64> {
    let mut sizes = std::collections::BTreeMap::new();
    for (letters, (shape, _)) in inputs.iter().zip(operands) {
        for (c, &d) in letters.chars().zip(shape.iter()) {
            sizes.insert(c, d);
        }
    }
    let letters: Vec<char> = sizes.keys().copied().collect();
    let out_size: usize = output.chars().map(|c| sizes[&c]).product();
    let mut out = vec![0.0; out_size];
    let total: usize = letters.iter().map(|c| sizes[c]).product();
    for mut k in 0..total {
        let mut val = std::collections::BTreeMap::new();
        for c in letters.iter().rev() {
            val.insert(*c, k % sizes[c]);
            k /= sizes[c];
        }
        let flat = |s: &str| s.chars().fold(0, |acc, c| acc * sizes[&c] + val[&c]);
        let p: f64 = inputs.iter().zip(operands).map(|(s, (_, v))| f64::from(v[flat(s)])).product();
        out[flat(output)] += p;
    }
    out
}

#[test]
fn einsum_matches_the_host() {
    let cases: [(&str, &[&[usize]]); 6] = [
        ("ij,jk->ik", &[&[3, 4], &[4, 2]]),
        ("bij,bjk->bki", &[&[2, 3, 4], &[2, 4, 2]]),
        ("ii->i", &[&[3, 3]]),
        ("iji->j", &[&[3, 2, 3]]),
        ("i,j", &[&[3], &[4]]),
        ("ij,ij,j->", &[&[2, 3], &[2, 3], &[3]]),
    ];
    on_devices(|device| {
        for (formula, shapes) in cases {
            let (lhs, rhs) = formula.split_once("->").unwrap_or((formula, "ij"));
            let inputs: Vec<&str> = lhs.split(',').collect();
            let ops: Vec<(&[usize], Vec<f32>)> = shapes
                .iter()
                .enumerate()
                .map(|(s, &sh)| {
                    (
                        sh,
                        (0..sh.iter().product::<usize>())
                            .map(|v| ((v * 7 + s * 3) % 11) as f32 - 5.0)
                            .collect(),
                    )
                })
                .collect();
            let ts: Vec<Tensor> = ops.iter().map(|(s, v)| Tensor::from_slice(v, s).unwrap()).collect();
            let y = Tensor::einsum(formula, &ts.iter().collect::<Vec<_>>()).unwrap();
            let got: Vec<f64> = y.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect();
            assert_eq!(got, host_einsum(&inputs, rhs, &ops), "{device} {formula}");
        }
        // the ellipsis broadcasts
        let a = iota(&[2, 1, 3, 4]);
        let b = iota(&[5, 4, 2]);
        let y = Tensor::einsum("...ij,...jk->...ik", &[&a, &b]).unwrap();
        assert_eq!(y.shape(), &[2, 5, 3, 2], "{device}");
        let want = a.matmul(&b).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), want, "{device}");
    });
    let (a, b) = (iota(&[2, 3]), iota(&[4, 2]));
    for bad in ["ij,jk->ik", "ij->k", "ij,jk->ii", "i,jk", "ijk,jk->i"] {
        assert!(matches!(Tensor::einsum(bad, &[&a, &b]), Err(TensorError::Parse { .. })), "{bad}");
    }
}

#[test]
fn embedding_of_a_few_rows_is_picked_by_selects_that_fuse_into_the_reader() {
    // a table of at most 4 rows: no reduce, so `e + 1` is one elementwise kernel; ids outside
    // the table pick zeros, and the gradient reaches each row once per id that picked it
    let ids = [1i32, 0, 3, -1, 2, 4, 1];
    // an empty table picks zeros of the right shape by either path
    let empty = Tensor::from_vec(ids.to_vec(), &[7]).unwrap().embedding(&iota(&[0, 3])).unwrap();
    assert_eq!((empty.shape(), empty.to_vec::<f32>().unwrap()), (&[7, 3][..], vec![0.0; 21]));
    for rows in [2usize, 3, 4] {
        on_devices(|device| {
            let table = iota(&[rows, 3]);
            let e = Tensor::from_vec(ids.to_vec(), &[7]).unwrap().embedding(&table).unwrap();
            let plus = e.add(1.0).unwrap();
            let schedule = plus.schedule(32).unwrap();
            assert_eq!(schedule.kernel_count(), 1, "{device}");
            let reduces =
                schedule.kernels()[0].toposort().iter().filter(|u| u.op() == Ops::ReduceAxis).count();
            assert_eq!(reduces, 0, "{device}");
            let picked = |id: i32, d: usize| {
                if (0..rows as i32).contains(&id) { (id as usize * 3 + d) as f32 } else { 0.0 }
            };
            let want: Vec<f32> =
                ids.iter().flat_map(|&id| (0..3).map(move |d| picked(id, d) + 1.0)).collect();
            assert_eq!(plus.to_vec::<f32>().unwrap(), want, "{rows} rows on {device}");
            // gradient: d(sum(e * w))/d(table)[r, d] = sum of w over the ids equal to r
            let table = iota(&[rows, 3]);
            table.set_requires_grad(true).unwrap();
            let w = iota(&[7, 3]);
            let loss = Tensor::from_vec(ids.to_vec(), &[7])
                .unwrap()
                .embedding(&table)
                .unwrap()
                .mul(&w)
                .unwrap()
                .sum(&[], false)
                .unwrap();
            loss.backward().unwrap();
            let grad = table.grad().unwrap().to_vec::<f32>().unwrap();
            let want: Vec<f32> = (0..rows)
                .flat_map(|r| {
                    (0..3).map(move |d| {
                        ids.iter()
                            .enumerate()
                            .filter(|&(_, &id)| id == r as i32)
                            .map(|(i, _)| (i * 3 + d) as f32)
                            .sum()
                    })
                })
                .collect();
            assert_eq!(grad, want, "gradient, {rows} rows on {device}");
        });
    }
}
