//! The global counters, the method cache, DEBUG output and NOOPT (one test: they are
//! process-wide).

mod common;

use common::{tensor, values};
use wgrad_engine::{cached_kernels, counters, flags, realize, reset_counters};

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
}
