//! What the device's WGSL really does where the spec leaves a choice. WGSL lets `f16(x)` of an
//! f32 that no f16 holds round to either neighbour, so the renderer rounds in software
//! (`round_f16`, nearest even, as the interpreter and the host do) unless the device is known
//! to round that way itself. A probe kernel converts values chosen to tell the rounding modes
//! apart (ties with even and odd neighbours, their neighbours, f16 subnormals and their ties,
//! the overflow boundary, signed zeros, infinities) and a spread of others, both into an f16
//! buffer and back to f32 in registers (`f32(f16(x))`, which a compiler must not fold away: a
//! cast to half keeps its rounding when its value is used in the same kernel). Where every
//! stored result matches the host's bits (any NaN for a NaN), stores convert natively; where
//! every round trip does too, so does every f16 result. An H100's driver rounds the stores and
//! folds the round trip.

use wgrad_dtype::{ConstValue, DType};
use wgrad_renderer_wgsl::F16Rounding;

use crate::device::Device;
use crate::error::Result;

/// The probe: each invocation converts one value.
const PROBE: &str = "enable f16;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<storage, read_write> z: array<f32>;
@compute @workgroup_size(64)
fn probe(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&x)) {
    y[id.x] = f16(x[id.x]);
    z[id.x] = f32(f16(x[id.x]));
  }
}";

/// The f16 value of `bits`, as an f64.
fn half(bits: u16) -> f64 {
    ConstValue::from_bits(u64::from(bits), DType::F16).to_f64()
}

/// The f16 bits the host gives `v`: the nearest, ties to even.
fn nearest_even(v: f32) -> u16 {
    ConstValue::Float(f64::from(v)).to_bits(DType::F16) as u16
}

/// The f32 values the probe converts (an even count: the f16 output fills whole words).
fn probe_values() -> Vec<f32> {
    let mut values = vec![0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 65504.0, 65520.0, 1e9];
    // the tie between neighbouring f16 values (even below, then odd below; subnormal, at the
    // normal boundary, normal, at the top of the range) and a hair on either side of it
    let lows = [
        0x0001u16, 0x0002, 0x0003, 0x03fe, 0x03ff, 0x0400, 0x0401, 0x2e66, 0x3bff, 0x3c00, 0x3c01, 0x5555,
        0x7bfe,
    ];
    for low in lows {
        // exact in f32: f16 values and their midpoints have at most 12 significant bits
        let tie = ((half(low) + half(low + 1)) / 2.0) as f32;
        for v in [tie, f32::from_bits(tie.to_bits() - 1), f32::from_bits(tie.to_bits() + 1)] {
            values.extend([v, -v]);
        }
    }
    // a spread of bit patterns within the f16 range and beyond
    let mut state = 0x9e37_79b9u32;
    for _ in 0..512 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let sign = if state & 1 == 0 { 1.0 } else { -1.0 };
        values.push(f32::from_bits(0x3000_0000 + state % 0x1800_0000) * sign);
    }
    if values.len() % 2 == 1 {
        values.push(1.0);
    }
    values
}

impl Device {
    /// Runs the probe on buffers, a bind group and a command buffer of its own, outside the
    /// pool, the bind-group cache and the command stream, so that opening a device leaves
    /// their counters at zero.
    pub(crate) fn probe_f16_rounding(&self) -> Result<F16Rounding> {
        use wgpu::util::DeviceExt;
        let values = probe_values();
        let pipeline = self.pipeline_uncached(PROBE, "probe")?;
        let bytes = (values.len() * 2) as u64;
        let storage = |size, usage| wgpu::BufferDescriptor {
            label: Some("f16 probe"),
            size,
            usage,
            mapped_at_creation: false,
        };
        let outputs = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let input = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("f16 probe"),
            contents: bytemuck::cast_slice(&values),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let output = self.device.create_buffer(&storage(bytes, outputs));
        let round_trip = self.device.create_buffer(&storage(2 * bytes, outputs));
        let readback = self
            .device
            .create_buffer(&storage(3 * bytes, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST));
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("f16 probe"),
            layout: pipeline.layout(),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: input.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: output.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: round_trip.as_entire_binding() },
            ],
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(pipeline.raw());
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(values.len().div_ceil(64) as u32, 1, 1);
        }
        encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, bytes);
        encoder.copy_buffer_to_buffer(&round_trip, 0, &readback, bytes, 2 * bytes);
        self.submit_commands([encoder.finish()], "the f16 rounding probe")?;
        let got = self.map_and_copy(&readback, 3 * bytes, 0, 3 * bytes)?;
        let (stored, widened) = got.split_at(bytes as usize);
        // a NaN may come back with any payload
        let nan = |b: u16| b & 0x7c00 == 0x7c00 && b & 0x03ff != 0;
        let stores = values.iter().zip(stored.chunks_exact(2)).all(|(&v, pair)| {
            let (bits, want) = (u16::from_le_bytes([pair[0], pair[1]]), nearest_even(v));
            bits == want || (nan(bits) && nan(want))
        });
        let registers = values.iter().zip(widened.chunks_exact(4)).all(|(&v, quad)| {
            let back = f32::from_le_bytes([quad[0], quad[1], quad[2], quad[3]]);
            let want = half(nearest_even(v)) as f32;
            back.to_bits() == want.to_bits() || (back.is_nan() && want.is_nan())
        });
        Ok(match (stores, registers) {
            (true, true) => F16Rounding::Native,
            (true, false) => F16Rounding::Stores,
            _ => F16Rounding::Software,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_tells_other_roundings_apart() {
        let values = probe_values();
        assert_eq!(values.len() % 2, 0);
        // toward zero: one step back wherever nearest went past the value
        let toward_zero = |v: f32| {
            let n = nearest_even(v);
            if v.is_finite() && half(n).abs() > f64::from(v).abs() { n - 1 } else { n }
        };
        // ties away from zero: one step out wherever nearest went back at a tie
        let ties_away = |v: f32| {
            let n = nearest_even(v);
            let tie = (f64::from(v).abs() - half(n).abs()) * 2.0 == half(n + 1).abs() - half(n).abs();
            if v != 0.0 && tie { n + 1 } else { n }
        };
        for other in [&toward_zero as &dyn Fn(f32) -> u16, &ties_away] {
            assert!(values.iter().any(|&v| !v.is_nan() && other(v) != nearest_even(v)));
        }
    }
}
