//! The command stream: batches handed over while the device is busy go in one submit, a
//! recorded batch goes with the readback that follows, memory reused from the pool is only
//! touched after the work recorded before, and a batch that fails to encode leaves the rest
//! of the stream to run.

use crate::common;

use wgrad_runtime_wgpu::{Device, DeviceKind, MAX_PENDING};

/// Each of [`SPINNERS`] one-thread workgroups mixes a hash `x[0]` times (no compiler folds the
/// loop): tens of milliseconds of device time on a GPU (one long chain a thread) and on
/// llvmpipe (which ends any invocation's loops after 65535 iterations, but has 1024 of them for
/// a few cores).
const SPIN: &str = "
@group(0) @binding(0) var<storage, read_write> y: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<u32>;

@compute @workgroup_size(1)
fn spin(@builtin(workgroup_id) wid: vec3<u32>) {
    var h = y[wid.x];
    for (var i = 0u; i < x[0]; i++) {
        h = (h ^ (h >> 13u)) * 1664525u + 1013904223u;
    }
    y[wid.x] = h;
}
";

/// Workgroups of a spin.
const SPINNERS: u32 = 1024;

/// A batch of one `axpy` over `y` and `x` (256 floats).
fn axpy(device: &Device, y: &wgrad_runtime_wgpu::Buffer, x: &wgrad_runtime_wgpu::Buffer) {
    let pipeline = device.pipeline(common::AXPY, "axpy").unwrap();
    let mut batch = device.batch();
    batch.dispatch(&pipeline, &[y, x], [4, 1, 1]).unwrap();
    device.submit(batch).unwrap();
}

/// Compiles `axpy`, waits for the device, submits a long spin and returns the submit count
/// before it (checking that the idle device got the spin at once).
fn start_spin(device: &Device) -> u64 {
    device.pipeline(common::AXPY, "axpy").unwrap();
    let spin = device.pipeline(SPIN, "spin").unwrap();
    let busy = device.upload(&[0u32; SPINNERS as usize]).unwrap();
    let loops = device.upload(&[10_000_000u32]).unwrap();
    device.sync().unwrap();
    let before = device.submits();
    let mut batch = device.batch();
    batch.dispatch(&spin, &[&busy, &loops], [SPINNERS, 1, 1]).unwrap();
    device.submit(batch).unwrap();
    assert_eq!(device.submits(), before + 1, "an idle device gets its work at once");
    before
}

#[test]
fn batches_handed_over_while_the_device_is_busy_share_a_submit() {
    let Some(device) = common::device() else { return };
    let y = device.upload(&[0.0f32; 256]).unwrap();
    let x = device.upload(&[1.0f32; 256]).unwrap();
    let before = start_spin(&device);
    let steps = MAX_PENDING / 2;
    for _ in 0..steps {
        axpy(&device, &y, &x);
    }
    // y = 2y + 1 from 0, `steps` times, in order
    assert_eq!(device.read_as::<f32>(&y).unwrap()[0], (2f64.powi(steps as i32) - 1.0) as f32);
    // the spin's, one for every four launches at most, and the readback's, where the spin
    // outlasts the loop. llvmpipe's submit behind a running one returns only when that one
    // ends, so there the loop outlasts the spin and a later launch that finds the device idle
    // goes at once, however the threads were scheduled (the exact order while the spin runs
    // is the next test's)
    let submits = device.submits() - before;
    if device.adapter().kind != DeviceKind::Cpu {
        assert!(
            submits <= 2 + steps as u64 / 4,
            "{steps} batches behind a long kernel took {submits} submits"
        );
    }
}

#[test]
fn a_second_submit_is_queued_behind_a_running_one_once_a_few_launches_wait() {
    let Some(device) = common::device() else { return };
    let y = device.upload(&[0.0f32; 256]).unwrap();
    let x = device.upload(&[1.0f32; 256]).unwrap();
    let before = start_spin(&device);
    // while the spin runs three launches wait, and the fourth goes with them, queued behind it,
    // so the device finds work when the spin ends (llvmpipe's submit returns only then)
    let mut submits = vec![];
    for _ in 0..4 {
        axpy(&device, &y, &x);
        submits.push(device.submits() - before);
    }
    assert_eq!(submits, [1, 1, 1, 2]);
    assert_eq!(device.read_as::<f32>(&y).unwrap()[0], (2f64.powi(4) - 1.0) as f32);
}

