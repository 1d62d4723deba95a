//! The graph fuzzer in CI: 200 random Tensor programs under a fixed seed on wgpu against the
//! interpreter, forward and backward, and the minimized reproducers of every bug it found, as
//! regression tests. `cargo xtask fuzz --graphs 10000` is the long run.

use wgrad_conformance::graph_fuzz::{
    Binary, Config, GPU, Idx, Op, Outcome, Program, Reduce, Run, Unary, Verdict, assert_agree, compare, fuzz,
    run, run_with_noise, verdict,
};
use wgrad_conformance::wgpu_device;
use wgrad_tensor::{DType, DeviceName};

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

/// Seed 885 (lavapipe and the H200): the gradient of `sqrt(|x - x|)` is NaN, as in PyTorch
/// (sqrt's gradient at 0 is inf, abs's is sign(0) = 0, and inf * 0 is NaN). wgpu gave 0: the
/// device compiler folded the gradient's `g + g * -1` to 0, which WGSL lets it do by assuming
/// values are finite; the renderer now computes `x - x` from the exponent bits.
#[test]
fn fuzz_gradient_of_sqrt_abs_of_x_minus_x_is_nan() {
    if wgpu_device().is_none() {
        return;
    }
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![5], dtype: DType::F32, seed: 3271443634955, grad: true }, // v0
            Op::Binary(Binary::Sub, 0, 0),                                                    // v1
            Op::Unary(Unary::SqrtAbs, 1),                                                     // v2
        ],
    };
    assert_agree(&program);
    let Run::Done(gpu) = run(&program, &GPU) else { panic!("the program runs") };
    assert!(gpu.grads[0].iter().all(|g| g.is_nan()), "{:?}", gpu.grads);
}

/// Seed 11010 (`--seed 11`, lavapipe and the H200): the gradient of `sqrt(|max(x, x - x)|)` at
/// a negative `x` is NaN (sqrt's gradient at 0 times abs's sign(0)), as in PyTorch.
#[test]
fn fuzz_gradient_of_sqrt_abs_of_max_with_zero_is_nan() {
    if wgpu_device().is_none() {
        return;
    }
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![5, 5, 1], dtype: DType::F32, seed: 34906987405665, grad: true }, // v0
            Op::Binary(Binary::Maximum, 0, 0),                                                       // v1
            Op::Expand(1, vec![5, 5, 2]),                                                            // v2
            Op::Pad(2, vec![(0, 2), (2, 2), (0, 0)]),                                                // v3
            Op::Binary(Binary::Sub, 3, 3),                                                           // v4
            Op::Binary(Binary::Maximum, 3, 4),                                                       // v5
            Op::Unary(Unary::SqrtAbs, 5),                                                            // v6
        ],
    };
    assert_agree(&program);
}

/// Seed 7293 (lavapipe, and four more seeds like it on the H100): a gradient through a pad and a
/// shrink reached `0 * inf` where the zero was a load masked off everywhere; the device compiler
/// folded the product to 0 (WGSL lets it assume finite values) while the interpreter gave NaN.
/// Codegen now folds such a load to its 0 and `x * 0` to 0 itself, the same for every device.
#[test]
fn fuzz_gradient_through_a_load_masked_off_everywhere() {
    if wgpu_device().is_none() {
        return;
    }
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![3, 5], dtype: DType::F32, seed: 276539139279330, grad: false }, // v0
            Op::Input { shape: vec![5, 2, 1], dtype: DType::F32, seed: 268395420742100, grad: true }, // v1
            Op::Input { shape: vec![4, 5, 3], dtype: DType::F32, seed: 170434769165194, grad: true }, // v2
            Op::Pad(2, vec![(0, 0), (0, 1), (1, 1)]),                                               // v3
            Op::Binary(Binary::Maximum, 3, 3),                                                      // v4
            Op::Unary(Unary::SqrtAbs, 4),                                                           // v5
            Op::Permute(5, vec![0, 1, 2]),                                                          // v6
            Op::Pad(6, vec![(0, 1), (1, 0), (2, 1)]),                                               // v7
            Op::Shrink(7, vec![(1, 3), (3, 4), (0, 5)]),                                            // v8
            Op::Unary(Unary::SqrtAbs, 8),                                                           // v9
            Op::Binary(Binary::Mul, 9, 0),                                                          // v10
        ],
    };
    assert_agree(&program);
}

