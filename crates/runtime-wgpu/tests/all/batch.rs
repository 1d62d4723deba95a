//! Many dependent launches in one batch, one submit.

use crate::common;

const STEP: &str = "
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(64)
fn step(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&dst)) {
        dst[i] = src[i] * 3u + 1u;
    }
}
";

#[test]
fn dependent_chain_in_one_batch() {
    let Some(device) = common::device() else { return };
    let n = 10_000u32;
    let input: Vec<u32> = (0..n).collect();
    let bufs = [
        device.upload(&input).unwrap(),
        device.alloc(4 * u64::from(n)).unwrap(),
        device.alloc(4 * u64::from(n)).unwrap(),
    ];
    let step = device.pipeline(STEP, "step").unwrap();
    let launches = 30;
    let mut batch = device.batch();
    for k in 0..launches {
        let (src, dst) = (&bufs[k % 3], &bufs[(k + 1) % 3]);
        batch.dispatch(&step, &[src, dst], [n.div_ceil(64), 1, 1]).unwrap();
    }
    assert_eq!(batch.len(), launches);
    device.submit(batch).unwrap();
    let out = device.read_as::<u32>(&bufs[launches % 3]).unwrap();
    let expected: Vec<u32> =
        input.iter().map(|&x| (0..launches).fold(x, |v, _| v.wrapping_mul(3).wrapping_add(1))).collect();
    assert_eq!(out, expected);
}

#[test]
fn empty_batch_and_sync_are_no_ops() {
    let Some(device) = common::device() else { return };
    let batch = device.batch();
    assert!(batch.is_empty());
    device.submit(batch).unwrap();
    device.sync().unwrap();
}
