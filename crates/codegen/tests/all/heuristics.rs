//! The opts `hand_coded_optimizations` picks for typical kernels, as tinygrad v0.10 would.

use crate::common;

use common::*;
use wgrad_codegen::{Kernel, Opt, OptOps, Target, TensorCoreShape, hand_coded_optimizations};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};

fn optimized(ast: &UOp, target: Target) -> Kernel {
    let mut k = Kernel::new(ast, target).unwrap();
    hand_coded_optimizations(&mut k);
    k
}

use OptOps::*;

fn opts(list: &[(OptOps, usize, usize)]) -> Vec<Opt> {
    list.iter().map(|&(op, axis, arg)| opt(op, axis, arg)).collect()
}

#[test]
fn matmul_upcasts_broadcasts_unrolls_and_locals() {
    let k = optimized(&matmul_ast(64, 64, 64), Target::generic_gpu());
    // the last axis's local first: it is the fastest thread id
    let want = [(Upcast, 1, 4), (Upcast, 0, 4), (Unroll, 0, 4), (Local, 1, 16), (Local, 0, 8)];
    assert_eq!(k.applied_opts(), opts(&want));
    assert_eq!(k.describe(), "(2 | 16, 8 | 16 | 4, 4 | 4) global/local/reduce/upcast/unroll");
}

#[test]
fn matmul_tiles_respect_the_target() {
    // a CPU-like target wants few threads: a register tile (8x8 leaves 64 threads, a quarter of
    // its 256), no workgroup
    let none = optimized(&matmul_ast(64, 64, 64), Target::no_locals());
    assert_eq!(none.applied_opts(), opts(&[(Upcast, 0, 8), (Upcast, 1, 8), (Unroll, 0, 8)]));
    let tiny = optimized(&matmul_ast(64, 64, 64), Target::tiny());
    assert_eq!(tiny.upcasted(), 4, "m, n by 4, the unroll, n by 2: {}", tiny.describe());
    assert!(tiny.local_size() <= 8);
    // a big GPU keeps tinygrad's rules for a matmul too small to fill it with tiles
    let gpu = optimized(&matmul_ast(64, 64, 64), Target::generic_gpu());
    assert_eq!(gpu.applied_opts()[..2], opts(&[(Upcast, 1, 4), (Upcast, 0, 4)]));
}

#[test]
fn matvec_groups_locals_and_upcasts() {
    let k = optimized(&matvec_ast(256, 512), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Group, 0, 8), (Local, 0, 4), (Upcast, 0, 4)]));
    assert_eq!(k.describe(), "(16 | 4 | 8 | 64 | 4) global/local/group/reduce/upcast");
}

#[test]
fn row_sum_reads_runs_of_8_in_a_group_just_wide_enough() {
    // 4096 rows x 32 threads = the 1 << 17 threads the target wants
    let k = optimized(&sum_ast(&[4096, 8192], &[1]), big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 32)]));
    assert_eq!(k.describe(), "(4096 | 32 | 32 | 8) global/group/reduce/unroll");
    // fewer rows, wider groups
    // fewer rows, wider groups; a thread's 4 steps of 8 are unrolled, all its loads in flight
    let few = optimized(&sum_ast(&[256, 8192], &[1]), big_gpu());
    assert_eq!(few.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 256), (Unroll, 1, 0)]));
}

#[test]
fn column_sum_spreads_neighbouring_columns_over_threads_and_groups_rows() {
    let k = optimized(&sum_ast(&[4096, 8192], &[0]), big_gpu());
    // each thread reads 4 neighbouring columns as one 16-byte load a row, 16 rows a step; a
    // group of 32 leaves room for 8 columns in a workgroup of 256
    assert_eq!(k.applied_opts(), opts(&[(Upcast, 0, 4), (Local, 0, 8), (Group, 0, 32), (Unroll, 1, 16)]));
    assert_eq!(k.describe(), "(256 | 8 | 32 | 8 | 4 | 16) global/local/group/reduce/upcast/unroll");
    // without 4-wide vectors, one column a thread
    let scalar = optimized(&sum_ast(&[4096, 8192], &[0]), Target { vector_widths: vec![1], ..big_gpu() });
    assert_eq!(scalar.applied_opts(), opts(&[(Local, 0, 8), (Group, 0, 32), (Unroll, 1, 16)]));
    // fewer columns take the widest group and 4 columns a workgroup, never 1024 threads; a
    // thread's rows are unrolled whole when few
    let few = optimized(&sum_ast(&[512, 1024], &[0]), big_gpu());
    assert_eq!(few.applied_opts(), opts(&[(Upcast, 0, 4), (Local, 0, 4), (Group, 0, 64), (Unroll, 1, 0)]));
    let long = optimized(&sum_ast(&[16384, 384], &[0]), big_gpu());
    assert_eq!(long.applied_opts(), opts(&[(Upcast, 0, 4), (Local, 0, 4), (Group, 0, 64), (Unroll, 1, 16)]));
}