/// Seed 2007 (lavapipe): the gradient of `where(min(x), min(x), x)` reads three reduces of
/// x's rows back over them, fused into one kernel; one of them sums a value constant along the
/// row (the where's mask), so only the constants under it carried the row's length, and they
/// had been built without their views where the kernel also read them outside it: the sum
/// was 1 instead of 4.
#[test]
fn fuzz_row_reduce_of_a_value_constant_along_the_row() {
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![3, 4], dtype: DType::F32, seed: 273933656976588, grad: true }, // v0
            Op::Reduce(Reduce::Min, 0, vec![1], true),                                             // v1
            Op::Where(1, 1, 0),                                                                    // v2
        ],
    };
    assert_agree(&program);
}

/// Seed 1321 (H200): `log(|cumsum(x / (|x| + 1))| + 1)` whose cumsum cancels to exactly 0 on
/// the interpreter (`a + -a`) and to about 1e-8 where the device rounds the division or fuses a
/// multiply-add. abs's gradient jumps from 0 to ±1 there. Every device that rounds a few ulp
/// differently (the interpreter under rounding noise) is accepted as rounding-sensitive; a wrong
/// number where rounding cannot reach is still a mismatch.
#[test]
fn fuzz_max_gradient_ties_of_a_value_recomputed_in_another_kernel() {
    // the max's input is recomputed in its gradient's kernel for the tie mask: with floats
    // re-associated differently there (f16 on lavapipe), no element equalled the max and the
    // gradient was 0 instead of shared among the three ties
    if wgpu_device().is_none() {
        return;
    }
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![1, 1, 2, 5], dtype: DType::F16, seed: 121335331349827, grad: true }, // v0
            Op::Unary(Unary::SqrtAbs, 0),                                                                // v1
            Op::Unary(Unary::Tanh, 1),                                                                   // v2
            Op::Expand(2, vec![3, 2, 2, 5]),                                                             // v3
            Op::Binary(Binary::Add, 3, 1),                                                               // v4
            Op::Reduce(Reduce::Max, 4, vec![0], false),                                                  // v5
        ],
    };
    assert_agree(&program);
}

#[test]
fn fuzz_tanh_gradient_of_large_half_values() {
    // tanh through sigmoid as 1 / (1 + e^-x): in float16 e^-x overflowed from |x| > 11 and the
    // gradient was inf * 0 = NaN on both devices (which one depended on rounding order)
    if wgpu_device().is_none() {
        return;
    }
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![4, 5, 2], dtype: DType::U8, seed: 278499612526933, grad: false }, // v0
            Op::Input { shape: vec![4, 5, 2], dtype: DType::F16, seed: 80241674795877, grad: true },  // v1
            Op::Binary(Binary::Mul, 1, 0),                                                            // v2
            Op::Unary(Unary::Tanh, 2),                                                                // v3
        ],
    };
    assert_agree(&program);
}

