//! Elementwise math, reductions, losses and dtype conveniences added for tinygrad's surface,
//! against f64 references (forward and gradients) on every device; integer and bit ops
//! exactly; typed errors.

use crate::common;

use common::reference::{Check, data, on_devices, values};
use wgrad_tensor::{DType, Reduction, Tensor, TensorError};

fn input(shape: &[usize], seed: usize) -> (Vec<f32>, Vec<usize>) {
    (data(shape.iter().product(), seed), shape.to_vec())
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn unary_math_matches_the_host() {
    type Unary = (&'static str, fn(&Tensor) -> wgrad_tensor::Result<Tensor>, fn(f64) -> f64);
    let ops: [Unary; 8] = [
        ("reciprocal", |t| Ok(t.add(2.5)?.reciprocal()), |x| 1.0 / (x + 2.5)),
        ("softsign", |t| Ok(t.softsign()), |x| x / (1.0 + x.abs())),
        ("logsigmoid", |t| Ok(t.logsigmoid()), |x| sigmoid(x).ln()),
        ("logsigmoid_far", |t| Ok(t.mul(60.0)?.logsigmoid()), |x| -(1.0 + (-60.0 * x).exp()).ln()),
        ("swish", |t| Ok(t.swish()), |x| x * sigmoid(x)),
        (
            "hardsigmoid",
            |t| Ok(t.mul(2.0)?.hardsigmoid(1.0 / 6.0, 0.5)),
            |x| (2.0 * x / 6.0 + 0.5).clamp(0.0, 1.0),
        ),
        ("clamp", |t| t.clamp(Some(-0.5), Some(1.25)), |x| x.clamp(-0.5, 1.25)),
        ("clamp_below", |t| t.clamp(Some(0.3), None), |x| x.max(0.3)),
    ];
    for (name, op, reference) in ops {
        let shape = [3, 7];
        Check::new(name, vec![input(&shape, 1)], &shape)
            .run(|t| op(&t[0]), |h| h[0].iter().map(|&x| reference(x)).collect());
    }
}

#[test]
fn binary_math_matches_the_host() {
    let shape = [2, 5];
    let (a, b) = (input(&shape, 1), input(&shape, 2));
    Check::new("lerp", vec![a.clone(), b.clone(), input(&shape, 3)], &shape).run(
        |t| t[0].lerp(&t[1], &t[2]),
        |h| (0..10).map(|i| h[0][i] + (h[1][i] - h[0][i]) * h[2][i]).collect(),
    );
    Check::new("lerp_scalar", vec![a.clone(), b.clone()], &shape)
        .run(|t| t[0].lerp(&t[1], 0.25), |h| (0..10).map(|i| h[0][i] + (h[1][i] - h[0][i]) * 0.25).collect());
    // far apart: e^x alone overflows float32
    Check::new("logaddexp", vec![a.clone(), b.clone()], &shape).run(
        |t| t[0].mul(50.0)?.logaddexp(&t[1]),
        |h| (0..10).map(|i| (50.0 * h[0][i]).exp().add_exp(h[1][i])).collect(),
    );
    Check::new("copysign", vec![a.clone(), b.clone()], &shape)
        .run(|t| t[0].copysign(&t[1]), |h| (0..10).map(|i| h[0][i].copysign(h[1][i])).collect());
    Check::new("fmod", vec![a.clone(), b.clone()], &shape)
        .forward_only()
        .run(|t| t[0].mul(3.0)?.fmod(&t[1]), |h| (0..10).map(|i| (3.0 * h[0][i]) % h[1][i]).collect());
    Check::new("masked_fill", vec![a.clone(), b.clone()], &shape).run(
        |t| t[0].masked_fill(&t[1].gt(0)?, -7.0),
        |h| (0..10).map(|i| if h[1][i] > 0.0 { -7.0 } else { h[0][i] }).collect(),
    );
}

/// `ln(e^a + e^b)` from `e^a`, in f64.
trait AddExp {
    fn add_exp(self, b: f64) -> f64;
}

impl AddExp for f64 {
    fn add_exp(self, b: f64) -> f64 {
        (self + b.exp()).ln()
    }
}

#[test]
fn reductions_and_normalisations_match_the_host() {
    let shape = [3, 4];
    let near_one = (data(12, 4).iter().map(|v| 1.0 + v / 4.0).collect(), shape.to_vec());
    Check::new("prod_axis", vec![near_one.clone()], &[3])
        .run(|t| t[0].prod(&[1], false), |h| h[0].chunks(4).map(|r| r.iter().product()).collect());
    Check::new("prod_all", vec![near_one], &[])
        .run(|t| t[0].prod(&[], false), |h| vec![h[0].iter().product()]);
    let row_mean =
        |h: &[Vec<f64>]| -> Vec<f64> { h[0].chunks(4).map(|r| r.iter().sum::<f64>() / 4.0).collect() };
    let row_var = |h: &[Vec<f64>]| -> Vec<f64> {
        h[0].chunks(4)
            .map(|r| {
                let m = r.iter().sum::<f64>() / 4.0;
                r.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 3.0
            })
            .collect()
    };
    Check::new("var_mean.0", vec![input(&shape, 5)], &[3])
        .run(|t| Ok(t[0].var_mean(&[1], false, 1)?.0), row_var);
    Check::new("var_mean.1", vec![input(&shape, 5)], &[3])
        .run(|t| Ok(t[0].var_mean(&[1], false, 1)?.1), row_mean);
    Check::new("std_mean.0", vec![input(&shape, 5)], &[3, 1])
        .run(|t| Ok(t[0].std_mean(&[1], true, 1)?.0), |h| row_var(h).iter().map(|v| v.sqrt()).collect());
    Check::new("std_mean.1", vec![input(&shape, 5)], &[3, 1])
        .run(|t| Ok(t[0].std_mean(&[1], true, 1)?.1), row_mean);
    Check::new("softmin", vec![input(&shape, 6)], &shape).run(
        |t| t[0].softmin(-1),
        |h| {
            h[0].chunks(4)
                .flat_map(|r| {
                    let s: f64 = r.iter().map(|v| (-v).exp()).sum();
                    r.iter().map(move |v| (-v).exp() / s).collect::<Vec<_>>()
                })
                .collect()
        },
    );
    for p in [1.0, 2.0, 3.0] {
        let name = format!("normalize p={p}");
        Check::new(&name, vec![input(&shape, 7)], &shape).run(
            |t| t[0].normalize(p, 0, 1e-12),
            |h| {
                let norms: Vec<f64> = (0..4)
                    .map(|c| (0..3).map(|r| h[0][r * 4 + c].abs().powf(p)).sum::<f64>().powf(1.0 / p))
                    .collect();
                (0..12).map(|i| h[0][i] / norms[i % 4]).collect()
            },
        );
    }
}

#[test]
fn nll_loss_matches_the_host() {
    let logp = input(&[4, 3], 8);
    let labels = [2i32, 0, 1, 2];
    let weight = [0.5f32, 2.0, 1.0];
    // each label's weight (0 where ignored), and each item's weighted loss
    let item_weight = |l: i32, weighted: bool, ignore: Option<i32>| match (Some(l) == ignore, weighted) {
        (true, _) => 0.0,
        (false, true) => f64::from(weight[l as usize]),
        (false, false) => 1.0,
    };
    let host = |h: &[Vec<f64>], weighted: bool, ignore: Option<i32>| -> Vec<f64> {
        let item = |(n, &l): (usize, &i32)| -h[0][n * 3 + l as usize] * item_weight(l, weighted, ignore);
        labels.iter().enumerate().map(item).collect()
    };
    let weights = |weighted: bool, ignore: Option<i32>| -> f64 {
        labels.iter().map(|&l| item_weight(l, weighted, ignore)).sum()
    };
    let y = || Tensor::from_slice(&labels, &[4]).unwrap();
    let w = || Tensor::from_slice(&weight, &[3]).unwrap();
    Check::new("nll none", vec![logp.clone()], &[4])
        .run(|t| t[0].nll_loss(&y(), None, None, Reduction::None), |h| host(h, false, None));
    Check::new("nll sum weighted", vec![logp.clone()], &[]).run(
        |t| t[0].nll_loss(&y(), Some(&w()), None, Reduction::Sum),
        |h| vec![host(h, true, None).iter().sum()],
    );
    Check::new("nll mean weighted ignore", vec![logp.clone()], &[]).run(
        |t| t[0].nll_loss(&y(), Some(&w()), Some(2), Reduction::Mean),
        |h| vec![host(h, true, Some(2)).iter().sum::<f64>() / weights(true, Some(2))],
    );
    // (N, C, d): the class axis is 1
    Check::new("nll spatial", vec![input(&[2, 3, 2], 9)], &[]).run(
        |t| t[0].nll_loss(&Tensor::from_slice(&[0i32, 2, 1, 1], &[2, 2])?, None, None, Reduction::Mean),
        |h| vec![-(h[0][0] + h[0][5] + h[0][8] + h[0][9]) / 4.0],
    );
    let x = Tensor::from_slice(&data(12, 1), &[4, 3]).unwrap();
    let err =
        x.nll_loss(&Tensor::from_slice(&[0i32; 3], &[3]).unwrap(), None, None, Reduction::Mean).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { op: "nll_loss", .. }), "{err}");
    let err = x.nll_loss(&x.sum(&[1], false).unwrap(), None, None, Reduction::Mean).unwrap_err();
    assert!(matches!(err, TensorError::DType { op: "nll_loss", .. }), "{err}");
    let err = x.nll_loss(&y(), Some(&y().float()), None, Reduction::Mean).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { op: "nll_loss", .. }), "{err}");
}

