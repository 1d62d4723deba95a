//! tinygrad's beautiful_mnist CNN and its training step (shared by the example and
//! `tests/mnist.rs`).

use wgrad_tensor::nn::{BatchNorm, Conv2d, Linear, Module, prefixed};
use wgrad_tensor::optim::{Adam, Optimizer};
use wgrad_tensor::{ConvOpts, DType, Result, Tensor, no_grad, training};

/// Conv2d(1,32,5) relu Conv2d(32,32,5) relu BatchNorm(32) max_pool2d Conv2d(32,64,3) relu
/// Conv2d(64,64,3) relu BatchNorm(64) max_pool2d flatten Linear(576,10).
pub struct Model {
    convs: [Conv2d; 4],
    norms: [BatchNorm; 2],
    head: Linear,
}

impl Model {
    /// The network with weights drawn from `seed`.
    pub fn new(seed: u64) -> Result<Model> {
        let conv = |cin, cout, k, i| Conv2d::new(cin, cout, k, ConvOpts::default(), true, seed + i);
        Ok(Model {
            convs: [conv(1, 32, 5, 0)?, conv(32, 32, 5, 1)?, conv(32, 64, 3, 2)?, conv(64, 64, 3, 3)?],
            norms: [BatchNorm::new(32)?, BatchNorm::new(64)?],
            head: Linear::new(576, 10, true, seed + 4)?,
        })
    }

    /// Logits `(n, 10)` of images `(n, 1, 28, 28)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = x.clone();
        for (pair, norm) in self.convs.chunks(2).zip(&self.norms) {
            x = pair[1].forward(&pair[0].forward(&x)?.relu())?.relu();
            x = norm.forward(&x)?.max_pool2d(2, None, 0)?;
        }
        self.head.forward(&x.flatten(1)?)
    }

    /// How many of `images` the model labels as `labels` says (batch statistics off).
    pub fn correct(&self, images: &Tensor, labels: &Tensor) -> Result<usize> {
        let hits = training(false, || no_grad(|| self.forward(images)?.argmax(1, false)?.eq(labels)))?;
        Ok(hits.cast(DType::I32).sum(&[], false)?.item::<i32>()? as usize)
    }
}

impl Module for Model {
    /// tinygrad's names: the model's `layers` list, activations and pools included.
    fn named_tensors(&self) -> Vec<(String, Tensor)> {
        let convs =
            self.convs.iter().zip([0, 2, 6, 8]).flat_map(|(c, i)| prefixed(&format!("layers.{i}"), c));
        let norms = self.norms.iter().zip([4, 10]).flat_map(|(n, i)| prefixed(&format!("layers.{i}"), n));
        convs.chain(norms).chain(prefixed("layers.13", &self.head)).collect()
    }
}

/// Adam with learning rate `lr` over every state tensor of `model`.
pub fn optimizer(model: &Model, lr: f64) -> Result<Adam> {
    Adam::new(model.parameters(), lr)
}

/// One training step on `images` and `labels`: the loss (realized) after the update.
pub fn train_step(model: &Model, opt: &mut Adam, images: &Tensor, labels: &Tensor) -> Result<f32> {
    let loss = training(true, || model.forward(images)?.sparse_categorical_crossentropy(labels, 0.0))?;
    loss.backward()?;
    loss.realize()?; // the forward pass; the backward pass reads the buffers it keeps
    opt.step()?;
    opt.zero_grad();
    loss.item::<f32>()
}
