//! `cargo xtask setup`: installs what the tests need on a fresh Debian machine: Mesa's
//! lavapipe (software Vulkan, package `mesa-vulkan-drivers`) and the Vulkan loader, so the
//! wgpu tests run real kernels without a GPU. Skipped when already present.

use std::path::Path;
use std::process::Command;

const PACKAGES: [&str; 2] = ["mesa-vulkan-drivers", "libvulkan1"];

fn lavapipe_present() -> bool {
    let icd_dirs = ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"];
    let has_icd = icd_dirs.iter().any(|d| {
        std::fs::read_dir(d)
            .is_ok_and(|it| it.flatten().any(|e| e.file_name().to_string_lossy().starts_with("lvp")))
    });
    let has_loader =
        ["/usr/lib/x86_64-linux-gnu/libvulkan.so.1", "/usr/lib/aarch64-linux-gnu/libvulkan.so.1"]
            .iter()
            .any(|p| Path::new(p).exists());
    has_icd && has_loader
}

fn sh(args: &[&str]) -> bool {
    let (prog, rest) = args.split_first().expect("a command");
    Command::new(prog).args(rest).env("DEBIAN_FRONTEND", "noninteractive").status().is_ok_and(|s| s.success())
}

/// Installs the packages if missing. Returns false only when an install was tried and failed.
pub fn run() -> bool {
    if lavapipe_present() {
        println!("setup: lavapipe (software Vulkan) present");
        return true;
    }
    if !Path::new("/usr/bin/apt-get").exists() {
        println!("setup: no apt-get here; install Mesa's lavapipe Vulkan driver by hand to run wgpu tests");
        return true;
    }
    let sudo: &[&str] = if Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0")) {
        &[]
    } else {
        &["sudo"]
    };
    println!("setup: installing {}", PACKAGES.join(" "));
    let update = [sudo, &["apt-get", "update", "-qq"]].concat();
    let install = [sudo, &["apt-get", "install", "-y", "-qq", "--no-install-recommends"], &PACKAGES].concat();
    let ok = sh(&update) && sh(&install) && lavapipe_present();
    println!("setup: {}", if ok { "lavapipe installed" } else { "install FAILED" });
    ok
}
