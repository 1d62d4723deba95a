//! Kernel counts of named graphs, in the style of tinygrad's `test_schedule`, each also
//! run on every device and checked against a host computation.

use crate::common;

use common::devices;

use wgrad_engine::device::open_device;
use wgrad_engine::{ItemKind, KernelLimits, LONG_ROW_MULTIPLE, LONG_ROWS, ROW_REDUCE, Schedule};
use wgrad_ops::Ops;
use wgrad_tensor::{DType, Result, Tensor, with_default_device};

/// Deterministic values in [-2, 2) for a tensor of `n` elements.
fn data(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729) % 4000) as f32 / 1000.0 - 2.0).collect()
}

fn tensor(shape: &[usize], seed: usize) -> Tensor {
    Tensor::from_vec(data(shape.iter().product(), seed), shape).unwrap()
}

/// Asserts that `build` schedules into `kernels` kernels (binding at most 32 buffers each)
/// and computes `expect` on every device.
fn check(kernels: usize, build: impl Fn() -> Result<Tensor>, expect: impl Fn() -> Vec<f32>) {
    check_rows(kernels, kernels, build, expect);
}

/// [`check`] with `rows` kernels on a device that reduces short rows in place (workgroup
/// memory: wgpu) and `split` on one that does not (the CPU interpreter).
fn check_rows(rows: usize, split: usize, build: impl Fn() -> Result<Tensor>, expect: impl Fn() -> Vec<f32>) {
    for device in devices() {
        let in_place = open_device(&device).unwrap().kernel_limits().row_reduce > 0;
        let kernels = if in_place { rows } else { split };
        with_default_device(&device, || {
            let t = build().unwrap();
            let schedule = t.schedule(32).unwrap();
            assert_eq!(schedule.kernel_count(), kernels, "kernels on {device}: {:#?}", schedule.kernels());
            let got = t.to_vec::<f32>().unwrap();
            let want = expect();
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!((g - w).abs() <= 1e-4 + 1e-4 * w.abs(), "{device} [{i}]: {g} != {w}");
            }
        });
    }
}

fn rows(v: &[f32], cols: usize) -> Vec<&[f32]> {
    v.chunks(cols).collect()
}

fn reduces(s: &Schedule) -> Vec<usize> {
    s.kernels().iter().map(|k| k.toposort().iter().filter(|u| u.op() == Ops::ReduceAxis).count()).collect()
}

#[test]
fn elementwise_chain_is_one_kernel() {
    check(
        1,
        || tensor(&[4, 8], 0).mul(tensor(&[4, 8], 1))?.add(tensor(&[4, 8], 2)),
        || (0..32).map(|i| data(32, 0)[i] * data(32, 1)[i] + data(32, 2)[i]).collect(),
    );
}

#[test]
fn elementwise_fuses_into_the_reduce() {
    check(
        1,
        || tensor(&[4, 8], 0).add(tensor(&[4, 8], 1))?.sum(&[], false),
        || vec![data(32, 0).iter().zip(data(32, 1)).map(|(a, b)| a + b).sum()],
    );
}

#[test]
fn elementwise_after_the_reduce_fuses() {
    check(
        1,
        || tensor(&[4, 8], 0).sum(&[1], false)?.mul(2.0)?.add(tensor(&[4], 1)),
        || {
            rows(&data(32, 0), 8)
                .iter()
                .zip(data(4, 1))
                .map(|(r, c)| r.iter().sum::<f32>() * 2.0 + c)
                .collect()
        },
    );
}

/// A layer norm (no scale or shift, eps 1e-5) over rows of `cols`, in f64.
fn host_layernorm(v: &[f32], cols: usize) -> Vec<f32> {
    rows(v, cols)
        .iter()
        .flat_map(|r| {
            let mean = r.iter().map(|&x| f64::from(x)).sum::<f64>() / cols as f64;
            let var = r.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / cols as f64;
            r.iter().map(move |&x| ((f64::from(x) - mean) / (var + 1e-5).sqrt()) as f32)
        })
        .collect()
}

fn host_softmax(v: &[f32], cols: usize) -> Vec<f32> {
    rows(v, cols)
        .iter()
        .flat_map(|r| {
            let m = r.iter().cloned().fold(f32::MIN, f32::max);
            let e: Vec<f32> = r.iter().map(|x| (x - m).exp()).collect();
            let s: f32 = e.iter().sum();
            e.into_iter().map(move |x| x / s)
        })
        .collect()
}

#[test]
fn softmax_over_the_last_axis_is_one_kernel_where_rows_reduce_in_place() {
    // exp(x - logsumexp), the logsumexp's reduces (the max nested in the sum) read back over
    // their rows: one kernel on wgpu; where rows do not reduce in place the logsumexp is
    // realized (its reduces in one kernel, the max in its own loop)
    check_rows(1, 2, || tensor(&[4, 8], 0).softmax(-1), || host_softmax(&data(32, 0), 8));
    // after a matmul: the product is realized, its rows reduced by the softmax's kernel
    let host = || {
        let (a, w) = (data(32, 0), data(64, 1));
        let product: Vec<f32> =
            (0..32).map(|i| (0..8).map(|k| a[(i / 8) * 8 + k] * w[k * 8 + i % 8]).sum()).collect();
        host_softmax(&product, 8)
    };
    check_rows(2, 3, || tensor(&[4, 8], 0).matmul(&tensor(&[8, 8], 1))?.softmax(-1), host);
}