#[test]
fn fuzz_gradient_at_a_cancellation_is_rounding_sensitive() {
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![5, 5, 4], dtype: DType::F32, seed: 77796347968127, grad: true }, // v0
            Op::Binary(Binary::DivSafe, 0, 0),                                                       // v1
            Op::Cumsum(1, -1),                                                                       // v2
            Op::Unary(Unary::LogAbs1, 2),                                                            // v3
            Op::Get(3, vec![Idx::Slice(Some(0), None, Some(2))]),                                    // v4
        ],
    };
    let want = run(&program, &DeviceName::Cpu);
    let mut differed = 0;
    for seed in 100..110 {
        let other = run_with_noise(&program, &DeviceName::Cpu, Some(seed));
        let v = verdict(&program, &other, &want);
        assert!(matches!(v, Verdict::Agree | Verdict::Sensitive(_)), "noise {seed}: {v:?}");
        differed += usize::from(matches!(v, Verdict::Sensitive(_)));
    }
    assert!(differed > 0, "some rounding moves the gradient past the plain tolerance");
    let Run::Done(mut wrong) = want.clone() else { panic!("the program runs") };
    wrong.grads[0][0] += 1e-2;
    let v = verdict(&program, &Run::Done(wrong), &want);
    assert!(matches!(&v, Verdict::Mismatch(d) if d.starts_with("gradient 0[0]")), "{v:?}");
}

/// Seeds 315613 and 332897 (H200): `x - flip(x)` of a mean, exactly 0 on the interpreter, read
/// 4.2e-4 (through a square root) and -7.5e-6 there: the fused kernel computes the mean once for
/// each use and rounds them differently. The noise perturbs each use apart, so such a difference is
/// rounding-sensitive, while a larger one is still a mismatch.
#[test]
fn fuzz_a_value_used_twice_may_round_differently_in_each_use() {
    let cases = [
        (
            vec![
                Op::Input { shape: vec![4, 3, 3], dtype: DType::U8, seed: 38843145288202, grad: false }, // v0
                Op::Reduce(Reduce::Min, 0, vec![0], false),                                              // v1
                Op::Reduce(Reduce::Mean, 1, vec![1], false),                                             // v2
                Op::Flip(2, vec![0]),                                                                    // v3
                Op::Binary(Binary::Sub, 3, 2),                                                           // v4
                Op::Unary(Unary::SqrtAbs, 4),                                                            // v5
            ],
            1,
            0.00042286395910196006,
        ),
        (
            vec![
                Op::Input { shape: vec![3, 5], dtype: DType::U8, seed: 110518946082765, grad: false }, // v0
                Op::Unary(Unary::Neg, 0),                                                              // v1
                Op::Reduce(Reduce::Mean, 1, vec![0], true),                                            // v2
                Op::Where(0, 2, 2),                                                                    // v3
                Op::Get(3, vec![Idx::Slice(None, None, Some(-2))]),                                    // v4
                Op::Binary(Binary::Sub, 4, 2),                                                         // v5
            ],
            0,
            -0.000007539987564086914,
        ),
    ];
    for (steps, at, device) in cases {
        let program = Program { steps };
        let want = run(&program, &DeviceName::Cpu);
        let Run::Done(clean) = want.clone() else { panic!("the program runs") };
        assert_eq!(clean.values[at], 0.0);
        let with = |value: f64| {
            let mut other = clean.clone();
            other.values[at] = value;
            verdict(&program, &Run::Done(other), &want)
        };
        assert!(matches!(with(device), Verdict::Sensitive(_)), "{:?}", with(device));
        assert!(matches!(with(0.5), Verdict::Mismatch(_)), "{:?}", with(0.5));
    }
}

