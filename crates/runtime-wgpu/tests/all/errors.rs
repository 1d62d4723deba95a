//! Bad shaders and bad launches come back as typed errors, never panics.

use crate::common;

use wgrad_runtime_wgpu::RuntimeError;

const SYNTAX_ERROR: &str = "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(1)
fn main() {
    let broken = 1.0 +* 2.0;
    x[0] = broken;
}
";

const TYPE_ERROR: &str = "@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(1)
fn main() {
    x[0] = 1u << true;
}
";

const COPY: &str = "
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&b)) { b[gid.x] = a[gid.x]; }
}
";

#[test]
fn syntax_errors_name_the_line() {
    let Some(device) = common::device() else { return };
    let error = device.pipeline(SYNTAX_ERROR, "main").unwrap_err();
    let RuntimeError::Compile { entry, line, line_text, message } = &error else {
        panic!("expected a compile error, got {error:?}")
    };
    assert_eq!(entry, "main");
    assert_eq!(*line, Some(4));
    assert_eq!(line_text.as_deref().map(str::trim), Some("let broken = 1.0 +* 2.0;"));
    assert!(message.contains("1.0 +* 2.0"), "naga quotes the line: {message}");
    assert!(error.to_string().contains("at line 4"), "{error}");
    assert_eq!(device.pipeline_count(), 0);
}

#[test]
fn validation_errors_name_the_line() {
    let Some(device) = common::device() else { return };
    let error = device.pipeline(TYPE_ERROR, "main").unwrap_err();
    let RuntimeError::Compile { line_text, .. } = &error else {
        panic!("expected a compile error, got {error:?}")
    };
    assert!(line_text.as_deref().is_some_and(|l| l.contains("1u << true")), "{error}");
}

#[test]
fn missing_entry_points_are_compile_errors() {
    let Some(device) = common::device() else { return };
    let error = device.pipeline(COPY, "nope").unwrap_err();
    assert!(matches!(error, RuntimeError::Compile { .. }), "{error:?}");
}

#[test]
fn binding_count_mismatch_is_an_error_and_the_device_survives() {
    let Some(device) = common::device() else { return };
    let copy = device.pipeline(COPY, "copy").unwrap();
    let a = device.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let b = device.alloc(16).unwrap();

    let mut batch = device.batch();
    batch.dispatch(&copy, &[&a], [1, 1, 1]).unwrap();
    let error = device.submit(batch).unwrap_err();
    assert!(matches!(error, RuntimeError::Validation { .. }), "{error:?}");

    let mut batch = device.batch();
    batch.dispatch(&copy, &[&a, &b], [1, 1, 1]).unwrap();
    device.submit(batch).unwrap();
    assert_eq!(device.read_as::<f32>(&b).unwrap(), [1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn shaders_without_bindings_run_and_reject_buffers() {
    let Some(device) = common::device() else { return };
    let nothing = device.pipeline("@compute @workgroup_size(1) fn main() {}", "main").unwrap();
    let buffer = device.alloc(4).unwrap();
    let mut batch = device.batch();
    batch.dispatch(&nothing, &[&buffer], [1, 1, 1]).unwrap();
    let error = device.submit(batch).unwrap_err();
    assert!(matches!(error, RuntimeError::Validation { .. }), "{error:?}");

    let mut batch = device.batch();
    batch.dispatch(&nothing, &[], [1, 1, 1]).unwrap();
    device.submit(batch).unwrap();
    device.sync().unwrap();
}

#[test]
fn oversized_grids_are_rejected() {
    let Some(device) = common::device() else { return };
    let copy = device.pipeline(COPY, "copy").unwrap();
    let (a, b) = (device.alloc(4).unwrap(), device.alloc(4).unwrap());
    let max = device.limits().max_workgroups_per_dimension;
    let mut batch = device.batch();
    let error = batch.dispatch(&copy, &[&a, &b], [max + 1, 2, 1]).unwrap_err();
    assert!(matches!(error, RuntimeError::DispatchTooLarge { .. }), "{error:?}");
    assert!(batch.is_empty());
}

#[test]
fn device_loss_is_an_error_not_a_panic() {
    let Some(device) = common::device() else { return };
    let buffer = device.upload(&[1u32, 2, 3, 4]).unwrap();
    device.destroy();
    let error = device.sync().unwrap_err();
    assert!(matches!(error, RuntimeError::DeviceLost(_)), "{error:?}");
    assert!(matches!(device.read(&buffer), Err(RuntimeError::DeviceLost(_))));
    assert!(matches!(device.pipeline(COPY, "copy"), Err(RuntimeError::DeviceLost(_))));
    assert!(matches!(device.submit(device.batch()), Err(RuntimeError::DeviceLost(_))));
    assert!(matches!(device.alloc(1 << 20), Err(RuntimeError::DeviceLost(_))));
    assert!(matches!(device.write(&buffer, 0, &[0; 4]), Err(RuntimeError::DeviceLost(_))));
}

#[test]
fn a_device_lost_behind_our_back_is_reported_too() {
    let Some(device) = common::device() else { return };
    let buffer = device.upload(&[1u32, 2, 3, 4]).unwrap();
    device.raw().0.destroy();
    assert!(matches!(device.sync(), Err(RuntimeError::DeviceLost(_))));
    assert!(matches!(device.read(&buffer), Err(RuntimeError::DeviceLost(_))));
    assert!(matches!(device.alloc(16), Err(RuntimeError::DeviceLost(_))));
}
