//! The TC OptOp on the interpreter: half-precision matmuls lowered onto cooperative-matrix
//! tiles (one and several tiles per subgroup, several k tiles a step, several subgroups sharing
//! blocks staged in workgroup memory) give the plain kernel's results, and kernels TC does not
//! fit are refused with a typed error.

use wgrad_codegen::{CodegenError, Opt, OptError, OptMode, OptOps, Target, compile};
use wgrad_conformance::random_ast::Case;
use wgrad_conformance::tensor_cores::{HalfMatmul, half_matmuls, tensor_core_target};
use wgrad_conformance::{Rng, close};
use wgrad_runtime_cpu::run;

fn tc(axis: usize) -> Opt {
    Opt::new(OptOps::Tc, axis, 0)
}

/// Runs `case` under `opts` and without opts on the interpreter; both must agree.
fn check(mm: HalfMatmul, opts: &[Opt]) {
    check_mode(mm, &tensor_core_target(), OptMode::Given(opts.to_vec()));
}

/// Runs `case` under `mode` on `target` (which must give tensor-core tiles) and without opts
/// on the interpreter; both must agree.
fn check_mode(mm: HalfMatmul, target: &Target, mode: OptMode) {
    let case = mm.case();
    let inputs = case.inputs(&mut Rng(7));
    let results: Vec<_> = [mode.clone(), OptMode::NoOpt]
        .iter()
        .map(|mode| {
            let (k, program) =
                compile(&case.ast, target, mode, "k").unwrap_or_else(|e| panic!("{mm:?} {mode:?}: {e}"));
            if !matches!(mode, OptMode::NoOpt) {
                assert!(
                    program.uops.iter().any(|u| u.op() == wgrad_ops::Ops::Wmma),
                    "{mm:?}: no Wmma in\n{program}"
                );
                let warps = k.full_shape()[k.global_dims()..k.first_reduce()].iter().map(|s| s.vmax());
                let threads = 32 * warps.product::<i64>() as usize;
                assert_eq!(program.local_size, [threads, 1, 1], "{}", k.describe());
            }
            let mut bufs = case.cpu_buffers(&inputs);
            run(&program, &mut bufs, &[]).unwrap_or_else(|e| panic!("{mm:?}: {e}\n{program}"));
            bufs[0].to_values()
        })
        .collect();
    let bad = results[0].iter().zip(&results[1]).position(|(&g, &w)| !close(g, w));
    assert!(bad.is_none(), "{mm:?} {mode:?}: differs at {bad:?}: {:?} vs {:?}", results[0], results[1]);
}

#[test]
fn tensor_core_matmuls_match_the_plain_kernel() {
    for mm in half_matmuls() {
        check(mm, &[tc(0)]);
    }
}

#[test]
fn several_tiles_per_subgroup() {
    let mm =
        HalfMatmul { b: 1, m: 64, n: 32, k: 32, a_t: false, b_t: false, cast_first: false, half_out: true };
    check(mm, &[tc(0), Opt::new(OptOps::Upcast, 0, 2), Opt::new(OptOps::Upcast, 1, 2)]);
}

#[test]
fn several_k_tiles_per_step() {
    let mm =
        HalfMatmul { b: 1, m: 32, n: 32, k: 64, a_t: false, b_t: true, cast_first: false, half_out: false };
    check(mm, &[tc(0), Opt::new(OptOps::Unroll, 0, 2)]);
    check(mm, &[tc(0), Opt::new(OptOps::Unroll, 0, 4), Opt::new(OptOps::Upcast, 1, 2)]);
}

#[test]
fn subgroups_share_blocks_staged_in_workgroup_memory() {
    let base =
        HalfMatmul { b: 1, m: 64, n: 64, k: 64, a_t: false, b_t: false, cast_first: false, half_out: false };
    let local = |axis| Opt::new(OptOps::Local, axis, 2);
    for (a_t, b_t) in [(false, false), (true, false), (false, true), (true, true)] {
        let mm = HalfMatmul { a_t, b_t, half_out: a_t, ..base };
        check(mm, &[tc(0), local(0), local(1), Opt::new(OptOps::Unroll, 0, 2)]);
    }
    // tiles per subgroup and a reduce loop of one step
    let mm = HalfMatmul { k: 32, ..base };
    check(mm, &[tc(0), Opt::new(OptOps::Upcast, 0, 2), local(0), Opt::new(OptOps::Unroll, 0, 2)]);
    // a batch axis stays global
    check(HalfMatmul { b: 2, m: 32, n: 32, ..base }, &[tc(0), local(1)]);
}