/// Seeds 576 and 2642 (H200): half-precision cumsums of a division and of a softmax, whose
/// values near 0 differ by a few f16 ulp of the partial sums. A program that depends on a half
/// value is compared at tinygrad's half tolerance (atol = rtol = 1e-2), forward and backward.
#[test]
fn half_programs_are_compared_at_half_tolerance() {
    let o =
        |values: Vec<f64>, half| Outcome { shape: vec![2], dtype: DType::F32, values, grads: vec![], half };
    assert!(compare(&o(vec![1.0, 0.004], true), &o(vec![1.0, -0.001], true), None).is_none());
    assert!(compare(&o(vec![1.0, 0.004], false), &o(vec![1.0, -0.001], false), None).is_some());
    assert!(compare(&o(vec![1.0, 0.02], true), &o(vec![1.0, 0.0], true), None).is_some());
    if wgpu_device().is_none() {
        return;
    }
    let programs = [
        vec![
            Op::Input { shape: vec![5, 3, 4, 1], dtype: DType::BOOL, seed: 96876563980355, grad: false }, // v0
            Op::Input { shape: vec![5, 5], dtype: DType::F16, seed: 25139977097432, grad: true }, // v1
            Op::Where(1, 1, 1),                                                                   // v2
            Op::Binary(Binary::DivSafe, 2, 1),                                                    // v3
            Op::Cumsum(3, 0),                                                                     // v4
        ],
        vec![
            Op::Input { shape: vec![5, 5], dtype: DType::F16, seed: 133827839082629, grad: true }, // v0
            Op::Input { shape: vec![5, 5, 1], dtype: DType::I32, seed: 239070038533613, grad: false }, // v1
            Op::Binary(Binary::Mul, 1, 0),                                                         // v2
            Op::Reduce(Reduce::Mean, 2, vec![1], false),                                           // v3
            Op::Softmax(3, 0),                                                                     // v4
            Op::Cumsum(4, 1),                                                                      // v5
            Op::Reshape(5, vec![25, 1]),                                                           // v6
        ],
    ];
    for steps in programs {
        assert_agree(&Program { steps });
    }
}

/// Seeds 1269, 1515, 1517 and 1636 (H200 only): int32 `min` reductions. `min` was `-max(-x)`,
/// whose max starts from `i32::MIN`, and `-i32::MIN` overflows (a compiler that assumes no
/// signed overflow may move the negations through the max); it is `!max(!x)` now, which cannot
/// overflow (the catalogue checks `i32::MIN`/`i32::MAX` and unsigned values too).
#[test]
fn fuzz_int_min_reductions() {
    if wgpu_device().is_none() {
        return;
    }
    let programs = [
        vec![
            Op::Input { shape: vec![4, 4, 1], dtype: DType::I32, seed: 36974116251649, grad: false }, // v0
            Op::Binary(Binary::Maximum, 0, 0),                                                        // v1
            Op::Reduce(Reduce::Min, 1, vec![1, 2], true),                                             // v2
        ],
        vec![
            Op::Input { shape: vec![1, 4, 2], dtype: DType::I32, seed: 173603309655588, grad: false }, // v0
            Op::Unary(Unary::Square, 0),                                                               // v1
            Op::Flip(1, vec![1, 2]),                                                                   // v2
            Op::Reduce(Reduce::Min, 2, vec![], true),                                                  // v3
        ],
        vec![
            Op::Input { shape: vec![4, 1], dtype: DType::I32, seed: 179430661194361, grad: false }, // v0
            Op::Reduce(Reduce::Min, 0, vec![0, 1], false),                                          // v1
            Op::Expand(1, vec![3]),                                                                 // v2
        ],
        vec![
            Op::Input { shape: vec![3], dtype: DType::I32, seed: 98314219788275, grad: false }, // v0
            Op::Binary(Binary::Mul, 0, 0),                                                      // v1
            Op::Reduce(Reduce::Min, 1, vec![], true),                                           // v2
        ],
    ];
    for steps in programs {
        assert_agree(&Program { steps });
    }
}

/// Seed 106867 (every device): the interpreter's compile of a kernel holding a min over two
/// axes and the count of its ties (the min's gradient) failed: "no order exists for Ops.RANGE".
#[test]
fn fuzz_min_over_two_axes_with_its_gradient_compiles() {
    if wgpu_device().is_none() {
        return;
    }
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![4, 3, 3, 3], dtype: DType::F32, seed: 161147333453965, grad: true }, // v0
            Op::Pad(0, vec![(0, 0), (2, 1), (2, 2), (0, 0)]),                                            // v1
            Op::Reduce(Reduce::Min, 1, vec![2, 3], true),                                                // v2
            Op::Unary(Unary::Relu, 2),                                                                   // v3
            Op::Reshape(3, vec![6, -1, 1]),                                                              // v4
            Op::Where(4, 2, 3),                                                                          // v5
            Op::Unary(Unary::SqrtAbs, 4),                                                                // v6
        ],
    };
    assert_agree(&program);
}