#[test]
fn rows_a_subgroup_wide_match_a_host_reference() {
    // softmaxes and layer norms over rows that a device whose subgroups all have one size (an
    // NVIDIA GPU's 32, llvmpipe's 8) reduces with each row one subgroup wide: one kernel each
    // where the device reduces rows in place, the host's values everywhere
    for device in devices() {
        let limits = open_device(&device).unwrap().kernel_limits();
        with_default_device(&device, || {
            for cols in [64, 128, 256, 384] {
                let kernels = if limits.reduces_rows_of(cols) { 1 } else { 2 };
                let x = tensor(&[16, cols], 1);
                let softmax = x.softmax(-1).unwrap();
                assert_eq!(
                    softmax.schedule(32).unwrap().kernel_count(),
                    kernels,
                    "softmax {cols} on {device}"
                );
                let (got, want) = (softmax.to_vec::<f32>().unwrap(), host_softmax(&data(16 * cols, 1), cols));
                let close = got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-6 + 1e-4 * w);
                assert!(close, "softmax {cols} on {device}");
                let norm = x.layernorm(-1, 1e-5).unwrap();
                assert_eq!(
                    norm.schedule(32).unwrap().kernel_count(),
                    kernels,
                    "layer norm {cols} on {device}"
                );
                let (got, want) = (norm.to_vec::<f32>().unwrap(), host_layernorm(&data(16 * cols, 1), cols));
                assert!(
                    got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1e-4),
                    "layer norm {cols} on {device}"
                );
            }
        });
    }
}

#[test]
fn longer_rows_reduce_in_place_where_subgroups_combine_their_partials() {
    // a row longer than ROW_REDUCE is realized, but where subgroups combine its partials:
    // rows of a multiple of LONG_ROW_MULTIPLE up to LONG_ROWS
    let long = |cols: usize| {
        for device in devices() {
            let limits = open_device(&device).unwrap().kernel_limits();
            let kernels = if limits.reduces_rows_of(cols) { 1 } else { 2 };
            with_default_device(&device, || {
                let t = tensor(&[2, cols], 0).softmax(-1).unwrap();
                assert_eq!(t.schedule(32).unwrap().kernel_count(), kernels, "{cols} on {device}");
                let (got, want) = (t.to_vec::<f32>().unwrap(), host_softmax(&data(2 * cols, 0), cols));
                assert!(
                    got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-6 + 1e-4 * w),
                    "{cols} on {device}"
                );
            });
        }
    };
    for cols in [ROW_REDUCE + 4, 2 * ROW_REDUCE, LONG_ROWS, LONG_ROWS + LONG_ROW_MULTIPLE] {
        long(cols);
    }
    // a layer norm over long rows (the variance's reduce reads the mean back): one kernel
    // where the device reduces such rows in place, the same values everywhere
    let cols = 4 * ROW_REDUCE;
    for device in devices() {
        let kernels = if open_device(&device).unwrap().kernel_limits().reduces_rows_of(cols) { 1 } else { 2 };
        with_default_device(&device, || {
            let t = tensor(&[2, cols], 0).layernorm(-1, 1e-5).unwrap();
            assert_eq!(t.schedule(32).unwrap().kernel_count(), kernels, "layer norm on {device}");
            let got = t.to_vec::<f32>().unwrap();
            let want = host_layernorm(&data(2 * cols, 0), cols);
            assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1e-4), "layer norm on {device}");
        });
    }
    let wgpu = KernelLimits::new(32, true, true);
    assert!(wgpu.reduces_rows_of(LONG_ROWS) && !wgpu.reduces_rows_of(ROW_REDUCE + 4));
    assert!(!wgpu.reduces_rows_of(LONG_ROWS + LONG_ROW_MULTIPLE));
    assert!(!KernelLimits::new(32, true, false).reduces_rows_of(2 * ROW_REDUCE));
}

#[test]
fn attention_heads_merge_without_a_copy() {
    // (batch 1, heads 2, 4 tokens, 3 dims): scores, the softmax (two kernels where rows do not
    // reduce in place), and the weighted sum stored in (tokens, heads, dims) order, so merging
    // the heads is a reshape
    let (h, s, d) = (2, 4, 3);
    let host = || {
        let (q, k, v) = (data(h * s * d, 0), data(h * s * d, 1), data(h * s * d, 2));
        let mut out = vec![0.0f32; s * h * d];
        for head in 0..h {
            let at = |x: &[f32], i: usize, j: usize| x[(head * s + i) * d + j];
            for i in 0..s {
                let scores: Vec<f32> = (0..s)
                    .map(|j| (0..d).map(|c| at(&q, i, c) * at(&k, j, c)).sum::<f32>() / (d as f32).sqrt())
                    .collect();
                let weights = host_softmax(&scores, s);
                for c in 0..d {
                    out[(i * h + head) * d + c] = (0..s).map(|j| weights[j] * at(&v, j, c)).sum();
                }
            }
        }
        out
    };
    let build = || {
        let [q, k, v] = [0, 1, 2].map(|seed| tensor(&[1, h, s, d], seed));
        let context = q.scaled_dot_product_attention(&k, &v, None, false)?;
        Ok(context.transpose(1, 2)?.reshape(&[1, s as isize, (h * d) as isize])?.contiguous())
    };
    check_rows(3, 4, build, host);
}

