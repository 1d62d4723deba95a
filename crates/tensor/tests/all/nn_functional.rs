//! Normalisations, losses, attention, random numbers and training mode on every device,
//! against values worked out by hand (the golden cases check the rest against PyTorch).

use crate::common;

use common::devices;
use wgrad_tensor::{DType, Tensor, TensorError, is_training, training, with_default_device};

fn t(values: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(values, shape).unwrap()
}

fn close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len());
    assert!(got.iter().zip(want).all(|(a, b)| (a - b).abs() <= tol), "{got:?} != {want:?}");
}

fn vals(x: &Tensor) -> Vec<f32> {
    x.to_vec::<f32>().unwrap()
}

/// Runs `f` on every device.
fn each_device(f: impl Fn()) {
    for device in devices() {
        with_default_device(&device, &f);
    }
}

#[test]
fn group_and_rms_norms() {
    each_device(|| {
        // one sample, 4 channels of 2 positions, 2 groups: each group is 4 values
        let x = t(&[1.0, 3.0, 5.0, 7.0, 0.0, 0.0, 2.0, 2.0], &[1, 4, 2]);
        let w = t(&[1.0, 2.0, 1.0, 1.0], &[4]);
        let b = t(&[0.0, 0.0, 0.0, 10.0], &[4]);
        let y = x.groupnorm(2, Some(&w), Some(&b), 0.0).unwrap();
        let s = 5f32.sqrt(); // group 1: mean 4, var 5; group 2: mean 1, var 1
        close(&vals(&y), &[-3.0 / s, -1.0 / s, 2.0 / s, 6.0 / s, -1.0, -1.0, 11.0, 11.0], 1e-5);
        assert!(matches!(
            x.groupnorm(3, None, None, 1e-5),
            Err(TensorError::Argument { op: "groupnorm", .. })
        ));
        let r = t(&[3.0, 4.0, 0.0, 2.0], &[2, 2]).rmsnorm(-1, 0.0).unwrap();
        let a = 12.5f32.sqrt();
        close(&vals(&r), &[3.0 / a, 4.0 / a, 0.0, 2f32.sqrt()], 1e-5);
    });
}

#[test]
fn batchnorm_checks_its_per_channel_shapes() {
    let x = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let (mean, invstd) = (t(&[1.0, 2.0], &[2]), t(&[2.0, 0.5], &[2]));
    let y = x.batchnorm(None, Some(&t(&[0.0, 1.0], &[2])), &mean, &invstd).unwrap();
    close(&vals(&y), &[0.0, 1.0, 4.0, 2.0], 1e-6);
    let err = x.batchnorm(None, None, &t(&[0.0; 3], &[3]), &invstd).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { op: "batchnorm", .. }), "{err}");
    assert!(matches!(t(&[1.0], &[1]).batchnorm(None, None, &mean, &invstd), Err(TensorError::Axis { .. })));
}

