//! Adapter choice and the reported summary, limits and features.

mod common;

use wgrad_runtime_wgpu::{Device, DeviceKind, RuntimeError, adapters};

#[test]
fn reports_adapter_limits_and_features() {
    let Some(device) = common::device() else { return };
    let adapter = device.adapter();
    assert!(!adapter.name.is_empty());
    let limits = device.limits();
    assert!(limits.max_workgroups_per_dimension >= 65_535);
    assert!(limits.max_invocations_per_workgroup >= 256);
    assert!(limits.max_storage_buffers_per_stage >= 8);
    assert!(limits.max_allocation() >= 128 << 20);
    if adapter.kind == DeviceKind::Cpu && adapter.name.contains("llvmpipe") {
        assert!(device.features().timestamps, "lavapipe has TIMESTAMP_QUERY");
    }
    eprintln!("{adapter:?}\n{limits:?}\n{:?}", device.features());
    if std::env::var_os(wgrad_runtime_wgpu::ADAPTER_ENV).is_none() {
        assert_eq!(adapters().first().map(|a| a.kind), Some(adapter.kind));
    }
}

#[test]
fn unknown_adapter_names_are_a_clear_error() {
    if common::device().is_none() {
        return;
    }
    let error = Device::with_adapter(Some("no-such-adapter-xyz")).unwrap_err();
    let RuntimeError::NoAdapter(message) = &error else { panic!("expected NoAdapter, got {error:?}") };
    assert!(message.contains("no-such-adapter-xyz") && message.contains("available"), "{message}");
}

#[test]
fn tensor_cores_follow_the_cooperative_matrix_feature() {
    let Some(device) = common::device() else { return };
    let (features, target) = (device.features(), device.target());
    assert_eq!(features.cooperative_matrix, !device.tensor_cores().is_empty(), "{features:?}");
    assert_eq!(target.tensor_cores, device.tensor_cores());
    assert_eq!(device.caps().cooperative_matrix, features.cooperative_matrix);
    for tc in device.tensor_cores() {
        let (m, n, k) = tc.dims;
        assert!(m == n && n == k && matches!(m, 8 | 16), "{tc:?}: WGSL tiles are square");
        assert!(features.f16 && target.subgroup_size.is_some_and(|s| (m * n) % s == 0), "{tc:?}");
    }
    if device.adapter().name.contains("llvmpipe") {
        assert!(!features.cooperative_matrix, "lavapipe has no cooperative matrices");
    }
}
