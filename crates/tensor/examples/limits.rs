//! `cargo run --release -p wgrad-tensor --example limits`: the device's size limits, checked on
//! the default device (`WGRAD_DEVICE` picks another). Each line prints PASS or FAIL:
//! - a 2^31 + 7 element sum (uint8 ones summed as uint32: 2147483655 exactly; tinygrad's
//!   WebGPU backend gets it wrong, issue 13624), without a buffer that large: the engine splits
//!   the reduce into loops of 131 and 16393005, which int32 indices reach (a device that stops
//!   long loops silently, Mesa llvmpipe, refuses its 16393005-iteration loop);
//! - a 2^31 + 11 element sum: prime, so it cannot be split, and its loop bound is past int32:
//!   refused before launch (kernel indices are int32), or computed exactly, never wrapped;
//! - a buffer of 2^31 + 7 bytes and one of 2^40 floats: out of memory (a typed error naming
//!   the size and the limit), refused for its int32 indices, or computed, never a crash;
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

/// Whether `message` is one of the refusals a size past the device's limits gets.
fn refused(message: &str) -> bool {
    ["out of memory", "past int32", "silently stops a loop"].iter().any(|m| message.contains(m))
}

fn main() -> Result<()> {
    println!("device {}", Tensor::default_device()?);
    let n = (1usize << 31) + 7;
    match Tensor::ones(&[n], DType::U8)?.sum(&[], false)?.item::<u32>() {
        Ok(v) => report("sum of 2^31 + 7 ones", v as usize == n, format!("computed: {v} (want {n})")),
        Err(e) => report("sum of 2^31 + 7 ones", refused(&e.to_string()), format!("refused: {e}")),
    }
    let prime = (1usize << 31) + 11;
    match Tensor::ones(&[prime], DType::U8)?.sum(&[], false)?.item::<u32>() {
        Ok(v) => {
            report("sum of 2^31 + 11 ones", v as usize == prime, format!("computed: {v} (want {prime})"))
        }
        Err(e) => report("sum of 2^31 + 11 ones", refused(&e.to_string()), format!("refused: {e}")),
    }
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
        Err(e) => report("a 2^31 + 7 byte buffer", refused(&e.to_string()), format!("refused: {e}")),
    }
    let huge = Tensor::zeros(&[1 << 40], DType::F32)?.add(1.0)?;
    let err = huge.realize().map(|_| ()).map_err(|e| e.to_string());
    report("2^40 floats", err.as_ref().is_err_and(|e| e.contains("out of memory")), format!("{err:?}"));
    Ok(())
}
