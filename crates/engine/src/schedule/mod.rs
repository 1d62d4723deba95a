//! Scheduling: a lazy graph becomes a list of kernels and copies, as one list of steps:
//! 1. `resolve`: nodes realized before are read from their buffers; `cache`: a graph equal
//!    up to its buffers to one scheduled before takes that schedule (steps 2-5 are skipped);
//! 2. `views`: movement ops fold into `VIEW`s, large reductions split in two;
//! 3. `group`: the nodes that get buffers of their own (the grouping rules); `fuse`: which of
//!    them share a kernel (multi-output kernels);
//! 4. `kernel`: each kernel's part of the graph lowered to a kernel AST;
//! 5. `order`: the run order.

mod cache;
mod fuse;
mod group;
mod kernel;
mod order;
mod views;

use std::sync::Arc;

use wgrad_dtype::DType;
use wgrad_ops::{Arg, Ops, UOp, UOpMap, WeakUOp};

use crate::lazy::{self, buffer, reshape};
use crate::realized::resolve_walked;
use crate::shapes::numel;
use crate::{DeviceName, EngineError, Shapes};
use cache::Normalized;
use group::{group, realized_target, whole_buffer};
use kernel::{buffer_key, lower_group, lower_kernel};
use views::{contiguous_st, to_views};

/// What a schedule item does.
#[derive(Clone, Debug)]
pub enum ItemKind {
    /// Runs the kernel AST (a `Sink` of a `Store` per output, outputs in slots `0..n`); buffer
    /// `i` is bound to slot `i`.
    Kernel(UOp),
    /// Copies buffer 1 into buffer 0 (across devices).
    Copy,
}

/// One step of a schedule.
#[derive(Clone, Debug)]
pub struct ScheduleItem {
    /// A kernel or a copy.
    pub kind: ItemKind,
    /// The `BUFFER` UOps it uses: its output first.
    pub bufs: Vec<UOp>,
    /// The device it runs on (the output's).
    pub device: DeviceName,
}

/// A realized node's buffer, and the lazy nodes whose value it holds (kept weakly: the
/// buffer outlives the run only if one of them is still alive, or it is a target's).
pub(crate) struct Output {
    /// The `BUFFER` written.
    pub buffer: UOp,
    /// The lazy nodes computed into it, each with its shape.
    pub keys: Vec<(WeakUOp, Vec<usize>)>,
    /// How many targets' results live in it (a node given twice, or through a reshape, is
    /// one buffer with two holders).
    pub targets: usize,
    /// Whether it existed before (an assign's target).
    pub existing: bool,
}

/// The kernels and copies that realize some lazy nodes.
pub struct Schedule {
    /// The steps, in run order.
    pub items: Vec<ScheduleItem>,
    /// For each target, the lazy UOp of its value once the schedule ran.
    pub results: Vec<UOp>,
    pub(crate) outputs: Vec<Output>,
}

impl Schedule {
    /// Number of kernels (copies not counted).
    pub fn kernel_count(&self) -> usize {
        self.items.iter().filter(|i| matches!(i.kind, ItemKind::Kernel(_))).count()
    }

    /// The kernel ASTs in run order.
    pub fn kernels(&self) -> Vec<&UOp> {
        self.items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::Kernel(ast) => Some(ast),
                ItemKind::Copy => None,
            })
            .collect()
    }
}

/// What one kernel may hold on the devices a schedule is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelLimits {
    /// The most buffers one kernel binds (outputs and inputs).
    pub max_buffers: usize,
    /// The longest reduce (elements of its one axis) that an elementwise kernel reading it
    /// broadcast back over its own rows computes itself (a softmax's max and sum, a layer
    /// norm's statistics: one kernel reads each row once); 0 for none.
    pub row_reduce: usize,
    /// Longer rows of a multiple of [`LONG_ROW_MULTIPLE`] elements, up to this many, that such
    /// a kernel also reduces itself: where subgroups combine a row's partials, so that its
    /// workgroup reads one per subgroup back (`Kernel::row_subgroup_partials`); 0 for none.
    pub long_rows: usize,
}

impl KernelLimits {
    /// No limit at all: what [`KernelLimits::min`] starts from.
    pub const UNLIMITED: KernelLimits =
        KernelLimits { max_buffers: usize::MAX, row_reduce: usize::MAX, long_rows: usize::MAX };

