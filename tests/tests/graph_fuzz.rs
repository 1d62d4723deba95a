//! The graph fuzzer in CI: 200 random Tensor programs under a fixed seed on wgpu against the
//! interpreter, forward and backward, and the minimized reproducers of every bug it found, as
//! regression tests. `cargo xtask fuzz --graphs 10000` is the long run.

use wgrad_conformance::graph_fuzz::{Config, Op, Program, assert_agree, fuzz};
use wgrad_conformance::wgpu_device;
use wgrad_tensor::DType;

#[test]
fn two_hundred_random_programs_agree() {
    if wgpu_device().is_none() {
        return;
    }
    let config = Config { graphs: 200, seed: 0xC1, max_ops: 8, workers: 2 };
    let summary = fuzz(&config, &|_| {});
    let found: Vec<String> =
        summary.found.iter().map(|f| format!("// seed {}: {:?}\n{}", f.seed, f.verdict, f.program)).collect();
    assert!(summary.found.is_empty(), "{summary}\n{}", found.join("\n"));
    eprintln!("{summary}");
}

/// The gradient of a padded input seen through an expand: the kernel summing the gradient
/// over the expanded axis wrote past the end of its 5-element output.
#[test]
fn fuzz_pad_then_expand_gradient() {
    if wgpu_device().is_none() {
        return;
    }
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![5], dtype: DType::F32, seed: 270649009018705, grad: true }, // v0
            Op::Pad(0, vec![(0, 2)]),                                                           // v1
            Op::Expand(1, vec![3, 7]),                                                          // v2
        ],
    };
    assert_agree(&program);
}
