//! Shared by the MiniLM tests: where the model is, and the reference files.
#![allow(dead_code)] // each test binary uses a part of these helpers

use std::path::PathBuf;

use serde_json::Value;

/// The all-MiniLM-L6-v2 directory (`WGRAD_MINILM_DIR`, else `cargo xtask setup --models`'s
/// place), or `None` with a printed note when it is not there. With `CI=true` a missing model
/// fails the test: CI fetches it, so its absence is a broken setup, never a reason to skip.
pub fn model_dir() -> Option<PathBuf> {
    let dir =
        std::env::var_os("WGRAD_MINILM_DIR").map(PathBuf::from).or_else(wgrad_models::default_model_dir);
    if let Some(dir) = dir.filter(|d| d.join("model.safetensors").is_file()) {
        return Some(dir);
    }
    let note =
        "all-MiniLM-L6-v2 is not downloaded: run `cargo xtask setup --models` (or set WGRAD_MINILM_DIR)";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and {note}");
    eprintln!("skipped: {note}");
    None
}

/// `tests/fixtures/minilm/<name>`, parsed.
pub fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilm").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The 16 test sentences.
pub fn sentences() -> Vec<String> {
    serde_json::from_value(fixture("sentences.json")).expect("a list of strings")
}

/// Whether the model tests can run fast enough here: on wgpu (lavapipe at least). The CPU
/// interpreter would take many minutes for a BERT forward, so without wgpu they are skipped
/// with a note, except under `CI=true`, where wgpu must open.
pub fn on_wgpu() -> bool {
    let wgpu = matches!(wgrad_tensor::Tensor::default_device(), Ok(wgrad_tensor::DeviceName::Wgpu(_)));
    assert!(
        wgpu || std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but the default device is not wgpu"
    );
    if !wgpu {
        eprintln!("skipped: no wgpu device (install mesa-vulkan-drivers: cargo xtask setup)");
    }
    wgpu
}