#[test]
fn a_reduce_read_broadcast_by_another_over_its_axes_fuses_either_way_round() {
    // max(x) + log(sum(e^(x - max(x)))) with the max written first: one kernel all the same
    let host = || {
        rows(&data(32, 0), 8)
            .iter()
            .map(|r| {
                let m = r.iter().cloned().fold(f32::MIN, f32::max);
                m + r.iter().map(|x| (x - m).exp()).sum::<f32>().ln()
            })
            .collect()
    };
    let build = || {
        let x = tensor(&[4, 8], 0);
        let m = x.max(&[1], true)?;
        m.add(x.sub(&m)?.exp().sum(&[1], true)?.log())
    };
    check(1, build, host);
    // a sum over another axis of a max read broadcast does not fuse (two kernels)
    let build = || {
        let x = tensor(&[4, 8], 0);
        x.sub(x.max(&[1], true)?)?.sum(&[0], false)
    };
    let host = || {
        let values = data(32, 0);
        let r = rows(&values, 8);
        let maxes: Vec<f32> = r.iter().map(|r| r.iter().cloned().fold(f32::MIN, f32::max)).collect();
        (0..8).map(|c| r.iter().zip(&maxes).map(|(r, m)| r[c] - m).sum()).collect()
    };
    check(2, build, host);
}

#[test]
fn layernorm_is_one_kernel_where_rows_reduce_in_place() {
    // the mean nests in the variance; both in the normalize's kernel, or (where rows do not
    // reduce in place) in a kernel of their own that stores both
    let host = || {
        rows(&data(32, 0), 8)
            .iter()
            .flat_map(|r| {
                let mean = r.iter().sum::<f32>() / 8.0;
                let var = r.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / 8.0;
                r.iter().map(move |x| (x - mean) / (var + 1e-5).sqrt())
            })
            .collect()
    };
    check_rows(1, 2, || tensor(&[4, 8], 0).layernorm(-1, 1e-5), host);
}

/// The scalar dtype of the value a kernel AST's first store writes.
fn stored(k: &wgrad_ops::UOp) -> wgrad_dtype::ScalarType {
    let store = k.toposort().into_iter().find(|u| u.op() == Ops::Store).expect("a store");
    store.src()[0].dtype().scalar()
}

/// Whether a kernel AST loads any float32 buffer.
fn reads_float(k: &wgrad_ops::UOp) -> bool {
    k.toposort().into_iter().any(|u| u.op() == Ops::Load && u.dtype().scalar() == DType::F32.scalar())
}

#[test]
fn a_half_projection_read_by_a_layer_norm_stores_its_halves() {
    // a float16 layer's output projection (float32 sums, a bias, rounded to half) and the
    // residual layer norm after it: the product's kernel stores the rounded halves (where rows
    // reduce in place and where they do not), so the norm reads two bytes an element and
    // rounds nothing itself
    let build_in = |dtype: DType| -> Result<Tensor> {
        let half = |shape: &[usize], seed| -> Result<Tensor> {
            let t = tensor(shape, seed).cast(dtype);
            t.realize()?;
            Ok(t)
        };
        let (x, w, bias, residual) =
            (half(&[4, 8], 0)?, half(&[8, 8], 1)?, half(&[8], 2)?, half(&[4, 8], 3)?);
        let projected = x.matmul_dtype(&w.t()?, DType::F32)?.add(bias.float())?.cast(dtype);
        Ok(projected.float().add(residual.float())?.layernorm(-1, 1e-5)?.cast(dtype))
    };
    let build = || build_in(DType::F16);
    let mut results = vec![];
    for device in devices() {
        let in_place = open_device(&device).unwrap().kernel_limits().row_reduce > 0;
        with_default_device(&device, || {
            let t = build().unwrap();
            let schedule = t.schedule(32).unwrap();
            assert_eq!(schedule.kernel_count(), if in_place { 2 } else { 3 }, "{device}");
            let product = &schedule.kernels()[0];
            assert_eq!(stored(product), DType::F16.scalar(), "{device}: {product:?}");
            let last = schedule.kernels().last().cloned().unwrap();
            // where rows do not reduce in place, the norm's statistics come from a kernel of their own
            assert_eq!(reads_float(last), !in_place, "{device}: {last:?}");
            results.push(t.float().to_vec::<f32>().unwrap());
            // bfloat16 has no WGSL storage type (its stores are atomics on shared words): the
            // product stays float32
            let bf16 = build_in(DType::BF16).unwrap().schedule(32).unwrap();
            assert_eq!(stored(bf16.kernels()[0]), DType::F32.scalar(), "{device}");
        });
    }
    for other in &results[1..] {
        assert!(
            other.iter().zip(&results[0]).all(|(a, b)| (a - b).abs() <= 2e-3),
            "{other:?} != {:?}",
            results[0]
        );
    }
}

#[test]
fn half_attention_scores_stored_as_halves_reach_the_softmax_as_halves() {
    // scores summed in float32, scaled and rounded to half: their kernel stores the halves and
    // the softmax reads no float32 buffer
    for device in devices() {
        with_default_device(&device, || {
            let [q, k, v] = [0, 1, 2].map(|seed| tensor(&[1, 2, 4, 8], seed).cast(DType::F16));
            let out = q.scaled_dot_product_attention_scores_in(&k, &v, None, false, DType::F16).unwrap();
            let schedule = out.schedule(32).unwrap();
            let scores = schedule.kernels()[0];
            assert_eq!(stored(scores), DType::F16.scalar(), "{device}: {scores:?}");
            assert!(!reads_float(schedule.kernels()[1]), "{device}: {:?}", schedule.kernels()[1]);
        });
    }
}

