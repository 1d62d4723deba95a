//! Device memory behind `BUFFER` UOps: a table from buffer number to memory, each entry
//! living as long as its `BUFFER` UOp; which buffers are shared; uploads and readbacks.
//!
//! A buffer is shared once the realized table records it as the value of a lazy node that
//! something besides the realized tensor holds (another tensor of an equal graph, on any
//! thread): every holder of that node may then take the buffer as its own value, so writing
//! it in place would change them all. Memory from the host ([`upload`], [`alloc`]) and results
//! nothing else held are not shared.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use wgrad_dtype::DType;
use wgrad_ops::{Arg, UOp, WeakUOp};

use crate::device::open_device;
use crate::lazy::{buffer, device_of};
use crate::{DeviceBuffer, DeviceName, EngineError};

/// The memory of one `BUFFER`, as long as the UOp lives.
struct Entry {
    buf: WeakUOp,
    mem: DeviceBuffer,
    /// Whether lazy nodes other than the one it was computed for may hold it (see the module
    /// docs); never reset while the buffer lives.
    shared: bool,
}

static TABLE: LazyLock<Mutex<HashMap<u64, Entry>>> = LazyLock::new(Mutex::default);

fn table() -> MutexGuard<'static, HashMap<u64, Entry>> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn num(buf: &UOp) -> u64 {
    match buf.arg() {
        Arg::Buffer { num, .. } => *num,
        _ => u64::MAX,
    }
}

/// Gives `buf` the memory `mem` (keeping its `shared` mark if it had memory already).
pub(crate) fn bind(buf: &UOp, mem: DeviceBuffer) {
    let mut t = table();
    let shared = t.get(&num(buf)).is_some_and(|e| e.shared);
    t.insert(num(buf), Entry { buf: buf.downgrade(), mem, shared });
}

/// Marks `buf` (which has memory) shared: see the module docs.
pub(crate) fn share(buf: &UOp) {
    if let Some(entry) = table().get_mut(&num(buf)) {
        entry.shared = true;
    }
}

/// Whether `buf` may be the value of lazy nodes that other tensors hold (on any thread), so
/// that writing it in place would change them too: a tensor written in place (`assign`)
/// needs a buffer that is not shared.
pub fn is_shared(buf: &UOp) -> bool {
    table().get(&num(buf)).is_some_and(|e| e.shared)
}

/// The memory of `buf`, if it has any.
pub(crate) fn memory(buf: &UOp) -> Option<DeviceBuffer> {
    table().get(&num(buf)).map(|e| e.mem.clone())
}

/// Frees the memory of every buffer whose `BUFFER` UOp is gone.
pub(crate) fn sweep() {
    table().retain(|_, e| e.buf.is_alive());
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
