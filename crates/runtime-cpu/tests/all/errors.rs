//! Typed errors of the interpreter: bad buffers, missing variables, out-of-bounds accesses,
//! buffers past the host's memory.

use crate::common;

use common::{global, load, program, reduce, store};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_runtime_cpu::{CpuBuffer, CpuError, Memory, run};

/// `out[i] = a[i + offset]` for i in 0..8.
fn shifted_copy(offset: i64) -> wgrad_codegen::Program {
    let (out, a) = (global(DType::F32, 0, 8), global(DType::F32, 1, 8));
    let i = UOp::special("gidx0", 8);
    program(&[store(&out, &i, None, &load(&a, &(&i + offset), None))])
}

fn buffers() -> Vec<CpuBuffer> {
    vec![CpuBuffer::zeros(DType::F32, 8), CpuBuffer::zeros(DType::F32, 8)]
}

#[test]
fn out_of_bounds_is_an_error() {
    let err = run(&shifted_copy(1), &mut buffers(), &[]).unwrap_err();
    assert!(matches!(err, CpuError::OutOfBounds { buffer: Memory::Global(1), index: 8, size: 8 }), "{err}");
    let err = run(&shifted_copy(-1), &mut buffers(), &[]).unwrap_err();
    assert!(matches!(err, CpuError::OutOfBounds { index: -1, .. }), "{err}");
}

#[test]
fn buffer_mismatches_are_errors() {
    let p = shifted_copy(0);
    let mut one = buffers();
    one.truncate(1);
    let err = run(&p, &mut one, &[]);
    assert!(matches!(err, Err(CpuError::BufferCount { expected: 2, got: 1 })));
    let mut wrong_dtype = vec![CpuBuffer::zeros(DType::F32, 8), CpuBuffer::zeros(DType::I32, 8)];
    assert!(matches!(run(&p, &mut wrong_dtype, &[]), Err(CpuError::BufferDType { slot: 1, .. })));
    let mut wrong_size = vec![CpuBuffer::zeros(DType::F32, 8), CpuBuffer::zeros(DType::F32, 4)];
    assert!(matches!(
        run(&p, &mut wrong_size, &[]),
        Err(CpuError::BufferSize { slot: 1, expected: 8, got: 4 })
    ));
}

#[test]
fn variables_are_checked() {
    let (out, a) = (global(DType::F32, 0, 1), global(DType::F32, 1, 8));
    let n = UOp::variable("n", 0, 8);
    let r = UOp::range(&n, 0);
    let p =
        program(&[store(&out, &UOp::index_const(0), None, &reduce(Ops::Add, &load(&a, &r, None), &[&r]))]);
    let mut bufs =
        vec![CpuBuffer::zeros(DType::F32, 1), CpuBuffer::from_values(DType::F32, (1..=8).map(f64::from))];
    assert!(matches!(run(&p, &mut bufs, &[]), Err(CpuError::MissingVariable { .. })));
    let var = p.vars[0].clone();
    assert!(matches!(run(&p, &mut bufs, &[(var.clone(), 9)]), Err(CpuError::VariableRange { value: 9, .. })));
    run(&p, &mut bufs, &[(var, 3)]).unwrap();
    assert_eq!(bufs[0].to_f64(), [6.0]);
    // an empty loop leaves the identity
    run(&p, &mut bufs, &[(p.vars[0].clone(), 0)]).unwrap();
    assert_eq!(bufs[0].to_f64(), [0.0]);
}

#[test]
fn a_buffer_past_the_hosts_memory_is_refused_not_reserved() {
    // 2^40 elements are 8 TiB of host storage: refused before the allocator is asked (with
    // overcommit it would grant them and the zeros would bring in the OOM killer)
    assert!(CpuBuffer::try_zeros(DType::F32, 1 << 40).is_none());
    assert_eq!(CpuBuffer::try_zeros(DType::F32, 3).map(|b| b.len()), Some(3));
}
