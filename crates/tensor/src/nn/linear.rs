//! `Linear`: `x @ weight.T + bias`.

use crate::Tensor;
use crate::error::Result;
use crate::nn::{Module, kaiming_weight, uniform_bias};

/// A fully connected layer: `weight` is `(out_features, in_features)`, `bias` `(out_features,)`.
#[derive(Clone, Debug, Module)]
pub struct Linear {
    /// `(out_features, in_features)`, kaiming-uniform (`a = sqrt(5)`).
    pub weight: Tensor,
    /// `(out_features,)`, uniform in `±1/sqrt(in_features)`.
    pub bias: Option<Tensor>,
}

impl Linear {
    /// A layer from `in_features` to `out_features`, with a bias if `bias`, initialized from `seed`.
    pub fn new(in_features: usize, out_features: usize, bias: bool, seed: u64) -> Result<Linear> {
        let weight = kaiming_weight(&[out_features, in_features], seed)?;
        let bias = bias.then(|| uniform_bias(out_features, in_features, seed)).transpose()?;
        Ok(Linear { weight, bias })
    }

    /// `x @ weight.T + bias` over the last axis of `x`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.linear(&self.weight.t()?, self.bias.as_ref())
    }
}
