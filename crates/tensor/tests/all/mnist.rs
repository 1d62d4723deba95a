//! MNIST: the IDX loader on the shipped sample and on bad files; a few training steps of
//! the example's CNN on a small batch make the loss fall on every device, and the same steps
//! through TinyJit, picking the digits on the device, give the same losses and weights bit for
//! bit.

use crate::common;
#[path = "../../examples/mnist/model.rs"]
mod model;

use std::cell::RefCell;
use std::path::PathBuf;

use wgrad_tensor::datasets::mnist::{Mnist, MnistError, read_idx};
use wgrad_tensor::nn::Module;
use wgrad_tensor::{DType, Tensor, with_default_device};

/// A fresh directory under the system's temp dir for this test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgrad-mnist-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An IDX file: magic, dims, then `body`.
fn idx(magic: u32, dims: &[u32], body: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    dims.iter().for_each(|d| out.extend(d.to_be_bytes()));
    out.extend_from_slice(body);
    out
}

#[test]
fn the_sample_splits_into_8000_training_and_2000_test_digits() {
    let data = Mnist::sample().unwrap();
    assert_eq!((data.train.len(), data.test.len()), (8000, 2000));
    for digits in [&data.train, &data.test] {
        assert_eq!((digits.rows, digits.cols), (28, 28));
        assert_eq!(digits.images.len(), digits.len() * 28 * 28);
        let mut counts = [0usize; 10];
        digits.labels.iter().for_each(|&l| counts[usize::from(l)] += 1);
        assert!(counts.iter().all(|&c| c * 20 > digits.len()), "every class is there: {counts:?}");
    }
    let (x, y) = data.test.batch(&[0, 5]).unwrap();
    assert_eq!((x.shape(), y.shape()), (&[2, 1, 28, 28][..], &[2][..]));
    let pixels = x.to_vec::<f32>().unwrap();
    assert!(pixels.iter().all(|&p| (0.0..=255.0).contains(&p)) && pixels.iter().any(|&p| p > 200.0));
    let want: Vec<i32> = [0, 5].iter().map(|&i| i32::from(data.test.labels[i])).collect();
    assert_eq!(y.to_vec::<i32>().unwrap(), want);
    // every digit on the device: raw uint8 pixels, int32 labels
    let (images, labels) = data.test.tensors().unwrap();
    assert_eq!((images.shape(), images.dtype()), (&[2000, 1, 28, 28][..], DType::U8));
    assert_eq!(
        labels.to_vec::<i32>().unwrap(),
        data.test.labels.iter().map(|&l| i32::from(l)).collect::<Vec<_>>()
    );
    let first = images.shrink(&[(5, 6), (0, 1), (0, 28), (0, 28)]).unwrap().cast(DType::F32);
    assert_eq!(first.to_vec::<f32>().unwrap(), pixels[784..]);
    let err = data.test.batch(&[1999, 2000]).unwrap_err();
    assert!(err.to_string().contains("digit 2000 picked from 2000 digits"), "{err}");
}