#[test]
fn losses() {
    each_device(|| {
        let logits = t(&[2.0, 0.0, 0.0, 0.0, 1.0, 3.0], &[2, 3]);
        let labels = Tensor::from_slice(&[0i32, 2], &[2]).unwrap();
        let lse = |v: [f32; 3]| v.iter().map(|x| x.exp()).sum::<f32>().ln();
        let (l0, l1) = (lse([2.0, 0.0, 0.0]) - 2.0, lse([0.0, 1.0, 3.0]) - 3.0);
        let sparse = logits.sparse_categorical_crossentropy(&labels, 0.0).unwrap();
        close(&vals(&sparse), &[(l0 + l1) / 2.0], 1e-5);
        // probability targets: the one-hot labels give the same loss, with smoothing too
        let probs = t(&[1.0, 0.0, 0.0, 0.0, 0.0, 1.0], &[2, 3]);
        for smoothing in [0.0, 0.3] {
            let a = logits.sparse_categorical_crossentropy(&labels, smoothing).unwrap();
            close(&vals(&logits.cross_entropy(&probs, smoothing).unwrap()), &vals(&a), 1e-6);
        }
        let err = logits.sparse_categorical_crossentropy(&t(&[0.0, 2.0], &[2]), 0.0).unwrap_err();
        assert!(matches!(err, TensorError::DType { .. }), "{err}");
        let err = logits.sparse_categorical_crossentropy(&labels.reshape(&[2, 1]).unwrap(), 0.0).unwrap_err();
        assert!(matches!(err, TensorError::Shapes { .. }), "{err}");
        assert!(matches!(logits.cross_entropy(&probs, 1.5), Err(TensorError::Argument { .. })));

        let (p, y) = (t(&[0.5, 0.9, 0.0], &[3]), t(&[1.0, 0.0, 0.0], &[3]));
        let bce = 2f32.ln() + 10f32.ln();
        close(&vals(&p.binary_crossentropy(&y).unwrap()), &[bce / 3.0], 1e-5);
        let logit = t(&[0.0, 9f32.ln(), -50.0], &[3]);
        close(&vals(&logit.binary_crossentropy_logits(&y).unwrap()), &[bce / 3.0], 1e-5);

        let x = t(&[1.0, 2.0, 4.0], &[3]);
        x.set_requires_grad(true).unwrap();
        let mse = x.mse(&t(&[1.0, 0.0, 1.0], &[3])).unwrap();
        close(&vals(&mse), &[13.0 / 3.0], 1e-6);
        mse.backward().unwrap();
        close(&vals(&x.grad().unwrap()), &[0.0, 4.0 / 3.0, 2.0], 1e-6);
    });
}

#[test]
fn causal_attention_sees_only_the_past() {
    each_device(|| {
        let q = Tensor::randn(&[2, 3, 4], 1).unwrap();
        let k = Tensor::randn(&[2, 3, 4], 2).unwrap();
        let v = Tensor::randn(&[2, 3, 5], 3).unwrap();
        let causal = q.scaled_dot_product_attention(&k, &v, None, true).unwrap();
        // the first query sees only the first key
        let first = |x: &Tensor| vals(&x.shrink(&[(0, 2), (0, 1), (0, 5)]).unwrap());
        close(&first(&causal), &first(&v), 1e-5);
        // a bool mask of the lower triangle, and its additive float form, give the same
        let lower =
            Tensor::from_slice(&[true, false, false, true, true, false, true, true, true], &[3, 3]).unwrap();
        let masked = q.scaled_dot_product_attention(&k, &v, Some(&lower), false).unwrap();
        close(&vals(&masked), &vals(&causal), 1e-5);
        let additive = lower.where_(0.0, -1e9).unwrap();
        let added = q.scaled_dot_product_attention(&k, &v, Some(&additive), false).unwrap();
        close(&vals(&added), &vals(&causal), 1e-5);
        // no mask: every row a convex mix of the values
        let full = q.scaled_dot_product_attention(&k, &v, None, false).unwrap();
        assert_eq!(full.shape(), [2, 3, 5]);
    });
}

