//! Per-launch GPU times from timestamp queries.

mod common;

const SCALE: &str = "
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64)
fn scale(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&x)) { x[gid.x] = x[gid.x] * 2.0; }
}
";

#[test]
fn timed_runs_report_each_launch() {
    let Some(device) = common::device() else { return };
    let n = 1u32 << 16;
    let x = device.upload(&vec![1.0f32; n as usize]).unwrap();
    let scale = device.pipeline(SCALE, "scale").unwrap();
    let mut batch = device.batch();
    for _ in 0..3 {
        batch.dispatch(&scale, &[&x], [n / 64, 1, 1]).unwrap();
    }
    let times = device.run_timed(batch).unwrap();
    assert_eq!(times.len(), 3);
    if device.features().timestamps {
        assert!(times.iter().all(Option::is_some), "{times:?}");
        eprintln!("launch times: {times:?}");
    } else {
        assert!(times.iter().all(Option::is_none));
    }
    assert!(device.read_as::<f32>(&x).unwrap().iter().all(|&v| v == 8.0));
}
