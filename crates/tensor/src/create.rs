//! Creating tensors: from host data, constants, ranges, the identity; and the default
//! device they are created on. (Random numbers are in `random.rs`.)

use std::cell::RefCell;

use wgrad_dtype::{ConstValue, DType};
use wgrad_engine::{DeviceName, lazy, numel, upload};

use crate::Tensor;
use crate::element::Element;
use crate::error::{Result, TensorError, ok};

thread_local! {
    /// The device this thread creates tensors on, when overridden.
    static DEVICE: RefCell<Option<DeviceName>> = const { RefCell::new(None) };
}

/// Runs `f` with tensors created on `device` (on this thread).
pub fn with_default_device<T>(device: &DeviceName, f: impl FnOnce() -> T) -> T {
    let old = DEVICE.with(|d| d.replace(Some(device.clone())));
    let out = f();
    DEVICE.with(|d| *d.borrow_mut() = old);
    out
}

impl Tensor {
    /// The device new tensors go to: the one set by [`with_default_device`], else the
    /// engine's default (`WGRAD_DEVICE`, else wgpu when it opens, else the CPU).
    pub fn default_device() -> Result<DeviceName> {
        match DEVICE.with(|d| d.borrow().clone()) {
            Some(d) => Ok(d),
            None => Ok(wgrad_engine::device::default_device()?),
        }
    }