#[test]
fn a_recorded_batch_goes_with_the_readback_that_follows() {
    let Some(device) = common::device() else { return };
    let axpy = device.pipeline(common::AXPY, "axpy").unwrap();
    let y = device.upload(&[1.0f32; 256]).unwrap();
    let x = device.upload(&[3.0f32; 256]).unwrap();
    device.sync().unwrap();
    let before = device.submits();
    let mut batch = device.batch();
    batch.dispatch(&axpy, &[&y, &x], [4, 1, 1]).unwrap();
    device.record(batch).unwrap();
    assert_eq!(device.submits(), before, "recorded, not submitted");
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [5.0; 256]);
    assert_eq!(device.submits(), before + 1, "the batch and the readback's copy: one submit");
    // flush hands recorded work over without a readback
    let mut batch = device.batch();
    batch.dispatch(&axpy, &[&y, &x], [4, 1, 1]).unwrap();
    device.record(batch).unwrap();
    device.flush().unwrap();
    assert_eq!(device.submits(), before + 2);
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [13.0; 256]);
    // ten recorded batches and the readback's copy share one command buffer (one encoder:
    // a command buffer each cost NVIDIA's driver an allocation through the kernel), and the
    // batches one compute pass (a pass each cost an H200 about 5 us between kernels)
    let (submits, buffers, passes) = (device.submits(), device.command_buffers(), device.compute_passes());
    for _ in 0..10 {
        let mut batch = device.batch();
        batch.dispatch(&axpy, &[&y, &x], [4, 1, 1]).unwrap();
        device.record(batch).unwrap();
    }
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [13.0 * 1024.0 + 3.0 * 1023.0; 256]);
    assert_eq!((device.submits() - submits, device.command_buffers() - buffers), (1, 1));
    assert_eq!(device.compute_passes() - passes, 1);
}

#[test]
fn batches_share_a_compute_pass_until_an_upload_comes_between() {
    let Some(device) = common::device() else { return };
    let axpy = device.pipeline(common::AXPY, "axpy").unwrap();
    let y = device.upload(&[0.0f32; 256]).unwrap();
    let x = device.upload(&[1.0f32; 256]).unwrap();
    device.sync().unwrap();
    let passes = device.compute_passes();
    let record = |y: &wgrad_runtime_wgpu::Buffer, x: &wgrad_runtime_wgpu::Buffer| {
        let mut batch = device.batch();
        batch.dispatch(&axpy, &[y, x], [4, 1, 1]).unwrap();
        device.record(batch).unwrap();
    };
    // y = 2y + x twice, then an upload of a new x, then twice more with it: the upload runs
    // between the two pairs, and each pair is one pass
    record(&y, &x);
    record(&y, &x);
    let x2 = device.upload(&[10.0f32; 256]).unwrap();
    record(&y, &x2);
    record(&y, &x2);
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [(3.0 * 2.0 + 10.0) * 2.0 + 10.0; 256]);
    assert_eq!(device.compute_passes() - passes, 2);
}

#[test]
fn an_idle_devices_uploads_and_launches_are_one_command_buffer() {
    let Some(device) = common::device() else { return };
    let pipeline = device.pipeline(common::AXPY, "axpy").unwrap();
    device.sync().unwrap();
    let (submits, buffers) = (device.submits(), device.command_buffers());
    // staged with no pass open: the copies go into the open encoder, which the idle device's
    // batch then takes (submitted on this thread, once the belt's chunks are unmapped)
    let y = device.upload(&[1.0f32; 256]).unwrap();
    let x = device.upload(&[3.0f32; 256]).unwrap();
    axpy(&device, &y, &x);
    assert_eq!((device.submits() - submits, device.command_buffers() - buffers), (1, 1));
    // a pass is open now: an upload goes after it, and the next batch reads the new values
    let mut batch = device.batch();
    batch.dispatch(&pipeline, &[&y, &x], [4, 1, 1]).unwrap();
    device.record(batch).unwrap();
    let x2 = device.upload(&[10.0f32; 256]).unwrap();
    let mut batch = device.batch();
    batch.dispatch(&pipeline, &[&y, &x2], [4, 1, 1]).unwrap();
    device.record(batch).unwrap();
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [((2.0 + 3.0) * 2.0 + 3.0) * 2.0 + 10.0; 256]);
}

