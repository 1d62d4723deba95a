//! Device names, the registry and the CPU backend's side of the contract.

use std::sync::Arc;

use wgrad_dtype::DType;
use wgrad_engine::device::{available_devices, open_device};
use wgrad_engine::{DeviceName, EngineError};

#[test]
fn names_parse_and_print() {
    for (text, name, shown) in [
        ("cpu", DeviceName::Cpu, "CPU"),
        ("WGPU", DeviceName::Wgpu(None), "WGPU"),
        ("wgpu:1", DeviceName::Wgpu(Some(1)), "WGPU:1"),
    ] {
        let parsed: DeviceName = text.parse().unwrap();
        assert_eq!(parsed, name);
        assert_eq!(parsed.to_string(), shown);
        assert_eq!(shown.parse::<DeviceName>().unwrap(), name);
    }
    for bad in ["gpu", "wgpu:x", "cpu:0", ""] {
        assert!(matches!(bad.parse::<DeviceName>(), Err(EngineError::UnknownDevice(_))), "{bad}");
    }
}

#[test]
fn the_cpu_is_always_available_and_opened_once() {
    assert!(available_devices().contains(&DeviceName::Cpu));
    let (a, b) = (open_device(&DeviceName::Cpu).unwrap(), open_device(&DeviceName::Cpu).unwrap());
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(a.name(), "CPU");
}

#[test]
fn cpu_buffers_round_trip_and_count_memory() {
    let cpu = open_device(&DeviceName::Cpu).unwrap();
    let before = cpu.memory_used();
    let buf = cpu.alloc(DType::I32, 3).unwrap();
    assert_eq!(cpu.memory_used(), before + 12);
    let bytes: Vec<u8> = [7i32, -1, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
    cpu.copy_in(&buf, &bytes).unwrap();
    assert_eq!(cpu.copy_out(&buf).unwrap(), bytes);
    let err = cpu.copy_in(&buf, &bytes[..8]).unwrap_err();
    assert!(matches!(err, EngineError::DataSize { got: 8, expected: 12, .. }), "{err}");
    drop(buf);
    assert_eq!(cpu.memory_used(), before);
}

#[test]
fn a_gpu_knows_when_it_last_started_on_work() {
    assert_eq!(open_device(&DeviceName::Cpu).unwrap().take_start(), None);
    let Ok(gpu) = open_device(&DeviceName::Wgpu(None)) else { return };
    gpu.take_start();
    let before = std::time::Instant::now();
    let buf = gpu.alloc(DType::I32, 3).unwrap();
    let bytes: Vec<u8> = [7i32, -1, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
    gpu.copy_in(&buf, &bytes).unwrap();
    // the upload and the readback's copy reach the idle device in one submit
    assert_eq!(gpu.copy_out(&buf).unwrap(), bytes);
    let started = gpu.take_start().expect("a submit to an idle device is noted");
    assert!(before <= started && started <= std::time::Instant::now());
}