#[test]
fn erf_is_odd_and_keeps_its_limits() {
    on_devices(|device| {
        let x = [0.0f32, 0.25, 0.5, 1.0, 2.0, 3.5, f32::INFINITY, f32::NAN];
        let both: Vec<f32> = x.iter().flat_map(|&v| [v, -v]).collect();
        let erf = Tensor::from_slice(&both, &[both.len()]).unwrap().erf().to_vec::<f32>().unwrap();
        // erf(0.5), erf(1), erf(2) to 9 places
        let known = [(2, 0.520_499_878), (3, 0.842_700_793), (4, 0.995_322_265)];
        for (i, pair) in erf.chunks(2).enumerate() {
            match x[i] {
                v if v.is_nan() => assert!(pair[0].is_nan() && pair[1].is_nan(), "{device}: erf(NaN)"),
                v => {
                    assert_eq!(pair[0], -pair[1], "{device}: erf(-{v}) = -erf({v})");
                    assert!(pair[0].abs() <= 1.0 && (v < 3.0 || pair[0] > 0.999_99), "{device}: erf({v})");
                }
            }
        }
        assert!(erf[0].abs() < 1e-6, "{device}: erf(0) = {}", erf[0]);
        assert_eq!((erf[12], erf[13]), (1.0, -1.0), "{device}: erf(+-inf)");
        for (i, want) in known {
            assert!((f64::from(erf[2 * i]) - want).abs() < 2e-6, "{device}: erf({}) = {}", x[i], erf[2 * i]);
        }
    });
}