    /// The limits of a device binding `max_buffers` buffers, whose workgroups share memory
    /// (`row_reduce` [`ROW_REDUCE`]) or not (0: the rows would be reduced again per element),
    /// and whose subgroups combine partials (`long_rows` [`LONG_ROWS`]) or not.
    pub fn new(max_buffers: usize, shared_memory: bool, subgroups: bool) -> KernelLimits {
        let row_reduce = if shared_memory { ROW_REDUCE } else { 0 };
        let long_rows = if shared_memory && subgroups { LONG_ROWS } else { 0 };
        KernelLimits { max_buffers, row_reduce, long_rows }
    }

    /// What both `self` and `other` allow.
    pub fn min(self, other: KernelLimits) -> KernelLimits {
        KernelLimits {
            max_buffers: self.max_buffers.min(other.max_buffers),
            row_reduce: self.row_reduce.min(other.row_reduce),
            long_rows: self.long_rows.min(other.long_rows),
        }
    }

    /// Whether an elementwise kernel reduces rows of `n` elements itself.
    pub fn reduces_rows_of(&self, n: usize) -> bool {
        n <= self.row_reduce || (n <= self.long_rows && n.is_multiple_of(LONG_ROW_MULTIPLE))
    }
}

/// The longest row an elementwise kernel reduces itself on a device with workgroup memory.
pub const ROW_REDUCE: usize = 1024;
/// The longest row it reduces itself where subgroups combine the row's partials (H200, a
/// softmax over 4096 rows of 8192 f32: 0.122 ms in two kernels, 0.306 in one where every
/// thread read the row's 256 partials back, 0.075 in one reading one partial a subgroup).
pub const LONG_ROWS: usize = 8192;
/// What a long row's length is a multiple of: 32 values a thread by a whole number of
/// 32-wide subgroups.
pub const LONG_ROW_MULTIPLE: usize = 1024;

/// The schedule that realizes `targets` (lazy UOps) within `limits`: from the schedule cache
/// when a graph equal up to its buffers was scheduled before.
pub fn schedule_with(targets: &[UOp], limits: KernelLimits) -> Result<Schedule, EngineError> {
    // a node the caller holds may change under resolve (a part of it was realized since): its
    // result is recorded under the held node too, or the next realize would compute it again
    let sink = UOp::sink(targets.to_vec());
    let topo = sink.toposort();
    let images = resolve_walked(&sink, &topo);
    let resolved: Vec<UOp> = targets.iter().map(|t| images.get(t).unwrap_or(t).clone()).collect();
    let mut held: UOpMap<Vec<UOp>> = UOpMap::default();
    for (old, new) in images.iter().filter(|(old, new)| old != new) {
        held.entry(new.clone()).or_default().push(old.clone());
    }
    // the walk is the resolved graph's when nothing resolved
    let (sink, topo) = match held.is_empty() {
        true => (sink, topo),
        false => {
            let sink = UOp::sink(resolved.clone());
            let topo = sink.toposort();
            (sink, topo)
        }
    };
    let normal = cache::normalize(topo, limits);
    let (template, hit) = match cache::get(&normal.key) {
        Some(t) => (t, true),
        None => (Arc::new(template(&sink, &normal, limits)?), false),
    };
    let schedule = instantiate(&template, &normal.topo, &normal.buffers, &resolved, &held);
    if !hit {
        cache::put(normal.key, template);
    }
    Ok(schedule)
}

/// A buffer of a template: the graph's buffer at a position, or a new one.
#[derive(Clone, Copy)]
enum Buf {
    /// The graph's buffer at this position (see `cache.rs`).
    Input(usize),
    /// New buffer `i` of the template.
    New(usize),
}

/// A schedule in terms of positions (`cache.rs`), shared by every graph equal up to its
/// buffers: it holds no lazy node and no buffer.
pub(crate) struct Template {
    items: Vec<(ItemKind, Vec<Buf>, DeviceName)>,
    /// The new buffers: device, dtype, elements.
    new: Vec<(UOp, DType, usize)>,
    /// For each target, the buffer its value lands in and its shape; `None` when nothing
    /// computes it.
    results: Vec<Option<(Buf, Vec<usize>)>>,
    outputs: Vec<TemplateOutput>,
}

/// An [`Output`] of a template; its lazy nodes by position.
struct TemplateOutput {
    buffer: Buf,
    keys: Vec<(usize, Vec<usize>)>,
    targets: usize,
    existing: bool,
}