    /// A tensor of `shape` holding `data` (row-major).
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        if data.len() != numel(shape) {
            return Err(TensorError::DataLength { len: data.len(), shape: shape.to_vec() });
        }
        Tensor::from_bytes(&T::to_le_bytes(data), T::DTYPE, shape)
    }

    /// A tensor of `shape` and `dtype` holding `bytes` (little-endian elements, row-major,
    /// as many as `shape` has): the fast way in for large host data already laid out so.
    pub fn from_bytes(bytes: &[u8], dtype: DType, shape: &[usize]) -> Result<Tensor> {
        if bytes.len() != numel(shape) * dtype.itemsize() {
            return Err(TensorError::DataLength {
                len: bytes.len() / dtype.itemsize().max(1),
                shape: shape.to_vec(),
            });
        }
        let device = Tensor::default_device()?;
        let buf = upload(&device, dtype, bytes)?;
        Ok(Tensor::from_uop(lazy::reshape(&buf, shape), shape.to_vec(), device))
    }

    /// A tensor of `shape` holding `data` (row-major).
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        Tensor::from_slice(&data, shape)
    }

    /// A scalar (shape `()`) holding `value`.
    pub fn scalar<T: Element>(value: T) -> Result<Tensor> {
        Tensor::full(&[], value)
    }

    /// `value` (cast to `dtype`) everywhere in `shape`, on `device`: a broadcast constant,
    /// no memory.
    pub(crate) fn constant(shape: &[usize], value: ConstValue, dtype: DType, device: &DeviceName) -> Tensor {
        let c = lazy::constant(device, dtype, value);
        let uop = match shape.is_empty() {
            true => c,
            false => lazy::expand(&lazy::reshape(&c, &vec![1; shape.len()]), shape),
        };
        Tensor::from_uop(uop, shape.to_vec(), device.clone())
    }

    /// `value` everywhere in `shape`.
    pub fn full<T: Element>(shape: &[usize], value: T) -> Result<Tensor> {
        Ok(Tensor::constant(shape, value.to_const(), T::DTYPE, &Tensor::default_device()?))
    }

    /// `value` (cast to `dtype`) everywhere in `shape`.
    pub fn full_dtype(shape: &[usize], value: impl Into<ConstValue>, dtype: DType) -> Result<Tensor> {
        Ok(Tensor::constant(shape, value.into(), dtype, &Tensor::default_device()?))
    }

    /// Zeros of `dtype` in `shape`.
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full_dtype(shape, 0, dtype)
    }

    /// Ones of `dtype` in `shape`.
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full_dtype(shape, 1, dtype)
    }

    /// `value` (in this tensor's dtype) in this tensor's shape, on its device.
    pub fn full_like(&self, value: impl Into<ConstValue>) -> Tensor {
        Tensor::constant(self.shape(), value.into(), self.dtype(), self.device())
    }

    /// Zeros shaped like this tensor.
    pub fn zeros_like(&self) -> Tensor {
        self.full_like(0)
    }

    /// Ones shaped like this tensor.
    pub fn ones_like(&self) -> Tensor {
        self.full_like(1)
    }

    /// `0, 1, .., stop - 1` as int32.
    pub fn arange(stop: usize) -> Result<Tensor> {
        Tensor::arange_with(0.0, stop as f64, 1.0, DType::I32)
    }

    /// `start, start + step, ..` below `stop` (above, for a negative step), in `dtype`.
    pub fn arange_with(start: f64, stop: f64, step: f64, dtype: DType) -> Result<Tensor> {
        let n = ((stop - start) / step).ceil().max(0.0) as usize;
        let index = Tensor::index(n, dtype, &Tensor::default_device()?);
        let in_dtype = |v: f64| crate::Value::Scalar(ConstValue::Float(v).cast(dtype));
        match (start, step) {
            (0.0, 1.0) => Ok(index),
            _ => index.mul(in_dtype(step))?.add(in_dtype(start)),
        }
    }

    /// `steps` values from `start` to `stop` (both included when `steps > 1`), evenly spaced,
    /// computed in float32 and cast to `dtype` (not bool).
    pub fn linspace(start: f64, stop: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        if dtype.is_bool() {
            return Err(TensorError::Argument { op: "linspace", why: "a bool dtype has no spacing".into() });
        }
        let device = Tensor::default_device()?;
        if steps == 1 {
            return Ok(Tensor::constant(&[1], ConstValue::Float(start), dtype, &device));
        }
        let step = (stop - start) / (steps.max(2) - 1) as f64;
        Ok(Tensor::index(steps, DType::F32, &device).mul(step)?.add(start)?.cast(dtype))
    }

    /// A tensor of `shape` and `dtype` in a new buffer whose contents are unspecified (to be
    /// written, e.g. by `assign`).
    pub fn empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
        let device = Tensor::default_device()?;
        let buf = wgrad_engine::alloc(&device, dtype, numel(shape))?;
        Ok(Tensor::from_uop(lazy::reshape(&buf, shape), shape.to_vec(), device))
    }

    /// [`Tensor::empty`] in this tensor's shape and dtype, on its device.
    pub fn empty_like(&self) -> Result<Tensor> {
        with_default_device(self.device(), || Tensor::empty(self.shape(), self.dtype()))
    }

    /// `0, 1, .., n - 1` in `dtype` without a reduce: the sum over bits `b` of `2^b` times
    /// the bit itself, each bit the constant pattern `[0, 1]` broadcast in blocks of
    /// `2^b` (a padded constant seen through a reshape and an expand), so it is one fused
    /// elementwise kernel of `log2 n` terms.
    fn index(n: usize, dtype: DType, device: &DeviceName) -> Tensor {
        let bits = n.next_power_of_two().trailing_zeros() as usize;
        let size = 1usize << bits;
        let one = Tensor::constant(&[1], 1.into(), dtype, device);
        let pattern = ok(one.pad(&[(1, 0)]));
        let mut acc = Tensor::constant(&[size], 0.into(), dtype, device);
        for b in 0..bits {
            let bit =
                ok(pattern.reshape_to(&[1, 2, 1]).expand(&[size >> (b + 1), 2, 1 << b])).reshape_to(&[size]);
            acc = &acc + &ok(bit.mul(1i64 << b));
        }
        ok(acc.shrink(&[(0, n)]))
    }

    /// The `n` x `n` identity matrix of `dtype`: each row a one followed by `n` zeros,
    /// flattened and cut to `n * n` elements.
    pub fn eye(n: usize, dtype: DType) -> Result<Tensor> {
        let rows = Tensor::ones(&[n, 1], dtype)?.pad(&[(0, 0), (0, n)])?;
        rows.flatten(0)?.shrink(&[(0, n * n)])?.reshape(&[n as isize, n as isize])
    }
}
