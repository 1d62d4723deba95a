//! Uploads and readbacks: subranges, unaligned ranges, bounds.

use crate::common;

use wgrad_runtime_wgpu::RuntimeError;

#[test]
fn subranges_read_back_exactly() {
    let Some(device) = common::device() else { return };
    let bytes: Vec<u8> = (0..=255).collect();
    let buffer = device.upload(&bytes).unwrap();
    assert_eq!(device.read(&buffer).unwrap(), bytes);
    assert_eq!(device.read_range(&buffer, 64..128).unwrap(), &bytes[64..128]);
    assert_eq!(device.read_range(&buffer, 7..13).unwrap(), &bytes[7..13]);
    assert_eq!(device.read_range(&buffer, 255..256).unwrap(), &bytes[255..]);
    assert!(device.read_range(&buffer, 9..9).unwrap().is_empty());
}

#[test]
fn odd_sized_uploads_keep_their_size() {
    let Some(device) = common::device() else { return };
    let buffer = device.upload(&[1u8, 2, 3, 4, 5]).unwrap();
    assert_eq!(buffer.size(), 5);
    assert_eq!(device.read(&buffer).unwrap(), [1, 2, 3, 4, 5]);
}

#[test]
fn writes_at_offsets_and_bad_ranges() {
    let Some(device) = common::device() else { return };
    let buffer = device.upload(&[0u32; 8]).unwrap();
    device.write(&buffer, 8, bytemuck::cast_slice(&[7u32, 9])).unwrap();
    assert_eq!(device.read_as::<u32>(&buffer).unwrap(), [0, 0, 7, 9, 0, 0, 0, 0]);

    let bad_read = device.read_range(&buffer, 16..33);
    assert!(matches!(bad_read, Err(RuntimeError::BadRange { op: "read", .. })));
    let misaligned = device.write(&buffer, 2, &[1, 2, 3, 4]);
    assert!(matches!(misaligned, Err(RuntimeError::BadRange { op: "write", .. })));
    let past_end = device.write(&buffer, 32, &[1, 2, 3, 4]);
    assert!(matches!(past_end, Err(RuntimeError::BadRange { .. })));
}

/// Doubles `x` in place.
const DOUBLE: &str = "
@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@compute @workgroup_size(64)
fn double(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&x)) { x[gid.x] = x[gid.x] * 2u; }
}";

#[test]
fn waits_spin_then_block_and_readbacks_from_two_threads_agree() {
    let Some(device) = common::device() else { return };
    // a CPU adapter blocks at once (its work runs on the host's cores); GPUs spin first
    let cpu = device.adapter().kind == wgrad_runtime_wgpu::DeviceKind::Cpu;
    assert_eq!(device.spin_wait().is_zero(), cpu);
    let double = device.pipeline(DOUBLE, "double").unwrap();
    // no spin, a spin shorter than the work and one longer: each thread's readbacks see its
    // own kernels, whichever thread's poll runs their map callbacks
    for spin in [0, 20, 50_000] {
        device.set_spin_wait(std::time::Duration::from_micros(spin));
        std::thread::scope(|s| {
            for t in 0..2u32 {
                let (device, double) = (&device, &double);
                s.spawn(move || {
                    for i in 0..100u32 {
                        let x = device.upload(&vec![t * 1000 + i; 4096]).unwrap();
                        let mut batch = device.batch();
                        batch.dispatch(double, &[&x], [64, 1, 1]).unwrap();
                        device.submit(batch).unwrap();
                        assert_eq!(device.read_as::<u32>(&x).unwrap(), vec![2 * (t * 1000 + i); 4096]);
                    }
                });
            }
        });
        device.sync().unwrap();
    }
}
