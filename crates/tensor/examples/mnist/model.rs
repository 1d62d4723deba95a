//! tinygrad's beautiful_mnist CNN and its training step, eager and jitted (shared by the
//! example, `tests/all/mnist.rs` and `tests/all/jit.rs`).

use std::cell::RefCell;

use wgrad_tensor::nn::{BatchNorm, Conv2d, Linear, Module};
use wgrad_tensor::optim::{Adam, Optimizer};
use wgrad_tensor::{ConvOpts, DType, Result, Tensor, TinyJit, no_grad, training};

/// One entry of tinygrad's `layers` list: a layer with state or a stateless step.
#[derive(Module)]
enum Layer {
    Conv(Conv2d),
    Norm(BatchNorm),
    Linear(Linear),
    Relu,
    MaxPool,
    Flatten,
}

impl Layer {
    fn forward(&self, x: Tensor) -> Result<Tensor> {
        match self {
            Layer::Conv(c) => c.forward(&x),
            Layer::Norm(n) => n.forward(&x),
            Layer::Linear(l) => l.forward(&x),
            Layer::Relu => Ok(x.relu()),
            Layer::MaxPool => x.max_pool2d(2, None, 0),
            Layer::Flatten => x.flatten(1),
        }
    }
}

/// Conv2d(1,32,5) relu Conv2d(32,32,5) relu BatchNorm(32) max_pool2d Conv2d(32,64,3) relu
/// Conv2d(64,64,3) relu BatchNorm(64) max_pool2d flatten Linear(576,10), state named as
/// tinygrad names it (`layers.0.weight`, ..., `layers.13.bias`).
#[derive(Module)]
pub struct Model {
    layers: Vec<Layer>,
}

impl Model {
    /// The network with weights drawn from `seed`.
    pub fn new(seed: u64) -> Result<Model> {
        use Layer::{Flatten, MaxPool, Norm, Relu};
        let conv =
            |cin, cout, k, i| Conv2d::new(cin, cout, k, ConvOpts::default(), true, seed + i).map(Layer::Conv);
        let layers = vec![
            conv(1, 32, 5, 0)?,
            Relu,
            conv(32, 32, 5, 1)?,
            Relu,
            Norm(BatchNorm::new(32)?),
            MaxPool,
            conv(32, 64, 3, 2)?,
            Relu,
            conv(64, 64, 3, 3)?,
            Relu,
            Norm(BatchNorm::new(64)?),
            MaxPool,
            Flatten,
            Layer::Linear(Linear::new(576, 10, true, seed + 4)?),
        ];
        Ok(Model { layers })
    }

    /// Logits `(n, 10)` of images `(n, 1, 28, 28)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.layers.iter().try_fold(x.clone(), |x, layer| layer.forward(x))
    }

    /// How many of `images` the model labels as `labels` says (batch statistics off).
    pub fn correct(&self, images: &Tensor, labels: &Tensor) -> Result<usize> {
        let hits = training(false, || no_grad(|| self.forward(images)?.argmax(1, false)?.eq(labels)))?;
        Ok(hits.cast(DType::I32).sum(&[], false)?.item::<i32>()? as usize)
    }
}

/// Adam with learning rate `lr` over every state tensor of `model`.
pub fn optimizer(model: &Model, lr: f64) -> Result<Adam> {
    Adam::new(model.parameters(), lr)
}

/// One training step on `images` and `labels`: the loss (realized) of the batch the update
/// followed.
pub fn train_step(model: &Model, opt: &mut Adam, images: &Tensor, labels: &Tensor) -> Result<Tensor> {
    let loss = training(true, || model.forward(images)?.sparse_categorical_crossentropy(labels, 0.0))?;
    loss.backward()?;
    loss.realize()?; // the forward pass; the backward pass reads the buffers it keeps
    opt.step()?;
    opt.zero_grad();
    Ok(loss)
}

/// [`train_step`] as a [`TinyJit`] of `(images, labels)` returning `[loss]`: from its third
/// call a step replays the kernels of the second. The optimizer sits in a `RefCell` so its
/// learning rate can still be set between steps (`opt.borrow().set_lr(..)`).
#[allow(
    dead_code,
    reason = "the benches and tests step on uploaded batches; the example picks on the device"
)]
pub fn jit_train_step<'a>(
    model: &'a Model,
    opt: &'a RefCell<Adam>,
) -> TinyJit<impl FnMut(&[Tensor]) -> Result<Vec<Tensor>> + 'a> {
    TinyJit::new(move |batch: &[Tensor]| {
        Ok(vec![train_step(model, &mut opt.borrow_mut(), &batch[0], &batch[1])?])
    })
}

/// The entries of `all` (one per digit along its first dim) at the int32 indices `picks`,
/// picked on the device: a one-hot reduce, which the codegen lowers to indexed loads.
fn pick(all: &Tensor, picks: &Tensor) -> Result<Tensor> {
    let digits = all.shape()[0] as isize;
    let shape: Vec<isize> = picks.shape().iter().chain(&all.shape()[1..]).map(|&d| d as isize).collect();
    picks.embedding(&all.reshape(&[digits, -1])?)?.reshape(&shape)
}

/// [`train_step`] on the training digits at the int32 indices `picks`, picked on the device
/// from all of them there (`images` uint8 `(n, 1, 28, 28)`, `labels` int32 `(n,)`, from
/// [`Digits::tensors`]): only the indices (4 bytes a digit) cross to the device each step, as
/// in tinygrad's beautiful_mnist.
///
/// [`Digits::tensors`]: wgrad_tensor::datasets::mnist::Digits::tensors
pub fn picking_train_step(
    model: &Model,
    opt: &mut Adam,
    (images, labels): (&Tensor, &Tensor),
    picks: &Tensor,
) -> Result<Tensor> {
    let x = pick(images, picks)?.cast(DType::F32);
    train_step(model, opt, &x, &pick(labels, picks)?)
}

/// [`picking_train_step`] as a [`TinyJit`] of `[picks]` returning `[loss]`, as
/// [`jit_train_step`].
pub fn jit_picking_train_step<'a>(
    model: &'a Model,
    opt: &'a RefCell<Adam>,
    images: &'a Tensor,
    labels: &'a Tensor,
) -> TinyJit<impl FnMut(&[Tensor]) -> Result<Vec<Tensor>> + 'a> {
    TinyJit::new(move |picks: &[Tensor]| {
        Ok(vec![picking_train_step(model, &mut opt.borrow_mut(), (images, labels), &picks[0])?])
    })
}