#[test]
fn matmul_bias_relu_is_one_kernel() {
    let host = || {
        let (a, w, b) = (data(32, 0), data(128, 1), data(16, 2));
        let mut out = vec![0.0f32; 64];
        for i in 0..4 {
            for j in 0..16 {
                let dot: f32 = (0..8).map(|k| a[i * 8 + k] * w[k * 16 + j]).sum();
                out[i * 16 + j] = (dot + b[j]).max(0.0);
            }
        }
        out
    };
    check(1, || Ok(tensor(&[4, 8], 0).matmul(&tensor(&[8, 16], 1))?.add(tensor(&[16], 2))?.relu()), host);
}

#[test]
fn expanding_a_reduce_realizes_it_unless_it_is_read_back_over_its_rows() {
    let host = || {
        rows(&data(32, 0), 8)
            .iter()
            .flat_map(|r| {
                let m = r.iter().cloned().fold(f32::MIN, f32::max);
                r.iter().map(move |x| x - m)
            })
            .collect()
    };
    check_rows(1, 2, || tensor(&[4, 8], 0).sub(tensor(&[4, 8], 0).max(&[1], true)?), host);
    // broadcast over another shape than the one it reduced: realized
    let host = || {
        let maxes: Vec<f32> =
            rows(&data(32, 0), 8).iter().map(|r| r.iter().cloned().fold(f32::MIN, f32::max)).collect();
        data(64, 1).iter().enumerate().map(|(i, y)| y - maxes[i / 16]).collect()
    };
    check(2, || tensor(&[4, 16], 1).sub(tensor(&[4, 8], 0).max(&[1], true)?), host);
}

#[test]
fn an_unsafe_op_under_a_pad_is_realized() {
    let padded = |v: Vec<f32>| {
        let mut out = vec![0.0; 8];
        out.extend(v);
        out.extend([0.0; 8]);
        out.into_iter().map(|x| x + 1.0).collect::<Vec<f32>>()
    };
    // exp(0) is 1, not 0: exp gets a buffer before the pad
    check(
        2,
        || tensor(&[4, 8], 0).exp().pad(&[(1, 1), (0, 0)])?.add(1.0),
        || padded(data(32, 0).iter().map(|x| x.exp()).collect()),
    );
    // x * 2 is 0 at 0: the pad fuses
    check(
        1,
        || tensor(&[4, 8], 0).mul(2.0)?.pad(&[(1, 1), (0, 0)])?.add(1.0),
        || padded(data(32, 0).iter().map(|x| x * 2.0).collect()),
    );
}

#[test]
fn a_kernel_holds_one_reduce() {
    let (a, b) = (data(32, 0), data(32, 1));
    check(
        2,
        || tensor(&[4, 8], 0).sum(&[], false)?.add(tensor(&[4, 8], 1).sum(&[], false)?),
        || vec![a.iter().sum::<f32>() + b.iter().sum::<f32>()],
    );
    check(
        2,
        || tensor(&[4, 8], 0).max(&[1], false)?.sum(&[0], false),
        || vec![rows(&a, 8).iter().map(|r| r.iter().cloned().fold(f32::MIN, f32::max)).sum()],
    );
}

#[test]
fn a_large_reduction_into_a_small_output_splits_in_two() {
    let n = 300_000;
    let build = || Tensor::from_vec(data(n, 3), &[n])?.sum(&[], false);
    check(2, build, || vec![data(n, 3).iter().map(|&x| f64::from(x)).sum::<f64>() as f32]);
    with_default_device(&devices()[0], || {
        assert_eq!(reduces(&build().unwrap().schedule(32).unwrap()), [1, 1]);
    });
}

/// Small whole numbers as f32 (sums of them are exact in f32, whatever the order).
fn whole(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + seed * 104_729) % 7) as f32 - 3.0).collect()
}

/// Per-channel sums as a batch norm's statistics: `(batch, channels, h * w)` summed over all
/// but the channels.
fn channel_sums(x: &[f32], [b, c, hw]: [usize; 3]) -> Vec<f32> {
    (0..c).map(|ch| (0..b * hw).map(|i| x[(i / hw * c + ch) * hw + i % hw]).sum()).collect()
}

#[test]
fn a_reduce_into_few_outputs_that_grouping_cannot_fill_splits_in_two() {
    // 32 channels of 64 x 20 x 20: 25600 times its output, under the 32768 that splits any
    // reduce, and grouping gives an output at most 64 threads (2048 in all): split
    let (b, c, hw) = (64, 32, 400);
    let stats = || Tensor::from_vec(whole(b * c * hw, 0), &[b, c, 20, 20])?.sum(&[0, 2, 3], false);
    check(2, stats, || channel_sums(&whole(b * c * hw, 0), [b, c, hw]));
    // 64 channels of 512 x 6 x 6: groups of 256 give 16384 threads, one kernel
    let (b, c, hw) = (512, 64, 36);
    let stats = || Tensor::from_vec(whole(b * c * hw, 1), &[b, c, 6, 6])?.sum(&[0, 2, 3], false);
    check(1, stats, || channel_sums(&whole(b * c * hw, 1), [b, c, hw]));
}

#[test]
fn a_long_contraction_into_few_outputs_splits_k_and_a_matrix_vector_product_does_not() {
    // a weight gradient x^T @ dy over 8192 rows into 16 x 16: 8192 times its output, split
    let (k, n) = (8192, 16);
    let host = |x: &[f32], dy: &[f32]| -> Vec<f32> {
        let cell = |i: usize, j: usize| (0..k).map(|r| f64::from(x[r * n + i] * dy[r * n + j])).sum::<f64>();
        (0..n * n).map(|o| cell(o / n, o % n) as f32).collect()
    };
    let weight_grad = || tensor(&[k, n], 0).transpose(0, 1)?.matmul(&tensor(&[k, n], 1));
    check(2, weight_grad, || host(&data(k * n, 0), &data(k * n, 1)));
    // a vector times a matrix: the matrix is broadcast along no output axis
    let matvec = || tensor(&[1, k], 0).matmul(&tensor(&[k, n], 1));
    check(1, matvec, || {
        let (v, m) = (data(k, 0), data(k * n, 1));
        (0..n).map(|j| (0..k).map(|r| f64::from(v[r] * m[r * n + j])).sum::<f64>() as f32).collect()
    });
}

