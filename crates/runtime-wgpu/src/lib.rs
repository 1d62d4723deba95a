//! wgpu runtime of wgrad: devices, buffers, pipeline cache and dispatch (to be built).
