//! What a loop reuses: bind groups cached by (pipeline, buffers), prepared launches, pooled
//! buffers and staging-belt uploads, so steady-state steps create no device objects; uploads
//! of every size land in order before the work submitted after them.

use crate::common;

use wgrad_runtime_wgpu::Device;

/// (buffers created, bind groups created).
fn made(device: &Device) -> (u64, u64) {
    (device.memory().created, device.bind_groups_created())
}

#[test]
fn a_loop_creates_buffers_and_bind_groups_only_in_its_first_step() {
    let Some(device) = common::device() else { return };
    let axpy = device.pipeline(common::AXPY, "axpy").unwrap();
    let y = device.upload(&[0.0f32; 256]).unwrap();
    let (mut after_first, mut held) = ((0, 0), (0, 0, 0));
    for step in 0..100 {
        // a fresh input each step, freed at the end of it: the pool hands the memory back
        let x = device.upload(&[1.0f32; 256]).unwrap();
        let scratch = device.alloc(1024).unwrap();
        let mut batch = device.batch();
        batch.dispatch(&axpy, &[&y, &x], [4, 1, 1]).unwrap();
        batch.dispatch(&axpy, &[&scratch, &x], [4, 1, 1]).unwrap();
        device.submit(batch).unwrap();
        if step == 0 {
            after_first = made(&device);
            held = (device.live_buffers(), device.bind_groups_cached(), device.pipeline_count());
        }
    }
    assert_eq!(made(&device), after_first, "steps after the first create nothing");
    assert_eq!(after_first.1, 2, "one bind group per distinct (pipeline, buffers)");
    let now = (device.live_buffers(), device.bind_groups_cached(), device.pipeline_count());
    assert_eq!(now, held, "and hold as many buffers, bind groups and pipelines");
    assert!(held.0 >= 3 && held.1 == 2 && held.2 == 1, "{held:?}");
    // y = 2y + 1, 100 times from 0: 2^100 - 1 rounds to 2^100 in f32
    assert_eq!(device.read_as::<f32>(&y).unwrap()[0], 2f32.powi(100));
    device.trim_pool();
    assert_eq!(device.memory().pooled, 0);
    assert_eq!(device.bind_groups_cached(), 0);
    assert_eq!(device.live_buffers(), 1, "y alone is left (the rest were pooled, and freed)");
}

#[test]
fn uploads_of_every_size_land_in_order_before_later_work() {
    let Some(device) = common::device() else { return };
    let small = 1024usize;
    let big = (17 << 20) / 4; // over the staging belt's largest write
    let a = device.alloc(4 * big as u64).unwrap();
    device.write(&a, 0, bytemuck::cast_slice(&vec![1.0f32; big])).unwrap();
    device.write(&a, 0, bytemuck::cast_slice(&vec![2.0f32; small])).unwrap();
    device.write(&a, 4, bytemuck::cast_slice(&[3.0f32])).unwrap();
    let got = device.read_as::<f32>(&a).unwrap();
    assert_eq!((got[0], got[1], got[2], got[small], got[big - 1]), (2.0, 3.0, 2.0, 1.0, 1.0));
    // a small write after a big one, then a batch reading it: the batch sees both
    device.write(&a, 0, bytemuck::cast_slice(&vec![5.0f32; big])).unwrap();
    device.write(&a, 0, bytemuck::cast_slice(&[7.0f32])).unwrap();
    let y = device.upload(&[0.0f32; 2]).unwrap();
    let axpy = device.pipeline(common::AXPY, "axpy").unwrap();
    let mut batch = device.batch();
    batch.dispatch(&axpy, &[&y, &a], [1, 1, 1]).unwrap();
    device.submit(batch).unwrap();
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [7.0, 5.0]);
}
