//! The TC OptOp: a matmul-shaped reduce (a sum of the product of two loads of the target's
//! tensor-core input type, possibly through casts) onto cooperative-matrix tiles.
//!
//! `Opt(op=TC, axis, arg)`: `arg` picks the configuration (`Target::tensor_cores[arg]`), `axis`
//! the `(m, n, k)` axes among the kernel's candidates ([`Kernel::tc_axis_choices`]: an output
//! axis only the first factor reads, one only the second reads, a reduce axis both read).
//! Applied first, it splits `m`, `n` and `k` by the tile and moves the tile parts last (kept as
//! upcast axes: `m`, `n`, then the unrolled `k`); afterwards only UPCASTs of output axes
//! (more tiles per subgroup) apply. Each workgroup is one subgroup that owns its tiles.
//!
//! Legal only when: no opt came before; one sum whose value is `Mul(a, b)` of two unmasked
//! loads of `dtype_in` (casts around either allowed) into `dtype_out`; `m`, `n`, `k` integer
//! multiples of the tile; each factor's tile contiguous along one of its two tile axes with an
//! integer stride along the other; the subgroup size divides a tile.

use wgrad_ops::{Arg, Ops, UOp};
use wgrad_shape::Sint;

use crate::factor::mul_factors;
use crate::{Kernel, OptError, OptOps, TensorCoreShape};

/// The two loads a matmul-shaped reduce multiplies: `sum(cast?(cast?(a) * cast?(b)))`.
pub(crate) fn tc_factors(reduce: &UOp) -> Option<(UOp, UOp)> {
    let (a, b) = mul_factors(reduce)?;
    (a.op() == Ops::Load && b.op() == Ops::Load).then_some((a, b))
}

/// A tile factor's layout: whether its rows (the first tile axis) are contiguous, and the stride
/// between rows (row-major) or columns.
pub(crate) fn tile_layout(strides: (Option<i64>, Option<i64>)) -> Option<(bool, i64)> {
    match strides {
        (Some(rows), Some(1)) if rows > 0 => Some((true, rows)),
        (Some(1), Some(cols)) if cols > 0 => Some((false, cols)),
        _ => None,
    }
}

/// Whether a factor reads along an axis of this real stride (an unknown stride counts).
fn reads(stride: &Option<Sint>) -> bool {
    stride.as_ref().is_none_or(|s| *s != 0)
}

/// A real stride known as an integer.
pub(crate) fn int_stride(stride: &Option<Sint>) -> Option<i64> {
    stride.as_ref().and_then(Sint::as_int)
}

impl Kernel {
    /// The tensor-core configuration applied, if TC was.
    pub fn tensor_core(&self) -> Option<&TensorCoreShape> {
        self.tc.as_ref()
    }

    /// The (first factor's buffer index, second's) of a matmul-shaped kernel.
    fn tc_buffers(&self) -> Option<(usize, usize)> {
        let r = self.reduceop()?;
        let (a, b) = tc_factors(r)?;
        Some((self.bufs.iter().position(|x| *x == a)?, self.bufs.iter().position(|x| *x == b)?))
    }

    /// The real strides of the two factors of a matmul-shaped kernel.
    pub(crate) fn tc_factor_strides(&self) -> Option<[Vec<Option<Sint>>; 2]> {
        let (ia, ib) = self.tc_buffers()?;
        Some([self.sts[ia].real_strides(false), self.sts[ib].real_strides(false)])
    }

    /// The `(m, n, k)` axis triples TC may take, in the order `Opt(TC, axis, _)` counts them.
    pub fn tc_axis_choices(&self) -> Vec<(usize, usize, usize)> {
        let Some([sa, sb]) = self.tc_factor_strides() else { return vec![] };
        let (fr, fu) = (self.first_reduce(), self.first_upcast());
        let m: Vec<usize> = (0..fr).filter(|&i| reads(&sa[i]) && !reads(&sb[i])).collect();
        let n: Vec<usize> = (0..fr).filter(|&i| !reads(&sa[i]) && reads(&sb[i])).collect();
        let k: Vec<usize> = (fr..fu).filter(|&i| reads(&sa[i]) && reads(&sb[i])).collect();
        let mut out = vec![];
        for &m in &m {
            for &n in &n {
                out.extend(k.iter().map(|&k| (m, n, k)));
            }
        }
        out
    }

    /// After TC: the global axes of the tiles' rows and columns (those only one factor reads),
    /// which UPCAST turns into more tiles per subgroup.
    pub fn tc_output_axes(&self) -> Vec<usize> {
        let Some([sa, sb]) = self.tc.as_ref().and(self.tc_factor_strides()) else { return vec![] };
        (0..self.first_reduce()).filter(|&i| reads(&sa[i]) != reads(&sb[i])).collect()
    }

