//! [`Program`]: a linearized kernel (uops in execution order, launch sizes, buffer and variable
//! lists), what renderers and the CPU interpreter consume.

use std::fmt;

use wgrad_dtype::DType;
use wgrad_ops::{Arg, Ops, UOp, print_uops};
use wgrad_shape::Variable;

/// One buffer argument of a kernel (a `DefineGlobal`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferArg {
    /// The kernel argument slot (the `DefineGlobal`'s arg).
    pub slot: usize,
    /// The element dtype (scalar, no pointer part).
    pub dtype: DType,
    /// Number of elements, when the pointer dtype carries it (`ptr_sized`).
    pub size: Option<usize>,
    /// Whether the kernel stores into the buffer.
    pub writable: bool,
}

/// A linearized kernel.
///
/// Invariants (see `LOWERED.md`): `uops` is in execution order and every uop comes after its
/// sources; loops are `Range` ... `EndRange(range)` and nest properly; reductions are
/// `DefineAcc` + `Assign`; there is no `Sink` and no `Reduce`.
#[derive(Clone, Debug)]
pub struct Program {
    /// The kernel's name (for listings, pipeline labels and timing).
    pub name: String,
    /// The uops in execution order.
    pub uops: Vec<UOp>,
    /// Number of workgroups per dimension (from the `gidxN` specials; 1 where absent).
    pub global_size: [usize; 3],
    /// Threads per workgroup per dimension (from the `lidxN` specials; 1 where absent).
    pub local_size: [usize; 3],
    /// The buffer arguments, sorted by slot.
    pub buffers: Vec<BufferArg>,
    /// The symbolic variables the kernel reads (`DefineVar`s), sorted by name.
    pub vars: Vec<Variable>,
    /// Invocations a subgroup has, where the kernel was compiled for a target whose subgroups
    /// all have the same size (`Target::fixed_subgroup_size`) and may rely on it: the CPU
    /// interpreter runs subgroups of that size (else the workgroup as one subgroup).
    pub subgroup_size: Option<usize>,
    /// Whether the workgroups take the grid's blocks last first (block `n - 1 - w` in every
    /// dimension for workgroup `w`). The results are the same; the memory order differs, so a
    /// kernel that reads what the kernel before it wrote can start where that one ended, in
    /// what the device's cache still holds.
    pub reversed: bool,
}

impl Program {
    /// Loop depth of every uop: the number of loops open around it (`Range` and `EndRange`
    /// count as outside their own loop).
    pub fn depths(&self) -> Vec<usize> {
        let mut depth = 0usize;
        self.uops
            .iter()
            .map(|u| match u.op() {
                Ops::Range | Ops::If => {
                    depth += 1;
                    depth - 1
                }
                Ops::EndRange | Ops::EndIf => {
                    depth = depth.saturating_sub(1);
                    depth
                }
                _ => depth,
            })
            .collect()
    }
}

impl fmt::Display for Program {
    /// The DEBUG=6 listing: a header, then one uop per line indented by loop depth.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: global {:?} local {:?}", self.name, self.global_size, self.local_size)?;
        let listing = print_uops(&self.uops);
        for (line, depth) in listing.lines().zip(self.depths()) {
            writeln!(f, "{:width$}{line}", "", width = 2 * depth)?;
        }
        Ok(())
    }
}

/// The buffer list of a linear uop list: every `DefineGlobal`, marked writable when stored to.
pub(crate) fn buffer_args(uops: &[UOp]) -> Vec<BufferArg> {
    let stored: Vec<&UOp> = uops
        .iter()
        .filter(|u| u.op() == Ops::Store)
        .map(|s| {
            let target = &s.src()[0];
            if target.op() == Ops::Index { &target.src()[0] } else { target }
        })
        .collect();
    let mut args: Vec<BufferArg> = uops
        .iter()
        .filter(|u| u.op() == Ops::DefineGlobal)
        .filter_map(|u| {
            let slot = usize::try_from(u.arg().as_int()?).ok()?;
            Some(BufferArg {
                slot,
                dtype: u.dtype().base().scalar_dtype(),
                size: u.dtype().ptr_size(),
                writable: stored.contains(&u),
            })
        })
        .collect();
    args.sort_by_key(|b| b.slot);
    args
}

/// The variables of a linear uop list, sorted by name.
pub(crate) fn variables(uops: &[UOp]) -> Vec<Variable> {
    let mut vars: Vec<Variable> = uops
        .iter()
        .filter_map(|u| match u.arg() {
            Arg::Var(v) if u.op() == Ops::DefineVar => Some(v.clone()),
            _ => None,
        })
        .collect();
    vars.sort();
    vars.dedup();
    vars
}