#[test]
fn full_mnist_file_names_are_read_raw_or_gzipped() {
    let dir = scratch("full");
    let pixels: Vec<u8> = (0..3 * 4).map(|i| i as u8).collect();
    std::fs::write(dir.join("train-images-idx3-ubyte"), idx(2051, &[3, 2, 2], &pixels)).unwrap();
    std::fs::write(dir.join("train-labels-idx1-ubyte"), idx(2049, &[3], &[7, 8, 9])).unwrap();
    std::fs::write(dir.join("t10k-images-idx3-ubyte"), idx(2051, &[1, 2, 2], &[1, 2, 3, 4])).unwrap();
    let mut gz = flate2::write::GzEncoder::new(vec![], flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &idx(2049, &[1], &[5])).unwrap();
    std::fs::write(dir.join("t10k-labels-idx1-ubyte.gz"), gz.finish().unwrap()).unwrap();
    let data = Mnist::load(&dir).unwrap();
    assert_eq!((data.train.images, data.train.labels), (pixels, vec![7, 8, 9]));
    assert_eq!((data.test.rows, data.test.cols, data.test.labels), (2, 2, vec![5]));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_files_are_typed_errors() {
    let dir = scratch("bad");
    let path = dir.join("f");
    let read = |bytes: &[u8], magic| {
        std::fs::write(&path, bytes).unwrap();
        read_idx(&path, magic, 3).unwrap_err()
    };
    let err = read(&idx(2049, &[1, 2, 2], &[0; 4]), 2051);
    assert!(matches!(err, MnistError::Magic { expected: 2051, found: 2049, .. }), "{err}");
    let err = read(&idx(2051, &[2, 2, 2], &[0; 5]), 2051);
    assert!(matches!(err, MnistError::Truncated { expected: 24, found: 21, .. }), "{err}");
    assert!(err.to_string().ends_with("21 bytes, the header needs 24"), "{err}");
    assert!(matches!(read(&[0, 0, 8], 2051), MnistError::Truncated { expected: 16, found: 3, .. }));
    let err = read(&idx(2051, &[u32::MAX, u32::MAX, u32::MAX], &[]), 2051);
    assert!(matches!(err, MnistError::Truncated { expected: usize::MAX, .. }), "{err}");
    assert!(matches!(read(&[0x1f, 0x8b, 1, 2], 2051), MnistError::Io { .. }), "a broken gzip stream");
    std::fs::write(dir.join("images-idx3-ubyte.gz"), idx(2051, &[2, 1, 1], &[1, 2])).unwrap();
    std::fs::write(dir.join("labels-idx1-ubyte.gz"), idx(2049, &[3], &[1, 2, 3])).unwrap();
    assert!(matches!(Mnist::load(&dir), Err(MnistError::Count { images: 2, labels: 3 })));
    let empty = scratch("empty");
    assert!(matches!(Mnist::load(&empty), Err(MnistError::NotFound { .. })));
    let err = read_idx(&empty.join("missing"), 2051, 3).unwrap_err();
    assert!(matches!(err, MnistError::Io { .. }) && err.to_string().contains("missing"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::remove_dir_all(empty).unwrap();
}

/// The bits of a float32 tensor's elements (an int32 tensor's values).
fn bits(t: &Tensor) -> Vec<u32> {
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect(),
        _ => t.to_vec::<i32>().unwrap().iter().map(|&v| v as u32).collect(),
    }
}

#[test]
fn five_training_steps_lower_the_loss_and_jitted_steps_equal_eager_ones_bit_for_bit() {
    let data = Mnist::sample().unwrap();
    let (picks, steps) = ([0, 1], 5);
    for device in common::devices() {
        with_default_device(&device, || {
            // a fresh upload of the batch every step, all kept: each call's inputs are memory of
            // their own, so a replay that did not swap them in would read stale data
            let mut batches = vec![];
            let mut batch = || {
                batches.push(data.train.batch(&picks).unwrap());
                batches.last().cloned().unwrap()
            };
            let eager = model::Model::new(0).unwrap();
            let mut opt = model::optimizer(&eager, 1e-3).unwrap();
            let losses: Vec<f32> = (0..steps)
                .map(|_| {
                    let (x, y) = batch();
                    model::train_step(&eager, &mut opt, &x, &y).unwrap().item().unwrap()
                })
                .collect();
            assert!(losses.windows(2).all(|p| p[1] < p[0]), "{device}: {losses:?}");
            let (x, y) = batch();
            assert!(eager.correct(&x, &y).unwrap() <= picks.len());

            // jitted as the example runs it: the same digits picked on the device, from indices
            // uploaded afresh every step
            let (images, labels) = data.train.tensors().unwrap();
            let jitted = model::Model::new(0).unwrap();
            let jit_opt = RefCell::new(model::optimizer(&jitted, 1e-3).unwrap());
            let mut step = model::jit_picking_train_step(&jitted, &jit_opt, &images, &labels);
            let mut uploads = vec![];
            let jit_losses: Vec<f32> = (0..steps)
                .map(|_| {
                    uploads.push(Tensor::from_vec(picks.iter().map(|&p| p as i32).collect(), &[2]).unwrap());
                    let indices = uploads.last().cloned().unwrap();
                    step.call(&[&indices]).unwrap()[0].item().unwrap()
                })
                .collect();
            assert!(step.captured_kernels().is_some_and(|k| k > 10), "{device}: the last 3 steps replayed");
            let bits_of = |v: &[f32]| v.iter().map(|l| l.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits_of(&jit_losses), bits_of(&losses), "{device}: losses");
            for ((name, e), (_, j)) in eager.state_dict().iter().zip(jitted.state_dict()) {
                assert_eq!(bits(e), bits(&j), "{device}: {name}");
            }
        });
    }
}
