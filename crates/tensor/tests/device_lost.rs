//! A lost device (simulated with `Backend::destroy`, wgpu's `Device::destroy`) turns every
//! later operation into a typed `DeviceLost` error: no hang, no panic. One test in a binary of
//! its own, since the devices stay lost for the rest of the process.

mod common;

use wgrad_engine::EngineError;
use wgrad_engine::device::open_device;
use wgrad_tensor::{Tensor, TensorError, with_default_device};

fn is_lost<T: std::fmt::Debug>(r: Result<T, TensorError>) -> bool {
    matches!(r, Err(TensorError::Engine(EngineError::DeviceLost { .. })))
}

#[test]
fn every_operation_after_a_loss_is_device_lost() {
    for device in common::devices() {
        with_default_device(&device, || {
            let kept = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
            let pending = (&kept * 2.0).sum(&[], false).unwrap();
            assert_eq!((&kept + 1.0).to_vec::<f32>().unwrap(), [2.0, 3.0, 4.0]);
            open_device(&device).unwrap().destroy();
            let uploaded = Tensor::from_slice(&[1.0f32; 4], &[4]);
            assert!(is_lost(uploaded.map(|_| ())), "an upload");
            assert!(is_lost(kept.to_vec::<f32>()), "readback of a realized tensor");
            assert!(is_lost(pending.item::<f32>()), "a kernel compiled before the loss");
            let fresh = (&kept - 5.0).exp().max(&[0], false).unwrap();
            let err = fresh.realize().map(|_| ()).unwrap_err();
            assert!(matches!(err, TensorError::Engine(EngineError::DeviceLost { .. })), "{err:?}");
            assert!(err.to_string().contains("was lost"), "{err}");
            let zeros = Tensor::zeros(&[8], wgrad_tensor::DType::F32).unwrap().contiguous();
            assert!(is_lost(zeros.realize().map(|_| ())), "an allocation");
        });
    }
}
