//! Random numbers and creation: seeded streams per device, fixed keys, exact integers,
//! the distributions' statistics, permutations, multinomial sampling, linspace and empty,
//! on every device; typed errors.

use crate::common;

use common::devices;
use common::reference::on_devices;
use wgrad_tensor::{DType, Seed, Tensor, TensorError, with_default_device};

fn floats(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn mean_std(v: &[f32]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let var = v.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The only test of this binary that draws from the streams (tests run in parallel and the
/// streams are global).
#[test]
fn streams_restart_at_manual_seed_and_stay_apart_per_device() {
    let devices = devices();
    let draw = |d: &wgrad_tensor::DeviceName| {
        with_default_device(d, || floats(&Tensor::rand(&[64], Seed::Stream).unwrap()))
    };
    Tensor::manual_seed(7);
    let first: Vec<Vec<f32>> = devices.iter().map(draw).collect();
    let second: Vec<Vec<f32>> = devices.iter().map(draw).collect();
    for (a, b) in first.iter().zip(&second) {
        assert_ne!(a, b, "a stream moves on");
    }
    // the last device alone after a reseed draws what it drew first, whatever the others did
    Tensor::manual_seed(7);
    let last = devices.last().unwrap();
    assert_eq!(&draw(last), first.last().unwrap());
    assert_eq!(&draw(last), second.last().unwrap());
    // every op takes the stream; a different seed gives different numbers
    Tensor::manual_seed(7);
    let x = with_default_device(last, || {
        let a = Tensor::randn(&[8], Seed::Stream).unwrap();
        let b = Tensor::randint(&[8], 0, 100, Seed::Stream).unwrap();
        (floats(&a), b.to_vec::<i32>().unwrap())
    });
    Tensor::manual_seed(8);
    let y = with_default_device(last, || floats(&Tensor::randn(&[8], Seed::Stream).unwrap()));
    assert_ne!(x.0, y);
    Tensor::manual_seed(7);
    let again = with_default_device(last, || {
        (
            floats(&Tensor::randn(&[8], Seed::Stream).unwrap()),
            Tensor::randint(&[8], 0, 100, Seed::Stream).unwrap().to_vec::<i32>().unwrap(),
        )
    });
    assert_eq!(x, again);
}

#[test]
fn a_key_gives_the_same_numbers_on_every_device() {
    let draws: Vec<(Vec<f32>, Vec<u32>)> = devices()
        .iter()
        .map(|d| {
            with_default_device(d, || {
                (
                    floats(&Tensor::rand(&[100], 3).unwrap()),
                    Tensor::random_bits(&[3, 5], 3).unwrap().to_vec::<u32>().unwrap(),
                )
            })
        })
        .collect();
    assert!(draws.windows(2).all(|w| w[0] == w[1]));
    let bits = &draws[0].1;
    assert!(bits.iter().any(|&b| b > 1 << 31) && bits.iter().any(|&b| b < 1 << 31), "{bits:?}");
}

#[test]
fn distributions_have_their_statistics() {
    on_devices(|device| {
        let n = 20_000;
        let (m, s) = mean_std(&floats(&Tensor::rand(&[n], 1).unwrap()));
        assert!(
            (m - 0.5).abs() < 0.01 && (s - (1.0f64 / 12.0).sqrt()).abs() < 0.01,
            "{device}: rand {m} {s}"
        );
        let (m, s) = mean_std(&floats(&Tensor::normal(&[n], 3.0, 0.5, 2).unwrap()));
        assert!((m - 3.0).abs() < 0.02 && (s - 0.5).abs() < 0.02, "{device}: normal {m} {s}");
        let (_, s) = mean_std(&floats(&Tensor::kaiming_normal(&[200, 100], 0.0, 3).unwrap()));
        assert!((s - (2.0f64 / 100.0).sqrt()).abs() < 0.005, "{device}: kaiming_normal std {s}");
        let v = floats(&Tensor::scaled_uniform(&[16, 25], 4).unwrap());
        assert!(
            v.iter().all(|x| x.abs() < 0.05) && v.iter().any(|x| x.abs() > 0.04),
            "{device}: scaled_uniform"
        );
        // rand_like and randn_like take the tensor's dtype and device
        let h = Tensor::zeros(&[4, 4], DType::F16).unwrap();
        assert_eq!(h.rand_like(5).unwrap().dtype(), DType::F16);
        assert_eq!(h.randn_like(5).unwrap().shape(), &[4, 4]);
        assert_eq!(h.rand_like(5).unwrap().device().to_string(), device);
    });
    let err = Tensor::normal(&[2], 0.0, -1.0, 0).unwrap_err();
    assert!(matches!(err, TensorError::Argument { op: "normal", .. }), "{err}");
    let err = Tensor::zeros(&[2], DType::I32).unwrap().rand_like(0).unwrap_err();
    assert!(matches!(err, TensorError::DType { op: "rand_like", .. }), "{err}");
    assert!(matches!(Tensor::kaiming_normal(&[], 0.0, 0), Err(TensorError::Argument { .. })));
}

#[test]
fn randint_is_exact_over_its_whole_range() {
    on_devices(|device| {
        // the top of int32: float32 cannot tell these apart, the integer draw can
        let top = Tensor::randint(&[4000], i64::from(i32::MAX) - 6, i64::from(i32::MAX) + 1, 1).unwrap();
        let mut seen = top.to_vec::<i32>().unwrap();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, ((i32::MAX - 6)..=i32::MAX).collect::<Vec<_>>(), "{device}");
        // the whole int32 range: both signs, never out of range (checked by the type)
        let all = Tensor::randint(&[4000], i64::from(i32::MIN), i64::from(i32::MAX) + 1, 2)
            .unwrap()
            .to_vec::<i32>()
            .unwrap();
        let negative = all.iter().filter(|&&v| v < 0).count();
        assert!((1800..2200).contains(&negative), "{device}: {negative} negative of 4000");
        // a small range is close to uniform
        let small = Tensor::randint(&[6000], -3, 3, 3).unwrap().to_vec::<i32>().unwrap();
        for v in -3..3 {
            let count = small.iter().filter(|&&x| x == v).count();
            assert!((850..1150).contains(&count), "{device}: {v} drawn {count} times of 6000");
        }
        assert!(Tensor::randint(&[50], 5, 6, 4).unwrap().to_vec::<i32>().unwrap().iter().all(|&v| v == 5));
    });
    for (low, high) in [(3, 3), (0, i64::from(i32::MAX) + 2), (i64::from(i32::MIN) - 1, 0)] {
        let err = Tensor::randint(&[2], low, high, 0).unwrap_err();
        assert!(matches!(err, TensorError::Argument { op: "randint", .. }), "{err}");
    }
}

#[test]
fn randperm_and_multinomial() {
    on_devices(|device| {
        for n in [1, 7, 33] {
            let mut p = Tensor::randperm(n, 9).unwrap().to_vec::<i32>().unwrap();
            assert!(n < 7 || p.windows(2).any(|w| w[0] > w[1]), "{device}: shuffled");
            p.sort_unstable();
            assert_eq!(p, (0..n as i32).collect::<Vec<_>>(), "{device}: a permutation of {n}");
        }
        assert_ne!(
            Tensor::randperm(20, 1).unwrap().to_vec::<i32>().unwrap(),
            Tensor::randperm(20, 2).unwrap().to_vec::<i32>().unwrap()
        );
        // with replacement: frequencies follow the weights (a zero weight is never drawn)
        let w = Tensor::from_slice(&[1.0f32, 0.0, 3.0, 4.0], &[4]).unwrap();
        let s = w.multinomial(4000, true, 5).unwrap();
        assert_eq!((s.shape(), s.dtype()), (&[4000][..], DType::I32));
        let s = s.to_vec::<i32>().unwrap();
        let freq: Vec<f64> = (0..4).map(|c| s.iter().filter(|&&x| x == c).count() as f64 / 4000.0).collect();
        assert_eq!(freq[1], 0.0, "{device}");
        for (f, want) in freq.iter().zip([0.125, 0.0, 0.375, 0.5]) {
            assert!((f - want).abs() < 0.03, "{device}: {freq:?}");
        }
        // without: distinct categories, rows on their own, zero weights last
        let rows = Tensor::from_slice(&[1.0f32, 1.0, 0.0, 1.0, 0.0, 5.0, 5.0, 0.0], &[2, 4]).unwrap();
        let s = rows.multinomial(3, false, 6).unwrap().to_vec::<i32>().unwrap();
        let mut first = s[..3].to_vec();
        first.sort_unstable();
        assert_eq!(first, [0, 1, 3], "{device}: {s:?}");
        assert!(s[3..5].iter().all(|c| [1, 2].contains(c)) && s[3] != s[4], "{device}: {s:?}");
    });
    let w = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    for err in [
        w.multinomial(3, false, 0).unwrap_err(),
        w.multinomial(0, true, 0).unwrap_err(),
        w.reshape(&[1, 1, 2]).unwrap().multinomial(1, true, 0).unwrap_err(),
    ] {
        assert!(matches!(err, TensorError::Argument { op: "multinomial", .. }), "{err}");
    }
}

#[test]
fn linspace_and_empty() {
    on_devices(|device| {
        let l = Tensor::linspace(-1.0, 2.0, 7, DType::F32).unwrap();
        assert_eq!(floats(&l), [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0], "{device}");
        assert_eq!(floats(&Tensor::linspace(3.0, 9.0, 1, DType::F32).unwrap()), [3.0], "{device}");
        assert_eq!(Tensor::linspace(0.0, 1.0, 0, DType::F32).unwrap().shape(), &[0]);
        assert_eq!(
            Tensor::linspace(0.0, 10.0, 5, DType::I32).unwrap().to_vec::<i32>().unwrap(),
            [0, 2, 5, 7, 10],
            "{device}"
        );
        let e = Tensor::empty(&[2, 3], DType::I32).unwrap();
        assert_eq!((e.shape(), e.dtype()), (&[2, 3][..], DType::I32));
        assert_eq!(e.schedule(32).unwrap().kernel_count(), 0, "{device}: a buffer, nothing to compute");
        e.assign(&Tensor::full(&[2, 3], 4i32).unwrap()).unwrap();
        assert_eq!(e.to_vec::<i32>().unwrap(), [4; 6], "{device}");
        let like = l.empty_like().unwrap();
        assert_eq!(
            (like.shape(), like.dtype(), like.device().to_string()),
            (&[7][..], DType::F32, device.to_string())
        );
    });
    let err = Tensor::linspace(0.0, 1.0, 3, DType::BOOL).unwrap_err();
    assert!(matches!(err, TensorError::Argument { op: "linspace", .. }), "{err}");
}
