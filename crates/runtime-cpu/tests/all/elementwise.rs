//! Elementwise kernels on the interpreter: float and int ALU, casts, gating, f16.

use crate::common;

use common::{global, load, run_stores, store, values};
use wgrad_dtype::DType;
use wgrad_ops::UOp;
use wgrad_runtime_cpu::CpuBuffer;

/// `gidx0 * 128 + lidx0` over 8 workgroups of 128 threads, and `idx < n`.
fn idx_1d(n: i64) -> (UOp, UOp) {
    let idx = &(&UOp::special("gidx0", 8) * 128) + &UOp::special("lidx0", 128);
    let valid = idx.cmp_lt(n);
    (idx, valid)
}

#[test]
fn f32_add_mul_over_workgroups() {
    let (a_vals, b_vals) = (values(1000, 1), values(1000, 2));
    let (out, a, b) = (global(DType::F32, 0, 1000), global(DType::F32, 1, 1000), global(DType::F32, 2, 1000));
    let (idx, valid) = idx_1d(1000);
    let (x, y) = (load(&a, &idx, Some(&valid)), load(&b, &idx, Some(&valid)));
    let st = store(&out, &idx, Some(&valid), &(&(&x + &y) * &x));
    let bufs = run_stores(
        &[st],
        vec![
            CpuBuffer::zeros(DType::F32, 1000),
            CpuBuffer::from_values(DType::F32, a_vals.iter().map(|&v| f64::from(v))),
            CpuBuffer::from_values(DType::F32, b_vals.iter().map(|&v| f64::from(v))),
        ],
    );
    let want: Vec<f64> = a_vals.iter().zip(&b_vals).map(|(&x, &y)| f64::from((x + y) * x)).collect();
    assert_eq!(bufs[0].to_f64(), want);
}

#[test]
fn int32_wraps() {
    let vals: Vec<i64> = (0..1000).map(|i| i * 7_919_333 - 2_000_000_000).collect();
    let (out, a) = (global(DType::I32, 0, 1000), global(DType::I32, 1, 1000));
    let (idx, valid) = idx_1d(1000);
    let x = load(&a, &idx, Some(&valid));
    let st = store(&out, &idx, Some(&valid), &(&(&x * &x) + 1_500_000_000i64));
    let bufs = run_stores(
        &[st],
        vec![CpuBuffer::zeros(DType::I32, 1000), CpuBuffer::from_values(DType::I32, vals.clone())],
    );
    let want: Vec<i64> = vals
        .iter()
        .map(|&v| i64::from((v as i32).wrapping_mul(v as i32).wrapping_add(1_500_000_000)))
        .collect();
    assert_eq!(bufs[0].to_values().iter().map(|c| c.to_i64()).collect::<Vec<_>>(), want);
}

#[test]
fn where_cast_max() {
    let a_vals = values(1000, 3);
    let (out, a) = (global(DType::I32, 0, 1000), global(DType::F32, 1, 1000));
    let (idx, valid) = idx_1d(1000);
    let x = load(&a, &idx, Some(&valid));
    let zero = UOp::constant(DType::F32, 0.0);
    let y = x.cmp_lt(0.5f32).where_(&x.maximum(-1.0f32), &(&x * 10.0f32));
    let st = store(&out, &idx, Some(&valid), &(&y + &zero).cast(DType::I32));
    let bufs = run_stores(
        &[st],
        vec![
            CpuBuffer::zeros(DType::I32, 1000),
            CpuBuffer::from_values(DType::F32, a_vals.iter().map(|&v| f64::from(v))),
        ],
    );
    let want: Vec<i64> =
        a_vals.iter().map(|&x| (if x < 0.5 { x.max(-1.0) } else { x * 10.0 }) as i64).collect();
    assert_eq!(bufs[0].to_values().iter().map(|c| c.to_i64()).collect::<Vec<_>>(), want);
}

#[test]
fn gated_loads_pad_and_gated_stores_skip() {
    // out[i] = a[i - 2] for 2 <= i < 10, else 0; only the first 11 of 12 outputs are written
    let (out, a) = (global(DType::F32, 0, 12), global(DType::F32, 1, 8));
    let i = UOp::special("lidx0", 12);
    let inside = &i.cmp_lt(2).logical_not() & &i.cmp_lt(10);
    let padded = load(&a, &(&i - 2), Some(&inside));
    let st = store(&out, &i, Some(&i.cmp_lt(11)), &(&padded + 1.0f32));
    let mut init = vec![-5.0f64; 12];
    init[11] = 42.0;
    let bufs = run_stores(
        &[st],
        vec![
            CpuBuffer::from_values(DType::F32, init),
            CpuBuffer::from_values(DType::F32, (0..8).map(f64::from)),
        ],
    );
    let want = [1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 42.0];
    assert_eq!(bufs[0].to_f64(), want);
}

#[test]
fn f16_arithmetic_rounds_like_half() {
    let a_vals: Vec<half::f16> = values(256, 4).into_iter().map(half::f16::from_f32).collect();
    let (out, a) = (global(DType::F16, 0, 256), global(DType::F16, 1, 256));
    let i = UOp::special("gidx0", 256);
    let x = load(&a, &i, None);
    let st = store(&out, &i, None, &(&(&x * &x) + 0.1f32));
    let bufs = run_stores(
        &[st],
        vec![
            CpuBuffer::zeros(DType::F16, 256),
            CpuBuffer::from_values(DType::F16, a_vals.iter().map(|v| v.to_f64())),
        ],
    );
    let want: Vec<f64> = a_vals.iter().map(|&x| (x * x + half::f16::from_f32(0.1)).to_f64()).collect();
    assert_eq!(bufs[0].to_f64(), want);
    assert_eq!(bufs[0].to_bytes().len(), 512);
}