#[test]
fn half_attention_scores_and_softmax_in_float32() {
    each_device(|| {
        // q.k is 2048 and 2049: in float16 both round to 2048 and the weights would be even;
        // in float32 the scores are 1024 and 1024.5 and the second value weighs 0.6225
        let half = |v: &[f32], shape: &[usize]| t(v, shape).cast(DType::F16);
        let q = half(&[32.0; 4], &[1, 1, 4]);
        let k = half(&[16.0, 16.0, 16.0, 16.0, 16.0, 16.0, 16.0, 16.03125], &[1, 2, 4]);
        let v = half(&[0.0, 1.0], &[1, 2, 1]);
        let out = q.scaled_dot_product_attention(&k, &v, None, false).unwrap();
        assert_eq!(out.dtype(), DType::F16);
        let want = 1.0 / (1.0 + (-0.5f32).exp());
        close(&vals(&out.float()), &[want], 2e-3);
        // matmul_dtype keeps float16 products' sums in float32
        let scores = q.matmul_dtype(&k.transpose(-2, -1).unwrap(), DType::F32).unwrap();
        assert_eq!(vals(&scores), [2048.0, 2049.0]);
        assert_eq!(vals(&q.matmul(&k.transpose(-2, -1).unwrap()).unwrap().float()), [2048.0, 2048.0]);
        // scores stored as halves: 1024.5 rounds to 1024 (a tie, to even), the weights are even
        let stored = q.scaled_dot_product_attention_scores_in(&k, &v, None, false, DType::F16).unwrap();
        assert_eq!(stored.dtype(), DType::F16);
        close(&vals(&stored.float()), &[0.5], 1e-3);
        let same = q.scaled_dot_product_attention_scores_in(&k, &v, None, false, DType::F32).unwrap();
        close(&vals(&same.float()), &[want], 2e-3);
        let err = q.scaled_dot_product_attention_scores_in(&k, &v, None, false, DType::I32).unwrap_err();
        assert!(err.to_string().contains("must be a float"), "{err}");
    });
}

#[test]
fn a_half_linear_rounds_once() {
    each_device(|| {
        // 2048 + 1 + 1: rounded once, 2050; rounding the sum 2049 first (a tie, to the even
        // 2048) and adding the bias would give 2048 again
        let half = |v: &[f32], shape: &[usize]| t(v, shape).cast(DType::F16);
        let (x, w, b) = (half(&[2048.0, 1.0], &[1, 2]), half(&[1.0, 1.0], &[2, 1]), half(&[1.0], &[1]));
        let y = x.linear(&w, Some(&b)).unwrap();
        assert_eq!(y.dtype(), DType::F16);
        assert_eq!(vals(&y.float()), [2050.0]);
        assert_eq!(vals(&x.matmul(&w).unwrap().add(&b).unwrap().float()), [2048.0]);
    });
}

#[test]
fn half_linear_layers_with_an_epilogue_match_a_host_reference() {
    // GELU(x @ W + b) in halves, the weight stored (in, out) and (out, in): on a GPU with
    // tensor cores these are tiled kernels whose epilogue (bias, GELU, rounding) each subgroup
    // runs on its own tiles; elsewhere plain kernels; both must give the rounded reference
    let (rows, inputs, outputs) = (128, 384, 128);
    let half =
        |shape: &[usize], seed: u64| Tensor::rand(shape, seed).unwrap().sub(0.5).unwrap().cast(DType::F16);
    each_device(|| {
        let (x, w, b) = (half(&[2, rows / 2, inputs], 1), half(&[outputs, inputs], 2), half(&[outputs], 3));
        Tensor::realize_all(&[&x, &w, &b]).unwrap();
        let [xs, ws, bs] = [&x, &w, &b].map(|t| vals(&t.float()));
        let gelu = |v: f64| {
            0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v.powi(3))).tanh())
        };
        let want: Vec<f64> = (0..rows * outputs)
            .map(|i| {
                let (r, o) = (i / outputs, i % outputs);
                let dot: f64 =
                    (0..inputs).map(|k| f64::from(xs[r * inputs + k]) * f64::from(ws[o * inputs + k])).sum();
                gelu(dot + f64::from(bs[o]))
            })
            .collect();
        let (t_in_out, t_out_in) = (w.transpose(0, 1).unwrap().contiguous(), w.transpose(0, 1).unwrap());
        for weight in [t_in_out, t_out_in] {
            let y = x.linear(&weight, Some(&b)).unwrap().gelu();
            assert_eq!(y.dtype(), DType::F16);
            let got = vals(&y.float());
            let worst = got
                .iter()
                .zip(&want)
                .map(|(&g, &w)| (f64::from(g) - w).abs() / (1.0 + w.abs()))
                .fold(0.0, f64::max);
            assert!(worst < 4e-3, "off by {worst} (relative to 1 + |want|)");
        }
    });
}

