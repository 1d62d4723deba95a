//! The devices tensor tests run on, and the golden harness.

#[allow(dead_code)] // each test binary uses a part of the harness
pub mod golden;
#[allow(dead_code)]
pub mod reference;

use wgrad_engine::device::{DeviceName, available_devices};

/// Every device that opens here. With `CI=true` wgpu must be among them: CI runs the kernels
/// for real (on Mesa lavapipe at least), so a missing adapter fails instead of shrinking the test.
pub fn devices() -> Vec<DeviceName> {
    let devices = available_devices();
    if std::env::var("CI").as_deref() == Ok("true") {
        assert!(
            devices.iter().any(|d| matches!(d, DeviceName::Wgpu(_))),
            "CI=true but the wgpu device does not open (install mesa-vulkan-drivers: cargo xtask setup)"
        );
    }
    devices
}
