//! Bind groups, cached by (pipeline, buffers): a loop that launches the same kernels on the
//! same (pooled) buffers creates its bind groups once.
//!
//! Invariants:
//! - A key is the pipeline's id (never reused) and each bound buffer's wgpu identity and
//!   bound size; an entry's bind group keeps its buffers alive, so no key can come to name
//!   other buffers while it is cached.
//! - The cache holds at most [`CAPACITY`] entries; past that it starts over (a loop settles
//!   on a working set far smaller). Trimming the buffer pool empties it, so freed memory is
//!   not held by cached bind groups.
//! - `created` counts every bind group made, cached or not.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::buffer::Buffer;
use crate::pipeline::Pipeline;

/// Entries kept before the cache starts over.
const CAPACITY: usize = 16_384;

type Key = (u64, Vec<(wgpu::Buffer, u64)>);

/// Bind groups by (pipeline, buffers).
#[derive(Default)]
pub(crate) struct BindGroupCache {
    groups: Mutex<HashMap<Key, wgpu::BindGroup>>,
    created: AtomicU64,
}

impl BindGroupCache {
    /// The bind group of `buffers` (bound at `@binding(i)` in order) for `pipeline`.
    pub(crate) fn get(
        &self,
        device: &wgpu::Device,
        pipeline: &Pipeline,
        buffers: &[Buffer],
    ) -> wgpu::BindGroup {
        let key: Key = (pipeline.id(), buffers.iter().map(|b| (b.raw().clone(), b.bound_size())).collect());
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(group) = groups.get(&key) {
            return group.clone();
        }
        let group = create(device, pipeline, buffers);
        self.created.fetch_add(1, Ordering::Relaxed);
        if groups.len() >= CAPACITY {
            groups.clear();
        }
        groups.insert(key, group.clone());
        group
    }

    /// Forgets every cached bind group.
    pub(crate) fn clear(&self) {
        self.groups.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Bind groups cached now.
    pub(crate) fn len(&self) -> usize {
        self.groups.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Bind groups created so far.
    pub(crate) fn created(&self) -> u64 {
        self.created.load(Ordering::Relaxed)
    }
}

/// A new bind group of `buffers` for `pipeline`.
fn create(device: &wgpu::Device, pipeline: &Pipeline, buffers: &[Buffer]) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
        .iter()
        .zip(0u32..)
        .map(|(buffer, binding)| wgpu::BindGroupEntry {
            binding,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: buffer.raw(),
                offset: 0,
                size: std::num::NonZeroU64::new(buffer.binding_size()),
            }),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(pipeline.entry()),
        layout: pipeline.layout(),
        entries: &entries,
    })
}