    /// After TC: the output axes of the tiles only the second factor reads (its columns, `n`).
    pub(crate) fn tc_column_axes(&self) -> Vec<usize> {
        let Some([sa, sb]) = self.tc.as_ref().and(self.tc_factor_strides()) else { return vec![] };
        (0..self.first_reduce()).filter(|&i| !reads(&sa[i]) && reads(&sb[i])).collect()
    }

    /// Checks and applies `Opt(TC, axis, arg)`.
    pub(crate) fn apply_tc(&mut self, axis: usize, arg: usize) -> Result<(), OptError> {
        let refuse = |why: String| Err(OptError::TensorCore(why));
        if !self.target.has_local {
            return refuse("the target has no workgroups".into());
        }
        if !self.applied_opts.is_empty() {
            return refuse("tensor core opts must be first".into());
        }
        let Some(tc) = self.target.tensor_cores.get(arg).cloned() else {
            return refuse(format!(
                "the target has {} tensor-core shapes, not {}",
                self.target.tensor_cores.len(),
                arg + 1
            ));
        };
        let (Some(r), 1) = (self.reduceop(), self.reduceops.len()) else {
            return refuse("not one reduce".into());
        };
        if !matches!(r.arg(), Arg::ReduceAxis(Ops::Add, _)) || r.dtype() != tc.dtype_out {
            return refuse(format!("the reduce is not a sum into {}", tc.dtype_out));
        }
        let Some((ia, ib)) = self.tc_buffers() else {
            return refuse("the reduce is not a sum of a product of two loads".into());
        };
        if self.bufs[ia].dtype() != tc.dtype_in || self.bufs[ib].dtype() != tc.dtype_in {
            return refuse(format!("the factors are not {}", tc.dtype_in));
        }
        if [ia, ib].iter().any(|&i| self.sts[i].has_mask()) {
            return refuse("a factor is masked (padded)".into());
        }
        let choices = self.tc_axis_choices();
        let Some(&(m, n, k)) = choices.get(axis) else {
            return Err(OptError::InvalidAxis { axis, shape_len: choices.len() });
        };
        let (tm, tn, tk) = tc.dims;
        for (ax, tile) in [(m, tm), (n, tn), (k, tk)] {
            let size = &self.full_shape()[ax];
            if size.as_int().is_none_or(|s| s % tile as i64 != 0) {
                return Err(OptError::NotDivisible { size: size.to_string(), amt: tile });
            }
        }
        let threads = self.target.subgroup_size.unwrap_or(1);
        if (tm * tn) % threads != 0 {
            return refuse(format!("a subgroup of {threads} does not divide a {tm}x{tn} tile"));
        }
        let int = |s: &Option<wgrad_shape::Sint>| s.as_ref().and_then(|s| s.as_int());
        let (sa, sb) = (self.sts[ia].real_strides(false), self.sts[ib].real_strides(false));
        if tile_layout((int(&sa[m]), int(&sa[k]))).is_none()
            || tile_layout((int(&sb[k]), int(&sb[n]))).is_none()
        {
            return refuse("a factor's tile is not contiguous along one of its axes".into());
        }
        for (ax, tile) in [(m, tm), (n, tn), (k, tk)] {
            self.shift_to(ax, tile, false, None);
        }
        self.upcasted += 3;
        self.tc = Some(tc);
        match self.tc_shared_bytes() {
            Some(needed) if needed > self.target.shared_max as i64 => {
                Err(OptError::SharedMemory { needed, max: self.target.shared_max })
            }
            _ => Ok(()),
        }
    }

    /// The workgroup memory a TC kernel takes, in bytes: one accumulator tile per subgroup for
    /// the epilogue, plus the factors' staged blocks when subgroups share a workgroup.
    pub(crate) fn tc_shared_bytes(&self) -> Option<i64> {
        let tc = self.tc.as_ref()?;
        let warps = self.tc_warps();
        let mut bytes = warps * (tc.dims.0 * tc.dims.1 * tc.dtype_out.itemsize()) as i64;
        if let Some(stages) = self.tc_stages() {
            bytes +=
                stages.iter().map(|s| s.outer_len * s.stride).sum::<i64>() * tc.dtype_in.itemsize() as i64;
        }
        Some(bytes)
    }

    /// Subgroups per workgroup of a TC kernel: the product of its local axes.
    pub(crate) fn tc_warps(&self) -> i64 {
        let gd = self.global_dims();
        self.full_shape()[gd..gd + self.local_dims].iter().map(|s| s.vmax()).product()
    }