#[test]
fn short_column_sums_with_few_outputs_are_grouped() {
    // a mean pooling's sum over 128 tokens of 128 x 384 states: 49152 outputs leave most of
    // the target idle with one thread each (or with tinygrad's upcasts, a twelfth of that)
    let k = optimized(&sum_ast(&[128, 128, 384], &[1]), big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Upcast, 1, 4), (Local, 1, 16), (Group, 0, 8), (Unroll, 1, 0)]));
    // a short row reduce, or as many outputs as the target's threads, stays ungrouped
    let row = optimized(&sum_ast(&[128, 384, 128], &[2]), big_gpu());
    assert_eq!(row.group_for_reduces(), 0, "{}", row.describe());
    let many = optimized(&sum_ast(&[128, 128, 768], &[1]), big_gpu());
    assert_eq!(many.group_for_reduces(), 0, "{}", many.describe());
}

#[test]
fn full_reduction_groups_after_the_unroll() {
    // every thread keeps four steps of its own (4096 / 8 / 128 = 4), unrolled
    let k = optimized(&sum_ast(&[4096], &[0]), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 128), (Unroll, 1, 0)]));
    assert_eq!(k.describe(), "(128 | 8, 4) group/unroll");
    let k = optimized(&sum_ast(&[64, 1024], &[1]), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 32), (Unroll, 1, 0)]));
}

#[test]
fn softmax_reductions_are_grouped_and_normalize_is_vectorized() {
    let (rows, cols) = (4096, 8192);
    let x = || load(1, st(&[rows, cols]));
    let max = load(2, strided(&[rows, cols], &[1, 0], 0));
    let max_k = optimized(&sum_ast(&[rows, cols], &[1]), big_gpu());
    assert_eq!(max_k.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 32)]));
    let exp = (x() + -max).exp2().reduce_axis(Ops::Add, &[1]);
    let exp_sum = optimized(&store_ast(st(&[rows, 1]), exp), big_gpu());
    assert_eq!(exp_sum.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 32)]));
    let sum = load(3, strided(&[rows, cols], &[1, 0], 0));
    let normalize = optimized(&store_ast(st(&[rows, cols]), x() * sum), big_gpu());
    assert_eq!(normalize.applied_opts()[0], opt(Upcast, 1, 4), "16-byte loads and stores along a row");
}

#[test]
fn logsumexp_rows_take_the_widest_group_where_partials_meet_in_subgroups() {
    let lse = |rows: i64, cols: i64| {
        let x = load(1, st(&[rows, cols]));
        let max = x.reduce_axis(Ops::Max, &[1]);
        store_ast(st(&[rows, 1]), (&x - &max).exp2().reduce_axis(Ops::Add, &[1]).log2() + max)
    };
    let subgroups = || Target { subgroup_ops: true, ..big_gpu() };
    // every thread reads all partials back: the group just wide enough
    let plain = optimized(&lse(4096, 8192), big_gpu());
    assert_eq!(plain.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 32)]));
    // partials combined in subgroups: few rows in flight; a thread's 4 steps are unrolled, so
    // the two reduces share its loads
    let wide = optimized(&lse(4096, 8192), subgroups());
    assert_eq!(wide.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 256), (Unroll, 1, 0)]));
    assert!(wide.subgroup_partials());
    // narrower where a thread would run fewer than four steps
    let short = optimized(&lse(4096, 1024), subgroups());
    assert_eq!(short.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 32), (Unroll, 1, 0)]));
    // a lone reduce keeps the group that brings the threads up to the target's parallelism
    let sum = optimized(&sum_ast(&[4096, 8192], &[1]), subgroups());
    assert_eq!(sum.applied_opts(), opts(&[(Unroll, 0, 8), (Group, 0, 32)]));
    // a column sum's workgroup holds several outputs: its partials stay per invocation
    let columns = optimized(&sum_ast(&[4096, 8192], &[0]), subgroups());
    assert!(!columns.subgroup_partials(), "{}", columns.describe());
}

