//! `Batch`: kernel launches recorded for one command encoder and one submit, and the
//! workgroup-folding contract for launches larger than a dispatch dimension allows.
//!
//! # Folding contract
//!
//! WebGPU caps each dispatch dimension at `max_workgroups_per_dimension` (65535 on
//! most devices). A launch of `[x, 1, 1]` workgroups with `x` over that cap is folded
//! by [`fold_workgroups`] into `[fx, fy, fz]`, each within the cap, with
//! `fx * fy * fz >= x` and fewer than `fy * fz` surplus workgroups. A shader that may
//! be launched folded recovers its linear workgroup id with the `num_workgroups`
//! builtin and returns early on the surplus:
//!
//! ```wgsl
//! let wg = wid.x + nwg.x * (wid.y + nwg.y * wid.z);   // wid: workgroup_id, nwg: num_workgroups
//! if (wg >= X) { return; }                             // X: the unfolded count
//! ```
//!
//! Launches that fit are dispatched unchanged (`fy == fz == 1`, so the formula still
//! holds). Launches with `y > 1` or `z > 1` and any dimension over the cap are
//! rejected with [`RuntimeError::DispatchTooLarge`]: code generation must flatten
//! such grids into `x` first.
//!
//! Invariants:
//! - A batch only records; nothing touches the GPU until the device submits it.
//! - Dispatches run in recording order; wgpu inserts the barriers between a dispatch
//!   that writes a buffer and a later one that reads it.
//! - A batch holds clones of its pipelines and buffers, keeping them alive until it
//!   is submitted or dropped.

use crate::buffer::Buffer;
use crate::error::RuntimeError;
use crate::pipeline::Pipeline;

/// Splits a launch of `count` workgroups into one that fits `max` per dimension.
///
/// Returns `count` unchanged when every dimension fits; folds `x` into `y` (and `z`)
/// when only `x` is too large and `y == z == 1`; errors otherwise. See the module
/// docs for how the shader recovers the linear workgroup id.
pub fn fold_workgroups(count: [u32; 3], max: u32) -> Result<[u32; 3], RuntimeError> {
    let [x, y, z] = count;
    if x <= max && y <= max && z <= max {
        return Ok(count);
    }
    let too_large = RuntimeError::DispatchTooLarge { requested: count, max };
    if y != 1 || z != 1 || max == 0 {
        return Err(too_large);
    }
    let rows = x.div_ceil(max);
    let fz = rows.div_ceil(max);
    let fy = rows.div_ceil(fz);
    let fx = x.div_ceil(fy * fz);
    if fx > max || fy > max || fz > max {
        return Err(too_large);
    }
    Ok([fx, fy, fz])
}

/// One recorded kernel launch.
#[derive(Clone)]
pub(crate) struct Dispatch {
    pub(crate) pipeline: Pipeline,
    pub(crate) buffers: Vec<Buffer>,
    pub(crate) workgroups: [u32; 3],
    /// Made when the launch was prepared; otherwise the device makes (or finds) it at submit.
    pub(crate) bind_group: Option<wgpu::BindGroup>,
}

/// A launch with its arguments checked, its workgroups folded and its bind group made: what
/// [`crate::Device::prepare`] returns, pushed into batches any number of times
/// ([`Batch::push`]) without further work (a captured JIT replays these).
#[derive(Clone)]
pub struct Prepared {
    pub(crate) dispatch: Dispatch,
}

/// Kernel launches to record into the device's command stream (its open compute pass).
///
/// Create it with [`crate::Device::batch`], record with [`Batch::dispatch`] or
/// [`Batch::push`], then hand it to [`crate::Device::submit`] or [`crate::Device::run_timed`].
pub struct Batch {
    max_workgroups: u32,
    dispatches: Vec<Dispatch>,
}

impl Batch {
    /// An empty batch for a device allowing `max_workgroups` per dimension.
    pub(crate) fn new(max_workgroups: u32) -> Self {
        Self { max_workgroups, dispatches: Vec::new() }
    }

    /// Records a launch of `pipeline` over `workgroups` = `[x, y, z]` workgroups, with
    /// `buffers[i]` bound at `@group(0) @binding(i)`.
    ///
    /// Returns the workgroup counts actually dispatched (folded per the module docs).
    /// Binding mismatches (wrong count, a buffer smaller than the shader's minimum
    /// binding size) are validation errors reported when the batch is submitted.
    pub fn dispatch(
        &mut self,
        pipeline: &Pipeline,
        buffers: &[&Buffer],
        workgroups: [u32; 3],
    ) -> Result<[u32; 3], RuntimeError> {
        let folded = fold_workgroups(workgroups, self.max_workgroups)?;
        self.dispatches.push(Dispatch {
            pipeline: pipeline.clone(),
            buffers: buffers.iter().map(|&b| b.clone()).collect(),
            workgroups: folded,
            bind_group: None,
        });
        Ok(folded)
    }

    /// Records a prepared launch (of this batch's device).
    pub fn push(&mut self, prepared: &Prepared) {
        self.dispatches.push(prepared.dispatch.clone());
    }

    /// Number of recorded launches.
    pub fn len(&self) -> usize {
        self.dispatches.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.dispatches.is_empty()
    }

    /// The recorded launches, in order.
    pub(crate) fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }

    /// The recorded launches, to add one already folded.
    pub(crate) fn dispatches_mut(&mut self) -> &mut Vec<Dispatch> {
        &mut self.dispatches
    }
}

/// Records `dispatch` (with its bind group) into an open compute pass.
pub(crate) fn record(pass: &mut wgpu::ComputePass<'_>, dispatch: &Dispatch, bind_group: &wgpu::BindGroup) {
    pass.set_pipeline(dispatch.pipeline.raw());
    pass.set_bind_group(0, bind_group, &[]);
    let [x, y, z] = dispatch.workgroups;
    pass.dispatch_workgroups(x, y, z);
}

#[cfg(test)]
mod tests {
    use super::fold_workgroups;

    #[test]
    fn folding_covers_the_launch_within_limits() {
        let max = 65535;
        assert_eq!(fold_workgroups([100, 2, 3], max).unwrap(), [100, 2, 3]);
        for x in [65536u32, 70000, 65535 * 7 + 3, 1 << 31, u32::MAX] {
            let [fx, fy, fz] = fold_workgroups([x, 1, 1], max).unwrap();
            let total = u64::from(fx) * u64::from(fy) * u64::from(fz);
            assert!(fx <= max && fy <= max && fz <= max, "{x}");
            assert!(total >= u64::from(x), "{x}");
            assert!(total - u64::from(x) < u64::from(fy) * u64::from(fz), "{x}");
        }
        assert!(fold_workgroups([70000, 2, 1], max).is_err());
        assert!(fold_workgroups([1, 70000, 1], max).is_err());
    }
}