    /// Checks that `op` by `amt` on `axis` may apply after TC, and that the kernel it makes
    /// fits the target's workgroups and workgroup memory.
    pub(crate) fn check_tc_split(&self, op: OptOps, axis: usize, amt: usize) -> Result<(), OptError> {
        let refuse = |why: String| Err(OptError::TensorCore(why));
        match op {
            OptOps::Upcast | OptOps::Unroll => {}
            OptOps::Local if self.tc_output_axes().contains(&axis) => {}
            OptOps::Local => return refuse(format!("axis {axis} is not an output axis of the tiles")),
            _ => return refuse(format!("only UPCAST, LOCAL and UNROLL apply after TC, not {op}")),
        }
        let mut after = self.clone();
        after.split(op, axis, amt);
        let threads = after.tc_warps() * self.target.subgroup_size.unwrap_or(1) as i64;
        if threads > self.target.max_local_invocations as i64 {
            return Err(OptError::TooManyLocals { size: threads, max: self.target.max_local_invocations });
        }
        if let Some(stages) = after.tc_stages() {
            let vectors: i64 = stages.iter().map(|s| s.outer_len * s.inner_len / STAGE_VECTOR).sum();
            if stages.iter().any(|s| (s.outer_len * s.inner_len / STAGE_VECTOR) % threads != 0) {
                return refuse(format!("{vectors} staged vectors do not split over {threads} threads"));
            }
        }
        let needed = after.tc_shared_bytes().unwrap_or(0);
        match needed <= self.target.shared_max as i64 {
            true => Ok(()),
            false => Err(OptError::SharedMemory { needed, max: self.target.shared_max }),
        }
    }

    /// The factors' blocks staged in workgroup memory for one step of the reduce loop (A, then
    /// B), when the workgroup has several subgroups (LOCAL after TC); `None` otherwise.
    pub(crate) fn tc_stages(&self) -> Option<[Stage; 2]> {
        if self.local_dims == 0 {
            return None;
        }
        let [sa, sb] = self.tc_factor_strides()?;
        let full = self.full_shape();
        let t = self.shape_len() - 3;
        let (gd, fu, out) = (self.global_dims(), self.first_upcast(), self.output_shape());
        // the local and upcast axes a factor reads: output ones, and unrolled reduce ones
        let read = |st: &[Option<Sint>]| -> (Vec<usize>, Vec<usize>) {
            let axes = (gd..gd + self.local_dims).chain(fu..t).filter(|&a| reads(&st[a]));
            axes.partition(|&a| full[a] == out[a])
        };
        let stage = |outputs: Vec<usize>, unrolled: Vec<usize>, rows_out: bool, layout: (bool, i64)| {
            let (rows, cols) = if rows_out { (outputs, unrolled) } else { (unrolled, outputs) };
            let (outer, inner) = if layout.0 { (rows, cols) } else { (cols, rows) };
            Stage::new(outer, inner, full)
        };
        let (m_out, k_a) = read(&sa);
        let (n_out, k_b) = read(&sb);
        let la = tile_layout((int_stride(&sa[t]), int_stride(&sa[t + 2])))?;
        let lb = tile_layout((int_stride(&sb[t + 2]), int_stride(&sb[t + 1])))?;
        let a = stage([m_out, vec![t]].concat(), [k_a, vec![t + 2]].concat(), true, la);
        let b = stage([n_out, vec![t + 1]].concat(), [k_b, vec![t + 2]].concat(), false, lb);
        Some([a, b])
    }
}

/// Elements per thread and copy of a staged block: four f16 are an 8-byte load.
pub(crate) const STAGE_VECTOR: i64 = 4;

/// Elements of padding after each row of a staged block (16 bytes of f16), which spreads a
/// tile's rows over the banks of workgroup memory.
const STAGE_PAD: i64 = 8;

/// A factor's block in workgroup memory: `outer_len` rows of `inner_len` elements (the inner
/// dimension holds the factor's contiguous tile axis), rows `stride` apart. The position along
/// each dimension is mixed-radix over its kernel axes, in kernel order (the tile axis last).
#[derive(Clone, Debug)]
pub(crate) struct Stage {
    /// The kernel axes of the rows.
    pub(crate) outer: Vec<usize>,
    /// The kernel axes within a row.
    pub(crate) inner: Vec<usize>,
    pub(crate) outer_len: i64,
    pub(crate) inner_len: i64,
    pub(crate) stride: i64,
}

impl Stage {
    fn new(outer: Vec<usize>, inner: Vec<usize>, full: &[Sint]) -> Stage {
        let len = |axes: &[usize]| axes.iter().map(|&a| full[a].vmax()).product::<i64>();
        let (outer_len, inner_len) = (len(&outer), len(&inner));
        Stage { outer, inner, outer_len, inner_len, stride: inner_len + STAGE_PAD }
    }
}
