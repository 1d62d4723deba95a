//! sentence-transformers' pooling modes and L2 normalization against a plain f64 reference, on
//! every device, with padded positions that must not count.

use wgrad_engine::device::available_devices;
use wgrad_models::{Pooling, l2_normalize, pool};
use wgrad_tensor::{Tensor, with_default_device};

const B: usize = 3;
const S: usize = 4;
const D: usize = 5;

/// Real tokens per row: the rest is padding.
const LENGTHS: [usize; B] = [4, 2, 1];

fn hidden() -> Vec<f32> {
    (0..B * S * D).map(|i| ((i * 37 % 23) as f32 - 11.0) / 4.0).collect()
}

/// `pooling`'s modes over the real tokens of each row, concatenated, in f64.
fn reference(h: &[f32], pooling: Pooling) -> Vec<f64> {
    let mut out = vec![];
    for (b, &len) in LENGTHS.iter().enumerate() {
        let at = |s: usize, d: usize| f64::from(h[(b * S + s) * D + d]);
        let sum: Vec<f64> = (0..D).map(|d| (0..len).map(|s| at(s, d)).sum()).collect();
        if pooling.cls {
            out.extend((0..D).map(|d| at(0, d)));
        }
        if pooling.max {
            out.extend((0..D).map(|d| (0..len).map(|s| at(s, d)).fold(f64::NEG_INFINITY, f64::max)));
        }
        if pooling.mean {
            out.extend(sum.iter().map(|v| v / len as f64));
        }
        if pooling.mean_sqrt_len {
            out.extend(sum.iter().map(|v| v / (len as f64).sqrt()));
        }
    }
    out
}

fn close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((f64::from(*g) - w).abs() <= 1e-6 + 1e-3 * w.abs(), "{got:?}\n{want:?}");
    }
}

#[test]
fn pooling_modes_match_the_reference() {
    let modes = [
        Pooling { mean: true, ..Pooling::default() },
        Pooling { cls: true, ..Pooling::default() },
        Pooling { max: true, ..Pooling::default() },
        Pooling { mean_sqrt_len: true, ..Pooling::default() },
        Pooling { cls: true, max: true, mean: true, mean_sqrt_len: true },
    ];
    let h = hidden();
    let mask: Vec<bool> = LENGTHS.iter().flat_map(|&len| (0..S).map(move |s| s < len)).collect();
    for device in available_devices() {
        with_default_device(&device, || {
            let hidden = Tensor::from_slice(&h, &[B, S, D]).unwrap();
            let mask = Tensor::from_slice(&mask, &[B, S]).unwrap();
            for pooling in modes {
                let got = pool(&hidden, &mask, pooling).unwrap();
                let width = [pooling.cls, pooling.max, pooling.mean, pooling.mean_sqrt_len]
                    .iter()
                    .filter(|&&m| m)
                    .count();
                assert_eq!(got.shape(), &[B, D * width]);
                close(&got.to_vec::<f32>().unwrap(), &reference(&h, pooling));
            }
        });
    }
}

#[test]
fn l2_normalize_gives_unit_rows_and_keeps_zero_rows() {
    for device in available_devices() {
        with_default_device(&device, || {
            let x = Tensor::from_slice(&[3.0f32, 4.0, 0.0, 0.0, 1e-20, 0.0], &[3, 2]).unwrap();
            let got = l2_normalize(&x).unwrap().to_vec::<f32>().unwrap();
            close(&got, &[0.6, 0.8, 0.0, 0.0, 1e-8, 0.0]);
        });
    }
}