#[test]
fn the_device_notes_when_an_idle_device_gets_work() {
    let Some(device) = common::device() else { return };
    let y = device.upload(&[0.0f32; 256]).unwrap();
    let x = device.upload(&[1.0f32; 256]).unwrap();
    device.sync().unwrap();
    device.take_start();
    let before = std::time::Instant::now();
    axpy(&device, &y, &x);
    // (a flush first waits for what the submit thread took)
    device.flush().unwrap();
    let started = device.take_start().expect("a submit to an idle device is noted");
    assert!(before <= started && started <= std::time::Instant::now());
    assert_eq!(device.take_start(), None, "taken");
    // the spin starts the idle device; the launch behind it is no start on a GPU (llvmpipe's
    // submit behind a running one returns only when that one ends: the device was idle by
    // then), and the first start is the one kept
    start_spin(&device);
    device.flush().unwrap();
    axpy(&device, &y, &x);
    device.flush().unwrap();
    let spin = device.take_start().expect("the spin reached an idle device");
    assert!(spin > started);
    if device.adapter().kind != DeviceKind::Cpu {
        assert_eq!(device.take_start(), None, "the launch behind the spin is no start");
    }
    device.sync().unwrap();
}

#[test]
fn memory_reused_from_the_pool_keeps_its_contents_for_the_work_recorded_before() {
    let Some(device) = common::device() else { return };
    let axpy = device.pipeline(common::AXPY, "axpy").unwrap();
    let (y, z) = (device.upload(&[0.0f32; 256]).unwrap(), device.upload(&[0.0f32; 256]).unwrap());
    let x = device.upload(&[1.0f32; 256]).unwrap();
    let mut batch = device.batch();
    batch.dispatch(&axpy, &[&y, &x], [4, 1, 1]).unwrap();
    device.record(batch).unwrap();
    let memory = x.raw().clone();
    drop(x);
    // the pool hands x's memory out again, and new contents are staged into it
    let x2 = device.upload(&[5.0f32; 256]).unwrap();
    assert!(x2.raw() == &memory, "the test needs the pool to reuse the memory");
    let mut batch = device.batch();
    batch.dispatch(&axpy, &[&z, &x2], [4, 1, 1]).unwrap();
    device.record(batch).unwrap();
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [1.0; 256], "the first batch read the old contents");
    assert_eq!(device.read_as::<f32>(&z).unwrap(), [5.0; 256]);
}

#[test]
fn a_batch_that_fails_to_encode_leaves_the_stream_to_run() {
    let Some(device) = common::device() else { return };
    let axpy = device.pipeline(common::AXPY, "axpy").unwrap();
    let y = device.upload(&[0.0f32; 256]).unwrap();
    let x = device.upload(&[2.0f32; 256]).unwrap();
    let mut good = device.batch();
    good.dispatch(&axpy, &[&y, &x], [4, 1, 1]).unwrap();
    device.record(good).unwrap();
    let mut bad = device.batch();
    bad.dispatch(&axpy, &[&y], [4, 1, 1]).unwrap(); // a binding short
    assert!(device.record(bad).is_err());
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [2.0; 256]);
}

#[test]
fn an_error_in_work_handed_to_the_submit_thread_is_reported_by_a_later_call() {
    let Some(device) = common::device() else { return };
    let axpy_pipeline = device.pipeline(common::AXPY, "axpy").unwrap();
    let y = device.upload(&[0.0f32; 256]).unwrap();
    let x = device.upload(&[1.0f32; 256]).unwrap();
    let doomed = device.upload(&[0.0f32; 256]).unwrap();
    device.sync().unwrap();
    let mut batch = device.batch();
    batch.dispatch(&axpy_pipeline, &[&doomed, &x], [4, 1, 1]).unwrap();
    device.record(batch).unwrap();
    doomed.raw().destroy();
    // the device is idle and the stream holds launches alone: the submit thread takes them
    let submits = device.submits();
    axpy(&device, &y, &x);
    assert_eq!(device.submits(), submits + 1);
    // the thread's submit failed, or the sync took the encoder back before the thread
    // started on it and its own submit failed
    device.sync().expect_err("a destroyed buffer in a submit is an error");
    // nothing of the failed submit ran, and the device goes on
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [0.0; 256]);
    axpy(&device, &y, &x);
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [1.0; 256]);
}
