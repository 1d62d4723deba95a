//! Device memory behind `BUFFER` UOps: a table from buffer number to memory, each entry
//! living as long as its `BUFFER` UOp; uploads and readbacks.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use wgrad_dtype::DType;
use wgrad_ops::{Arg, UOp, WeakUOp};

use crate::device::open_device;
use crate::lazy::{buffer, device_of};
use crate::{DeviceBuffer, DeviceName, EngineError};

static TABLE: LazyLock<Mutex<HashMap<u64, (WeakUOp, DeviceBuffer)>>> = LazyLock::new(Mutex::default);

fn table() -> MutexGuard<'static, HashMap<u64, (WeakUOp, DeviceBuffer)>> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn num(buf: &UOp) -> u64 {
    match buf.arg() {
        Arg::Buffer { num, .. } => *num,
        _ => u64::MAX,
    }
}

/// Gives `buf` the memory `mem`.
pub(crate) fn bind(buf: &UOp, mem: DeviceBuffer) {
    table().insert(num(buf), (buf.downgrade(), mem));
}

/// The memory of `buf`, if it has any.
pub(crate) fn memory(buf: &UOp) -> Option<DeviceBuffer> {
    table().get(&num(buf)).map(|(_, m)| m.clone())
}

/// Frees the memory of every buffer whose `BUFFER` UOp is gone.
pub(crate) fn sweep() {
    table().retain(|_, (k, _)| k.is_alive());
}

/// A new `BUFFER` on `device` holding `bytes` (little-endian elements of `dtype`).
pub fn upload(device: &DeviceName, dtype: DType, bytes: &[u8]) -> Result<UOp, EngineError> {
    sweep();
    let backend = open_device(device)?;
    let mem = backend.alloc(dtype, bytes.len() / dtype.itemsize().max(1))?;
    backend.copy_in(&mem, bytes)?;
    Ok(adopt(device, dtype, mem))
}

/// A new `BUFFER` UOp owning the device memory `mem`.
fn adopt(device: &DeviceName, dtype: DType, mem: DeviceBuffer) -> UOp {
    let buf = buffer(device, dtype, mem.len);
    bind(&buf, mem);
    buf
}

/// A new `BUFFER` of `len` elements of `dtype` on `device` with memory whose contents are
/// unspecified (tinygrad's `Tensor.empty`).
pub fn alloc(device: &DeviceName, dtype: DType, len: usize) -> Result<UOp, EngineError> {
    sweep();
    Ok(adopt(device, dtype, open_device(device)?.alloc(dtype, len)?))
}

/// The contents of a realized `BUFFER`.
pub fn download(buf: &UOp) -> Result<Vec<u8>, EngineError> {
    let mem = memory(buf)
        .ok_or_else(|| EngineError::Unschedulable(format!("buffer {} has no memory", num(buf))))?;
    open_device(&device_of(buf)?)?.copy_out(&mem)
}
