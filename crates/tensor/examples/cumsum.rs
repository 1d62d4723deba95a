//! A 1M-element cumsum on the default device (`WGRAD_DEVICE` picks another): its kernel count
//! and the wall time of one realize, warm (kernels compiled by a first run).
//!
//! `cargo run --release -p wgrad-tensor --example cumsum`
#![allow(clippy::print_stdout)] // an example's job is to print

use std::time::Instant;

use wgrad_tensor::{Result, Tensor};

fn main() -> Result<()> {
    let device = Tensor::default_device()?;
    println!("device {device}");
    println!("{:>10} {:>8} {:>10} {:>12}", "n", "kernels", "ms", "Melem/s");
    for n in [1 << 10, 1 << 16, 1 << 20] {
        let x = Tensor::rand(&[n], 0)?.contiguous();
        x.realize()?;
        let kernels = x.cumsum(0)?.schedule(32)?.kernel_count();
        x.cumsum(0)?.realize()?; // compile
        let runs = 5;
        let start = Instant::now();
        for _ in 0..runs {
            let y = x.cumsum(0)?;
            y.realize()?;
            y.sum(&[], false)?.item::<f32>()?; // wait for the device
        }
        let ms = start.elapsed().as_secs_f64() * 1e3 / f64::from(runs);
        println!("{n:>10} {kernels:>8} {ms:>10.2} {:>12.1}", n as f64 / ms / 1e3);
    }
    Ok(())
}