/// erf in f64 by its Taylor series (to ~1e-8 for |x| <= 4.5, where the terms cancel).
fn erf64(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / f64::from(n);
        sum += term / f64::from(2 * n + 1);
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn exact_gelu_matches_x_times_the_normal_cdf() {
    let x: Vec<f32> = (-24..=24).map(|i| i as f32 / 4.0).chain([-0.0, 1e-3]).collect();
    let n = x.len();
    Check::new("gelu_erf", vec![(x, vec![n])], &[n]).run(
        |t| Ok(t[0].gelu_erf()),
        |h| h[0].iter().map(|&v| v * (1.0 + erf64(v / 2f64.sqrt())) / 2.0).collect(),
    );
    on_devices(|device| {
        let edges = Tensor::from_slice(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN], &[3]).unwrap();
        let got = edges.gelu_erf().to_vec::<f32>().unwrap();
        assert!(got[0] == f32::INFINITY && got[1].is_nan() && got[2].is_nan(), "{device}: {got:?}");
    });
}

#[test]
fn predicates_and_bit_ops_are_exact() {
    on_devices(|device| {
        let x = Tensor::from_slice(&[1.0f32, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -0.0, 2.0], &[6])
            .unwrap();
        let flags = |t: Tensor| t.to_vec::<bool>().unwrap();
        assert_eq!(flags(x.isinf(true, true)), [false, true, true, false, false, false], "{device}");
        assert_eq!(flags(x.isinf(false, true)), [false, false, true, false, false, false], "{device}");
        assert_eq!(flags(x.isfinite()), [true, false, false, false, true, true], "{device}");
        let y =
            Tensor::from_slice(&[1.0001f32, f32::INFINITY, f32::INFINITY, f32::NAN, 0.0, 2.1], &[6]).unwrap();
        assert_eq!(
            flags(x.isclose(&y, 1e-3, 1e-8, false).unwrap()),
            [true, true, false, false, true, false],
            "{device}"
        );
        assert_eq!(
            flags(x.isclose(&y, 1e-3, 1e-8, true).unwrap()),
            [true, true, false, true, true, false],
            "{device}"
        );
        assert!(!x.allclose(&y, 1e-3, 1e-8, true).unwrap().item::<bool>().unwrap(), "{device}");
        assert!(x.allclose(&x, 1e-5, 1e-8, true).unwrap().item::<bool>().unwrap(), "{device}");
        // copysign takes the sign of -0.0
        let s = Tensor::from_slice(&[2.0f32, -3.0], &[2])
            .unwrap()
            .copysign(Tensor::from_slice(&[-0.0f32, 0.0], &[2]).unwrap())
            .unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), [-2.0, 3.0], "{device}");
        let i = Tensor::from_slice(&[-7i32, 7, -8, 5], &[4]).unwrap();
        let j = Tensor::from_slice(&[3i32, -3, 3, 5], &[4]).unwrap();
        let ints = |t: Tensor| t.to_vec::<i32>().unwrap();
        assert_eq!(ints(i.fmod(&j).unwrap()), [-1, 1, -2, 0], "{device}: C's sign of the dividend");
        assert_eq!(ints(i.modulo(&j).unwrap()), [2, -2, 1, 0], "{device}: Python's sign of the divisor");
        assert_eq!(ints(i.bitwise_and(&j).unwrap()), [-7 & 3, 7 & -3, -8 & 3, 5], "{device}");
        assert_eq!(ints(i.bitwise_or(&j).unwrap()), [-7 | 3, 7 | -3, -8 | 3, 5], "{device}");
        assert_eq!(ints(i.bitwise_xor(&j).unwrap()), [-7 ^ 3, 7 ^ -3, -8 ^ 3, 0], "{device}");
        assert_eq!(ints(i.bitwise_not().unwrap()), [6, -8, 7, -6], "{device}");
        assert_eq!(ints(&i & &j), ints(i.bitwise_and(&j).unwrap()), "{device}: the & operator");
        assert_eq!(ints(!&i), [6, -8, 7, -6], "{device}: the ! operator");
        assert_eq!(ints(i.lshift(2).unwrap()), [-28, 28, -32, 20], "{device}");
        assert_eq!(ints(i.rshift(1).unwrap()), [-4, 3, -4, 2], "{device}: arithmetic shift");
        let k = Tensor::from_slice(&[1i32, 2, 3, 0], &[4]).unwrap();
        assert_eq!(ints(j.lshift(&k).unwrap()), [6, -12, 24, 5], "{device}: tensor shift");
        let u = Tensor::from_slice(&[0u32, 5], &[2]).unwrap();
        assert_eq!(u.bitwise_not().unwrap().to_vec::<u32>().unwrap(), [u32::MAX, u32::MAX - 5], "{device}");
        let b = Tensor::from_slice(&[true, false], &[2]).unwrap();
        assert_eq!(flags(b.bitwise_not().unwrap()), [false, true], "{device}");
        assert_eq!(values(&i.prod(&[], false).unwrap()), [1960.0], "{device}: int prod stays int");
        assert_eq!(i.prod(&[], false).unwrap().dtype(), DType::I32, "{device}");
    });
    let f = Tensor::from_slice(&[1.0f32], &[1]).unwrap();
    for err in [f.bitwise_not().unwrap_err(), f.lshift(1).unwrap_err(), f.bitwise_and(&f).unwrap_err()] {
        assert!(matches!(err, TensorError::DType { .. }), "{err}");
    }
    assert!(matches!(f.clamp(None, None), Err(TensorError::Argument { op: "clamp", .. })));
    let err = f.masked_fill(&f, 0.0).unwrap_err();
    assert!(matches!(err, TensorError::DType { op: "masked_fill", .. }), "{err}");
}

