//! A small training loop: backward, an in-place update under `no_grad`, realize; the loss
//! falls, the weights keep their buffer and memory stays flat (its own process: the memory
//! counter is global).

use wgrad_tensor::{DType, Tensor, no_grad};

fn t(values: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(values, shape).unwrap()
}

#[test]
fn a_training_loop_updates_in_place_without_growing_memory() {
    let x = Tensor::randn(&[16, 4], 1).unwrap();
    let true_w = t(&[1.0, -2.0, 0.5, 3.0], &[4, 1]);
    let y = x.matmul(&true_w).unwrap();
    let w = Tensor::zeros(&[4, 1], DType::F32).unwrap();
    w.set_requires_grad(true).unwrap();
    let buffer = w.uop();
    let (mut losses, mut memory) = (vec![], vec![]);
    for _ in 0..6 {
        let loss = x.matmul(&w).unwrap().sub(&y).unwrap().square().mean(&[], false).unwrap();
        loss.backward().unwrap();
        no_grad(|| w.assign(&w.sub(w.grad().unwrap().mul(0.1).unwrap()).unwrap()).map(drop)).unwrap();
        Tensor::realize_all(&[&w, &loss]).unwrap();
        w.zero_grad();
        losses.push(loss.item::<f32>().unwrap());
        memory.push(wgrad_engine::counters().memory_used);
    }
    assert!(losses.windows(2).all(|p| p[1] < p[0]), "{losses:?}");
    assert_eq!(w.uop(), buffer, "the weights stay in their buffer");
    assert!(memory[5] <= memory[2], "{memory:?}");
}
