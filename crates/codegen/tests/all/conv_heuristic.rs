//! The register tiles `hand_coded_optimizations` gives convolution-shaped kernels: forward,
//! by the input (a padded, masked image and a flipped filter) and by the weight; on a big GPU
//! and on a CPU-like device; and the kernels it leaves to the other plans.

use crate::common;

use common::*;
use wgrad_codegen::{Kernel, OptOps, Target, hand_coded_optimizations};
use wgrad_ops::{Ops, UOp};
use wgrad_shape::ShapeTracker;

use OptOps::*;

fn optimized(ast: &UOp, target: Target) -> Kernel {
    let mut k = Kernel::new(ast, target).unwrap();
    hand_coded_optimizations(&mut k);
    k
}

/// A device like an H200 through wgpu: wants 1 << 17 threads, 1024 per workgroup, 48 KiB of
/// workgroup memory, subgroup operations.
fn big_gpu() -> Target {
    Target {
        max_local_size: vec![1024, 1024, 64],
        max_local_invocations: 1024,
        shared_max: 49152,
        subgroup_ops: true,
        ..Target::generic_gpu()
    }
}

/// A device like lavapipe: a workgroup per core, a few hundred threads in flight.
fn cpu_like() -> Target {
    Target { parallelism: 1 << 8, ..Target::generic_gpu() }
}

/// `y[b, co, oy, ox] = sum_{ci, ky, kx} x[b, ci, oy * s + ky, ox * s + kx] * w[co, ci, ky, kx]`.
fn conv_ast(b: i64, ci: i64, co: i64, hw: i64, kk: i64, s: i64) -> UOp {
    let o = (hw - kk) / s + 1;
    let shape = [b, co, o, o, ci, kk, kk];
    let x = load(1, strided(&shape, &[ci * hw * hw, 0, hw * s, s, hw * hw, hw, 1], 0));
    let w = load(2, strided(&shape, &[0, ci * kk * kk, 0, 0, kk * kk, kk, 1], 0));
    store_ast(st(&[b, co, o, o, 1, 1, 1]), (x * w).reduce_axis(Ops::Add, &[4, 5, 6]))
}

/// The input gradient of a valid stride-1 convolution: the output gradient padded by `kk - 1`
/// under the windows, times the flipped weight, with a relu's gradient fused into the image.
fn conv_input_grad_ast(b: i64, ci: i64, co: i64, hw: i64, kk: i64) -> UOp {
    let (o, p) = (hw - kk + 1, kk - 1);
    let hp = o + 2 * p;
    let pad = padded(st(&[b, co, o, o]), &[(0, 0), (0, 0), (p, p), (p, p)]);
    let shape = [b, ci, hw, hw, co, kk, kk];
    let windows = strided(&shape, &[co * hp * hp, 0, hp, 1, hp * hp, hp, 1], 0);
    let image = || ShapeTracker::from_views([pad.views(), windows.views()].concat()).unwrap();
    let w = load(2, strided(&shape, &[0, kk * kk, 0, 0, ci * kk * kk, -kk, -1], kk * kk - 1));
    let dy = load(1, image()) * load(3, image());
    store_ast(st(&[b, ci, hw, hw, 1, 1, 1]), (dy * w).reduce_axis(Ops::Add, &[4, 5, 6]))
}

/// The weight gradient: the input's windows times the output gradient over `(b, oy, ox)`.
fn conv_weight_grad_ast(b: i64, ci: i64, co: i64, hw: i64, kk: i64) -> UOp {
    let o = hw - kk + 1;
    let shape = [co, ci, kk, kk, b, o, o];
    let x = load(1, strided(&shape, &[0, hw * hw, hw, 1, ci * hw * hw, hw, 1], 0));
    let dy = load(2, strided(&shape, &[o * o, 0, 0, 0, co * o * o, o, 1], 0));
    store_ast(st(&[co, ci, kk, kk, 1, 1, 1]), (x * dy).reduce_axis(Ops::Add, &[4, 5, 6]))
}

#[test]
fn forward_tile_is_filters_by_window_positions_by_rows_with_the_kernel_row_unrolled() {
    // beautiful_mnist's conv2 at batch 512: 8 filters x 4 columns x 2 rows keep 102400 threads
    let k = optimized(&conv_ast(512, 32, 32, 24, 5, 1), big_gpu());
    let want = [(Upcast, 3, 4), (Upcast, 2, 2), (Upcast, 1, 8), (Unroll, 2, 0)];
    assert_eq!(k.applied_opts()[..4], want.map(|(op, a, n)| opt(op, a, n)));
    // columns, then rows, then images on the workgroup (80 threads: 5 x 10 x 2 = 100 would
    // fill 78% of four subgroups); never the filters
    assert_eq!(k.describe(), "(64, 4, 5 | 5, 2, 8 | 32, 5 | 4, 2, 8 | 5) global/local/reduce/upcast/unroll");
    // a device with few threads in flight takes the largest tile: 4 rows
    let cpu = optimized(&conv_ast(64, 32, 32, 24, 5, 1), cpu_like());
    assert_eq!(cpu.applied_opts()[1], opt(Upcast, 2, 4), "{}", cpu.describe());
    assert_eq!(cpu.upcasted(), 4, "{}", cpu.describe());
}

