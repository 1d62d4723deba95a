//! `cargo xtask bench [args]`: the benchmarks that report GB/s, TFLOP/s and microseconds, as
//! release builds, then the same Tensor-level workloads in PyTorch (`bench/torch_bench.py`)
//! when `python3` imports torch, so both run on one machine in one call. Extra arguments go
//! to the generated-kernel benchmark (sizes, `--search`) and the Tensor-level one (`--quick`,
//! `--kernels`, `--bandwidth GB/s --tflops TFLOP/s`); `--quick` also to the PyTorch script.

/// The benchmark targets, in the order they run: (package, bench name).
const BENCHES: [(&str, &str); 4] = [
    ("wgrad-tensor", "workloads"),
    ("wgrad-runtime-wgpu", "kernels"),
    ("wgrad-ops", "symbolic"),
    ("wgrad-tensor", "jit"),
];

/// The Tensor-level benchmark's flags, and those of them that take a value.
const WORKLOAD_FLAGS: [&str; 4] = ["--quick", "--kernels", "--bandwidth", "--tflops"];
const WITH_VALUE: [&str; 2] = ["--bandwidth", "--tflops"];

/// `args` split into the Tensor-level benchmark's and the generated-kernel benchmark's.
fn split(args: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut workloads, mut kernels) = (vec![], vec![]);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if !WORKLOAD_FLAGS.contains(&a.as_str()) {
            kernels.push(a.clone());
            continue;
        }
        workloads.push(a.clone());
        if WITH_VALUE.contains(&a.as_str()) {
            workloads.extend(it.next().cloned());
        }
    }
    (workloads, kernels)
}

/// Runs every benchmark; false when one fails.
pub fn run(args: &[String]) -> bool {
    let (workloads, kernels) = split(args);
    let ours = BENCHES.iter().all(|&(package, bench)| {
        println!("== {package} --bench {bench}");
        let mut cmd = crate::cargo();
        cmd.args(["bench", "-p", package, "--bench", bench]);
        let extra = match bench {
            "workloads" => &workloads,
            "kernels" => &kernels,
            _ => &vec![],
        };
        if !extra.is_empty() {
            cmd.arg("--").args(extra);
        }
        cmd.status().is_ok_and(|s| s.success())
    });
    ours && torch(&workloads)
}

/// Runs `bench/torch_bench.py` when torch imports; true when it passes or is skipped.
fn torch(args: &[String]) -> bool {
    let python = || std::process::Command::new("python3");
    let has_torch = python().args(["-c", "import torch"]).output().is_ok_and(|o| o.status.success());
    if !has_torch {
        println!("== PyTorch: skipped (python3 cannot import torch)");
        return true;
    }
    println!("== PyTorch: bench/torch_bench.py");
    let mut cmd = python();
    cmd.current_dir(crate::workspace_root()).arg("bench/torch_bench.py");
    cmd.args(args.iter().filter(|a| *a == "--quick"));
    cmd.status().is_ok_and(|s| s.success())
}
