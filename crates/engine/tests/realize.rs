//! Realizing lazy graphs built straight from the engine's vocabulary: results, the memory
//! planner, assign and its errors.

mod common;

use common::{centered, tensor, values};
use wgrad_engine::{EngineError, KernelLimits, lazy, prepare, realize, schedule_with};
use wgrad_ops::Ops;

#[test]
fn elementwise_reduce_and_views() {
    let a = tensor(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let b = tensor(&[1., 1., 1., 2., 2., 2.], &[2, 3]);
    let c = &(&a * &b) + &a;
    let sum = lazy::reshape(&lazy::reduce(&c, Ops::Add, &[1]), &[2]);
    let transposed = lazy::contiguous(&lazy::permute(&a, &[1, 0]));
    let r = realize(&[c, sum, transposed]).unwrap();
    assert_eq!(values(&r[0]), [2., 4., 6., 12., 15., 18.]);
    assert_eq!(values(&r[1]), [12., 45.]);
    assert_eq!(values(&r[2]), [1., 4., 2., 5., 3., 6.]);
}

#[test]
fn a_prefix_of_a_reduce_is_stored_as_its_own_kernel() {
    // the first elements of a reduce's output look like an identity view, but the kernel
    // storing them must not run over the whole reduce
    let a = tensor(&(0..24).map(|i| i as f32).collect::<Vec<_>>(), &[2, 3, 4]);
    let sums = lazy::reduce(&a, Ops::Add, &[2]);
    let prefix = lazy::shrink(&lazy::reshape(&sums, &[6]), &[(0, 4)]);
    let corner = lazy::shrink(&lazy::reshape(&sums, &[2, 3]), &[(0, 1), (0, 2)]);
    // one at a time: two kernels reading the reduce would realize it anyway
    assert_eq!(values(&realize(&[lazy::contiguous(&prefix)]).unwrap()[0]), [6., 22., 38., 54.]);
    assert_eq!(values(&realize(&[lazy::contiguous(&corner)]).unwrap()[0]), [6., 22.]);
}

#[test]
fn scratch_buffers_share_memory() {
    // three rounds of `contiguous(x - max(x))`: each round's max and result are read only by
    // the next round, so later rounds take the memory of earlier ones
    let x = tensor(&(0..64).map(|i| i as f32).collect::<Vec<_>>(), &[8, 8]);
    let mut y = x.clone();
    for _ in 0..3 {
        y = lazy::contiguous(&centered(&y, &[8, 8], 1));
    }
    let pending = prepare(&[y]).unwrap();
    let result = pending.results()[0].clone();
    let plan = pending.run().unwrap();
    assert!(plan.allocated < plan.requested, "{plan:?}");
    let row: Vec<f32> = (-7..=0).map(|v| v as f32).collect();
    assert_eq!(values(&result), row.repeat(8));
}

#[test]
fn assign_writes_the_target_buffer() {
    let w = tensor(&[1., 2., 3.], &[3]);
    let updated = lazy::assign(&w, &(&w + &w));
    let r = realize(&[updated]).unwrap();
    assert_eq!(r[0].src()[0], w.src()[0], "an assign's result is its target's buffer");
    assert_eq!(values(&r[0]), [2., 4., 6.]);
}

#[test]
fn a_result_computed_before_an_assign_is_not_reused_after_it() {
    // `doubled` is computed and kept alive (as gradients keep a forward pass alive across an
    // optimizer step); after `w` is assigned, the same expression built again must read the
    // new `w`, not come back with the result remembered from before
    let w = tensor(&[1., 2., 3.], &[3]);
    let doubled = &w + &w;
    assert_eq!(values(&realize(std::slice::from_ref(&doubled)).unwrap()[0]), [2., 4., 6.]);
    realize(&[lazy::assign(&w, &(&w * &w))]).unwrap();
    let again = &w + &w;
    assert_eq!(again, doubled, "hash-consing gives the same node");
    assert_eq!(values(&realize(&[again]).unwrap()[0]), [2., 8., 18.]);
}

#[test]
fn assigning_to_a_view_is_refused() {
    let w = tensor(&[1., 2., 3., 4.], &[4]);
    let part = lazy::shrink(&w, &[(1, 3)]);
    let err =
        schedule_with(&[lazy::assign(&part, &(&part + &part))], KernelLimits::new(32, true, false)).err();
    assert!(matches!(err, Some(EngineError::AssignTarget)), "{err:?}");
}
