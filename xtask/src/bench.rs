//! `cargo xtask bench [args]`: the benchmarks that report GB/s, TFLOP/s and microseconds, as
//! release builds. Extra arguments go to the generated-kernel benchmark (sizes, `--search`).

/// The benchmark targets, in the order they run: (package, bench name).
const BENCHES: [(&str, &str); 2] = [("wgrad-runtime-wgpu", "kernels"), ("wgrad-ops", "symbolic")];

/// Runs every benchmark; false when one fails.
pub fn run(args: &[String]) -> bool {
    BENCHES.iter().all(|&(package, bench)| {
        println!("== {package} --bench {bench}");
        let mut cmd = crate::cargo();
        cmd.args(["bench", "-p", package, "--bench", bench]);
        if bench == "kernels" && !args.is_empty() {
            cmd.arg("--").args(args);
        }
        cmd.status().is_ok_and(|s| s.success())
    })
}
