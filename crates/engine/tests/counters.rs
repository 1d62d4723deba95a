//! The global counters, the method cache, DEBUG output and NOOPT (one test: they are
//! process-wide).

mod common;

use common::{tensor, values};
use wgrad_dtype::DType;
use wgrad_engine::device::available_devices;
use wgrad_engine::{DeviceName, cached_kernels, counters, flags, lazy, realize, reset_counters, upload};
use wgrad_ops::Ops;

#[test]
fn counters_debug_and_noopt() {
    reset_counters();
    flags::set_debug(2);
    flags::set_noopt(true);
    let x = tensor(&[1., 2., 3., 4.], &[4]);
    let r = realize(&[&(&x * &x) + &x]).unwrap();
    assert_eq!(values(&r[0]), [2., 6., 12., 20.]);
    let c = counters();
    assert_eq!(c.kernels, 1);
    assert_eq!(c.flops, 8, "a mul and an add per element");
    assert_eq!(c.bytes, 32, "4 floats read, 4 written");
    assert!(c.kernel_time.as_nanos() > 0, "DEBUG=2 times kernels");
    assert!(c.memory_used >= 32);
    // the same graph again: the kernel comes from the method cache
    let compiled = cached_kernels();
    let r = realize(&[&(&x * &x) + &x]).unwrap();
    assert_eq!(values(&r[0]), [2., 6., 12., 20.]);
    assert_eq!((cached_kernels(), counters().kernels), (compiled, 2));
    flags::set_debug(0);
    flags::set_noopt(false);
    // on a GPU every other kernel of a submission takes its grid last first: two kernels of one
    // AST in one schedule, an odd number of kernels apart, are compiled once per order there,
    // once on the CPU. (Two independent sums would be one kernel: the second sums the first
    // spread over its rows and doubled, two kernels later.)
    for device in available_devices() {
        let orders = if matches!(device, DeviceName::Wgpu(_)) { 2 } else { 1 };
        let bytes: Vec<u8> = (0..256).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let input = lazy::reshape(&upload(&device, DType::F32, &bytes).unwrap(), &[8, 32]);
        let first = lazy::reduce(&input, Ops::Add, &[1]);
        let spread = lazy::contiguous(&lazy::expand(&lazy::reshape(&first, &[8, 1]), &[8, 32]));
        let doubled = lazy::contiguous(&(&spread + &spread));
        let second = lazy::reduce(&doubled, Ops::Add, &[1]);
        let before = cached_kernels();
        let r = realize(&[first, second]).unwrap();
        assert_eq!(cached_kernels() - before, orders + 2, "{device}: the sum, the spread, the doubling");
        let sums: Vec<f32> = (0..8).map(|row| (0..32).map(|c| (row * 32 + c) as f32).sum::<f32>()).collect();
        assert_eq!(values(&r[0]), sums, "{device}");
        assert_eq!(values(&r[1]), sums.iter().map(|s| 64.0 * s).collect::<Vec<_>>(), "{device}");
    }
}
