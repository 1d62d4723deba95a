//! MNIST digits from IDX files (gzip or raw): the 10,000-digit sample shipped in
//! `datasets/mnist-10k` (its first 8,000 digits train, the last 2,000 test), or full MNIST
//! (`train-images-idx3-ubyte[.gz]`, `train-labels-idx1-ubyte[.gz]`, `t10k-...`) from a
//! directory.
//!
//! IDX: a big-endian header (magic `2051` for images, `2049` for labels, then the count,
//! then rows and cols for images) and the bytes. A wrong magic, a short file or images and
//! labels that disagree are a [`MnistError`], never a panic.

use std::io::Read;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::{Result as TensorResult, Tensor, TensorError};

/// The shipped sample's directory, found from this crate's source at compile time.
pub const SAMPLE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/mnist-10k");

/// How many of the sample's digits are held out for testing (its last ones).
pub const SAMPLE_TEST: usize = 2000;

const IMAGES_MAGIC: u32 = 2051;
const LABELS_MAGIC: u32 = 2049;

/// Why an MNIST file could not be read.
#[derive(Debug, Error)]
pub enum MnistError {
    /// The file could not be opened or read (or un-gzipped).
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Neither the sample's nor full MNIST's file names are in the directory.
    #[error("{dir}: no MNIST files (images-idx3-ubyte.gz or train-images-idx3-ubyte[.gz])")]
    NotFound {
        /// The directory looked in.
        dir: PathBuf,
    },
    /// The header's magic number is not the one of this kind of IDX file.
    #[error("{path}: magic {found}, expected {expected}")]
    Magic {
        /// The file.
        path: PathBuf,
        /// The magic number of the kind of file expected.
        expected: u32,
        /// The magic number read.
        found: u32,
    },
    /// The file ends before its header says it does.
    #[error("{path}: {found} bytes, the header needs {expected}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the header calls for.
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// An images file and a labels file with different counts.
    #[error("{images} images but {labels} labels")]
    Count {
        /// Images read.
        images: usize,
        /// Labels read.
        labels: usize,
    },
}

/// Digits: `len` images of `rows` x `cols` bytes (0-255, row-major) and their labels (0-9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digits {
    /// Pixels, one image after the other.
    pub images: Vec<u8>,
    /// One label per image.
    pub labels: Vec<u8>,
    /// Image height.
    pub rows: usize,
    /// Image width.
    pub cols: usize,
}

/// A training set and a test set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mnist {
    /// Digits to train on.
    pub train: Digits,
    /// Held-out digits to measure accuracy on.
    pub test: Digits,
}

impl Digits {
    /// Number of digits.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no digits.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The digits at `picks` as tensors: images float32 `(n, 1, rows, cols)` with the raw
    /// 0-255 values (as tinygrad's `mnist()` gives them) and labels int32 `(n,)`.
    pub fn batch(&self, picks: &[usize]) -> TensorResult<(Tensor, Tensor)> {
        if let Some(bad) = picks.iter().find(|&&i| i >= self.len()) {
            let why = format!("digit {bad} picked from {} digits", self.len());
            return Err(TensorError::Argument { op: "Digits::batch", why });
        }
        let size = self.rows * self.cols;
        let pixels: Vec<f32> = picks
            .iter()
            .flat_map(|&i| &self.images[i * size..(i + 1) * size])
            .map(|&p| f32::from(p))
            .collect();
        let labels: Vec<i32> = picks.iter().map(|&i| i32::from(self.labels[i])).collect();
        let x = Tensor::from_vec(pixels, &[picks.len(), 1, self.rows, self.cols])?;
        Ok((x, Tensor::from_vec(labels, &[picks.len()])?))
    }

    /// Every digit as tensors, for a training loop that picks its batches on the device: the
    /// raw pixels uint8 `(len, 1, rows, cols)` (a quarter of float32's memory: full MNIST's
    /// 60,000 digits take 47 MB) and the labels int32 `(len,)`.
    pub fn tensors(&self) -> TensorResult<(Tensor, Tensor)> {
        let images = Tensor::from_slice(&self.images, &[self.len(), 1, self.rows, self.cols])?;
        let labels: Vec<i32> = self.labels.iter().map(|&l| i32::from(l)).collect();
        Ok((images, Tensor::from_vec(labels, &[self.len()])?))
    }