/// Seeds 144671 and 148557 (H200 only): a grouped `any` over three axes read `true` where
/// every value was `false`. Its partials went through an `array<bool, n>` in workgroup memory,
/// which NVIDIA's Vulkan driver got wrong; booleans in workgroup memory are `u32` words now.
#[test]
fn fuzz_grouped_boolean_max() {
    if wgpu_device().is_none() {
        return;
    }
    let programs = [
        vec![
            Op::Input { shape: vec![4, 4, 5, 2], dtype: DType::I32, seed: 8236345098056, grad: false }, // v0
            Op::Cast(0, DType::BOOL),                                                                   // v1
            Op::Reduce(Reduce::Max, 1, vec![0, 1, 2], true),                                            // v2
        ],
        vec![
            Op::Input { shape: vec![5, 2, 4, 4], dtype: DType::BOOL, seed: 241309782648475, grad: false }, // v0
            Op::Reduce(Reduce::Max, 0, vec![0, 2, 3], true), // v1
        ],
    ];
    for steps in programs {
        assert_agree(&Program { steps });
    }
}

/// Seed 340545 (lavapipe): a softmax of `x.cast(bool)`. Its summed gradient is 0 up to rounding,
/// and the cast's gradient rule cast that back to bool and then to float: 1 wherever the rounding
/// left a tiny value (the interpreter), 0 where it did not (lavapipe). A cast to a boolean or an
/// integer now passes no gradient.
#[test]
fn fuzz_no_gradient_through_a_cast_to_bool() {
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![3, 4, 3], dtype: DType::F32, seed: 32319400744349, grad: true }, // v0
            Op::Cast(0, DType::BOOL),                                                                // v1
            Op::Softmax(1, 0),                                                                       // v2
        ],
    };
    let Run::Done(cpu) = run(&program, &DeviceName::Cpu) else { panic!("the program runs") };
    assert!(cpu.grads[0].iter().all(|&g| g == 0.0), "{:?}", cpu.grads[0]);
    assert_agree(&program);
}

/// Seed 481930 (the interpreter was wrong, lavapipe right): `(s[1:2] - s) @ s` of `s =
/// softmax(x)`. On a device without the rows rule the gradient's reduces merged into one kernel,
/// which computed the shrink's gradient (a sum padded to index 1) itself and read it at every
/// index: the pad's mask was lost. Reduces read through any other view than in place or
/// broadcast back now stay out of a kernel that would compute them.
#[test]
fn fuzz_softmax_gradient_through_a_shrunk_element() {
    let program = Program {
        steps: vec![
            Op::Input { shape: vec![2], dtype: DType::F32, seed: 154438234670327, grad: true }, // v0
            Op::Softmax(0, 0),                                                                  // v1
            Op::Shrink(1, vec![(1, 2)]),                                                        // v2
            Op::Binary(Binary::Sub, 2, 1),                                                      // v3
            Op::Matmul(3, 1),                                                                   // v4
        ],
    };
    // x = [-1, -0.75]: d/dx of (s1 - s0) s0 = (1 - 4 s0) s0 s1 * [1, -1]
    let s0 = 1.0 / (1.0 + 0.25f64.exp());
    let want = (1.0 - 4.0 * s0) * s0 * (1.0 - s0);
    let Run::Done(cpu) = run(&program, &DeviceName::Cpu) else { panic!("the program runs") };
    for (g, w) in cpu.grads[0].iter().zip([want, -want]) {
        assert!((g - w).abs() < 1e-6, "{:?} against {want}", cpu.grads[0]);
    }
    assert_agree(&program);
}