#[test]
fn rows_narrower_than_a_subgroup_share_workgroups() {
    // 2048 rows of 384 (too few for one pass): groups of 16, 8 rows a workgroup of 128
    let k = optimized(&sum_ast(&[2048, 384], &[1]), big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Unroll, 0, 4), (Group, 0, 16), (Unroll, 1, 0), (Local, 0, 8)]));
    assert_eq!(k.local_size(), 128, "{}", k.describe());
}

#[test]
fn layer_norm_rows_are_read_in_one_pass() {
    // MiniLM's layer norms: 16384 rows of 384, 64 threads a row, each reading a run of 6 of
    // each of its 4 rows with every load unrolled
    let k = optimized(&sum_ast(&[16384, 384], &[1]), big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Grouptop, 0, 64), (Unroll, 1, 0), (Upcast, 0, 4)]));
    // rows of 2048 loop as before, and so do rows a thread can have to itself
    let long = optimized(&sum_ast(&[16384, 2048], &[1]), big_gpu());
    assert!(!long.applied_opts().contains(&opt(Grouptop, 0, 64)), "{}", long.describe_opts());
    let many = optimized(&sum_ast(&[262144, 384], &[1]), big_gpu());
    assert!(!many.applied_opts().contains(&opt(Grouptop, 0, 64)), "{}", many.describe_opts());
    // a layer norm's statistics in one kernel (the mean nested in the variance): the same
    // plan, whose unrolled loads the two reduces share
    let x = load(1, st(&[16384, 384]));
    let sum = x.reduce_axis(Ops::Add, &[1]);
    let mean = &sum * &sum.const_like(1.0 / 384.0);
    let centered = &x - &mean;
    let var = store_ast(st(&[16384, 1]), (&centered * &centered).reduce_axis(Ops::Add, &[1]));
    let k = optimized(&var, big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Grouptop, 0, 64), (Unroll, 1, 0), (Upcast, 0, 4)]));
}

#[test]
fn many_short_rows_take_four_threads_a_row_and_unroll_every_load() {
    // the attention softmax of MiniLM: 196608 rows of 128 keys, a max then a sum of exponentials
    let x = load(1, st(&[128, 12, 128, 128]));
    let max = x.reduce_axis(Ops::Max, &[3]);
    let softmax = store_ast(st(&[128, 12, 128, 1]), (&x - &max).exp2().reduce_axis(Ops::Add, &[3]) + max);
    let k = optimized(&softmax, big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Local, 0, 8), (Unroll, 0, 4), (Group, 0, 4), (Unroll, 1, 0)]));
    assert_eq!(k.local_size(), 32, "{}", k.describe());
    // with its key mask (by batch and key) the axes do not merge: the workgroup's 8 rows are
    // neighbours in memory (8 queries), not 8 batches apart
    let keys = load_dt(DType::BOOL, 2, strided(&[128, 12, 128, 128], &[128, 0, 0, 1], 0));
    let x = keys.where_(&x, &UOp::constant(DType::F32, f32::NEG_INFINITY));
    let max = x.reduce_axis(Ops::Max, &[3]);
    let masked = store_ast(st(&[128, 12, 128, 1]), (&x - &max).exp2().reduce_axis(Ops::Add, &[3]) + max);
    let k = optimized(&masked, big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Local, 1, 8), (Unroll, 0, 4), (Group, 0, 4), (Unroll, 1, 0)]));
    // rows of 64: one step of 4 a thread
    let short = optimized(&sum_ast(&[1 << 18, 64], &[1]), big_gpu());
    assert_eq!(short.applied_opts(), opts(&[(Local, 0, 8), (Unroll, 0, 4), (Group, 0, 4), (Unroll, 1, 0)]));
    // rows of 32 are too short to share; 200 does not split into 4 threads of 4-wide steps
    for cols in [32, 200] {
        let plain = optimized(&sum_ast(&[1 << 18, cols], &[1]), big_gpu());
        assert_eq!(plain.group_for_reduces(), 0, "{}", plain.describe());
    }
}