/// The epilogue gives each thread four neighbouring elements of a tile's row, so its stores of
/// the output fold into vector stores (they were scalar, two rows of 16 a subgroup's store).
#[test]
fn the_epilogue_stores_four_elements_a_thread() {
    for half_out in [true, false] {
        let mm =
            HalfMatmul { b: 1, m: 32, n: 32, k: 32, a_t: false, b_t: false, cast_first: false, half_out };
        let mode = OptMode::Given(vec![tc(0)]);
        let (_, program) = compile(&mm.case().ast, &tensor_core_target(), &mode, "k").unwrap();
        let stores: Vec<_> = program.uops.iter().filter(|u| u.op() == wgrad_ops::Ops::Store).collect();
        let widths: Vec<u32> = stores.iter().map(|s| s.src()[1].dtype().count()).collect();
        assert!(!widths.is_empty() && widths.iter().all(|&w| w == 4), "{mm:?}: {widths:?}\n{program}");
    }
}

#[test]
fn tc_prints_and_parses_as_tinygrad_does() {
    assert_eq!(tc(1).to_string(), "Opt(op=TC, axis=1, arg=0)");
    assert_eq!("Opt(op=TC, axis=1, arg=0)".parse::<Opt>(), Ok(tc(1)));
}

#[test]
fn kernels_tc_does_not_fit_are_refused() {
    let target = tensor_core_target();
    let refused =
        |mm: HalfMatmul, opts: Vec<Opt>| match compile(&mm.case().ast, &target, &OptMode::Given(opts), "k") {
            Err(CodegenError::Opt(e)) => e,
            other => panic!("{mm:?}: expected a refusal, got {:?}", other.map(|(k, _)| k.describe_opts())),
        };
    let base =
        HalfMatmul { b: 1, m: 32, n: 32, k: 32, a_t: false, b_t: false, cast_first: false, half_out: false };
    let odd = HalfMatmul { m: 24, ..base };
    assert!(matches!(refused(odd, vec![tc(0)]), OptError::NotDivisible { amt: 16, .. }));
    assert!(matches!(refused(base, vec![tc(1)]), OptError::InvalidAxis { axis: 1, .. }));
    assert!(matches!(refused(base, vec![Opt::new(OptOps::Tc, 0, 1)]), OptError::TensorCore(_)));
    let after = vec![Opt::new(OptOps::Upcast, 0, 2), tc(0)];
    assert!(matches!(refused(base, after), OptError::TensorCore(_)));
    let group_after = vec![tc(0), Opt::new(OptOps::Group, 0, 2)];
    assert!(matches!(refused(base, group_after), OptError::TensorCore(_)));
    // without tensor cores on the target
    let plain = Target::generic_gpu();
    let e = compile(&base.case().ast, &plain, &OptMode::Given(vec![tc(0)]), "k").err();
    assert!(matches!(e, Some(CodegenError::Opt(OptError::TensorCore(_)))), "{e:?}");
}

#[test]
fn the_heuristics_use_tensor_cores_for_half_matmuls_only() {
    let mm =
        HalfMatmul { b: 1, m: 64, n: 64, k: 512, a_t: false, b_t: true, cast_first: false, half_out: true };
    // a target wanting few threads gets 4x4 tiles per subgroup: a 64x64 block
    let few = Target { parallelism: 64, ..tensor_core_target() };
    let opts = |mm: HalfMatmul| {
        compile(&mm.case().ast, &few, &OptMode::Heuristic, "k").expect("compiles").0.describe_opts()
    };
    assert_eq!(
        opts(mm),
        "[Opt(op=TC, axis=0, arg=0), Opt(op=UPCAST, axis=1, arg=4), Opt(op=UPCAST, axis=0, arg=4)]"
    );
    check_mode(mm, &few, OptMode::Heuristic);
    check_mode(mm, &tensor_core_target(), OptMode::Heuristic);
    // a short reduce (at most 24 k tiles): 4x2 tiles a subgroup, 2x4 subgroups, a k tile a step
    let short = HalfMatmul { m: 128, n: 128, k: 64, ..mm };
    assert_eq!(
        opts(short),
        "[Opt(op=TC, axis=0, arg=0), Opt(op=UPCAST, axis=1, arg=2), Opt(op=UPCAST, axis=0, arg=4), \
         Opt(op=LOCAL, axis=1, arg=4), Opt(op=LOCAL, axis=0, arg=2)]"
    );
    check_mode(short, &few, OptMode::Heuristic);
    let wmma = |target: &Target, case: Case| {
        let (_, program) = compile(&case.ast, target, &OptMode::Heuristic, "k").expect("compiles");
        program.uops.iter().any(|u| u.op() == wgrad_ops::Ops::Wmma)
    };
    // without tensor cores, today's register tiles; f32 matmuls never take them
    assert!(wmma(&tensor_core_target(), mm.case()));
    assert!(!wmma(&Target::generic_gpu(), mm.case()));
    assert!(!wmma(&tensor_core_target(), wgrad_conformance::shapes::matmul(64, 64, 32)));
}