#[test]
fn a_short_window_is_upcast_whole_and_the_tile_shrinks_to_keep_threads() {
    // conv4: 6x6 outputs, the whole row of 6 a thread; at batch 512 a big GPU wants threads
    let k = optimized(&conv_ast(512, 64, 64, 8, 3, 1), big_gpu());
    assert!(k.applied_opts().contains(&opt(Upcast, 3, 6)), "{}", k.describe_opts());
    let threads: i64 = full(&k)[..k.first_reduce()].iter().product();
    assert!(threads >= 1 << 16, "{threads} threads: {}", k.describe());
}

#[test]
fn input_gradient_reads_the_padded_image_through_the_same_tile() {
    let k = optimized(&conv_input_grad_ast(64, 32, 32, 24, 5), cpu_like());
    let want = [(Upcast, 3, 4), (Upcast, 2, 4), (Upcast, 1, 8), (Unroll, 2, 0)];
    assert_eq!(k.applied_opts()[..4], want.map(|(op, a, n)| opt(op, a, n)), "{}", k.describe());
    assert!(k.local_size() >= 32, "{}", k.describe());
    // on a GPU the padded image's masked loads cap the tile at 64 accumulators: 2 rows, not 4
    let gpu = optimized(&conv_input_grad_ast(512, 32, 32, 24, 5), big_gpu());
    let want = [(Upcast, 3, 4), (Upcast, 2, 2), (Upcast, 1, 8), (Unroll, 2, 0)];
    assert_eq!(gpu.applied_opts()[..4], want.map(|(op, a, n)| opt(op, a, n)), "{}", gpu.describe());
}

#[test]
fn weight_gradient_tiles_filters_kernel_columns_and_input_channels() {
    // the kernel column (5) is the window's output axis, the output column its reduce axis
    // (unrolled by 4); 5 kernel rows would make 200 accumulators, so 4 input channels instead
    let k = optimized(&conv_weight_grad_ast(64, 32, 32, 24, 5), cpu_like());
    let want = [(Upcast, 3, 5), (Upcast, 1, 4), (Upcast, 0, 8), (Unroll, 2, 4)];
    assert_eq!(k.applied_opts()[..4], want.map(|(op, a, n)| opt(op, a, n)), "{}", k.describe());
}

#[test]
fn strided_windows_and_plain_matmuls_are_left_to_the_matmul_tile() {
    // stride 2: the output column and the kernel column move the image differently
    let k = optimized(&conv_ast(64, 16, 32, 17, 3, 2), cpu_like());
    let unrolled_columns = k.applied_opts().iter().any(|o| *o == opt(Unroll, 2, 0));
    assert!(k.upcasted() >= 2 && unrolled_columns, "{}", k.describe());
    let mm = optimized(&matmul_ast(256, 256, 256), cpu_like());
    assert_eq!(mm.applied_opts()[..2], [opt(Upcast, 0, 8), opt(Upcast, 1, 4)]);
}

#[test]
fn a_weight_gradient_with_few_outputs_tiles_and_groups_a_reduce_axis() {
    // beautiful_mnist's conv1 weight gradient at batch 512 after split-K: 32 filters x 1
    // channel x 5 x 5 taps x 256 batch slices, each a sum over 2 images x 24 x 24 positions
    let shape = [32, 1, 5, 5, 256, 2, 24, 24];
    let x = load(1, strided(&shape, &[0, 784, 28, 1, 2 * 784, 784, 28, 1], 0));
    let dy = load(2, strided(&shape, &[576, 0, 0, 0, 2 * 32 * 576, 32 * 576, 24, 1], 0));
    let ast = store_ast(st(&[32, 1, 5, 5, 256, 1, 1, 1]), (x * dy).reduce_axis(Ops::Add, &[5, 6, 7]));
    // (the channel axis of 1 is dropped) the 5 taps of a row are a thread's; a weight gradient
    // keeps a quarter of the target's parallelism, which the tile leaves without a group
    let k = optimized(&ast, big_gpu());
    assert!(k.applied_opts().contains(&opt(Upcast, 2, 5)), "{}", k.describe_opts());
    assert_eq!(k.group_for_reduces(), 0, "{}", k.describe());
    // where it would leave fewer, the output rows are shared by a group of 24 threads
    let k = optimized(&ast, Target { parallelism: 1 << 19, ..big_gpu() });
    assert!(k.applied_opts().contains(&opt(Group, 1, 24)), "{}", k.describe_opts());
    assert!(k.group_for_reduces() == 1 && k.upcasted() >= 2, "{}", k.describe());
    // the conformance suite's case of this plan (tests/src/shapes.rs) takes it too
    let small =
        optimized(&conv_weight_grad_ast(4, 1, 32, 12, 5), Target { parallelism: 1 << 10, ..big_gpu() });
    assert!(small.group_for_reduces() == 1 && small.upcasted() >= 2, "{}", small.describe());
}

