//! Random kernel ASTs compiled for the wgpu device's own target (no opts, the heuristics and a
//! random accepted opt sequence), the vectorizer's cases and the shapes the heuristics plan for,
//! rendered to WGSL and run on wgpu (Mesa lavapipe in CI), give the CPU interpreter's results on
//! the same `Program`: integers bit for bit, floats within tinygrad's tolerance.
//! `WGRAD_GPU_DIFF_CASES` sets the number of random cases (300).

use wgrad_codegen::{OptMode, Program, Target, compile};
use wgrad_conformance::one_hot::one_hot_cases;
use wgrad_conformance::random_ast::Case;
use wgrad_conformance::shapes::{tuned_cases, tuned_targets};
use wgrad_conformance::vectors::{vector_accesses, vector_cases};
use wgrad_conformance::{Rng, close, wgpu_device};
use wgrad_dtype::ConstValue;
use wgrad_runtime_cpu::{CpuBuffer, run};
use wgrad_runtime_wgpu::Device;

/// Runs `program` on both runtimes and compares every output slot.
fn check(device: &Device, case: &Case, program: &Program, inputs: &[Vec<ConstValue>], label: &str) {
    let host = case.cpu_buffers(inputs);
    let gpu: Vec<_> = host
        .iter()
        .map(|b| {
            let buf = device.alloc_elements(b.dtype(), b.len()).expect("alloc");
            // writes come in 4-byte words: an odd count of 8- or 16-bit elements is padded
            let mut bytes = b.to_bytes();
            bytes.resize(bytes.len().next_multiple_of(4), 0);
            device.write(&buf, 0, &bytes).expect("upload");
            buf
        })
        .collect();
    let mut cpu = host;
    run(program, &mut cpu, &[]).unwrap_or_else(|e| panic!("{label}: interpreter failed: {e}"));
    let kernel =
        device.compile(program).unwrap_or_else(|e| panic!("{label}: compile failed: {e}\n{program}"));
    let mut batch = device.batch();
    device.launch(&mut batch, &kernel, &gpu.iter().collect::<Vec<_>>(), &[]).expect("launch");
    device.submit(batch).expect("submit");
    for slot in 0..case.outputs {
        let want = cpu[slot].to_values();
        let bytes = device.read(&gpu[slot]).expect("readback");
        let (dt, n) = case.buffers[slot];
        let got = CpuBuffer::from_bytes(dt, &bytes[..n * dt.itemsize()]).to_values();
        let bad = got.iter().zip(&want).position(|(&g, &w)| !close(g, w));
        assert!(
            bad.is_none(),
            "{label}: slot {slot} differs at {bad:?}: got {got:?}, want {want:?}\n{program}\n{}",
            kernel.source()
        );
    }
}

#[test]
fn random_kernels_on_wgpu_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    let target = device.target();
    let cases = std::env::var("WGRAD_GPU_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(300u64);
    let mut vectorized = 0;
    for seed in 0..cases {
        let mut r = Rng(seed);
        let case = Case::random(&mut r);
        let inputs = case.inputs(&mut r);
        let random = case.random_opts(&mut r, &target);
        for mode in [OptMode::NoOpt, OptMode::Heuristic, random] {
            let label = format!("seed {seed} {mode:?}");
            let (_, program) = compile(&case.ast, &target, &mode, "k")
                .unwrap_or_else(|e| panic!("{label}: codegen failed: {e}"));
            check(&device, &case, &program, &inputs, &label);
            vectorized += usize::from(vector_accesses(&program) > 0);
        }
    }
    assert!(
        vectorized as u64 * 10 >= cases,
        "only {vectorized} of {} programs made vector accesses",
        3 * cases
    );
}

#[test]
fn vector_cases_on_wgpu_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    // the device's widths, and triples (WGSL's vec3 arrays have another stride: put together)
    let targets = [device.target(), Target { vector_widths: vec![1, 3], ..device.target() }];
    for (name, case, opts) in vector_cases() {
        let inputs = case.inputs(&mut Rng(11));
        for target in &targets {
            let label = format!("{name} widths {:?}", target.vector_widths);
            let (_, program) = compile(&case.ast, target, &OptMode::Given(opts.clone()), "k")
                .unwrap_or_else(|e| panic!("{label}: codegen failed: {e}"));
            check(&device, &case, &program, &inputs, &label);
        }
    }
}

#[test]
fn tuned_shapes_on_wgpu_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    for (name, case) in tuned_cases() {
        let inputs = case.inputs(&mut Rng(7));
        for target in tuned_targets(&device.target()) {
            let label = format!("{name} wanting {} threads", target.parallelism);
            let (_, program) = compile(&case.ast, &target, &OptMode::Heuristic, "k")
                .unwrap_or_else(|e| panic!("{label}: codegen failed: {e}"));
            check(&device, &case, &program, &inputs, &label);
        }
    }
}

#[test]
fn one_hot_reduces_on_wgpu_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    for one_hot in one_hot_cases() {
        let inputs = one_hot.inputs(&mut Rng(5));
        let (_, program) = compile(&one_hot.case.ast, &device.target(), &OptMode::Heuristic, "k")
            .unwrap_or_else(|e| panic!("{}: codegen failed: {e}", one_hot.name));
        check(&device, &one_hot.case, &program, &inputs, one_hot.name);
    }
}