#[test]
fn few_short_rows_are_grouped_but_many_are_not() {
    // 32 rows of 64 (a batch norm's second stage): 16 threads a row, each 4 neighbours
    // unrolled, 8 rows a workgroup
    let few = optimized(&sum_ast(&[32, 64], &[1]), big_gpu());
    assert_eq!(few.describe(), "(4 | 8 | 16 | 4) global/local/group/unroll", "{}", few.describe_opts());
    // rows of 64 enough to fill the target at 256 threads a row keep a thread a row
    let many = optimized(&sum_ast(&[2048, 64], &[1]), big_gpu());
    assert_eq!(many.group_for_reduces(), 0, "{}", many.describe());
}

#[test]
fn odd_reduce_lengths_group_what_divides_or_stay_plain() {
    // 400 = 16 * 25: grouped by 16 without the unroll (100 is no multiple of a group size),
    // 8 rows a workgroup so that it fills whole subgroups
    let k = optimized(&sum_ast(&[64, 400], &[1]), big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Group, 0, 16), (Unroll, 1, 0), (Local, 0, 8)]));
    // a prime length cannot be grouped: tinygrad's rules apply
    let prime = optimized(&sum_ast(&[64, 8191], &[1]), big_gpu());
    assert_eq!(prime.group_for_reduces(), 0);
    let none = optimized(&sum_ast(&[4096, 8192], &[1]), Target::no_locals());
    assert_eq!(none.group_for_reduces(), 0, "no workgroup memory, no group");
}

#[test]
fn axes_no_power_of_two_divides_group_by_a_divisor_near_the_wanted_group() {
    // 8192 outputs, each a sum over 2 x 20 x 20 positions read transposed by a second buffer
    // (the axes cannot merge, no axis is a row): one axis of 20 is grouped whole
    let shape = [8192, 2, 20, 20];
    let a = load(1, strided(&shape, &[800, 400, 20, 1], 0));
    let b = load(2, strided(&shape, &[800, 400, 1, 20], 0));
    let k = optimized(&store_ast(st(&[8192, 1, 1, 1]), (a * b).reduce_axis(Ops::Add, &[1, 2, 3])), big_gpu());
    assert_eq!(k.group_for_reduces(), 1, "{}", k.describe());
    assert_eq!(k.applied_opts().first(), Some(&opt(Group, 2, 20)), "{}", k.describe_opts());
}

#[test]
fn few_outputs_take_the_widest_group_and_unroll_what_a_thread_has_left() {
    // a batch norm's statistics over 512 images of 6 x 6 (64 channels, 36 neighbouring floats
    // an image): 256 threads a channel, each reading 2 images with every load unrolled (BEAM's
    // pick on an H100: 129 -> 16 us for the variance; 128 threads looping over 4 x 36 before)
    let bn = load(1, strided(&[64, 512, 36], &[36, 2304, 1], 0));
    let k = optimized(&store_ast(st(&[64, 1, 1]), bn.reduce_axis(Ops::Add, &[1, 2])), big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Group, 0, 256), (Unroll, 2, 12), (Unroll, 2, 0), (Unroll, 1, 0)]));
    assert_eq!(k.describe(), "(64 | 256 | 12, 3, 2) global/group/unroll");
    // a thread left with more than 128 steps keeps its loop
    let long = load(1, strided(&[64, 512, 144], &[144, 9216, 1], 0));
    let k = optimized(&store_ast(st(&[64, 1, 1]), long.reduce_axis(Ops::Add, &[1, 2])), big_gpu());
    assert!(k.describe().contains("reduce"), "{}", k.describe_opts());
}

#[test]
fn a_narrow_group_shares_its_workgroup_with_rows_neighbouring_in_memory() {
    // a batch norm's first stage over 32 channels x 256 images (a channel's 20 x 20 plane
    // contiguous, images 32 planes apart) and 2 halves of the batch: groups of 20 along the
    // rows, 4 channels a workgroup (neighbouring planes) rather than 4 images
    let shape = [32, 256, 20, 2, 20];
    let x = load(1, strided(&shape, &[400, 12800, 20, 3276800, 1], 0));
    let k = optimized(&store_ast(st(&[32, 256, 1, 1, 1]), x.reduce_axis(Ops::Add, &[2, 3, 4])), big_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Group, 2, 20), (Unroll, 2, 0), (Unroll, 1, 0), (Local, 0, 4)]));
}

