//! The buffer pool: bucketing, reuse, counters, zero-sized and oversized requests.

use crate::common;

use wgrad_runtime_wgpu::{RuntimeError, bucket_size};

#[test]
fn freed_buffers_are_reused_by_the_same_bucket() {
    let Some(device) = common::device() else { return };
    let first = device.alloc(1000).unwrap();
    assert_eq!((first.size(), first.capacity()), (1000, bucket_size(1000)));
    let stats = device.memory();
    assert_eq!((stats.in_use, stats.pooled, stats.created, stats.reused), (1024, 0, 1, 0));
    drop(first);
    let stats = device.memory();
    assert_eq!((stats.in_use, stats.pooled), (0, 1024));

    let second = device.alloc(1020).unwrap();
    let stats = device.memory();
    assert_eq!((stats.in_use, stats.pooled, stats.created, stats.reused), (1024, 0, 1, 1));

    let other_bucket = device.alloc(5000).unwrap();
    let stats = device.memory();
    assert_eq!((stats.created, stats.in_use), (2, 1024 + bucket_size(5000)));
    assert_eq!(stats.peak_in_use, stats.in_use);

    let clone = second.clone();
    drop(second);
    assert_eq!(device.memory().pooled, 0, "a clone keeps the allocation alive");
    drop((clone, other_bucket));
    assert_eq!(device.memory().in_use, 0);
    device.trim_pool();
    assert_eq!(device.memory().pooled, 0);
}

#[test]
fn zero_sized_buffers_work() {
    let Some(device) = common::device() else { return };
    let empty = device.alloc(0).unwrap();
    assert_eq!(empty.size(), 0);
    assert!(empty.capacity() >= 4);
    assert_eq!(device.read(&empty).unwrap(), Vec::<u8>::new());
    let uploaded = device.upload::<f32>(&[]).unwrap();
    assert_eq!(device.read_as::<f32>(&uploaded).unwrap(), Vec::<f32>::new());
}

#[test]
fn oversized_requests_are_typed_errors() {
    let Some(device) = common::device() else { return };
    let limit = device.limits().max_allocation();
    match device.alloc(limit + 1) {
        Err(RuntimeError::BufferTooLarge { requested, limit: l }) => {
            assert_eq!((requested, l), (limit + 1, limit));
        }
        other => panic!("expected BufferTooLarge, got {other:?}"),
    }
    assert!(matches!(device.alloc(u64::MAX), Err(RuntimeError::BufferTooLarge { .. })));
    assert_eq!(device.memory().in_use, 0);
}