#[test]
fn the_plans_follow_the_shape() {
    // MiniLM's f16 matmuls on a discrete GPU's parallelism: the heuristics' opts, compiled only
    let gpu = Target { parallelism: 1 << 17, shared_max: 49152, ..tensor_core_target() };
    let plan = |m: usize, n: usize, k: usize| {
        let mm = HalfMatmul { b: 1, m, n, k, a_t: false, b_t: true, cast_first: false, half_out: true };
        let (kernel, _) = compile(&mm.case().ast, &gpu, &OptMode::Heuristic, "k").expect("compiles");
        let has = |op: OptOps| kernel.applied_opts().iter().any(|o| o.op == op);
        assert!(has(OptOps::Tc), "{}", kernel.describe_opts());
        let warps = kernel.full_shape()[kernel.global_dims()..kernel.first_reduce()].iter().map(|s| s.vmax());
        (warps.product::<i64>(), has(OptOps::Unroll), kernel.describe_opts())
    };
    let warps_and_unroll = |m: usize, n: usize, k: usize| {
        let (warps, unroll, _) = plan(m, n, k);
        (warps, unroll)
    };
    // K = 384 into 1152 columns: 1152 workgroups of 2x4 subgroups, one k tile a step
    assert_eq!(warps_and_unroll(16384, 1152, 384), (8, false));
    // 384 columns (K = 384 or 1536): 2x2 subgroups of 4x6 tiles, one k tile a step, BEAM's order
    let wide = "[Opt(op=TC, axis=0, arg=0), Opt(op=UPCAST, axis=0, arg=4), Opt(op=LOCAL, axis=1, arg=4), \
                Opt(op=UPCAST, axis=1, arg=3), Opt(op=LOCAL, axis=0, arg=2), Opt(op=UPCAST, axis=2, arg=2)]";
    for (m, n, k) in [(16384, 384, 384), (16384, 384, 1536)] {
        assert_eq!(plan(m, n, k), (4, false, wide.into()), "{m}x{n}x{k}");
    }
    // too few rows to keep a quarter of the device busy with the wide block: the usual plan
    assert_eq!(warps_and_unroll(2048, 384, 384), (4, true));
    // a long reduce keeps the usual plan: 2x2 subgroups, two k tiles a step
    assert_eq!(warps_and_unroll(1024, 1024, 1024), (4, true));
    assert!(warps_and_unroll(4096, 3072, 4096).1, "longer than the wide block's 96 k tiles");
}

#[test]
fn the_wide_block_matches_the_plain_kernel() {
    // 16 row tiles, 24 column tiles: one workgroup's block is 8x12 tiles of 16; a parallelism
    // its 4 workgroups keep a quarter busy
    let gpu = Target { parallelism: 2048, shared_max: 49152, ..tensor_core_target() };
    let mm =
        HalfMatmul { b: 1, m: 256, n: 384, k: 32, a_t: false, b_t: true, cast_first: false, half_out: true };
    let (kernel, _) = compile(&mm.case().ast, &gpu, &OptMode::Heuristic, "k").expect("compiles");
    assert!(kernel.describe_opts().contains("Opt(op=UPCAST, axis=1, arg=3)"), "{}", kernel.describe_opts());
    check_mode(mm, &gpu, OptMode::Heuristic);
}