#[test]
fn large_gemm_gets_an_8x8_register_tile_and_a_16x8_workgroup() {
    // both factors staged in workgroup memory, double-buffered; a thread's 8 columns are two
    // runs of 4, 64 columns apart (the 16 threads along n in between)
    let k = optimized(&matmul_ast(4096, 4096, 4096), big_gpu());
    let want =
        [(Upcast, 0, 8), (Upcast, 1, 4), (Unroll, 0, 8), (Local, 1, 16), (Upcast, 1, 2), (Local, 0, 8)];
    assert_eq!(k.applied_opts(), [opts(&want), vec![Opt::double_stage()]].concat());
    assert_eq!(
        k.describe(),
        "(64, 32 | 16, 8 | 512 | 8, 4 | 8 | 2) global/local/reduce/upcast/unroll/upcast"
    );
}

#[test]
fn gemm_with_the_second_factor_contiguous_along_k_tiles_as_any_gemm() {
    // `x @ W.T`: W is (n, k) row-major; staged, it takes the same workgroup and interleave
    let (m, n, k) = (4096, 4096, 4096);
    let a = load(1, strided(&[m, n, k], &[k, 0, 1], 0));
    let w = load(2, strided(&[m, n, k], &[0, k, 1], 0));
    let ast = store_ast(st(&[m, n, 1]), (a * w).reduce_axis(Ops::Add, &[2]));
    let tiled = optimized(&ast, big_gpu());
    let plain = optimized(&matmul_ast(m, n, k), big_gpu());
    assert_eq!(tiled.applied_opts(), plain.applied_opts(), "{}", tiled.describe());
}

#[test]
fn an_unstaged_gemm_with_the_second_factor_contiguous_along_k_puts_the_workgroup_along_m() {
    // `x @ W.T` with 1001 columns: padded to 1008, its masked blocks cannot be staged, so
    // neighbouring threads along n would read different rows of W: 4 along n, 32 along m
    let (m, n, k) = (4096, 1001, 4096);
    let a = load(1, strided(&[m, n, k], &[k, 0, 1], 0));
    let w = load(2, strided(&[m, n, k], &[0, k, 1], 0));
    let tiled = optimized(&store_ast(st(&[m, n, 1]), (a * w).reduce_axis(Ops::Add, &[2])), big_gpu());
    let opts = tiled.applied_opts();
    assert!(!opts.iter().any(|o| o.op == Stage), "{}", tiled.describe_opts());
    let along_n = opts.iter().filter(|o| o.op == Local && o.axis == Some(1)).map(|o| o.arg).max();
    assert!(along_n <= Some(4) && opts.contains(&opt(Local, 0, 32)), "{}", tiled.describe_opts());
    assert!(opts.contains(&opt(Upcast, 1, 8)), "not interleaved: {}", tiled.describe_opts());
}

#[test]
fn a_tile_of_at_most_4_columns_is_not_interleaved() {
    let k = optimized(&matmul_ast(1024, 1024, 1024), big_gpu());
    assert!(!k.applied_opts().iter().any(|o| *o == opt(Upcast, 1, 2)), "{}", k.describe_opts());
}

#[test]
fn smaller_gemm_takes_a_smaller_tile_to_keep_threads() {
    // an 8x8 tile would leave 16384 threads for a 1024^2 output, under a quarter of the
    // target's 1 << 17: the tile shrinks to 8x4 (32768 threads; 8x4 before 4x8)
    let k = optimized(&matmul_ast(1024, 1024, 1024), big_gpu());
    let want = [(Upcast, 0, 8), (Upcast, 1, 4), (Unroll, 0, 8), (Local, 1, 16), (Local, 0, 8)];
    assert_eq!(k.applied_opts(), [opts(&want), vec![Opt::double_stage()]].concat());
    // fewer outputs still: 4x4 (a 1024x512 output, 32768 threads)
    let small = optimized(&matmul_ast(1024, 512, 2048), big_gpu());
    assert_eq!(small.applied_opts()[..2], opts(&[(Upcast, 0, 4), (Upcast, 1, 4)]));
    // odd sizes take the tile that divides them
    let odd = optimized(&matmul_ast(1000, 1020, 999), big_gpu());
    assert_eq!(odd.upcasted(), 2, "{}", odd.describe());
    assert!(odd.local_size() > 1, "{}", odd.describe());
}