#[test]
fn a_reduce_read_through_a_permute_is_realized() {
    let host = |permuted: bool| {
        let sums: Vec<f32> = rows(&data(120, 0), 6).iter().map(|r| r.iter().sum()).collect();
        let other = data(20, 1);
        (0..20)
            .map(|i| {
                let (r, c) = if permuted { (i % 4, i / 4) } else { (i / 5, i % 5) };
                sums[r * 5 + c] + other[i]
            })
            .collect()
    };
    check(
        2,
        || tensor(&[4, 5, 6], 0).sum(&[2], false)?.permute(&[1, 0])?.add(tensor(&[5, 4], 1)),
        || host(true),
    );
    check(1, || tensor(&[4, 5, 6], 0).sum(&[2], false)?.add(tensor(&[4, 5], 1)), || host(false));
}

#[test]
fn contiguous_realizes() {
    check(
        2,
        || (&tensor(&[4, 8], 0) + 1.0).contiguous().mul(2.0),
        || data(32, 0).iter().map(|x| (x + 1.0) * 2.0).collect(),
    );
    check(0, || Ok(tensor(&[4, 8], 0).contiguous()), || data(32, 0));
}

#[test]
fn a_shared_subexpression_is_recomputed_in_one_kernel() {
    let build = || {
        let x = tensor(&[4, 8], 0).add(tensor(&[4, 8], 1))?;
        x.mul(2.0)?.add(x.mul(3.0)?)
    };
    check(1, build, || data(32, 0).iter().zip(data(32, 1)).map(|(a, b)| (a + b) * 5.0).collect());
}

#[test]
fn kernels_stay_within_the_buffer_limit() {
    let build = || {
        let parts: Vec<Tensor> = (0..40).map(|i| tensor(&[16], i)).collect();
        parts[1..].iter().try_fold(parts[0].clone(), |acc, p| acc.add(p))
    };
    let host = || (0..16).map(|i| (0..40).map(|s| data(16, s)[i]).sum()).collect();
    for device in devices() {
        with_default_device(&device, || {
            let schedule = build().unwrap().schedule(8).unwrap();
            assert!(schedule.items.iter().all(|i| i.bufs.len() <= 8), "a kernel binds more than 8 buffers");
            assert_eq!(schedule.kernel_count(), 7);
        });
    }
    check(2, build, host);
}

#[test]
fn ranges_and_windows_are_one_kernel() {
    check(1, || Ok(Tensor::arange(10)?.cast(DType::F32)), || (0..10).map(|i| i as f32).collect());
    check(1, || Ok(Tensor::eye(3, DType::F32)?.contiguous()), || vec![1., 0., 0., 0., 1., 0., 0., 0., 1.]);
    let host_cumsum = || {
        rows(&data(32, 0), 8)
            .iter()
            .flat_map(|r| {
                r.iter()
                    .scan(0.0, |s, x| {
                        *s += x;
                        Some(*s)
                    })
                    .collect::<Vec<f32>>()
            })
            .collect()
    };
    check(1, || tensor(&[4, 8], 0).cumsum(1), host_cumsum);
    let cat = || [data(8, 0), data(8, 1), data(8, 2)].concat();
    check(1, || Tensor::cat(&[&tensor(&[1, 8], 0), &tensor(&[1, 8], 1), &tensor(&[1, 8], 2)], 0), cat);
}

#[test]
fn an_assign_writes_in_place_after_its_readers() {
    for device in devices() {
        with_default_device(&device, || {
            let w = tensor(&[8], 0);
            let before = w.mul(1.0).unwrap();
            w.assign(&w.mul(2.0).unwrap().add(1.0).unwrap()).unwrap();
            assert_eq!(w.schedule(32).unwrap().kernel_count(), 1);
            Tensor::realize_all(&[&before, &w]).unwrap();
            assert_eq!(before.to_vec::<f32>().unwrap(), data(8, 0));
            let want: Vec<f32> = data(8, 0).iter().map(|x| x * 2.0 + 1.0).collect();
            assert_eq!(w.to_vec::<f32>().unwrap(), want);
        });
    }
}

#[test]
fn realized_values_are_read_not_recomputed() {
    for device in devices() {
        with_default_device(&device, || {
            let a = tensor(&[4, 8], 0);
            let m = a.max(&[1], true).unwrap();
            // broadcast over another shape than its rows', so realized on every device
            let centered = tensor(&[4, 16], 1).sub(&m).unwrap();
            centered.realize().unwrap();
            // m was computed for `centered` and is still held: it is read back, not reduced again
            let twice = m.mul(2.0).unwrap();
            assert_eq!(reduces(&twice.schedule(32).unwrap()), [0]);
            let want: Vec<f32> = rows(&data(32, 0), 8)
                .iter()
                .map(|r| 2.0 * r.iter().cloned().fold(f32::MIN, f32::max))
                .collect();
            assert_eq!(twice.to_vec::<f32>().unwrap(), want);
        });
    }
}

