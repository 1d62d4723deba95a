//! Raising a discrete GPU's clocks before a measurement. Its driver sets the clocks from how
//! busy the GPU has been lately: while a process spent most of its time on the host (a search
//! compiling candidates, random inputs made for each timing), an H200 ran between 690 and 1440
//! MHz instead of 1980, at 100 W and 43 C ("idle" the only reason reported), and the same
//! 4096^3 GEMM timed at anything from 5.4 to 15.9 ms. [`Device::raise_clocks`] runs a fixed
//! chain of multiply-adds (each launch of it takes the same number of cycles) until it runs
//! within [`WARM`] of the fastest it ran in this process: the first call runs it for at least
//! [`FIRST_WARM_UP`] and then until it stops getting faster, which sets that fastest time.
//! Other adapters (CPUs, integrated GPUs) return at once.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use wgrad_dtype::DType;

use crate::device::Device;
use crate::error::Result;
use crate::info::DeviceKind;

/// Each invocation runs `n[0]` dependent multiply-adds.
const SPIN: &str = "
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<storage, read> n: array<u32>;

@compute @workgroup_size(64)
fn spin(@builtin(global_invocation_id) id: vec3<u32>) {
    var x = f32(id.x) * 1e-6;
    for (var i = 0u; i < n[0]; i++) {
        x = fma(x, 0.999, 0.001);
    }
    y[id.x] = x;
}
";

/// Workgroups of 64 invocations a spin launches (a quarter of an H100's resident threads).
const WORKGROUPS: u32 = 1024;
/// Multiply-adds an invocation chains: about 65 us at 1980 MHz.
const CHAIN: u32 = 32_768;
/// Spins timed together; the fastest counts.
const LAUNCHES: usize = 4;
/// How close to the fastest spin the clocks count as raised.
pub const WARM: f64 = 1.05;
/// How long the first call spins at least, before it looks for the spins to stop getting
/// faster (an H200 went from 345 to 1980 MHz within 100 ms of work).
pub const FIRST_WARM_UP: Duration = Duration::from_millis(150);

/// The fastest spin of this process, once the first call set it.
#[derive(Default)]
pub(crate) struct Clocks {
    fastest: Mutex<Option<Duration>>,
}

impl Device {
    /// Runs a fixed multiply-add kernel until it runs within [`WARM`] of its fastest time in
    /// this process (see the module docs), for at most `budget`; says whether it got there.
    /// Adapters other than discrete GPUs, or without timestamps, return `false` at once.
    pub fn raise_clocks(&self, budget: Duration) -> Result<bool> {
        if self.adapter().kind != DeviceKind::Discrete || !self.features().timestamps {
            return Ok(false);
        }
        let pipeline = self.pipeline(SPIN, "spin")?;
        let y = self.alloc_elements(DType::F32, (WORKGROUPS * 64) as usize)?;
        let n = self.upload(&[CHAIN])?;
        let known = *self.clocks.fastest.lock().unwrap_or_else(|p| p.into_inner());
        let start = Instant::now();
        let (mut fastest, mut previous) = (known, None::<Duration>);
        let warm = loop {
            let mut batch = self.batch();
            for _ in 0..LAUNCHES {
                batch.dispatch(&pipeline, &[&y, &n], [WORKGROUPS, 1, 1])?;
            }
            let Some(time) = self.run_timed(batch)?.into_iter().flatten().min() else { break false };
            fastest = Some(fastest.map_or(time, |f| f.min(time)));
            let warm = match (known, previous) {
                (Some(best), _) => time.as_secs_f64() <= best.as_secs_f64() * WARM,
                (None, Some(last)) => {
                    start.elapsed() >= FIRST_WARM_UP && time.as_secs_f64() >= last.as_secs_f64() * 0.99
                }
                (None, None) => false,
            };
            if warm || start.elapsed() >= budget {
                break warm;
            }
            previous = Some(time);
        };
        *self.clocks.fastest.lock().unwrap_or_else(|p| p.into_inner()) = fastest;
        Ok(warm)
    }
}