#[test]
fn small_reduce_axes_are_unrolled() {
    let x = load(1, strided(&[64, 64, 3, 3], &[576, 9, 1, 3], 0));
    let k =
        optimized(&store_ast(st(&[64, 64, 1, 1]), x.reduce_axis(Ops::Add, &[2, 3])), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Unroll, 1, 0), (Unroll, 0, 0), (Local, 0, 32)]));
    assert_eq!(k.describe(), "(128 | 32 | 3, 3) global/local/unroll");
}

#[test]
fn large_reduce_axis_is_unrolled_by_4() {
    let k = optimized(&sum_ast(&[4096, 64], &[1]), Target::generic_gpu());
    assert_eq!(
        k.applied_opts(),
        opts(&[(Unroll, 0, 4), (Local, 0, 256)]),
        "nothing more is upcast once unrolled, and a thread holding one vector gets a wide workgroup"
    );
}

#[test]
fn elementwise_upcasts_the_broadcast_axis() {
    let a = load(1, strided(&[64, 64], &[1, 0], 0));
    let b = load(2, st(&[64, 64]));
    let k = optimized(&store_ast(st(&[64, 64]), a + b), Target::generic_gpu());
    // a thread holds one vector: a wide workgroup
    assert_eq!(k.applied_opts(), opts(&[(Upcast, 1, 4), (Local, 1, 16), (Local, 0, 16)]));
    assert_eq!(k.describe(), "(4 | 16, 16 | 4) global/local/upcast");
}

#[test]
fn a_contiguous_broadcast_axis_is_upcast_by_a_vector() {
    // a layer norm's normalize: rows of 384 (divisible by 3 and 4) minus a per-row mean
    let x = load(1, st(&[16384, 384]));
    let mean = load(2, strided(&[16384, 384], &[1, 0], 0));
    let ast = store_ast(st(&[16384, 384]), x - mean);
    let k = optimized(&ast, Target::generic_gpu());
    assert_eq!(k.applied_opts()[0], opt(Upcast, 1, 4), "{}", k.describe_opts());
    // without 4-wide vectors tinygrad's order holds: 3 first
    let scalar = optimized(&ast, Target { vector_widths: vec![1], ..Target::generic_gpu() });
    assert_eq!(scalar.applied_opts()[0], opt(Upcast, 1, 3), "{}", scalar.describe_opts());
}

#[test]
fn contiguous_elementwise_is_upcast_for_vectors_and_widened_without() {
    let ast = store_ast(st(&[4096]), load(1, st(&[4096])) + load(2, st(&[4096])));
    let vectors = optimized(&ast, Target::generic_gpu());
    assert_eq!(vectors.applied_opts(), opts(&[(Upcast, 0, 4), (Local, 0, 256)]));
    // scalar lanes would only break up coalesced loads: no upcast, a 256-thread workgroup
    let scalar = optimized(&ast, Target { vector_widths: vec![1], ..Target::generic_gpu() });
    assert_eq!(scalar.applied_opts(), opts(&[(Local, 0, 256)]));
    assert_eq!(scalar.describe(), "(16 | 256) global/local");
}

#[test]
fn masked_small_axes_are_upcast_whole() {
    let x = load(1, padded(st(&[3, 256]), &[(0, 1), (0, 0)]));
    let k = optimized(&store_ast(st(&[4, 256]), x), Target::generic_gpu());
    assert_eq!(k.applied_opts(), opts(&[(Upcast, 0, 0), (Local, 0, 256)]));
    assert_eq!(k.describe(), "(256 | 4) local/upcast");
}

#[test]
fn prime_gemm_sizes_are_padded_to_a_tile() {
    let k = optimized(&matmul_ast(1021, 1021, 1021), big_gpu());
    assert_eq!(k.applied_opts()[..2], opts(&[(Padto, 0, 16), (Padto, 1, 16)]), "{}", k.describe_opts());
    assert_eq!(k.upcasted(), 2, "a tile, no unroll of a prime k: {}", k.describe());
    assert!(k.local_size() >= 64, "{}", k.describe());
}

