//! Generated WGSL for a fixed corpus of kernels, as reviewed insta snapshots (our process
//! replay: a change that should not change kernels provably does not); every shader is also
//! validated by naga.

mod common;

use common::*;
use wgrad_codegen::{Opt, OptMode, OptOps, Program, Target, TensorCoreShape, compile};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_renderer_wgsl::{F16Rounding, WgslCaps, render};
use wgrad_shape::{ShapeTracker, Sint, Variable, View};

/// The rendered source, after checking that it validates.
fn wgsl(ast: &UOp, mode: OptMode, caps: &WgslCaps) -> String {
    render_valid(&program(ast, mode), caps).source
}

#[test]
fn elementwise() {
    let (a, b) = (load(1, st(&[64, 64])), load(2, st(&[64, 64])));
    let ast = store_ast(st(&[64, 64]), (&a + &b).maximum(0.0f32) * a.exp2());
    insta::assert_snapshot!(wgsl(&ast, OptMode::Heuristic, &FULL));
}

#[test]
fn broadcast() {
    // out[i, j] = a[i, j] * b[j]: b's stride 0 on the first axis
    let ast = store_ast(st(&[32, 16]), load(1, st(&[32, 16])) * load(2, strided(&[32, 16], &[0, 1], 0)));
    insta::assert_snapshot!(wgsl(&ast, OptMode::Heuristic, &FULL));
}

#[test]
fn reduce() {
    let ast = store_ast(st(&[8, 1]), load(1, st(&[8, 100])).reduce_axis(Ops::Max, &[1]));
    insta::assert_snapshot!(wgsl(&ast, OptMode::NoOpt, &FULL));
}

#[test]
fn group_reduce() {
    let ast = store_ast(st(&[4, 1]), load(1, st(&[4, 256])).reduce_axis(Ops::Add, &[1]));
    let mode = OptMode::Given(vec![Opt::new(OptOps::Grouptop, 0, 16)]);
    let source = wgsl(&ast, mode, &FULL);
    assert!(source.contains("var<workgroup>") && source.contains("workgroupBarrier();"), "{source}");
    insta::assert_snapshot!(source);
}