/// The schedule of the graph under `sink` (walked as `normal`), as a template.
fn template(sink: &UOp, normal: &Normalized, limits: KernelLimits) -> Result<Template, EngineError> {
    let max_buffers = limits.max_buffers.max(2);
    let mut shapes = Shapes::new();
    let converted = to_views(sink, &mut shapes)?;
    let sink = converted.sink;
    let (realizes, kernels) = group(&sink, &mut shapes, KernelLimits { max_buffers, ..limits })?;
    let topo: Vec<UOp> = sink.toposort().into_iter().filter(|u| realizes.contains(u)).collect();
    let groups = fuse::groups(&topo, &kernels, &realizes, &mut shapes, max_buffers)?;
    let position = normal.positions();
    let mut bufs: UOpMap<Buf> =
        normal.buffers.iter().enumerate().map(|(i, b)| (b.clone(), Buf::Input(i))).collect();
    let mut new = vec![];
    // every realized node's buffer first: a kernel of several outputs reads nodes computed
    // after its first one
    let mut buffers: UOpMap<UOp> = UOpMap::default();
    let mut outputs = vec![];
    for root in &topo {
        let buffer = output_buffer(root, &realizes, &buffers, &mut shapes)?;
        let existing = root.op() == Ops::Assign;
        if !existing {
            bufs.insert(buffer.clone(), Buf::New(new.len()));
            let Arg::Buffer { size, .. } = buffer.arg() else { unreachable!("output_buffer makes BUFFERs") };
            new.push((buffer.src()[0].clone(), buffer.dtype(), *size));
        }
        let keys = converted.origins.get(root).into_iter().flatten();
        let keys = keys.map(|k| (position[k], shapes.of(k).to_vec())).collect();
        outputs.push(TemplateOutput { buffer: bufs[&buffer], keys, targets: 0, existing });
        buffers.insert(root.clone(), buffer);
    }
    let buf = |b: &UOp| {
        bufs.get(b).copied().ok_or_else(|| EngineError::Unschedulable(format!("a kernel reads {b}")))
    };
    let mut items = vec![];
    let mut nodes = vec![];
    for group in groups {
        let lowered = match group.as_slice() {
            [root] => kernels.get(root),
            _ => None,
        };
        // a group's roots share their kernels' index space (a reduce's output shape, which a
        // root may reshape)
        let space = kernels.get(&group[0]).map(|k| k.shape.clone());
        items.push(build(&group, lowered, space.as_deref(), &realizes, &buffers, &mut shapes)?);
        nodes.push(fuse::node(group, &kernels));
    }
    let mut results = Vec::with_capacity(sink.src().len());
    for c in sink.src() {
        let realized = realized_target(c, &mut shapes);
        if let Some(i) = realized.as_ref().and_then(|r| topo.iter().position(|u| u == r)) {
            outputs[i].targets += 1;
        }
        results.push(match realized {
            Some(r) => Some((buf(&buffers[&r])?, shapes.of(c).to_vec())),
            None => None,
        });
    }
    let mut kept = vec![];
    for i in order::order(&nodes)? {
        if let Some(item) = items[i].take() {
            let refs = item.bufs.iter().map(&buf).collect::<Result<_, _>>()?;
            kept.push((item.kind, refs, item.device));
        }
    }
    Ok(Template { items: kept, new, outputs, results })
}

/// The schedule of a graph (its nodes `topo` and `buffers` by position) out of its template:
/// positions become its buffers and lazy nodes (and the nodes `held` under them), new
/// buffers new `BUFFER`s.
fn instantiate(
    t: &Template,
    topo: &[UOp],
    buffers: &[UOp],
    resolved: &[UOp],
    held: &UOpMap<Vec<UOp>>,
) -> Schedule {
    let new: Vec<UOp> = t
        .new
        .iter()
        .map(|(device, dtype, size)| UOp::new(Ops::Buffer, *dtype, [device.clone()], lazy::buffer_arg(*size)))
        .collect();
    let real = |b: &Buf| match *b {
        Buf::Input(i) => buffers[i].clone(),
        Buf::New(i) => new[i].clone(),
    };
    let items = t
        .items
        .iter()
        .map(|(kind, bufs, device)| ScheduleItem {
            kind: kind.clone(),
            bufs: bufs.iter().map(real).collect(),
            device: device.clone(),
        })
        .collect();
    let outputs = t
        .outputs
        .iter()
        .map(|o| {
            let keys = o
                .keys
                .iter()
                .flat_map(|(k, shape)| {
                    let k = &topo[*k];
                    std::iter::once(k)
                        .chain(held.get(k).into_iter().flatten())
                        .map(|h| (h.downgrade(), shape.clone()))
                })
                .collect();
            Output { buffer: real(&o.buffer), keys, targets: o.targets, existing: o.existing }
        })
        .collect();
    let results = t
        .results
        .iter()
        .zip(resolved)
        .map(|(r, target)| r.as_ref().map_or_else(|| target.clone(), |(b, shape)| reshape(&real(b), shape)))
        .collect();
    Schedule { items, results, outputs }
}