#[test]
fn no_lone_upcast_where_no_buffer_is_contiguous() {
    // out^T = a^T: both walk the last axis 64 elements apart, lanes there could not be vectors
    let transposed = || strided(&[64, 64], &[1, 64], 0);
    let k = optimized(&store_ast(transposed(), load(1, transposed()) * 2.0f32), Target::generic_gpu());
    assert_eq!(k.upcasted(), 0, "{}", k.describe_opts());
}

#[test]
fn one_hot_reduces_get_only_output_opts() {
    // a vocabulary of 32000 (which an unroll by 4 divides) with few outputs (which a group would
    // fill): the reduce collapses into loads when lowered, so it stays a plain loop and only the
    // output axes (tokens, dim) get opts, as for an elementwise kernel
    let few = optimized(&embedding_ast(2, 32000, 64), Target::generic_gpu());
    assert_eq!(few.applied_opts(), opts(&[(Upcast, 1, 4), (Local, 1, 16), (Local, 0, 2)]));
    let many = optimized(&embedding_ast(4096, 32000, 64), Target::generic_gpu());
    let want = [(Upcast, 1, 4), (Upcast, 0, 4), (Local, 1, 16), (Local, 0, 8)];
    assert_eq!(many.applied_opts(), opts(&want));
    // a plain long sum with few outputs is grouped as before
    let sum = optimized(&sum_ast(&[2, 32000], &[1]), Target::generic_gpu());
    assert!(sum.applied_opts().iter().any(|o| o.op == Group), "{}", sum.describe_opts());
}

#[test]
fn a_skinny_product_takes_rows_together_and_groups_its_reduce() {
    // `x @ W.T` for 16 rows (a one-sentence forward's projections): W (n, k) read once per 4
    // rows, 2 columns a thread, the reduce split into runs of neighbours by a group that
    // brings the threads to the target's parallelism, each run unrolled
    let xwt = |m: i64, n: i64, k: i64| {
        let x = load(1, strided(&[m, n, k], &[k, 0, 1], 0));
        let w = load(2, strided(&[m, n, k], &[0, k, 1], 0));
        store_ast(st(&[m, n, 1]), (x * w).reduce_axis(Ops::Add, &[2]))
    };
    let qkv = optimized(&xwt(16, 1152, 384), big_gpu());
    assert_eq!(
        qkv.applied_opts(),
        opts(&[(Grouptop, 0, 64), (Upcast, 0, 4), (Upcast, 1, 2), (Unroll, 1, 0)])
    );
    // a longer reduce over fewer outputs, a wider group
    let down = optimized(&xwt(16, 384, 1536), big_gpu());
    assert_eq!(down.applied_opts()[..3], opts(&[(Grouptop, 0, 256), (Upcast, 0, 4), (Upcast, 1, 2)]));
    // rows that 4 does not divide, or outputs enough for a thread each, keep the row plans
    for (m, n) in [(10, 1152), (256, 1152)] {
        let k = optimized(&xwt(m, n, 384), big_gpu());
        assert!(!k.applied_opts().contains(&opt(Grouptop, 0, 64)), "{m} rows: {}", k.describe());
    }
    // in half precision with tensor cores: a short reduce keeps its tiles, a long one over
    // too few output tiles is grouped instead
    let half = |m: i64, n: i64, k: i64| {
        let x = load_dt(DType::F16, 1, strided(&[m, n, k], &[k, 0, 1], 0));
        let w = load_dt(DType::F16, 2, strided(&[m, n, k], &[0, k, 1], 0));
        store_ast(st(&[m, n, 1]), (x * w).cast(DType::F32).reduce_axis(Ops::Add, &[2]))
    };
    let tc = TensorCoreShape { dims: (16, 16, 16), dtype_in: DType::F16, dtype_out: DType::F32 };
    let gpu = Target { tensor_cores: vec![tc], subgroup_ops: true, ..big_gpu() };
    let short = optimized(&half(16, 1152, 384), gpu.clone());
    assert_eq!(short.applied_opts()[0], opt(Tc, 0, 0), "{}", short.describe());
    let long = optimized(&half(16, 384, 1536), gpu.clone());
    assert_eq!(long.applied_opts()[..3], opts(&[(Grouptop, 0, 256), (Upcast, 0, 4), (Upcast, 1, 2)]));
    // a long reduce over many output tiles keeps them
    let big = optimized(&half(1024, 1024, 1024), gpu);
    assert_eq!(big.applied_opts()[0], opt(Tc, 0, 0), "{}", big.describe());
}