/// A grouped `any` (a max of booleans): the partials go through workgroup memory as `u32`
/// words, never `array<bool, n>`, which NVIDIA's Vulkan driver got wrong (fuzz seed 148557).
#[test]
fn grouped_boolean_max_keeps_words_in_workgroup_memory() {
    let ast = store_ast(st(&[4, 1]), load_dt(DType::BOOL, 1, st(&[4, 64])).reduce_axis(Ops::Max, &[1]));
    let mode = OptMode::Given(vec![Opt::new(OptOps::Group, 0, 16), Opt::new(OptOps::Upcast, 0, 4)]);
    let source = wgsl(&ast, mode, &FULL);
    assert!(source.contains("var<workgroup> temp0: array<u32, 64>;"), "{source}");
    assert!(source.contains("select(0u, 1u, acc1)") && !source.contains("array<bool"), "{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn matmul_tile() {
    let mode = OptMode::Given(vec![
        Opt::new(OptOps::Local, 0, 4),
        Opt::new(OptOps::Local, 1, 4),
        Opt::new(OptOps::Upcast, 0, 2),
        Opt::new(OptOps::Upcast, 1, 2),
        Opt::new(OptOps::Unroll, 0, 2),
    ]);
    insta::assert_snapshot!(wgsl(&matmul_ast(32, 32, 16), mode, &FULL));
}

#[test]
fn masked_pad() {
    // out = pad(a, 1 each side) + 1: loads outside the input are gated and read nothing
    let ast = store_ast(st(&[10, 10]), load(1, padded(st(&[8, 8]), &[(1, 1), (1, 1)])) + 1.0f32);
    insta::assert_snapshot!(wgsl(&ast, OptMode::NoOpt, &FULL));
}

#[test]
fn half_native_and_emulated() {
    let a = load_dt(DType::F16, 1, st(&[64]));
    let ast = store_ast(st(&[64]), (&a * &a + 1.0f32).sqrt());
    insta::assert_snapshot!("half_native", wgsl(&ast, OptMode::NoOpt, &FULL));
    insta::assert_snapshot!("half_emulated", wgsl(&ast, OptMode::NoOpt, &BARE));
}

#[test]
fn packed_int8() {
    let (a, b) = (load_dt(DType::I8, 1, st(&[100])), load_dt(DType::I8, 2, st(&[100])));
    let ast = store_ast(st(&[100]), &a * &b + 3i64);
    insta::assert_snapshot!(wgsl(&ast, OptMode::NoOpt, &BARE));
}

#[test]
fn int64_native() {
    let (a, b) = (load_dt(DType::I64, 1, st(&[16])), load_dt(DType::I64, 2, st(&[16])));
    let ast = store_ast(st(&[16]), (&a << 3i64) + b.cast(DType::F32).cast(DType::I64).idiv(7i64));
    insta::assert_snapshot!(wgsl(&ast, OptMode::NoOpt, &FULL));
}

#[test]
fn symbolic_variable() {
    // out[i] = sum of the first n elements of row i
    let n = Variable::new("n", 1, 64).unwrap();
    let rows = View::new(&[Sint::int(8), Sint::var(&n)], &sints(&[64, 1]), Sint::int(0), None).unwrap();
    let ast = store_ast(st(&[8, 1]), load(1, ShapeTracker::from_view(rows)).reduce_axis(Ops::Add, &[1]));
    insta::assert_snapshot!(wgsl(&ast, OptMode::NoOpt, &FULL));
}

#[test]
fn flattened_grid() {
    // a broadcast keeps the two dims apart: a grid of [30, 20] on a device allowing 16 per dim
    let ast = store_ast(st(&[20, 30]), load(1, st(&[20, 30])) * load(2, strided(&[20, 30], &[0, 1], 0)));
    let caps = WgslCaps { max_workgroups_per_dim: 16, ..FULL };
    let program = program(&ast, OptMode::NoOpt);
    assert_eq!(program.global_size, [30, 20, 1]);
    let rendered = render_valid(&program, &caps);
    assert_eq!(rendered.workgroups, [600, 1, 1]);
    insta::assert_snapshot!(rendered.source);
}

#[test]
fn reversed_grid() {
    // workgroup w takes block n - 1 - w: on its own grid, and flattened (the bound checked on
    // the workgroup's linear id before it is reversed)
    let ast = store_ast(st(&[20, 30]), load(1, st(&[20, 30])) * load(2, strided(&[20, 30], &[0, 1], 0)));
    let program = Program { reversed: true, ..program(&ast, OptMode::NoOpt) };
    let own = render_valid(&program, &FULL).source;
    assert!(own.contains("29 - i32(wid.x)") && own.contains("19 - i32(wid.y)"), "{own}");
    let flat = render_valid(&program, &WgslCaps { max_workgroups_per_dim: 16, ..FULL }).source;
    assert!(flat.contains("if (at >= 600u) { return; }") && flat.contains("let lin = 599u - at;"), "{flat}");
    insta::assert_snapshot!(format!("{own}\n{flat}"));
}

#[test]
fn grouped_row_reduce() {
    // runs of 8 per thread (two 16-byte loads a step), 16 threads a row meeting in workgroup memory
    let ast = store_ast(st(&[4, 1]), load(1, st(&[4, 1024])).reduce_axis(Ops::Add, &[1]));
    let mode = OptMode::Given(vec![Opt::new(OptOps::Unroll, 0, 8), Opt::new(OptOps::Group, 0, 16)]);
    let source = wgsl(&ast, mode, &FULL);
    assert!(source.contains("array<vec4<f32>>") && source.contains("var<workgroup>"), "{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn logsumexp_through_subgroups() {
    // a max nested in a sum, both grouped by one subgroup's worth: each subgroup combines its
    // partials (the f32 max keeping NaN), lane 0 stores them, every invocation reads
    // `num_subgroups` back
    let x = load(1, st(&[4, 1024]));
    let max = x.reduce_axis(Ops::Max, &[1]);
    let ast = store_ast(st(&[4, 1]), (&x - &max).exp2().reduce_axis(Ops::Add, &[1]).log2() + max);
    let target = Target { subgroup_ops: true, ..Target::generic_gpu() };
    let mode = OptMode::Given(vec![Opt::new(OptOps::Unroll, 0, 8), Opt::new(OptOps::Group, 0, 32)]);
    let program = compile(&ast, &target, &mode, "kernel").expect("compiles").1;
    let source = render_valid(&program, &FULL).source;
    for call in ["subgroup_max_nan(", "subgroupAdd(", "@builtin(num_subgroups)", "@builtin(subgroup_id)"] {
        assert!(source.contains(call), "{call} missing:\n{source}");
    }
    insta::assert_snapshot!(source);
    let refused = render(&program, &BARE).expect_err("no subgroups without the feature");
    assert!(refused.to_string().contains("SUBGROUP"), "{refused}");
}

#[test]
fn rows_one_subgroup_wide() {
    // a layer norm over rows of 256 on a target whose subgroups all have 32 invocations: each
    // row is one subgroup of 32 threads holding 8 values (two 16-byte loads), 4 rows a
    // workgroup; the mean and the variance are each one subgroup combine, with no workgroup
    // memory and no barrier
    let x = load(1, st(&[8, 256]));
    let mean = x.reduce_axis(Ops::Add, &[1]) * (1.0f32 / 256.0);
    let d = &x - &mean;
    let var = (&d * &d).reduce_axis(Ops::Add, &[1]) * (1.0f32 / 256.0);
    let ast = store_ast(st(&[8, 256]), &d * &(var + 1e-5f32).sqrt().recip());
    let target = Target { subgroup_ops: true, ..Target::generic_gpu() };
    let (k, program) = compile(&ast, &target, &OptMode::Heuristic, "kernel").expect("compiles");
    assert!(k.rows_in_subgroups(), "{}", k.describe_opts());
    let source = render_valid(&program, &FULL).source;
    assert_eq!(source.matches("subgroupAdd(").count(), 2, "{source}");
    assert!(source.contains("@workgroup_size(32, 4, 1)"), "{source}");
    assert!(!source.contains("var<workgroup>") && !source.contains("Barrier"), "{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn gemm_register_tile() {
    // the heuristics' tile shape: 4x4 outputs a thread, k unrolled by 4, n fastest in the workgroup
    let mode = OptMode::Given(vec![
        Opt::new(OptOps::Upcast, 0, 4),
        Opt::new(OptOps::Upcast, 1, 4),
        Opt::new(OptOps::Unroll, 0, 4),
        Opt::new(OptOps::Local, 1, 4),
        Opt::new(OptOps::Local, 0, 2),
    ]);
    let source = wgsl(&matmul_ast(32, 32, 8), mode, &FULL);
    assert_eq!(source.matches("array<vec4<f32>>").count(), 3, "{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn gemm_register_tile_staged_in_workgroup_memory() {
    // STAGE: each k step copies both factors' blocks (vector loads along k for A, along n for B)
    // into workgroup arrays of vec4, k rows outer; the tile reads its lanes as whole vectors
    let mode = OptMode::Given(vec![
        Opt::new(OptOps::Upcast, 0, 4),
        Opt::new(OptOps::Upcast, 1, 4),
        Opt::new(OptOps::Unroll, 0, 4),
        Opt::new(OptOps::Local, 1, 4),
        Opt::new(OptOps::Local, 0, 2),
        Opt::stage(),
    ]);
    let source = wgsl(&matmul_ast(32, 32, 8), mode, &FULL);
    for part in [
        "var<workgroup> tile_a: array<vec4<f32>, ",
        "var<workgroup> tile_b: array<vec4<f32>, ",
        "workgroupBarrier();",
    ] {
        assert!(source.contains(part), "{part} missing:\n{source}");
    }
    assert_eq!(source.matches("array<vec4<f32>>").count(), 3, "vector copies from every buffer:\n{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn gemm_register_tile_double_staged_in_workgroup_memory() {
    // STAGE with two blocks: step 0's blocks copied before the loop, then one barrier a step,
    // the step's reads from the half of its parity and the next step's copy into the other
    // (k = 16: two steps of 8)
    let mode = OptMode::Given(vec![
        Opt::new(OptOps::Upcast, 0, 4),
        Opt::new(OptOps::Upcast, 1, 4),
        Opt::new(OptOps::Unroll, 0, 8),
        Opt::new(OptOps::Local, 1, 4),
        Opt::new(OptOps::Local, 0, 2),
        Opt::double_stage(),
    ]);
    let source = wgsl(&matmul_ast(32, 32, 16), mode, &FULL);
    assert_eq!(source.matches("workgroupBarrier();").count(), 1, "one barrier a step:\n{source}");
    let (before, in_loop) = source.split_once("for (").expect("a reduce loop");
    assert!(
        before.contains("tile_a[") && before.contains("tile_b["),
        "the first copy before the loop:\n{source}"
    );
    let (barrier, after) = in_loop.split_once("workgroupBarrier();").expect("a barrier in the loop");
    assert!(!barrier.contains("tile_"), "the barrier opens the step:\n{source}");
    assert!(after.contains("] = "), "the next copy in the loop:\n{source}");
    // the next step's global loads open the step, ahead of the tiles' work on this one
    let first = |needle: &str| after.find(needle).unwrap_or(usize::MAX);
    let tiles = first("tile_a[").min(first("tile_b["));
    assert!(first("data1[") < tiles && first("data2[") < tiles, "the next loads first:\n{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn gemm_register_tile_interleaved_and_staged() {
    // a thread's 8 columns as two runs of 4, 16 columns apart (4 threads along n between):
    // the staged block keeps B's memory order, so the copies stay vec4 and a warp's reads of
    // it are neighbouring vec4s, `lidx0` and `lidx0 + 4`
    let mode = OptMode::Given(vec![
        Opt::new(OptOps::Upcast, 0, 4),
        Opt::new(OptOps::Upcast, 1, 4),
        Opt::new(OptOps::Unroll, 0, 8),
        Opt::new(OptOps::Local, 1, 4),
        Opt::new(OptOps::Upcast, 1, 2),
        Opt::new(OptOps::Local, 0, 2),
        Opt::double_stage(),
    ]);
    let source = wgsl(&matmul_ast(32, 32, 16), mode, &FULL);
    assert!(!source.contains("tile_b[(") && source.contains("tile_b[alu"), "vector copies of B:\n{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn vector_fallbacks() {
    let up4 = OptMode::Given(vec![Opt::new(OptOps::Upcast, 0, 4)]);
    let shifted = |by: i64| load(1, strided(&[64], &[1], by));
    // one buffer read as a vec4, a vec2 and scalars: declared scalar, the vectors put together
    let mixed = store_ast(st(&[64]), shifted(0) * shifted(1));
    insta::assert_snapshot!("vector_mixed_widths", wgsl(&mixed, up4.clone(), &FULL));
    // read as a vec4 and two vec2s: declared as vec2s, the vec4 put together from two
    let pairs = store_ast(st(&[64]), shifted(0) * shifted(2));
    let source = wgsl(&pairs, up4.clone(), &FULL);
    assert!(source.contains("data1: array<vec2<f32>>"), "{source}");
    insta::assert_snapshot!("vector_pairs", source);
    // a padded input whose four lanes share their gate: one gated vector load
    let pad = store_ast(st(&[64]), load(1, padded(st(&[56]), &[(4, 4)])) + 1.0f32);
    let source = wgsl(&pad, up4.clone(), &FULL);
    assert!(source.contains("vec4<f32>();"), "{source}");
    insta::assert_snapshot!("vector_gated", source);
    // f16 vectors on an adapter without f16: packed words, lane by lane
    let h = load_dt(DType::F16, 1, st(&[64]));
    let half = store_ast(st(&[64]), &h * &h);
    insta::assert_snapshot!("vector_half_packed", wgsl(&half, up4.clone(), &BARE));
    insta::assert_snapshot!("vector_half_native", wgsl(&half, up4, &FULL));
    // triples: an array of vec3 has a 16-byte stride, so they are put together from scalars
    let triples = Target { vector_widths: vec![1, 3], ..Target::generic_gpu() };
    let up3 = OptMode::Given(vec![Opt::new(OptOps::Upcast, 0, 3)]);
    let ast = store_ast(st(&[48]), load(1, st(&[48])) * 2.0f32);
    let source = render_valid(&compile(&ast, &triples, &up3, "kernel").unwrap().1, &FULL).source;
    assert!(source.contains("data1: array<f32>") && source.contains("vec3<f32>(data1["), "{source}");
}

/// A target with 16x16x16 f16 -> f32 cooperative matrices and subgroups of 32.
fn tensor_core_target() -> Target {
    let tc = TensorCoreShape { dims: (16, 16, 16), dtype_in: DType::F16, dtype_out: DType::F32 };
    Target { tensor_cores: vec![tc], shared_max: 32768, ..Target::generic_gpu() }
}

/// `C (64, 32) = A (64, 32) @ B (32, 32)` in f16 as `Tensor::matmul` builds it (f16 product,
/// f32 sum), `A` row-major, `B` stored transposed (columns contiguous), the sum stored as `out`.
fn half_matmul(out: DType) -> UOp {
    half_matmul_k(out, 32)
}

/// `(64, k) @ (k, 32)` in f16, summed in f32, stored as `out`.
fn half_matmul_k(out: DType, k: i64) -> UOp {
    let a = load_dt(DType::F16, 1, strided(&[64, 32, k], &[k, 0, 1], 0));
    let b = load_dt(DType::F16, 2, strided(&[64, 32, k], &[0, k, 1], 0));
    let sum = (&a * &b).cast(DType::F32).reduce_axis(Ops::Add, &[2]);
    store_ast(strided(&[64, 32, 1], &[32, 1, 0], 0), if out == DType::F32 { sum } else { sum.cast(out) })
}

fn tensor_core_wgsl(out: DType, caps: &WgslCaps) -> Result<String, wgrad_renderer_wgsl::RenderError> {
    tensor_core_wgsl_with(out, caps, vec![Opt::new(OptOps::Tc, 0, 0), Opt::new(OptOps::Upcast, 0, 2)])
}

fn tensor_core_wgsl_with(
    out: DType,
    caps: &WgslCaps,
    opts: Vec<Opt>,
) -> Result<String, wgrad_renderer_wgsl::RenderError> {
    tensor_core_wgsl_of(&half_matmul(out), caps, opts)
}

fn tensor_core_wgsl_of(
    ast: &UOp,
    caps: &WgslCaps,
    opts: Vec<Opt>,
) -> Result<String, wgrad_renderer_wgsl::RenderError> {
    let (_, program) =
        compile(ast, &tensor_core_target(), &OptMode::Given(opts), "kernel").expect("TC applies");
    let wgsl = wgrad_renderer_wgsl::render(&program, caps)?;
    wgrad_renderer_wgsl::validate(&wgsl.source, caps).unwrap_or_else(|e| panic!("{e}\n{}", wgsl.source));
    Ok(wgsl.source)
}

#[test]
fn tensor_core_tiles() {
    let source = tensor_core_wgsl(DType::F32, &COOP).expect("renders");
    for part in [
        "enable wgpu_cooperative_matrix;",
        "coopLoadT<coop_mat16x16<f16,A>>",
        "coopLoad<coop_mat16x16<f16,B>>",
    ] {
        assert!(source.contains(part), "{part} missing:\n{source}");
    }
    insta::assert_snapshot!(source);
}

#[test]
fn tensor_core_half_output() {
    insta::assert_snapshot!(tensor_core_wgsl(DType::F16, &COOP).expect("renders"));
}

#[test]
fn tensor_core_tiles_staged_in_workgroup_memory() {
    // 2x2 subgroups share the factors' blocks, copied with vector loads into padded rows
    let opts = vec![
        Opt::new(OptOps::Tc, 0, 0),
        Opt::new(OptOps::Local, 0, 2),
        Opt::new(OptOps::Local, 1, 2),
        Opt::new(OptOps::Unroll, 0, 2),
    ];
    let source = tensor_core_wgsl_with(DType::F32, &COOP, opts).expect("renders");
    for part in [
        "@workgroup_size(128, 1, 1)",
        "data1: array<vec4<f16>>",
        "var<workgroup> tca: array<f16, 1280>;",
        "coopLoadT<coop_mat16x16<f16,A>>(&tca[",
        "coopLoad<coop_mat16x16<f16,B>>(&tcb[",
    ] {
        assert!(source.contains(part), "{part} missing:\n{source}");
    }
    insta::assert_snapshot!(source);
}

#[test]
fn tensor_core_staged_copies_load_the_next_step_ahead() {
    // a reduce loop of 4 steps: each thread loads its run of the first step's blocks into a
    // register before the loop, copies it into workgroup memory after the step's first barrier,
    // and loads the next step's (the last step's again on the last step) after the second,
    // before the tiles multiply
    let opts = vec![Opt::new(OptOps::Tc, 0, 0), Opt::new(OptOps::Local, 0, 2), Opt::new(OptOps::Local, 1, 2)];
    let source = tensor_core_wgsl_of(&half_matmul_k(DType::F32, 64), &COOP, opts).expect("renders");
    assert!(source.contains("max(") && !source.contains("select("), "the next step is a min:\n{source}");
    let (before, body) = source.split_once("for (var ridx0").expect("a reduce loop");
    assert!(before.contains(": vec4<f16> = val0;"), "a register of the first step's run:\n{source}");
    let (copies, rest) = body
        .split_once("workgroupBarrier();")
        .and_then(|(_, b)| b.split_once("workgroupBarrier();"))
        .expect("two barriers");
    assert!(copies.contains("tca[") && !copies.contains("data1["), "the copies store registers:\n{source}");
    let (next, tiles) = rest.split_once("coopMultiplyAdd").expect("the tiles multiply");
    assert!(next.contains("data1[") && next.contains(" = val2;"), "the next step's loads first:\n{source}");
    assert!(!tiles.contains("data1["), "{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn tensor_core_epilogue_waits_for_its_own_subgroup_only() {
    // each subgroup finishes its tiles through its own part of workgroup memory: the
    // epilogue's barriers are subgroup barriers where the device has them, while the staged
    // copies, which every subgroup reads, keep workgroup barriers
    let opts = || {
        vec![
            Opt::new(OptOps::Tc, 0, 0),
            Opt::new(OptOps::Local, 0, 2),
            Opt::new(OptOps::Local, 1, 2),
            Opt::new(OptOps::Unroll, 0, 2),
        ]
    };
    let source = tensor_core_wgsl_with(DType::F32, &COOP, opts()).expect("renders");
    let (main_loop, epilogue) = source.split_once("coopStoreT(").expect("a tile store");
    assert!(
        main_loop.contains("workgroupBarrier();") && !main_loop.contains("subgroupBarrier();"),
        "{source}"
    );
    assert!(epilogue.contains("subgroupBarrier();") && !epilogue.contains("workgroupBarrier();"), "{source}");
    let without = WgslCaps { subgroup_barrier: false, ..COOP };
    let source = tensor_core_wgsl_with(DType::F32, &without, opts()).expect("renders");
    assert!(!source.contains("subgroupBarrier"), "no subgroup barriers without the feature:\n{source}");
    assert_eq!(
        source.matches("workgroupBarrier();").count(),
        main_loop.matches("Barrier();").count() + epilogue.matches("Barrier();").count()
    );
}

#[test]
fn tensor_core_epilogue_loads_its_bias_once_the_tiles_are_done() {
    // `x @ W + b` in halves: the bias loads of every tile's round are issued together after
    // the first tile's store, not each between the barriers of its own round
    let a = load_dt(DType::F16, 1, strided(&[64, 32, 32], &[32, 0, 1], 0));
    let b = load_dt(DType::F16, 2, strided(&[64, 32, 32], &[0, 32, 1], 0));
    let bias = load_dt(DType::F16, 3, strided(&[64, 32, 1], &[0, 1, 0], 0)).cast(DType::F32);
    let sum = (&a * &b).cast(DType::F32).reduce_axis(Ops::Add, &[2]);
    let ast = store_ast(strided(&[64, 32, 1], &[32, 1, 0], 0), (sum + bias).cast(DType::F16));
    let opts = vec![Opt::new(OptOps::Tc, 0, 0), Opt::new(OptOps::Upcast, 1, 2)];
    let (_, program) =
        compile(&ast, &tensor_core_target(), &OptMode::Given(opts), "kernel").expect("TC applies");
    let source = wgrad_renderer_wgsl::render(&program, &COOP).expect("renders").source;
    wgrad_renderer_wgsl::validate(&source, &COOP).unwrap_or_else(|e| panic!("{e}\n{source}"));
    let (_, epilogue) = source.split_once("coopStoreT(").expect("a tile store");
    let (first_round, _) = epilogue.split_once("coopStoreT(").expect("two tiles");
    assert_eq!(first_round.matches("data3[").count(), 2, "both rounds' bias loads first:\n{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn f16_results_convert_natively_where_the_device_rounds_to_nearest_even() {
    let ast = store_ast(st(&[64]), (load(1, st(&[64])) * 0.5f32).cast(DType::F16));
    let software = wgsl(&ast, OptMode::NoOpt, &FULL);
    assert!(software.contains("f16(round_f16("), "{software}");
    for rounding in [F16Rounding::Native, F16Rounding::Stores] {
        let native = wgsl(&ast, OptMode::NoOpt, &WgslCaps { f16_rounding: rounding, ..FULL });
        assert!(native.contains("f16(alu0)") && !native.contains("round_f16"), "{native}");
    }
}

#[test]
fn f16_results_used_in_registers_round_in_software_where_only_stores_round() {
    // the half goes on in f32 (a compiler may fold `f32(f16(x))`), and is stored as well
    let half = (load(1, st(&[64])) * 0.5f32).cast(DType::F16);
    let ast = UOp::sink([
        UOp::store([UOp::define_global(DType::F32, 0), UOp::view(st(&[64])), half.cast(DType::F32) + 1.0f32]),
        UOp::store([UOp::define_global(DType::F16, 2), UOp::view(st(&[64])), half]),
    ]);
    let stores = WgslCaps { f16_rounding: F16Rounding::Stores, ..FULL };
    let source = wgsl(&ast, OptMode::NoOpt, &stores);
    assert!(source.contains("f16(round_f16("), "{source}");
    let native = wgsl(&ast, OptMode::NoOpt, &WgslCaps { f16_rounding: F16Rounding::Native, ..FULL });
    assert!(!native.contains("round_f16"), "{native}");
    // four lanes stored as one vector still convert natively
    let ast = store_ast(st(&[64]), (load(1, st(&[64])) * 0.5f32).cast(DType::F16));
    let vectors = wgsl(&ast, OptMode::Given(vec![Opt::new(OptOps::Upcast, 0, 4)]), &stores);
    assert!(vectors.contains("vec4<f16>(") && !vectors.contains("round_f16"), "{vectors}");
}

#[test]
fn tensor_cores_need_the_adapter_feature() {
    let e = tensor_core_wgsl(DType::F32, &FULL).expect_err("refused without cooperative matrices");
    assert!(e.to_string().contains("EXPERIMENTAL_COOPERATIVE_MATRIX"), "{e}");
}

#[test]
fn embedding_gather() {
    // the one-hot reduce of an embedding: one load of the id, the row's 4 lanes as one vector
    // load gated by 0 <= id < vocab (ids outside the table read nothing and give zeros)
    let source = wgsl(&ast::embedding_ast(8, 1000, 64), OptMode::Heuristic, &FULL);
    assert!(!source.contains("loop"), "{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn nan_test_and_integer_max() {
    // `x != x` is rendered from the bits and an integer max as a select (device compilers fold
    // `x == x` to true, and NVIDIA's drops an operand of the max builtin over vector lanes)
    let x = load(1, st(&[16]));
    let (a, b) = (load_dt(DType::I32, 2, st(&[16])), load_dt(DType::I32, 3, st(&[16])));
    let nan = x.cmp_ne(&x).where_(&a.maximum(&b), &a);
    let ast = store_ast(st(&[16]), nan);
    let source = wgsl(&ast, OptMode::NoOpt, &FULL);
    assert!(source.contains("is_nan(") && !source.contains("max("), "{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn nan_checks_only_where_a_comparison_is_a_min_or_max() {
    // `select(y, x, x < y)` is a min that device compilers may turn into their NaN-ignoring
    // builtin, so its comparison checks both operands for NaN; the comparison of an absolute
    // value (`select(x, -x, x < 0)`) chooses between other values and stays a plain `<`
    let (x, y) = (load(1, st(&[16])), load(2, st(&[16])));
    let min = x.cmp_lt(&y).where_(&x, &y);
    let abs = x.cmp_lt(0.0f32).where_(&-&x, &x);
    let source = wgsl(&store_ast(st(&[16]), &min + &abs), OptMode::NoOpt, &FULL);
    assert_eq!(source.matches("!is_nan(").count(), 2, "{source}");
    insta::assert_snapshot!(source);
}

#[test]
fn reciprocals_of_values_that_cannot_be_zero_check_only_infinities() {
    // `1 + exp2(x)` (a sigmoid's) and `1 + |x| c` (erf's) are never zero; `x` may be
    let x = load(1, st(&[16]));
    let abs = x.cmp_lt(0.0f32).where_(&(&x * -1.0f32), &x);
    let sigmoid = (&x.alu(Ops::Exp2, &[]) + 1.0f32).alu(Ops::Recip, &[]);
    let erf = (&(&abs * 0.3f32) + 1.0f32).alu(Ops::Recip, &[]);
    let plain = x.alu(Ops::Recip, &[]);
    let source = wgsl(&store_ast(st(&[16]), &(&sigmoid + &erf) + &plain), OptMode::NoOpt, &FULL);
    assert_eq!(source.matches("nonzero_recip(").count(), 3, "{source}");
    assert_eq!(source.matches("safe_recip(").count(), 2, "{source}");
    insta::assert_snapshot!(source);
}