#[test]
fn gradients_schedule_like_any_graph() {
    for device in devices() {
        with_default_device(&device, || {
            let (x, w) = (tensor(&[4, 8], 0), tensor(&[8, 16], 1));
            w.set_requires_grad(true).unwrap();
            x.matmul(&w).unwrap().relu().sum(&[], false).unwrap().backward().unwrap();
            let g = w.grad().unwrap();
            // relu's mask (a matmul) and the gradient matmul
            assert_eq!(g.schedule(32).unwrap().kernel_count(), 2);
            let (xs, ws) = (data(32, 0), data(128, 1));
            let mut want = vec![0.0f32; 128];
            for i in 0..4 {
                for j in 0..16 {
                    let dot: f32 = (0..8).map(|k| xs[i * 8 + k] * ws[k * 16 + j]).sum();
                    if dot > 0.0 {
                        (0..8).for_each(|k| want[k * 16 + j] += xs[i * 8 + k]);
                    }
                }
            }
            let got = g.to_vec::<f32>().unwrap();
            assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-4), "{got:?} != {want:?}");
        });
    }
}

#[test]
fn copies_are_schedule_items() {
    let devices = devices();
    let (Some(from), Some(to)) = (devices.first(), devices.get(1)) else { return };
    let moved = with_default_device(from, || tensor(&[4, 8], 0).add(1.0).unwrap().to(to));
    let schedule = moved.schedule(32).unwrap();
    assert!(schedule.items.iter().any(|i| matches!(i.kind, ItemKind::Copy)));
    assert_eq!(moved.to_vec::<f32>().unwrap(), data(32, 0).iter().map(|x| x + 1.0).collect::<Vec<_>>());
}

/// The schedule realizing `tensors` together (as `Tensor::realize_all` would), on the first
/// one's device.
fn schedule_of(tensors: &[&Tensor]) -> Schedule {
    let uops: Vec<_> = tensors.iter().map(|t| t.uop()).collect();
    let limits = open_device(tensors[0].device()).unwrap().kernel_limits();
    wgrad_engine::schedule_with(&uops, KernelLimits { max_buffers: 32, ..limits }).unwrap()
}

#[test]
fn an_adam_update_of_a_parameter_is_one_kernel_with_three_outputs() {
    let (b1, b2, lr, eps) = (0.9f32, 0.999f32, 0.01f32, 1e-8f32);
    for device in devices() {
        with_default_device(&device, || {
            let (p, g, m, v) =
                (tensor(&[4, 8], 0), tensor(&[4, 8], 1), tensor(&[4, 8], 2), tensor(&[4, 8], 3));
            let v = v.abs().contiguous();
            let powers =
                [Tensor::full(&[], b1).unwrap().contiguous(), Tensor::full(&[], b2).unwrap().contiguous()];
            Tensor::realize_all(&[&v, &powers[0], &powers[1]]).unwrap();
            // Adam's update, as optim/adam.rs builds it (the powers already advanced)
            m.assign(&m.mul(b1).unwrap().add(g.mul(1.0 - b1).unwrap()).unwrap()).unwrap();
            v.assign(&v.mul(b2).unwrap().add(g.square().mul(1.0 - b2).unwrap()).unwrap()).unwrap();
            let m_hat = m.div(powers[0].rsub(1.0).unwrap()).unwrap();
            let v_hat = v.div(powers[1].rsub(1.0).unwrap()).unwrap();
            let u = m_hat.div(v_hat.sqrt().add(eps).unwrap()).unwrap();
            p.assign(&p.sub(u.mul(lr).unwrap()).unwrap()).unwrap();
            let schedule = schedule_of(&[&m, &v, &p]);
            assert_eq!(schedule.kernel_count(), 1, "{device}: {:#?}", schedule.kernels());
            let stores = schedule.kernels()[0].src().len();
            assert_eq!(
                (stores, schedule.items[0].bufs.len()),
                (3, 6),
                "{device}: m, v, p; and g, b1^t, b2^t"
            );
            Tensor::realize_all(&[&m, &v, &p]).unwrap();
            let (p0, g0, m0, v0) = (data(32, 0), data(32, 1), data(32, 2), data(32, 3));
            for i in 0..32 {
                let m1 = m0[i] * b1 + g0[i] * (1.0 - b1);
                let v1 = v0[i].abs() * b2 + g0[i] * g0[i] * (1.0 - b2);
                let p1 = p0[i] - lr * (m1 / (1.0 - b1)) / ((v1 / (1.0 - b2)).sqrt() + eps);
                for (name, got, want) in [("m", &m, m1), ("v", &v, v1), ("p", &p, p1)] {
                    let got = got.to_vec::<f32>().unwrap()[i];
                    assert!(
                        (got - want).abs() <= 1e-6 + 1e-4 * want.abs(),
                        "{device} {name}[{i}]: {got} != {want}"
                    );
                }
            }
        });
    }
}

#[test]
fn independent_elementwise_updates_of_one_shape_share_a_kernel() {
    for device in devices() {
        with_default_device(&device, || {
            let (a, b, c) = (tensor(&[4, 8], 0), tensor(&[4, 8], 1), tensor(&[8], 2));
            a.assign(&a.mul(2.0).unwrap()).unwrap();
            b.assign(&b.add(1.0).unwrap()).unwrap();
            c.assign(&c.sub(1.0).unwrap()).unwrap();
            // a and b neither read the other: one launch stores both; c is another shape
            let schedule = schedule_of(&[&a, &b, &c]);
            let stores: Vec<usize> = schedule.kernels().iter().map(|k| k.src().len()).collect();
            assert_eq!(stores, [2, 1], "{device}: {:#?}", schedule.kernels());
            Tensor::realize_all(&[&a, &b, &c]).unwrap();
            let twice: Vec<f32> = data(32, 0).iter().map(|x| x * 2.0).collect();
            assert_eq!(a.to_vec::<f32>().unwrap(), twice, "{device}");
            assert_eq!(b.to_vec::<f32>().unwrap(), data(32, 1).iter().map(|x| x + 1.0).collect::<Vec<_>>());
            assert_eq!(c.to_vec::<f32>().unwrap(), data(8, 2).iter().map(|x| x - 1.0).collect::<Vec<_>>());
        });
    }
}