#[test]
fn a_batch_of_narrow_products_keeps_each_workgroup_in_one_matrix() {
    // (1536 x 128 x 128) @ (1536 x 128 x 32), as attention's `P @ V`: 8x8 would leave 4
    // threads along n and 16 along m, 64 of a workgroup's 128, and spread it over two
    // matrices; 8x4 fills it within one
    let (b, m, n, k) = (1536, 128, 32, 128);
    let p = load(1, strided(&[b, m, n, k], &[m * k, k, 0, 1], 0));
    let v = load(2, strided(&[b, m, n, k], &[k * n, 0, 1, n], 0));
    let kernel = optimized(&store_ast(st(&[b, m, n, 1]), (p * v).reduce_axis(Ops::Add, &[3])), big_gpu());
    let want = [(Upcast, 1, 8), (Upcast, 2, 4), (Unroll, 0, 8), (Local, 2, 8), (Local, 1, 16)];
    assert_eq!(kernel.applied_opts(), [opts(&want), vec![Opt::double_stage()]].concat());
    // 64 columns fill it with the 8x8 tile
    let wide = load(2, strided(&[b, m, 64, k], &[k * 64, 0, 1, 64], 0));
    let p = load(1, strided(&[b, m, 64, k], &[m * k, k, 0, 1], 0));
    let kernel = optimized(&store_ast(st(&[b, m, 64, 1]), (p * wide).reduce_axis(Ops::Add, &[3])), big_gpu());
    assert_eq!(kernel.applied_opts()[..2], opts(&[(Upcast, 1, 8), (Upcast, 2, 4)]));
    assert!(kernel.applied_opts().contains(&opt(Upcast, 2, 2)), "{}", kernel.describe_opts());
}

#[test]
fn a_factor_computed_from_loads_is_staged_as_its_principal_load_would_be() {
    // attention's `P @ V` reading the scores `s` and each row's `lse` instead of P:
    // exp2(s - lse) is staged whole (the copy computes it, once per element of the block), so
    // the kernel takes the tile and workgroup a `P @ V` of loads takes
    let (b, m, n, k) = (1536, 128, 32, 128);
    let s = load(1, strided(&[b, m, n, k], &[m * k, k, 0, 1], 0));
    let lse = load(2, strided(&[b, m, n, k], &[m, 1, 0, 0], 0));
    let v = load(3, strided(&[b, m, n, k], &[k * n, 0, 1, n], 0));
    let p = (&s - &lse).exp2();
    let ast = store_ast(st(&[b, m, n, 1]), (p * v).reduce_axis(Ops::Add, &[3]));
    let kernel = optimized(&ast, big_gpu());
    let want = [(Upcast, 1, 8), (Upcast, 2, 4), (Unroll, 0, 8), (Local, 2, 8), (Local, 1, 16)];
    assert_eq!(kernel.applied_opts(), [opts(&want), vec![Opt::double_stage()]].concat());
    // the exponentials are stored to workgroup memory, not computed by the tiles
    let lowered = wgrad_codegen::lower(&kernel).unwrap().toposort();
    let staged_exp = lowered.iter().any(|u| {
        u.op() == Ops::Store
            && u.src()[0].src()[0].op() == Ops::DefineLocal
            && u.src()[1].toposort().iter().any(|x| x.op() == Ops::Exp2)
    });
    assert!(staged_exp);
    // a thread copies 8 of the block's 128 x 8 elements a step: before the loop and in it
    let exps = lowered.iter().filter(|u| u.op() == Ops::Exp2).count();
    assert_eq!(exps, 16, "the tiles compute no exponentials of their own");
    // without a principal load (each load varies along an axis the other does not) there is no tile
    let (a, c) =
        (load(1, strided(&[64, 64, 64], &[64, 0, 1], 0)), load(2, strided(&[64, 64, 64], &[0, 64, 1], 0)));
    let odd = store_ast(
        st(&[64, 64, 1]),
        ((&a + &c).exp2() * load(3, st(&[64, 64, 64]))).reduce_axis(Ops::Add, &[2]),
    );
    assert!(!optimized(&odd, big_gpu()).applied_opts().contains(&Opt::double_stage()));
}
