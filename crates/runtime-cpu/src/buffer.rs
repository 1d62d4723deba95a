//! [`CpuBuffer`]: typed host storage the interpreter reads and writes.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use wgrad_dtype::{ConstValue, DType};

/// The host's physical memory in bytes (`MemTotal` of Linux's `/proc/meminfo`, read once);
/// `None` where it cannot be read.
fn physical_memory() -> Option<u64> {
    static TOTAL: OnceLock<Option<u64>> = OnceLock::new();
    *TOTAL.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
        let kib: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
        kib.checked_mul(1024)
    })
}

/// A buffer of `len` elements of one scalar dtype.
///
/// Every element is stored as its bit pattern in an `AtomicU64` (relaxed accesses), so the
/// workgroups running in parallel share it safely; values round-trip exactly through
/// `ConstValue::to_bits`/`from_bits`.
#[derive(Debug)]
pub struct CpuBuffer {
    dtype: DType,
    data: Vec<AtomicU64>,
}

impl CpuBuffer {
    /// `len` zeros of `dtype`.
    pub fn zeros(dtype: DType, len: usize) -> CpuBuffer {
        CpuBuffer { dtype: dtype.scalar_dtype(), data: (0..len).map(|_| AtomicU64::new(0)).collect() }
    }

    /// `len` zeros of `dtype`, or `None` when the host cannot allocate them: more bytes than
    /// the host's physical memory, or a `try_reserve` that fails, so a huge request fails
    /// instead of aborting the process. (With overcommit, `vm.overcommit_memory = 1` as on the
    /// H200 machine, `try_reserve` grants any size and the OOM killer ends the process once
    /// the zeros are written.)
    pub fn try_zeros(dtype: DType, len: usize) -> Option<CpuBuffer> {
        let bytes = u64::try_from(len).ok()?.checked_mul(size_of::<AtomicU64>() as u64)?;
        if physical_memory().is_some_and(|total| bytes > total) {
            return None;
        }
        let mut data = Vec::new();
        data.try_reserve_exact(len).ok()?;
        data.resize_with(len, || AtomicU64::new(0));
        Some(CpuBuffer { dtype: dtype.scalar_dtype(), data })
    }

    /// A buffer holding `values` cast to `dtype`.
    pub fn from_values(dtype: DType, values: impl IntoIterator<Item = impl Into<ConstValue>>) -> CpuBuffer {
        let dtype = dtype.scalar_dtype();
        let data = values.into_iter().map(|v| AtomicU64::new(v.into().to_bits(dtype))).collect();
        CpuBuffer { dtype, data }
    }

    /// A buffer from little-endian bytes of `dtype` (a trailing partial element is ignored).
    pub fn from_bytes(dtype: DType, bytes: &[u8]) -> CpuBuffer {
        let dtype = dtype.scalar_dtype();
        let data = bytes.chunks_exact(dtype.itemsize()).map(|c| AtomicU64::new(le_bits(c))).collect();
        CpuBuffer { dtype, data }
    }

    /// The element dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Element `i`, if in bounds.
    pub fn get(&self, i: usize) -> Option<ConstValue> {
        self.bits(i).map(|b| ConstValue::from_bits(b, self.dtype))
    }

    /// Every element.
    pub fn to_values(&self) -> Vec<ConstValue> {
        (0..self.len()).filter_map(|i| self.get(i)).collect()
    }

    /// Every element as f64 (convenient for comparing float results).
    pub fn to_f64(&self) -> Vec<f64> {
        self.to_values().into_iter().map(ConstValue::to_f64).collect()
    }

    /// The contents as little-endian bytes of the dtype.
    pub fn to_bytes(&self) -> Vec<u8> {
        let size = self.dtype.itemsize();
        self.data
            .iter()
            .flat_map(|a| a.load(Ordering::Relaxed).to_le_bytes().into_iter().take(size))
            .collect()
    }

    /// Overwrites the elements from little-endian bytes of the dtype; false (nothing
    /// written) unless `bytes` holds exactly `len()` elements.
    pub fn write_bytes(&self, bytes: &[u8]) -> bool {
        let size = self.dtype.itemsize();
        if bytes.len() != size * self.len() {
            return false;
        }
        for (a, c) in self.data.iter().zip(bytes.chunks_exact(size)) {
            a.store(le_bits(c), Ordering::Relaxed);
        }
        true
    }

    /// The bits of element `i`, if in bounds.
    pub(crate) fn bits(&self, i: usize) -> Option<u64> {
        self.data.get(i).map(|a| a.load(Ordering::Relaxed))
    }

    /// Sets the bits of element `i`; false when out of bounds.
    pub(crate) fn set_bits(&self, i: usize, bits: u64) -> bool {
        self.data.get(i).map(|a| a.store(bits, Ordering::Relaxed)).is_some()
    }
}

/// The bits of one element from its (at most 8) little-endian bytes.
fn le_bits(chunk: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..chunk.len()].copy_from_slice(chunk);
    u64::from_le_bytes(b)
}
