//! Random kernel ASTs compiled for the wgpu device's own target (no opts, the heuristics and a
//! random accepted opt sequence), the vectorizer's cases and the shapes the heuristics plan for,
//! rendered to WGSL and run on wgpu (Mesa lavapipe in CI), give the CPU interpreter's results on
//! the same `Program`: integers bit for bit, floats within tinygrad's tolerance.
//! Also grouped reduces whose partials meet in subgroups, over NaN, infinities and signed zeros.
//! `WGRAD_GPU_DIFF_CASES` sets the number of random cases (300).

use wgrad_codegen::{Opt, OptMode, OptOps, Program, Target, compile};
use wgrad_conformance::one_hot::one_hot_cases;
use wgrad_conformance::random_ast::Case;
use wgrad_conformance::shapes::{nested_tuned_cases, tuned_cases, tuned_targets};
use wgrad_conformance::vectors::{vector_accesses, vector_cases};
use wgrad_conformance::{Rng, close, wgpu_device};
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Ops, UOp};
use wgrad_runtime_cpu::{CpuBuffer, run};
use wgrad_runtime_wgpu::Device;
use wgrad_shape::{ShapeTracker, Sint};

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
    for (name, case) in tuned_cases().into_iter().chain(nested_tuned_cases()) {
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

/// A reduce of `op` over rows of `cols` `dtype` values, into one value a row.
fn row_reduce(op: Ops, dtype: DType, rows: usize, cols: usize) -> Case {
    let shape = |cols: usize| {
        ShapeTracker::from_shape(&[Sint::from(rows as i64), Sint::from(cols as i64)]).expect("a shape")
    };
    let x = UOp::load(dtype, [UOp::define_global(dtype, 1), UOp::view(shape(cols))]);
    let store = UOp::store([UOp::define_global(dtype, 0), UOp::view(shape(1)), x.reduce_axis(op, &[1])]);
    Case { ast: UOp::sink([store]), buffers: vec![(dtype, rows), (dtype, rows * cols)], outputs: 1 }
}

#[test]
fn grouped_reduces_through_subgroups_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    let target = device.target();
    // rows: a NaN among -inf, signed zeros, negatives only, a NaN last, -inf only, a ramp
    let row = |r: usize, c: usize| -> f64 {
        match r {
            0 if c == 517 => f64::NAN,
            0 | 4 => f64::NEG_INFINITY,
            1 => {
                if c.is_multiple_of(2) {
                    -0.0
                } else {
                    0.0
                }
            }
            2 => -1.0 - c as f64,
            3 if c == 1023 => f64::NAN,
            _ => (c as f64 * 0.37).sin() * 1e3,
        }
    };
    let floats: Vec<ConstValue> = (0..6 * 1024).map(|i| ConstValue::Float(row(i / 1024, i % 1024))).collect();
    let ints: Vec<ConstValue> =
        (0..6 * 1024).map(|i| ConstValue::Int((i as i64 * 7919) % 2001 - 1000)).collect();
    let opts = vec![Opt::new(OptOps::Unroll, 0, 4), Opt::new(OptOps::Group, 0, 64)];
    for (op, dtype, values) in [
        (Ops::Max, DType::F32, &floats),
        (Ops::Add, DType::F32, &floats),
        (Ops::Max, DType::I32, &ints),
        (Ops::Add, DType::I32, &ints),
    ] {
        let case = row_reduce(op, dtype, 6, 1024);
        let inputs = vec![vec![], values.clone()];
        for mode in [OptMode::Given(opts.clone()), OptMode::Heuristic] {
            let label = format!("{op:?} over {dtype} rows ({mode:?})");
            let (_, program) = compile(&case.ast, &target, &mode, "k")
                .unwrap_or_else(|e| panic!("{label}: codegen failed: {e}"));
            let subgroups = program.uops.iter().any(|u| u.op() == Ops::SubgroupReduce);
            assert!(subgroups || !target.subgroup_ops, "{label}: no subgroup reduce\n{program}");
            check(&device, &case, &program, &inputs, &label);
        }
    }
    // groups of 125 (no whole number of subgroups: the partials stay per invocation) and 200
    let case = row_reduce(Ops::Add, DType::F32, 3, 1000);
    let inputs = vec![vec![], (0..3000).map(|i| ConstValue::Float(f64::from(i % 1000))).collect()];
    for group in [125, 200] {
        let opts = OptMode::Given(vec![Opt::new(OptOps::Group, 0, group)]);
        let (_, program) = compile(&case.ast, &target, &opts, "k").expect("compiles");
        let subgroups = program.uops.iter().any(|u| u.op() == Ops::SubgroupReduce);
        let whole = target.subgroup_size.is_some_and(|s| group % s == 0);
        assert_eq!(subgroups, target.subgroup_ops && whole, "groups of {group}\n{program}");
        check(&device, &case, &program, &inputs, &format!("sum of 1000 in groups of {group}"));
    }
}
