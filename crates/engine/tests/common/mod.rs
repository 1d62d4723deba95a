//! Lazy graphs over uploaded f32 data, shared by the engine tests.
#![allow(dead_code, reason = "each test file uses a subset")]

use wgrad_dtype::DType;
use wgrad_engine::{DeviceName, download, lazy, upload};
use wgrad_ops::{Ops, UOp};

/// A realized f32 tensor of `shape` holding `values`, on the CPU.
pub fn tensor(values: &[f32], shape: &[usize]) -> UOp {
    let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    lazy::reshape(&upload(&DeviceName::Cpu, DType::F32, &bytes).unwrap(), shape)
}

/// The f32 values of a realized `RESHAPE(BUFFER)`.
pub fn values(realized: &UOp) -> Vec<f32> {
    assert_eq!(realized.op(), Ops::Reshape);
    let bytes = download(&realized.src()[0]).unwrap();
    bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// `x` with its max over `axis` (kept, then broadcast back) subtracted: two kernels.
pub fn centered(x: &UOp, shape: &[usize], axis: usize) -> UOp {
    let m = lazy::expand(&lazy::reduce(x, Ops::Max, &[axis]), shape);
    x - &m
}
