//! `LSTMCell`: one step of a long short-term memory layer.

use crate::Tensor;
use crate::error::{Result, TensorError};
use crate::nn::{Module, subseed, trainable};

/// One step of an LSTM: from input `x` `(batch, input_size)` and state `(h, c)`, the gates
/// `i, f, g, o = chunk4(x @ weight_ihᵀ + bias_ih + h @ weight_hhᵀ + bias_hh)`, then
/// `c' = sigmoid(f) c + sigmoid(i) tanh(g)` and `h' = sigmoid(o) tanh(c')`, as PyTorch and
/// tinygrad define it. Biases start at zero, as tinygrad has them (PyTorch draws them like
/// the weights).
#[derive(Clone, Debug, Module)]
pub struct LSTMCell {
    /// `(4 * hidden_size, input_size)`, the input, forget, cell and output gates' rows in
    /// that order, uniform in `±1/sqrt(hidden_size)`.
    pub weight_ih: Tensor,
    /// `(4 * hidden_size, hidden_size)`, uniform in `±1/sqrt(hidden_size)`.
    pub weight_hh: Tensor,
    /// `(4 * hidden_size,)`, zeros; `None` for no bias.
    pub bias_ih: Option<Tensor>,
    /// `(4 * hidden_size,)`, zeros; `None` for no bias.
    pub bias_hh: Option<Tensor>,
}

impl LSTMCell {
    /// A cell from `input_size` features to a state of `hidden_size`, with biases if
    /// `bias`, initialized from `seed`.
    pub fn new(input_size: usize, hidden_size: usize, bias: bool, seed: u64) -> Result<LSTMCell> {
        if hidden_size == 0 {
            return Err(TensorError::Argument {
                op: "LSTMCell",
                why: "hidden_size must be at least 1".into(),
            });
        }
        let bound = 1.0 / (hidden_size as f64).sqrt();
        let weight = |cols, stream| {
            trainable(Tensor::uniform(&[4 * hidden_size, cols], -bound, bound, subseed(seed, stream))?)
        };
        let zeros = || bias.then(|| trainable(Tensor::full(&[4 * hidden_size], 0.0f32)?)).transpose();
        Ok(LSTMCell {
            weight_ih: weight(input_size, 0)?,
            weight_hh: weight(hidden_size, 1)?,
            bias_ih: zeros()?,
            bias_hh: zeros()?,
        })
    }

    /// The new state `(h, c)`, each `(batch, hidden_size)`, from `x` `(batch, input_size)`
    /// and the state `hc` (zeros of `x`'s dtype when `None`).
    pub fn forward(&self, x: &Tensor, hc: Option<(&Tensor, &Tensor)>) -> Result<(Tensor, Tensor)> {
        let (hidden, input) = (self.weight_hh.shape()[1], self.weight_ih.shape()[1]);
        if x.ndim() != 2 || x.shape()[1] != input {
            let arg = format!("(batch, {input})");
            return Err(TensorError::Movement { op: "LSTMCell", arg, operand: x.operand() });
        }
        let zeros;
        let (h, c) = match hc {
            Some(hc) => hc,
            None => {
                zeros = Tensor::constant(&[x.shape()[0], hidden], 0.into(), x.dtype(), x.device());
                (&zeros, &zeros)
            }
        };
        for state in [h, c] {
            if state.shape() != [x.shape()[0], hidden] {
                let arg = format!("a state of ({}, {hidden})", x.shape()[0]);
                return Err(TensorError::Movement { op: "LSTMCell", arg, operand: state.operand() });
            }
        }
        let gates = x.linear(&self.weight_ih.t()?, self.bias_ih.as_ref())?;
        let gates = gates.add(h.linear(&self.weight_hh.t()?, self.bias_hh.as_ref())?)?;
        let gates = gates.split(&[hidden; 4], 1)?;
        let [i, f, g, o] = &gates[..] else { unreachable!("split into four") };
        let c = f.sigmoid().mul(c)?.add(i.sigmoid().mul(g.tanh())?)?;
        let h = o.sigmoid().mul(c.tanh())?;
        Ok((h, c))
    }
}