    /// The first `n` digits and the rest.
    fn split_at(mut self, n: usize) -> (Digits, Digits) {
        let n = n.min(self.len());
        let size = self.rows * self.cols;
        let rest = Digits {
            images: self.images.split_off(n * size),
            labels: self.labels.split_off(n),
            rows: self.rows,
            cols: self.cols,
        };
        (self, rest)
    }
}

impl Mnist {
    /// The shipped 10,000-digit sample: the first 8,000 to train, the last 2,000 to test.
    pub fn sample() -> Result<Mnist, MnistError> {
        Mnist::load(Path::new(SAMPLE_DIR))
    }

    /// The digits in `dir`: full MNIST when its training files are there (`train-*` and
    /// `t10k-*`, gzipped or not), else a sample laid out as `datasets/mnist-10k`
    /// (`images-idx3-ubyte.gz`, `labels-idx1-ubyte.gz`) whose last 2,000 digits are the test set.
    pub fn load(dir: &Path) -> Result<Mnist, MnistError> {
        let train_images = file(dir, "train-images-idx3-ubyte");
        if train_images.is_file() {
            let train = read_digits(&train_images, &file(dir, "train-labels-idx1-ubyte"))?;
            let test =
                read_digits(&file(dir, "t10k-images-idx3-ubyte"), &file(dir, "t10k-labels-idx1-ubyte"))?;
            return Ok(Mnist { train, test });
        }
        let images = file(dir, "images-idx3-ubyte");
        if !images.is_file() {
            return Err(MnistError::NotFound { dir: dir.to_path_buf() });
        }
        let all = read_digits(&images, &file(dir, "labels-idx1-ubyte"))?;
        let train_len = all.len().saturating_sub(SAMPLE_TEST);
        let (train, test) = all.split_at(train_len);
        Ok(Mnist { train, test })
    }
}

/// `dir/name.gz` when it exists, else `dir/name`.
fn file(dir: &Path, name: &str) -> PathBuf {
    let gz = dir.join(format!("{name}.gz"));
    if gz.is_file() { gz } else { dir.join(name) }
}

/// An images file and its labels file, checked against each other.
pub fn read_digits(images: &Path, labels: &Path) -> Result<Digits, MnistError> {
    let (dims, pixels) = read_idx(images, IMAGES_MAGIC, 3)?;
    let (_, labels) = read_idx(labels, LABELS_MAGIC, 1)?;
    if dims[0] != labels.len() {
        return Err(MnistError::Count { images: dims[0], labels: labels.len() });
    }
    Ok(Digits { images: pixels, labels, rows: dims[1], cols: dims[2] })
}

/// The dims and bytes of an IDX file of `magic` with `ndim` dims (un-gzipped when the file
/// starts with gzip's magic).
pub fn read_idx(path: &Path, magic: u32, ndim: usize) -> Result<(Vec<usize>, Vec<u8>), MnistError> {
    let io = |source| MnistError::Io { path: path.to_path_buf(), source };
    let raw = std::fs::read(path).map_err(io)?;
    let bytes = match raw.starts_with(&[0x1f, 0x8b]) {
        true => {
            let mut out = vec![];
            flate2::read::MultiGzDecoder::new(raw.as_slice()).read_to_end(&mut out).map_err(io)?;
            out
        }
        false => raw,
    };
    let header = 4 * (1 + ndim);
    let truncated =
        |expected| MnistError::Truncated { path: path.to_path_buf(), expected, found: bytes.len() };
    if bytes.len() < header {
        return Err(truncated(header));
    }
    let word =
        |i: usize| u32::from_be_bytes([bytes[4 * i], bytes[4 * i + 1], bytes[4 * i + 2], bytes[4 * i + 3]]);
    if word(0) != magic {
        return Err(MnistError::Magic { path: path.to_path_buf(), expected: magic, found: word(0) });
    }
    let dims: Vec<usize> = (1..=ndim).map(|i| word(i) as usize).collect();
    let body = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let expected = body.and_then(|b| b.checked_add(header)).unwrap_or(usize::MAX);
    if bytes.len() < expected {
        return Err(truncated(expected));
    }
    Ok((dims, bytes[header..expected].to_vec()))
}