#[test]
fn random_numbers_are_seeded_and_the_same_on_every_device() {
    let draw = || {
        let u = vals(&Tensor::rand(&[1000], 7).unwrap());
        let n = vals(&Tensor::randn(&[1000], 7).unwrap());
        let i = Tensor::randint(&[1000], -3, 4, 7).unwrap().to_vec::<i32>().unwrap();
        let a = vals(&Tensor::uniform(&[1000], -2.0, 6.0, 8).unwrap());
        (u, n, i, a)
    };
    let mut first = None;
    for device in devices() {
        let (u, n, i, a) = with_default_device(&device, draw);
        assert!(u.iter().all(|x| (0.0..1.0).contains(x)));
        assert!((u.iter().sum::<f32>() / 1000.0 - 0.5).abs() < 0.05);
        let mean = n.iter().sum::<f32>() / 1000.0;
        let var = n.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / 1000.0;
        assert!(mean.abs() < 0.1 && (var - 1.0).abs() < 0.15, "mean {mean} var {var}");
        assert!(i.iter().all(|x| (-3..4).contains(x)));
        assert!((-3..4).all(|v| i.contains(&v)), "every value drawn");
        assert!(a.iter().all(|x| (-2.0..6.0).contains(x)) && a.iter().any(|&x| x > 5.0));
        assert_eq!(with_default_device(&device, || vals(&Tensor::rand(&[1000], 7).unwrap())), u, "same seed");
        assert_ne!(with_default_device(&device, || vals(&Tensor::rand(&[1000], 8).unwrap())), u);
        match &first {
            None => first = Some((u, n, i, a)),
            Some(f) => {
                assert_eq!((&f.0, &f.2), (&u, &i), "{device} draws other bits");
                close(&f.1, &n, 1e-5);
                close(&f.3, &a, 1e-6);
            }
        }
    }
    assert!(matches!(Tensor::randint(&[2], 3, 3, 0), Err(TensorError::Argument { op: "randint", .. })));
    assert!(matches!(Tensor::uniform(&[2], 1.0, 0.0, 0), Err(TensorError::Argument { .. })));
}

#[test]
fn initializers_stay_in_their_bounds() {
    each_device(|| {
        let k = vals(&Tensor::kaiming_uniform(&[16, 4, 3, 3], 5f64.sqrt(), 1).unwrap());
        let bound = (6.0 / (6.0 * 36.0f32)).sqrt(); // a² = 5, fan_in = 36
        assert!(k.iter().all(|x| x.abs() <= bound) && k.iter().any(|x| x.abs() > 0.8 * bound));
        let g = vals(&Tensor::glorot_uniform(&[10, 30], 1).unwrap());
        let bound = (6.0 / 40.0f32).sqrt();
        assert!(g.iter().all(|x| x.abs() <= bound) && g.iter().any(|x| x.abs() > 0.8 * bound));
    });
    assert!(matches!(Tensor::glorot_uniform(&[], 1), Err(TensorError::Argument { .. })));
}

#[test]
fn dropout_only_in_training_mode() {
    each_device(|| {
        let x = Tensor::ones(&[4000], DType::F32).unwrap();
        assert!(!is_training());
        assert_eq!(vals(&x.dropout(0.25, 3).unwrap()), vec![1.0; 4000]);
        let (dropped, inner) = training(true, || (x.dropout(0.25, 3).unwrap(), is_training()));
        assert!(inner && !is_training(), "the scope sets and restores the mode");
        let d = vals(&dropped);
        assert!(d.iter().all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-6));
        let zeros = d.iter().filter(|&&v| v == 0.0).count();
        assert!((800..1200).contains(&zeros), "{zeros} of 4000 dropped at p = 0.25");
        assert!(matches!(x.dropout(1.0, 0), Err(TensorError::Argument { op: "dropout", .. })));
    });
}
