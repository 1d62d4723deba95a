//! Adapter choice and the reported summary, limits and features.

use crate::common;

use wgrad_codegen::OptMode;
use wgrad_dtype::DType;
use wgrad_ops::UOp;
use wgrad_runtime_wgpu::{Device, DeviceKind, F16Rounding, RuntimeError, adapters};
use wgrad_shape::{ShapeTracker, Sint};

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

#[test]
fn f16_rounding_is_probed_and_kernels_cast_like_the_host() {
    let Some(device) = common::device() else { return };
    let native = device.f16_rounding();
    eprintln!("f16(x) rounds to nearest even: {native:?}");
    assert_eq!(device.caps().f16_rounding, native);
    assert!(native == F16Rounding::Software || device.features().f16, "no f16, no native rounding");
    // whichever way the renderer converts, a cast kernel rounds ties to even as the host does
    if !device.features().f16 {
        return;
    }
    // ties with an even neighbour below, then above (normal, subnormal), and the overflow tie
    let p = |e: i32| 2f32.powi(e);
    let ties = vec![1.0 + p(-11), 1.0 + 3.0 * p(-11), -(1.0 + p(-11)), p(-25), 3.0 * p(-25), 65520.0];
    let input = device.upload(&ties).unwrap();
    let output = device.alloc_elements(DType::F16, ties.len()).unwrap();
    let st = || UOp::view(ShapeTracker::from_shape(&[Sint::int(ties.len() as i64)]).unwrap());
    let x = UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), st()]);
    let ast = UOp::sink([UOp::store([UOp::define_global(DType::F16, 0), st(), x.cast(DType::F16)])]);
    let (_, program) = wgrad_codegen::compile(&ast, &device.target(), &OptMode::NoOpt, "cast").unwrap();
    let gpu = device.compile(&program).unwrap();
    let mut batch = device.batch();
    device.launch(&mut batch, &gpu, &[&output, &input], &[]).unwrap();
    device.submit(batch).unwrap();
    let got = device.read_as::<u16>(&output).unwrap();
    let want: Vec<u16> = ties.iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
    assert_eq!(got, want, "native rounding: {native:?}");
    // a cast to half keeps its rounding when the value goes on in f32 within the kernel
    let widened = device.alloc_elements(DType::F32, ties.len()).unwrap();
    let round_trip = x.cast(DType::F16).cast(DType::F32);
    let ast = UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), st(), round_trip])]);
    let (_, program) = wgrad_codegen::compile(&ast, &device.target(), &OptMode::NoOpt, "round_trip").unwrap();
    let gpu = device.compile(&program).unwrap();
    let mut batch = device.batch();
    device.launch(&mut batch, &gpu, &[&widened, &input], &[]).unwrap();
    device.submit(batch).unwrap();
    let got = device.read_as::<f32>(&widened).unwrap();
    let want: Vec<f32> = ties.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
    assert_eq!(got, want, "native rounding: {native:?}");
}
