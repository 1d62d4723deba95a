//! Project tasks: `cargo xtask test-all | bench | fuzz | lines | layering | setup [--models]`.

#![allow(clippy::print_stdout)]

mod bench;
mod fuzz;
mod layering;
mod lines;
mod models;
mod setup;
mod test_all;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  test-all   set up, check formatting, clippy (warnings denied), layering, run every test
  bench      benchmarks (release): Tensor-level workloads (wall and kernel time, roofline),
             generated kernels' GB/s, TFLOP/s, round trip; symbolic;
             host overhead and TinyJit; PyTorch when it imports
  fuzz       graph fuzzer (release): random Tensor programs, wgpu vs the CPU interpreter
             [--graphs N] [--seed S] [--max-ops M] [--workers W]
  lines      lines of library Rust per crate (no tests, comments or blank lines)
  layering   check that no wgrad crate depends on a crate above it
  setup      install what the tests need (the lavapipe software Vulkan driver);
             with --models also fetch all-MiniLM-L6-v2 into the user's cache directory";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ok = match args.first().map(String::as_str) {
        Some("test-all") => test_all::run(),
        Some("bench") => bench::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("lines") => lines::run(),
        Some("layering") => layering::run(),
        Some("setup") => match &args[1..] {
            [] => setup::run(),
            [flag] if flag == "--models" => setup::run() & models::run(),
            _ => {
                eprintln!("{USAGE}");
                false
            }
        },
        _ => {
            eprintln!("{USAGE}");
            false
        }
    };
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The workspace root (the parent of this crate's directory). `cargo run` sets
/// `CARGO_MANIFEST_DIR` at run time too; preferring it keeps a binary built in another checkout
/// that shares the target dir pointed at this one.
fn workspace_root() -> std::path::PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")), std::path::PathBuf::from);
    manifest_dir.parent().expect("xtask lives in the workspace").to_path_buf()
}

/// A `cargo` command run from the workspace root.
fn cargo() -> std::process::Command {
    let mut cmd = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace_root());
    cmd
}
