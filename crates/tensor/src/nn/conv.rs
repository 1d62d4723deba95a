//! Convolution layers: `Conv1d`, `Conv2d`, `ConvTranspose1d` and `ConvTranspose2d` over
//! [`Tensor::conv2d`] and its kin, with square kernels and tinygrad's initialization.

use crate::Tensor;
use crate::conv::ConvOpts;
use crate::error::{Result, TensorError};
use crate::nn::{Module, kaiming_weight, uniform_bias};

/// The weight of `weight_shape` (whose dims after the first make the fan-in) and the bias of
/// a convolution layer from `cin` to `cout` channels, after checking that `groups` divides
/// both channel counts.
fn conv_state(
    op: &'static str,
    (cin, cout, groups): (usize, usize, usize),
    weight_shape: &[usize],
    bias: bool,
    seed: u64,
) -> Result<(Tensor, Option<Tensor>)> {
    if groups == 0 || !cin.is_multiple_of(groups) || !cout.is_multiple_of(groups) {
        let why = format!("groups = {groups} must divide in_channels = {cin} and out_channels = {cout}");
        return Err(TensorError::Argument { op, why });
    }
    let weight = kaiming_weight(weight_shape, seed)?;
    let fan_in = weight_shape[1..].iter().product();
    let bias = bias.then(|| uniform_bias(cout, fan_in, seed)).transpose()?;
    Ok((weight, bias))
}

/// A 2-d convolution layer over `(batch, in_channels, h, w)` inputs.
#[derive(Clone, Debug, Module)]
pub struct Conv2d {
    /// `(out_channels, in_channels / groups, kernel, kernel)`, kaiming-uniform (`a = sqrt(5)`).
    pub weight: Tensor,
    /// `(out_channels,)`, uniform in `±1/sqrt(fan_in)`.
    pub bias: Option<Tensor>,
    /// Stride, padding, dilation and groups.
    #[module(skip)]
    pub opts: ConvOpts,
}

impl Conv2d {
    /// A layer from `cin` to `cout` channels with a `kernel` x `kernel` window, initialized
    /// from `seed`.
    pub fn new(
        cin: usize,
        cout: usize,
        kernel: usize,
        opts: ConvOpts,
        bias: bool,
        seed: u64,
    ) -> Result<Conv2d> {
        let shape = [cout, cin / opts.groups.max(1), kernel, kernel];
        let (weight, bias) = conv_state("Conv2d", (cin, cout, opts.groups), &shape, bias, seed)?;
        Ok(Conv2d { weight, bias, opts })
    }

    /// The convolution of `x` `(batch, in_channels, h, w)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv2d(&self.weight, self.bias.as_ref(), &self.opts)
    }
}

/// A 1-d convolution layer over `(batch, in_channels, len)` inputs.
#[derive(Clone, Debug, Module)]
pub struct Conv1d {
    /// `(out_channels, in_channels / groups, kernel)`, kaiming-uniform (`a = sqrt(5)`).
    pub weight: Tensor,
    /// `(out_channels,)`, uniform in `±1/sqrt(fan_in)`.
    pub bias: Option<Tensor>,
    /// Stride, padding, dilation and groups.
    #[module(skip)]
    pub opts: ConvOpts,
}

impl Conv1d {
    /// A layer from `cin` to `cout` channels with a window of `kernel`, initialized from `seed`.
    pub fn new(
        cin: usize,
        cout: usize,
        kernel: usize,
        opts: ConvOpts,
        bias: bool,
        seed: u64,
    ) -> Result<Conv1d> {
        let shape = [cout, cin / opts.groups.max(1), kernel];
        let (weight, bias) = conv_state("Conv1d", (cin, cout, opts.groups), &shape, bias, seed)?;
        Ok(Conv1d { weight, bias, opts })
    }

    /// The convolution of `x` `(batch, in_channels, len)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv1d(&self.weight, self.bias.as_ref(), &self.opts)
    }
}

/// A transposed 2-d convolution layer (the gradient of a convolution by its input) over
/// `(batch, in_channels, h, w)` inputs.
#[derive(Clone, Debug, Module)]
pub struct ConvTranspose2d {
    /// `(in_channels, out_channels / groups, kernel, kernel)`, kaiming-uniform (`a = sqrt(5)`).
    pub weight: Tensor,
    /// `(out_channels,)`, uniform in `±1/sqrt(fan_in)` (`fan_in` from the weight's dims
    /// after the first, as tinygrad has it).
    pub bias: Option<Tensor>,
    /// Stride, padding, dilation and groups.
    #[module(skip)]
    pub opts: ConvOpts,
    /// Extra rows and columns at the end of the output.
    pub output_padding: usize,
}

impl ConvTranspose2d {
    /// A layer from `cin` to `cout` channels with a `kernel` x `kernel` window and
    /// `output_padding`, initialized from `seed`.
    pub fn new(
        cin: usize,
        cout: usize,
        kernel: usize,
        opts: ConvOpts,
        output_padding: usize,
        bias: bool,
        seed: u64,
    ) -> Result<ConvTranspose2d> {
        let shape = [cin, cout / opts.groups.max(1), kernel, kernel];
        let (weight, bias) = conv_state("ConvTranspose2d", (cin, cout, opts.groups), &shape, bias, seed)?;
        Ok(ConvTranspose2d { weight, bias, opts, output_padding })
    }

    /// The transposed convolution of `x` `(batch, in_channels, h, w)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv_transpose2d(&self.weight, self.bias.as_ref(), &self.opts, self.output_padding)
    }
}

/// A transposed 1-d convolution layer (the gradient of a convolution by its input) over
/// `(batch, in_channels, len)` inputs.
#[derive(Clone, Debug, Module)]
pub struct ConvTranspose1d {
    /// `(in_channels, out_channels / groups, kernel)`, kaiming-uniform (`a = sqrt(5)`).
    pub weight: Tensor,
    /// `(out_channels,)`, uniform in `±1/sqrt(fan_in)` (`fan_in` from the weight's dims
    /// after the first, as tinygrad has it).
    pub bias: Option<Tensor>,
    /// Stride, padding, dilation and groups.
    #[module(skip)]
    pub opts: ConvOpts,
    /// Extra positions at the end of the output.
    pub output_padding: usize,
}

impl ConvTranspose1d {
    /// A layer from `cin` to `cout` channels with a window of `kernel` and `output_padding`,
    /// initialized from `seed`.
    pub fn new(
        cin: usize,
        cout: usize,
        kernel: usize,
        opts: ConvOpts,
        output_padding: usize,
        bias: bool,
        seed: u64,
    ) -> Result<ConvTranspose1d> {
        let shape = [cin, cout / opts.groups.max(1), kernel];
        let (weight, bias) = conv_state("ConvTranspose1d", (cin, cout, opts.groups), &shape, bias, seed)?;
        Ok(ConvTranspose1d { weight, bias, opts, output_padding })
    }

    /// The transposed convolution of `x` `(batch, in_channels, len)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv_transpose1d(&self.weight, self.bias.as_ref(), &self.opts, self.output_padding)
    }
}
