//! The memory planner: every buffer a schedule creates gets device memory; scratch buffers
//! (intermediates nothing reads after the schedule) share memory whenever their lifetimes,
//! from the item that writes them to the last item that reads them, do not overlap.
//! Memory is matched by device, dtype and length (tinygrad's LRU planner).

use std::collections::HashMap;

use wgrad_dtype::DType;
use wgrad_ops::{UOp, UOpMap, UOpSet};

use crate::device::open_device;
use crate::lazy::device_of;
use crate::schedule::ScheduleItem;
use crate::{DeviceBuffer, DeviceName, EngineError, flags};

fn len(buf: &UOp) -> usize {
    match buf.arg() {
        wgrad_ops::Arg::Buffer { size, .. } => *size,
        _ => 0,
    }
}

/// What the planner did for one schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Bytes the schedule's new buffers hold together.
    pub requested: usize,
    /// Bytes allocated for them once scratch buffers share memory.
    pub allocated: usize,
}

/// Memory for each buffer of `fresh` (buffers without memory yet); those in `scratch` may
/// share it.
pub(crate) fn plan(
    items: &[ScheduleItem],
    fresh: &UOpSet,
    scratch: &UOpSet,
) -> Result<(UOpMap<DeviceBuffer>, MemoryPlan), EngineError> {
    let mut last: UOpMap<usize> = UOpMap::default();
    for (i, item) in items.iter().enumerate() {
        item.bufs.iter().filter(|b| scratch.contains(*b)).for_each(|b| _ = last.insert(b.clone(), i));
    }
    let mut free: HashMap<(DeviceName, DType, usize), Vec<DeviceBuffer>> = HashMap::new();
    let mut out: UOpMap<DeviceBuffer> = UOpMap::default();
    let (mut asked, mut allocated) = (0usize, 0usize);
    let mut alloc =
        |buf: &UOp, free: &mut HashMap<_, Vec<DeviceBuffer>>| -> Result<DeviceBuffer, EngineError> {
            let device = device_of(buf)?;
            let bytes = buf.dtype().itemsize() * len(buf);
            asked += bytes;
            let reused =
                scratch.contains(buf).then(|| free.get_mut(&(device.clone(), buf.dtype(), len(buf)))?.pop());
            match reused.flatten() {
                Some(mem) => Ok(mem),
                None => {
                    allocated += bytes;
                    open_device(&device)?.alloc(buf.dtype(), len(buf))
                }
            }
        };
    for (i, item) in items.iter().enumerate() {
        // everything the item touches gets memory before anything it reads last is freed
        for b in &item.bufs {
            if fresh.contains(b) && !out.contains_key(b) {
                let mem = alloc(b, &mut free)?;
                out.insert(b.clone(), mem);
            }
        }
        for b in &item.bufs {
            if last.get(b) == Some(&i) {
                last.remove(b);
                free.entry((device_of(b)?, b.dtype(), len(b))).or_default().push(out[b].clone());
            }
        }
    }
    for b in fresh {
        if !out.contains_key(b) {
            let mem = alloc(b, &mut free)?;
            out.insert(b.clone(), mem);
        }
    }
    if flags::debug() >= 1 && allocated < asked {
        eprintln!("memory reduced from {:.2} MB -> {:.2} MB", asked as f64 / 1e6, allocated as f64 / 1e6);
    }
    Ok((out, MemoryPlan { requested: asked, allocated }))
}