#[test]
fn independent_reduces_over_the_same_axes_share_a_kernel() {
    for device in devices() {
        with_default_device(&device, || {
            let (x, y) = (tensor(&[4, 8], 0), tensor(&[4, 8], 1));
            let sx = x.sum(&[1], false).unwrap();
            let sxy = x.mul(&y).unwrap().sum(&[1], false).unwrap();
            let my = y.max(&[1], false).unwrap();
            let columns = x.sum(&[0], false).unwrap();
            // as a batch norm's gradient sums: the three row reduces of (4, 8) run as one
            // launch; a reduce of other axes does not join them
            let schedule = schedule_of(&[&sx, &sxy, &my, &columns]);
            let stores: Vec<usize> = schedule.kernels().iter().map(|k| k.src().len()).collect();
            assert_eq!(stores, [3, 1], "{device}: {:#?}", schedule.kernels());
            Tensor::realize_all(&[&sx, &sxy, &my, &columns]).unwrap();
            let (a, b) = (data(32, 0), data(32, 1));
            let close = |got: Vec<f32>, want: Vec<f32>| {
                got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5 + 1e-5 * w.abs())
            };
            let sums: Vec<f32> = rows(&a, 8).iter().map(|r| r.iter().sum()).collect();
            let dots: Vec<f32> = (0..4).map(|i| (0..8).map(|j| a[i * 8 + j] * b[i * 8 + j]).sum()).collect();
            let maxes: Vec<f32> =
                rows(&b, 8).iter().map(|r| r.iter().cloned().fold(f32::MIN, f32::max)).collect();
            let column_sums: Vec<f32> = (0..8).map(|j| (0..4).map(|i| a[i * 8 + j]).sum()).collect();
            assert!(close(sx.to_vec::<f32>().unwrap(), sums), "{device}");
            assert!(close(sxy.to_vec::<f32>().unwrap(), dots), "{device}");
            assert_eq!(my.to_vec::<f32>().unwrap(), maxes, "{device}");
            assert!(close(columns.to_vec::<f32>().unwrap(), column_sums), "{device}");
        });
    }
}

