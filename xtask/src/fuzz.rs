//! `cargo xtask fuzz [--graphs N] [--seed S] [--max-ops M] [--workers W] [--show]`: the graph
//! fuzzer (`wgrad-conformance`'s `fuzz_graphs`) as a release build: random Tensor programs on
//! wgpu against the CPU interpreter, forward and backward, each failure minimized and printed as
//! a Rust reproducer, then one summary line. `--seed S --graphs 1` runs program seed S alone;
//! `--show` prints every program with its verdict.

/// Runs the fuzzer with `args`; false when it found a failure (or could not run).
pub fn run(args: &[String]) -> bool {
    let mut cmd = crate::cargo();
    cmd.args(["run", "--release", "-p", "wgrad-conformance", "--bin", "fuzz_graphs", "--"]).args(args);
    cmd.status().is_ok_and(|s| s.success())
}
