//! Uploads and readbacks: subranges, unaligned ranges, bounds.

mod common;

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