#[test]
fn a_grouped_weight_gradient_counts_its_groups_in_the_workgroup() {
    // beautiful_mnist's conv1 weight gradient at batch 64 after split-K (a slice an image):
    // groups of 24 threads share the output rows, two groups a workgroup (18.1 us on an H200;
    // 27.4 with five, 120 threads)
    let shape = [32, 1, 5, 5, 64, 1, 24, 24];
    let x = load(1, strided(&shape, &[0, 784, 28, 1, 784, 784, 28, 1], 0));
    let dy = load(2, strided(&shape, &[576, 0, 0, 0, 32 * 576, 32 * 576, 24, 1], 0));
    let ast = store_ast(st(&[32, 1, 5, 5, 64, 1, 1, 1]), (x * dy).reduce_axis(Ops::Add, &[5, 6, 7]));
    let k = optimized(&ast, big_gpu());
    assert!(k.applied_opts().contains(&opt(Group, 0, 24)), "{}", k.describe_opts());
    assert!(k.local_size() <= 64, "{}", k.describe());
    // conv4's at batch 64 (groups of 32): two groups a workgroup (32.7 us; 42.7 with four)
    let k = optimized(&conv_weight_grad_ast(64, 64, 64, 8, 3), big_gpu());
    assert!(k.group_for_reduces() == 1 && k.local_size() <= 64, "{}", k.describe());
}

#[test]
fn workgroups_fill_four_fifths_of_their_subgroups() {
    // beautiful_mnist's convolutions at batch 512: 72 threads (6 x 6 x 2) took three subgroups
    // and left a quarter of one idle; now 96 (6 x 4 x 4)
    let grad = optimized(&conv_input_grad_ast(512, 32, 32, 24, 5), big_gpu());
    assert_eq!(grad.local_size(), 96, "{}", grad.describe());
    let kernels =
        [conv_ast(512, 1, 32, 28, 5, 1), conv_ast(512, 32, 32, 24, 5, 1), conv_ast(512, 32, 64, 10, 3, 1)];
    for ast in kernels.iter().chain([conv_input_grad_ast(512, 32, 32, 24, 5)].iter()) {
        let k = optimized(ast, big_gpu());
        let threads = k.local_size() as usize;
        assert!(threads * 5 >= threads.div_ceil(32) * 32 * 4, "{}", k.describe());
    }
}

#[test]
fn a_tile_short_of_threads_or_of_reuse_takes_a_small_group() {
    // beautiful_mnist's conv3 at batch 64 (32 -> 64 channels, 10 x 10 -> 8 x 8): no tile keeps
    // half the target's parallelism alone. A thread takes the window's 8 positions for 2
    // filters, and groups of 4 threads share the input channels (the first tile that could
    // group took 8 x 2 x 8 accumulators and groups of 32: 1.1 TFLOP/s on an H200)
    let k = optimized(&conv_ast(64, 32, 64, 10, 3, 1), big_gpu());
    let want = "(4, 32 | 8, 16 | 4 | 8, 3 | 8, 2 | 3) global/local/group/reduce/upcast/unroll";
    assert_eq!(k.describe(), want, "{}", k.describe_opts());
    // its input gradient: 2 filters at one position kept the threads alone but loaded 3 values
    // for 2 multiply-adds; now a thread takes a whole row of 10 positions, in groups of 4
    let k = optimized(&conv_input_grad_ast(64, 32, 64, 10, 3), big_gpu());
    let want = "(8, 32 | 10, 8 | 4 | 16, 3 | 10 | 3) global/local/group/reduce/upcast/unroll";
    assert_eq!(k.describe(), want, "{}", k.describe_opts());
    // conv2 at batch 64 (32 -> 32 channels, 24 x 24 -> 20 x 20): of the grouped tiles of at
    // least 16 outputs, the one with the fewest threads a group: 4 filters x 4 positions in
    // groups of 2 (76.5 us on an H200), not 4 x 4 x 2 rows in groups of 4 (105 us)
    let k = optimized(&conv_ast(64, 32, 32, 24, 5, 1), big_gpu());
    let want = "(16, 8, 5 | 5, 4, 4 | 2 | 16, 5 | 4, 4 | 5) global/local/group/reduce/upcast/unroll";
    assert_eq!(k.describe(), want, "{}", k.describe_opts());
    // conv4 at batch 512: 2 filters at 6 positions reuse their loads enough to stand alone
    let k = optimized(&conv_ast(512, 64, 64, 8, 3, 1), big_gpu());
    let want = "(32, 32 | 6, 16 | 64, 3 | 6, 2 | 3) global/local/reduce/upcast/unroll";
    assert_eq!(k.describe(), want, "{}", k.describe_opts());
}