/// The buffer the realized node `root` writes: an assign's target's (checked to be a whole
/// buffer of its size), else a new one; `buffers` has those of the nodes before it.
fn output_buffer(
    root: &UOp,
    realizes: &wgrad_ops::UOpSet,
    buffers: &UOpMap<UOp>,
    shapes: &mut Shapes,
) -> Result<UOp, EngineError> {
    let shape = shapes.of(root).to_vec();
    if root.op() != Ops::Assign {
        return Ok(buffer(&shapes.device(root)?, root.dtype(), numel(&shape)));
    }
    let target = &root.src()[0];
    let whole = whole_buffer(target, shapes) || realizes.contains(target);
    let out = buffer_of(root, buffers)?;
    match whole && matches!(out.arg(), Arg::Buffer { size, .. } if *size == numel(&shape)) {
        true => Ok(out),
        false => Err(EngineError::AssignTarget),
    }
}

/// The buffer holding the value of a buffer or realized node.
fn buffer_of(u: &UOp, buffers: &UOpMap<UOp>) -> Result<UOp, EngineError> {
    let key = buffer_key(u);
    match key.op() {
        Ops::Buffer => Ok(key),
        _ => buffers.get(&key).cloned().ok_or(EngineError::AssignTarget),
    }
}

/// The item computing the realized nodes `group` (a copy, or one kernel storing each; none
/// for an empty kernel); `lowered` is a lone root's kernel when grouping made it already,
/// `space` the index space of the roots' kernels.
fn build(
    group: &[UOp],
    lowered: Option<&kernel::Lowered>,
    space: Option<&[usize]>,
    realizes: &wgrad_ops::UOpSet,
    buffers: &UOpMap<UOp>,
    shapes: &mut Shapes,
) -> Result<Option<ScheduleItem>, EngineError> {
    let root = &group[0];
    let device = shapes.device(root)?;
    if root.op() == Ops::Copy {
        let src = &root.src()[0];
        let from = match whole_buffer(src, shapes) {
            true if src.op() == Ops::View => src.src()[0].clone(),
            _ => buffer_of(src, buffers)?,
        };
        return Ok(Some(ScheduleItem {
            kind: ItemKind::Copy,
            bufs: vec![buffers[root].clone(), from],
            device,
        }));
    }
    let shape = shapes.of(root).to_vec();
    let grouped;
    let lowered = match (lowered, group) {
        (Some(l), _) => l,
        (None, [root]) => {
            grouped = lower_kernel(root, realizes, shapes)?;
            &grouped
        }
        (None, _) => {
            grouped = lower_group(group, space.unwrap_or(&shape), realizes, shapes)?;
            &grouped
        }
    };
    let mut bufs = vec![];
    for slot in &lowered.slots {
        let on = shapes.device(slot)?;
        if on != device {
            return Err(EngineError::CrossDevice { kernel: device.to_string(), buffer: on.to_string() });
        }
        bufs.push(buffer_of(slot, buffers)?);
    }
    if numel(&shape) == 0 {
        return Ok(None);
    }
    let view = UOp::view(contiguous_st(&lowered.shape));
    let stores = group.iter().zip(&lowered.values).enumerate().map(|(slot, (root, value))| {
        let dtype: DType = root.dtype();
        UOp::store([UOp::define_global(dtype, slot as i64), view.clone(), value.clone()])
    });
    let ast = UOp::sink(stores.collect::<Vec<_>>());
    Ok(Some(ScheduleItem { kind: ItemKind::Kernel(ast), bufs, device }))
}
