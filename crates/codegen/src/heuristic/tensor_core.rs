//! Tensor cores for a half-precision matmul-shaped kernel, where the target has them: the
//! first TC configuration and axis choice the kernel takes, then more tiles per subgroup
//! (UPCAST 4, else 2, on each output axis of the tiles: up to the 4x4 tiles of a 64x64 block)
//! while enough subgroups stay to keep a quarter of the target's `parallelism` busy; then 2x2
//! subgroups per workgroup (LOCAL 2 on each output axis), which stages both factors' blocks
//! in workgroup memory, two k tiles a step (UNROLL 2). On the H200 a 4096^3 f16 GEMM went from
//! 104 TFLOP/s with one subgroup a workgroup to 133-140 with 2x2 (docs/PERFORMANCE.md).

use crate::{Kernel, Opt, OptOps};

/// Applies TC and its tile plan; returns whether TC applied.
pub(super) fn tensor_cores(k: &mut Kernel) -> bool {
    let choices = k.tc_axis_choices().len();
    let configs = k.target().tensor_cores.len();
    let applied =
        (0..configs).any(|arg| (0..choices).any(|axis| k.apply_opt(Opt::new(OptOps::Tc, axis, arg)).is_ok()));
    if !applied {
        return false;
    }
    let threads = k.target().subgroup_size.unwrap_or(1) as i64;
    let busy = k.target().parallelism as i64 / 4;
    // the last axis first: an axis upcast whole is dropped, which moves the ones after it
    for axis in k.tc_output_axes().into_iter().rev() {
        for amt in [4, 2] {
            let groups: i64 = k.full_shape()[..k.first_reduce()].iter().map(|s| s.vmax()).product();
            if groups / amt as i64 * threads >= busy
                && k.apply_opt(Opt::new(OptOps::Upcast, axis, amt)).is_ok()
            {
                break;
            }
        }
    }
    for axis in k.tc_output_axes().into_iter().rev() {
        let _ = k.apply_opt(Opt::new(OptOps::Local, axis, 2));
    }
    if k.local_dims() > 0 && k.first_upcast() > k.first_reduce() {
        let _ = k.apply_opt(Opt::new(OptOps::Unroll, 0, 2));
    }
    true
}