#[test]
fn outputs_share_a_kernel_only_where_no_element_is_read_after_it_is_written() {
    for device in devices() {
        with_default_device(&device, || {
            let t = tensor(&[8], 0);
            let reversed = t.flip(&[0]).unwrap().mul(3.0).unwrap(); // reads t's old values
            t.assign(&t.mul(2.0).unwrap()).unwrap();
            let sum = t.add(&reversed).unwrap();
            // `sum` reads the new `t` in place and shares its kernel; `reversed` reads old
            // values of other elements, so it runs first, in a kernel of its own
            let schedule = schedule_of(&[&t, &reversed, &sum]);
            assert_eq!(schedule.kernel_count(), 2, "{device}: {:#?}", schedule.kernels());
            assert_eq!(schedule.kernels().iter().map(|k| k.src().len()).collect::<Vec<_>>(), [1, 2]);
            Tensor::realize_all(&[&t, &reversed, &sum]).unwrap();
            let x = data(8, 0);
            let want: Vec<f32> = (0..8).map(|i| 2.0 * x[i] + 3.0 * x[7 - i]).collect();
            assert_eq!(sum.to_vec::<f32>().unwrap(), want, "{device}");
            assert_eq!(t.to_vec::<f32>().unwrap(), x.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
        });
    }
}

#[test]
fn max_and_argmax_together_are_one_kernel() {
    for device in devices() {
        with_default_device(&device, || {
            let x = tensor(&[4, 8], 0);
            let (max, arg) = (x.max(&[1], false).unwrap(), x.argmax(1, false).unwrap());
            // the max nests in the argmax's reduce, which stores both
            let schedule = schedule_of(&[&max, &arg]);
            assert_eq!(schedule.kernel_count(), 1, "{device}: {:#?}", schedule.kernels());
            assert_eq!(schedule.kernels()[0].src().len(), 2, "{device}: two outputs");
            let want: Vec<i32> = rows(&data(32, 0), 8)
                .iter()
                .map(|r| r.iter().enumerate().fold(0, |b, (i, v)| if *v > r[b] { i } else { b }) as i32)
                .collect();
            Tensor::realize_all(&[&max, &arg]).unwrap();
            assert_eq!(arg.to_vec::<i32>().unwrap(), want, "{device}");
            let maxes: Vec<f32> =
                rows(&data(32, 0), 8).iter().map(|r| r.iter().cloned().fold(f32::MIN, f32::max)).collect();
            assert_eq!(max.to_vec::<f32>().unwrap(), maxes, "{device}");
        });
    }
}

#[test]
fn a_skinny_product_is_right_on_every_device() {
    // x (4, 512) @ W.T, W (16, 512): on lavapipe (parallelism 256) few enough outputs for the
    // skinny plan (4 rows a thread, 2 columns, the reduce grouped by 32 in runs of 16)
    let (x, w) = (data(4 * 512, 0), data(16 * 512, 1));
    let (x, w) = (&x, &w);
    let terms = |i: usize, j: usize| (0..512).map(move |k| x[i * 512 + k] as f64 * w[j * 512 + k] as f64);
    for device in devices() {
        with_default_device(&device, || {
            let y = tensor(&[4, 512], 0).matmul(&tensor(&[16, 512], 1).transpose(0, 1).unwrap()).unwrap();
            let got = y.to_vec::<f32>().unwrap();
            for (n, g) in got.iter().enumerate() {
                let (want, size) = terms(n / 16, n % 16).fold((0.0, 0.0), |(s, a), t| (s + t, a + t.abs()));
                assert!((*g as f64 - want).abs() <= 1e-6 * size, "{device} [{n}]: {g} != {want}");
            }
        });
    }
}

/// The number of elements each store of the schedule's kernels writes.
fn stored_sizes(s: &Schedule) -> Vec<usize> {
    let numel = |store: &wgrad_ops::UOp| {
        let st = store.src()[1].arg().as_view().expect("a store's view");
        st.shape().iter().map(|d| d.as_int().expect("a concrete shape") as usize).product::<usize>()
    };
    s.kernels().iter().flat_map(|k| k.src().iter().map(numel).collect::<Vec<_>>()).collect()
}

/// `softmax(x) @ v` for `batch` matrices (and `+ 1` for the softmax's sum when `also_summed`)
/// on the host, in f64.
fn host_softmax_matmul(batch: usize, rows_n: usize, keys: usize, cols: usize, also_summed: bool) -> Vec<f32> {
    let (x, v) = (data(batch * rows_n * keys, 0), data(batch * keys * cols, 1));
    let p = host_softmax(&x, keys);
    let plus = if also_summed { 1.0 } else { 0.0 };
    let at = |b: usize, r: usize, c: usize| {
        let row = &p[(b * rows_n + r) * keys..][..keys];
        let v = &v[b * keys * cols..];
        (0..keys).map(|k| f64::from(row[k]) * f64::from(v[k * cols + c])).sum::<f64>()
    };
    (0..batch * rows_n * cols)
        .map(|i| (at(i / (rows_n * cols), i / cols % rows_n, i % cols) + plus) as f32)
        .collect()
}

#[test]
fn a_softmax_over_many_short_rows_read_only_by_a_matmul_is_computed_where_the_matmul_reads_it() {
    // float32 `softmax(x) @ v` over 2048 x 64 rows of 64 keys (an attention's shape): where
    // rows reduce in place, one kernel stores each row's max and sum and the product computes
    // the probabilities from x as it reads them, so nothing stores them. Fewer rows (64 of
    // 128, 5 of 7), a softmax with a second reader, or a device that does not reduce rows in
    // place store the softmax. The host's values wherever the graph runs (the large case only
    // where it is recomputed: the interpreter would take long over it and is what it was).
    for (batch, rows_n, keys, cols, many) in
        [(2048, 64, 64, 8, true), (1, 64, 128, 32, false), (1, 5, 7, 3, false)]
    {
        for also_summed in [false, true] {
            for device in devices() {
                let in_place = open_device(&device).unwrap().kernel_limits().row_reduce > 0;
                with_default_device(&device, || {
                    let x = Tensor::from_vec(data(batch * rows_n * keys, 0), &[batch, rows_n, keys]).unwrap();
                    let v = Tensor::from_vec(data(batch * keys * cols, 1), &[batch, keys, cols]).unwrap();
                    let p = x.softmax(-1).unwrap();
                    let mut t = p.matmul(&v).unwrap();
                    if also_summed {
                        t = t.add(p.sum(&[2], true).unwrap()).unwrap();
                    }
                    let sizes = stored_sizes(&t.schedule(32).unwrap());
                    let recomputed = in_place && many && !also_summed;
                    assert_eq!(
                        !sizes.contains(&(batch * rows_n * keys)),
                        recomputed,
                        "{device} {rows_n}x{keys}: {sizes:?}"
                    );
                    if many && !recomputed {
                        return;
                    }
                    let (got, want) = (
                        t.to_vec::<f32>().unwrap(),
                        host_softmax_matmul(batch, rows_n, keys, cols, also_summed),
                    );
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g - w).abs() <= 1e-4 + 1e-4 * w.abs(),
                            "{device} {rows_n}x{keys} [{i}]: {g} != {w}"
                        );
                    }
                });
            }
        }
    }
}

#[test]
fn a_layer_norm_summed_over_other_axes_is_stored_by_its_own_kernel() {
    // a pooling: layer norms over rows of 32 summed over the 8 rows of each of 2 batches.
    // Where rows reduce in place, the layer norm's kernel stores its output and the sum reads
    // it; elsewhere the statistics are stored and the sum recomputes the normalized rows.
    let (b, t, c) = (2, 8, 32);
    let host = || {
        let normed = host_layernorm(&data(b * t * c, 0), c);
        (0..b * c).map(|i| (0..t).map(|j| normed[(i / c * t + j) * c + i % c]).sum()).collect()
    };
    let build = || tensor(&[b, t, c], 0).layernorm(-1, 1e-5)?.sum(&[1], false);
    check_rows(2, 2, build, host);
    for device in devices() {
        let in_place = open_device(&device).unwrap().kernel_limits().row_reduce > 0;
        with_default_device(&device, || {
            let sizes = stored_sizes(&build().unwrap().schedule(32).unwrap());
            assert_eq!(sizes.contains(&(b * t * c)), in_place, "{device}: {sizes:?}");
        });
    }
}
