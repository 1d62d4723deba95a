//! A hand-written elementwise add over 1M elements, and the pipeline cache.

use crate::common;

const ADD: &str = "
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;

@compute @workgroup_size(256)
fn add(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&c)) {
        c[i] = a[i] + b[i];
    }
}
";

#[test]
fn add_one_million() {
    let Some(device) = common::device() else { return };
    let n = 1 << 20;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
    let a_buf = device.upload(&a).unwrap();
    let b_buf = device.upload(&b).unwrap();
    let c_buf = device.alloc(4 * n as u64).unwrap();
    let add = device.pipeline(ADD, "add").unwrap();
    let mut batch = device.batch();
    let groups = batch.dispatch(&add, &[&a_buf, &b_buf, &c_buf], [n as u32 / 256, 1, 1]).unwrap();
    assert_eq!(groups, [4096, 1, 1]);
    device.submit(batch).unwrap();
    let c = device.read_as::<f32>(&c_buf).unwrap();
    let expected: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(c, expected);
}

#[test]
fn pipelines_compile_once() {
    let Some(device) = common::device() else { return };
    let first = device.pipeline(ADD, "add").unwrap();
    let second = device.pipeline(ADD, "add").unwrap();
    assert!(first.same(&second));
    assert_eq!(first.entry(), "add");
    assert_eq!(device.pipeline_count(), 1);
}
