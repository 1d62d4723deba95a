//! `cargo run --release -p wgrad-tensor --example limits`: the device's size limits, checked on
//! the default device (`WGRAD_DEVICE` picks another). Each line prints PASS or FAIL:
//! - a 2^31 + 7 element sum (uint8 ones summed as uint32: 2147483655 exactly; tinygrad's
//!   WebGPU backend gets it wrong, issue 13624), without a buffer that large;
//! - a buffer of 2^31 + 7 bytes and one of 2^40 floats: out of memory (a typed error naming
//!   the size and the limit) or computed, never a crash;
//! - after each, a small op still runs.
#![allow(clippy::print_stdout)] // an example's job is to print

use wgrad_tensor::{DType, Result, Tensor};

fn still_usable() -> bool {
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3])
        .and_then(|x| x.mul(2.0)?.sum(&[], false)?.item::<f32>());
    matches!(x, Ok(v) if v == 12.0)
}

fn report(name: &str, ok: bool, detail: String) {
    println!(
        "{} {name}: {detail}; device usable after: {}",
        if ok { "PASS" } else { "FAIL" },
        still_usable()
    );
}

fn main() -> Result<()> {
    println!("device {}", Tensor::default_device()?);
    let n = (1usize << 31) + 7;
    let sum = Tensor::ones(&[n], DType::U8)?.sum(&[], false)?;
    let got = sum.item::<u32>();
    report("sum of 2^31 + 7 ones", matches!(got, Ok(v) if v as usize == n), format!("{got:?} (want {n})"));
    let big = Tensor::ones(&[n], DType::U8)?.contiguous();
    match big.realize() {
        Ok(_) => {
            let got = big.sum(&[], false)?.item::<u32>();
            report(
                "a 2^31 + 7 byte buffer",
                matches!(got, Ok(v) if v as usize == n),
                format!("computed: {got:?}"),
            );
        }
        Err(e) => {
            report("a 2^31 + 7 byte buffer", e.to_string().contains("out of memory"), format!("refused: {e}"))
        }
    }
    let huge = Tensor::zeros(&[1 << 40], DType::F32)?.add(1.0)?;
    let err = huge.realize().map(|_| ()).map_err(|e| e.to_string());
    report("2^40 floats", err.as_ref().is_err_and(|e| e.contains("out of memory")), format!("{err:?}"));
    Ok(())
}
