//! Launches over the per-dimension workgroup limit are folded, and a shader following
//! the folding contract covers every element exactly once.

use crate::common;

const WORKGROUPS: u32 = 70_000;

const COUNT: &str = "
@group(0) @binding(0) var<storage, read_write> hits: array<u32>;

@compute @workgroup_size(64)
fn count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let wg = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
    if (wg >= 70000u) { return; }
    let i = wg * 64u + lid;
    hits[i] = hits[i] + 1u;
}
";

#[test]
fn folded_launch_covers_every_element_once() {
    let Some(device) = common::device() else { return };
    assert!(device.limits().max_workgroups_per_dimension < WORKGROUPS);
    let n = WORKGROUPS as usize * 64;
    let hits = device.upload(&vec![0u32; n]).unwrap();
    let count = device.pipeline(COUNT, "count").unwrap();
    let mut batch = device.batch();
    let folded = batch.dispatch(&count, &[&hits], [WORKGROUPS, 1, 1]).unwrap();
    assert_eq!(folded, [35_000, 2, 1]);
    device.submit(batch).unwrap();
    let hits = device.read_as::<u32>(&hits).unwrap();
    assert_eq!(hits.len(), n);
    if let Some(bad) = hits.iter().position(|&h| h != 1) {
        panic!("element {bad} was written {} times", hits[bad]);
    }
}
