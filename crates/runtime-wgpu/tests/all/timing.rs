//! Per-launch GPU times from timestamp queries.

use crate::common;

use std::time::{Duration, Instant};

use wgrad_runtime_wgpu::{DeviceKind, FIRST_WARM_UP};

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

#[test]
fn clocks_are_raised_on_discrete_gpus_within_the_budget() {
    let Some(device) = common::device() else { return };
    let budget = Duration::from_secs(2);
    let start = Instant::now();
    let warm = device.raise_clocks(budget).unwrap();
    assert!(start.elapsed() < budget + Duration::from_secs(1), "{:?}", start.elapsed());
    if device.adapter().kind != DeviceKind::Discrete || !device.features().timestamps {
        assert!(!warm, "only discrete GPUs spin");
        return;
    }
    // the first call sets the fastest spin; right after it the clocks are still up
    let start = Instant::now();
    assert!(device.raise_clocks(budget).unwrap(), "raised clocks are found up");
    eprintln!("raised: {:?} for the first call's work, {:?} for the second", FIRST_WARM_UP, start.elapsed());
}