#[test]
fn dtype_conveniences() {
    on_devices(|device| {
        let x = Tensor::from_slice(&[1.5f32, -2.7, 0.0, 3.0], &[2, 2]).unwrap();
        assert_eq!(x.int().to_vec::<i32>().unwrap(), [1, -2, 0, 3], "{device}");
        assert_eq!(x.bool().to_vec::<bool>().unwrap(), [true, true, false, true], "{device}");
        assert_eq!(x.half().dtype(), DType::F16);
        assert_eq!(x.bfloat16().dtype(), DType::BF16);
        assert_eq!(x.short().dtype(), DType::I16);
        assert_eq!(x.long().dtype(), DType::I64);
        assert_eq!(x.double().dtype(), DType::F64);
        assert_eq!(x.half().float().to_vec::<f32>().unwrap(), [1.5, -2.6992188, 0.0, 3.0], "{device}");
        assert_eq!(x.int().float().dtype(), DType::F32, "float is float32 whatever the dtype");
        assert_eq!(x.half().float().dtype(), DType::F32);
        assert!(x.is_floating_point() && !x.int().is_floating_point() && x.half().is_floating_point());
        assert_eq!((x.element_size(), x.nbytes()), (4, 16));
        assert_eq!((x.half().element_size(), x.half().nbytes(), x.bool().nbytes()), (2, 8, 4));
        assert_eq!((x.size(0).unwrap(), x.size(-1).unwrap()), (2, 2));
        assert!(matches!(x.size(2), Err(TensorError::Axis { op: "size", .. })));
        // a duplicate owns its buffer: writing the original leaves it as it was
        let y = x.duplicate();
        y.realize().unwrap();
        x.assign(&x.mul(10.0).unwrap()).unwrap().realize().unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [1.5, -2.7, 0.0, 3.0], "{device}");
        assert_eq!(x.to_vec::<f32>().unwrap(), [15.0, -27.0, 0.0, 30.0], "{device}");
    });
    // gradients flow through a duplicate
    let w = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let g = w.duplicate().square().sum(&[], false).unwrap().gradient(&[&w], None).unwrap();
    assert_eq!(g[0].to_vec::<f32>().unwrap(), [2.0, 4.0]);
}
