//! nn layers: shapes, initial values within tinygrad's bounds, reproducible seeds, derived
//! state names, and the layers (BatchNorm's running statistics included) against f64
//! references, forward and (for the newer layers) backward, on every device.

use crate::common;

use wgrad_tensor::nn::{
    BatchNorm, Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Embedding, GroupNorm, InstanceNorm,
    LSTMCell, LayerNorm, LayerNorm2d, Linear, Module, RMSNorm,
};
use wgrad_tensor::{ConvOpts, Tensor, TensorError, is_training, set_training, training, with_default_device};

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect()
}

/// `got` within tinygrad's forward tolerance of `want`.
fn close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}");
    let ok = got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1e-6 + 1e-3 * w.abs());
    assert!(ok, "{what}: {got:?} != {want:?}");
}

fn within(what: &str, t: &Tensor, bound: f64) {
    let v = values(t);
    assert!(v.iter().all(|x| x.abs() <= bound), "{what} exceeds ±{bound}: {v:?}");
    assert!(v.iter().any(|x| x.abs() > bound / 4.0), "{what} is not spread over ±{bound}: {v:?}");
}

fn on_every_device(f: impl Fn()) {
    for device in common::devices() {
        with_default_device(&device, &f);
    }
}

#[test]
fn linear_shapes_init_and_forward() {
    on_every_device(|| {
        let l = Linear::new(4, 8, true, 7).unwrap();
        assert_eq!(l.weight.shape(), [8, 4]);
        within("weight", &l.weight, (6.0f64 / (6.0 * 4.0)).sqrt());
        within("bias", l.bias.as_ref().unwrap(), 0.5);
        assert!(l.weight.requires_grad());
        let x: Vec<f32> = (0..8).map(|i| i as f32 * 0.25 - 1.0).collect();
        let y = l.forward(&Tensor::from_slice(&x, &[2, 4]).unwrap()).unwrap();
        assert_eq!(y.shape(), [2, 8]);
        let (w, b) = (values(&l.weight), values(l.bias.as_ref().unwrap()));
        let want: Vec<f64> = (0..16)
            .map(|k| (0..4).map(|j| f64::from(x[k / 8 * 4 + j]) * w[k % 8 * 4 + j]).sum::<f64>() + b[k % 8])
            .collect();
        close("linear", &values(&y), &want);
        let names: Vec<String> = l.named_tensors().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["weight", "bias"]);
        assert!(Linear::new(4, 3, false, 7).unwrap().bias.is_none());
    });
}

#[test]
fn seeds_reproduce_and_differ() {
    let w = |seed| values(&Linear::new(3, 3, true, seed).unwrap().weight);
    assert_eq!(w(1), w(1));
    assert_ne!(w(1), w(2));
    let l = Linear::new(3, 3, true, 1).unwrap();
    assert_ne!(values(&l.weight)[..3], values(l.bias.as_ref().unwrap())[..], "weight and bias draw apart");
}

#[test]
fn conv_layers_shapes_and_init() {
    on_every_device(|| {
        let opts = ConvOpts { padding: 1, ..ConvOpts::default() };
        let c = Conv2d::new(2, 4, 3, opts, true, 3).unwrap();
        assert_eq!(c.weight.shape(), [4, 2, 3, 3]);
        within("conv2d weight", &c.weight, (1.0f64 / 18.0).sqrt());
        within("conv2d bias", c.bias.as_ref().unwrap(), 1.0 / 18f64.sqrt());
        let x = Tensor::rand(&[1, 2, 5, 5], 0).unwrap();
        assert_eq!(c.forward(&x).unwrap().shape(), [1, 4, 5, 5]);
        let grouped = Conv2d::new(4, 6, 1, ConvOpts { groups: 2, ..ConvOpts::default() }, false, 3).unwrap();
        assert_eq!(grouped.weight.shape(), [6, 2, 1, 1]);
        let c1 = Conv1d::new(2, 3, 3, ConvOpts { stride: 2, ..ConvOpts::default() }, true, 4).unwrap();
        assert_eq!(c1.weight.shape(), [3, 2, 3]);
        assert_eq!(c1.forward(&Tensor::rand(&[2, 2, 9], 1).unwrap()).unwrap().shape(), [2, 3, 4]);
        let opts = ConvOpts { stride: 2, padding: 1, ..ConvOpts::default() };
        let ct = ConvTranspose2d::new(2, 3, 3, opts, 1, true, 5).unwrap();
        assert_eq!(ct.weight.shape(), [2, 3, 3, 3]);
        // (4 - 1) * 2 - 2 * 1 + 3 + 1
        assert_eq!(ct.forward(&Tensor::rand(&[1, 2, 4, 4], 2).unwrap()).unwrap().shape(), [1, 3, 8, 8]);
    });
    let bad = Conv2d::new(3, 4, 3, ConvOpts { groups: 2, ..ConvOpts::default() }, true, 0).unwrap_err();
    assert!(matches!(bad, TensorError::Argument { op: "Conv2d", .. }), "{bad}");
}

/// `x` `(n, c, h, w)` normalized per channel with `mean` and `var`.
fn batchnorm_ref(x: &[f64], shape: [usize; 4], mean: &[f64], var: &[f64]) -> Vec<f64> {
    let per = shape[2] * shape[3];
    x.iter()
        .enumerate()
        .map(|(i, v)| (v - mean[i / per % shape[1]]) / (var[i / per % shape[1]] + 1e-5).sqrt())
        .collect()
}

/// Per-channel mean and biased variance of `x` `(n, c, h, w)`.
fn channel_stats(x: &[f64], shape: [usize; 4]) -> (Vec<f64>, Vec<f64>) {
    let per = shape[2] * shape[3];
    let of = |c: usize| x.iter().enumerate().filter(move |(i, _)| i / per % shape[1] == c).map(|(_, v)| *v);
    let n = (x.len() / shape[1]) as f64;
    let mean: Vec<f64> = (0..shape[1]).map(|c| of(c).sum::<f64>() / n).collect();
    let var = (0..shape[1]).map(|c| of(c).map(|v| (v - mean[c]).powi(2)).sum::<f64>() / n).collect();
    (mean, var)
}

#[test]
fn batchnorm_trains_on_batch_statistics_and_evaluates_on_running_ones() {
    on_every_device(|| {
        let shape = [3, 2, 2, 2];
        let bn = BatchNorm::new(2).unwrap();
        let (mut running_mean, mut running_var) = (vec![0.0; 2], vec![1.0; 2]);
        for seed in 0..2 {
            let x = Tensor::randn(&shape, seed).unwrap().mul(2.0).unwrap().add(1.0).unwrap();
            let xs = values(&x);
            let y = training(true, || bn.forward(&x)).unwrap();
            Tensor::realize_all(&[&y, &bn.running_mean, &bn.running_var, &bn.num_batches_tracked]).unwrap();
            let (mean, var) = channel_stats(&xs, shape);
            close("train", &values(&y), &batchnorm_ref(&xs, shape, &mean, &var));
            let n = 12.0;
            for c in 0..2 {
                running_mean[c] = 0.9 * running_mean[c] + 0.1 * mean[c];
                running_var[c] = 0.9 * running_var[c] + 0.1 * var[c] * n / (n - 1.0);
            }
            close("running_mean", &values(&bn.running_mean), &running_mean);
            close("running_var", &values(&bn.running_var), &running_var);
        }
        assert_eq!(bn.num_batches_tracked.to_vec::<i32>().unwrap(), [2]);
        let x = Tensor::randn(&shape, 9).unwrap();
        let y = bn.forward(&x).unwrap();
        close("eval", &values(&y), &batchnorm_ref(&values(&x), shape, &running_mean, &running_var));
        let names: Vec<String> = bn.named_tensors().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]);
        assert!(!bn.running_mean.requires_grad() && bn.weight.as_ref().unwrap().requires_grad());
    });
    let bn = BatchNorm::new(3).unwrap();
    let err = bn.forward(&Tensor::rand(&[2, 2, 2], 0).unwrap()).unwrap_err();
    assert!(matches!(err, TensorError::Movement { op: "BatchNorm", .. }), "{err}");
}

/// Each row of `x` (rows of `n`) minus its mean, over its root mean square plus `eps`
/// (after centring when `centre`).
fn normalize_rows(x: &[f64], n: usize, centre: bool, eps: f64) -> Vec<f64> {
    x.chunks(n)
        .flat_map(|row| {
            let mean = if centre { row.iter().sum::<f64>() / n as f64 } else { 0.0 };
            let ms = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            row.iter().map(move |v| (v - mean) / (ms + eps).sqrt()).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn layernorm_groupnorm_rmsnorm_match_the_reference() {
    on_every_device(|| {
        let x = Tensor::randn(&[2, 4, 3], 5).unwrap();
        let xs = values(&x);
        let ln = LayerNorm::new(&[4, 3]).unwrap();
        ln.weight.as_ref().unwrap().assign(&Tensor::full(&[4, 3], 2.0f32).unwrap()).unwrap();
        let want: Vec<f64> = normalize_rows(&xs, 12, true, 1e-5).iter().map(|v| v * 2.0).collect();
        close("layernorm", &values(&ln.forward(&x).unwrap()), &want);
        let err = ln.forward(&Tensor::rand(&[4, 2], 0).unwrap()).unwrap_err();
        assert!(matches!(err, TensorError::Movement { op: "LayerNorm", .. }), "{err}");
        let gn = GroupNorm::new(2, 4).unwrap();
        close("groupnorm", &values(&gn.forward(&x).unwrap()), &normalize_rows(&xs, 6, true, 1e-5));
        let rms = RMSNorm::new(3).unwrap();
        close("rmsnorm", &values(&rms.forward(&x).unwrap()), &normalize_rows(&xs, 3, false, 1e-6));
    });
    assert!(matches!(GroupNorm::new(3, 4), Err(TensorError::Argument { op: "GroupNorm", .. })));
}

#[test]
fn embedding_looks_up_rows() {
    on_every_device(|| {
        let e = Embedding::new(5, 3, 1).unwrap();
        assert_eq!(e.weight.shape(), [5, 3]);
        within("embedding", &e.weight, (6.0f64 / 8.0).sqrt());
        let idx = Tensor::from_slice(&[4i32, 0, 4, 2], &[2, 2]).unwrap();
        let y = e.forward(&idx).unwrap();
        assert_eq!(y.shape(), [2, 2, 3]);
        let w = values(&e.weight);
        let want: Vec<f64> = [4, 0, 4, 2].iter().flat_map(|&i| w[i * 3..i * 3 + 3].to_vec()).collect();
        close("embedding", &values(&y), &want);
    });
}

/// A newtype: its state is its field's, under no extra name.
#[derive(Module)]
struct Head(Linear);

/// A tuple struct of two: its fields are numbered.
#[derive(Module)]
struct Pair(Tensor, Option<Tensor>);

#[derive(Module)]
enum Block {
    Dense(Linear),
    Residual { norm: LayerNorm, scale: Tensor },
    Identity,
}

#[derive(Module)]
#[allow(dead_code)] // the plain-data fields are there to be skipped, never read
struct Net {
    blocks: Vec<Block>,
    heads: [Head; 2],
    extra: std::collections::BTreeMap<String, Pair>,
    boxed: Box<Pair>,
    #[module(rename = "running")]
    stats: wgrad_tensor::nn::IndexMap<String, Tensor>,
    #[module(skip)]
    opts: ConvOpts,
    sizes: Vec<(usize, f64)>,
    name: String,
}

fn net() -> Net {
    let t = |v: f32| Tensor::full(&[1], v).unwrap();
    let residual = Block::Residual { norm: LayerNorm::new(&[2]).unwrap(), scale: t(2.0) };
    Net {
        blocks: vec![Block::Dense(Linear::new(2, 2, false, 0).unwrap()), Block::Identity, residual],
        heads: [Head(Linear::new(2, 1, true, 1).unwrap()), Head(Linear::new(2, 1, false, 2).unwrap())],
        extra: [("b".to_string(), Pair(t(3.0), None)), ("a".to_string(), Pair(t(4.0), Some(t(5.0))))]
            .into_iter()
            .collect(),
        boxed: Box::new(Pair(t(6.0), None)),
        stats: [("count".to_string(), t(7.0))].into_iter().collect(),
        opts: ConvOpts::default(),
        sizes: vec![(1, 0.5)],
        name: "net".into(),
    }
}

#[test]
fn derived_modules_name_state_as_tinygrad_does() {
    let model = net();
    let names: Vec<String> = model.named_tensors().into_iter().map(|(n, _)| n).collect();
    let want = [
        "blocks.0.weight",
        "blocks.2.norm.weight",
        "blocks.2.norm.bias",
        "blocks.2.scale",
        "heads.0.weight",
        "heads.0.bias",
        "heads.1.weight",
        "extra.a.0",
        "extra.a.1",
        "extra.b.0",
        "boxed.0",
        "running.count",
    ];
    assert_eq!(names, want);
    let state = model.state_dict();
    assert_eq!(state["extra.a.1"].to_vec::<f32>().unwrap(), [5.0]);
    assert_eq!(state["blocks.2.scale"].uop(), {
        let Block::Residual { scale, .. } = &model.blocks[2] else { unreachable!() };
        scale.uop()
    });
    assert_eq!(model.parameters().len(), want.len());
}

#[test]
fn a_derived_model_loads_its_own_state_dict() {
    on_every_device(|| {
        let source = net();
        let mut target = net();
        for (_, t) in target.named_tensors() {
            t.assign(&t.zeros_like()).unwrap();
        }
        target.load_state_dict(&source.state_dict()).unwrap();
        for ((name, a), (_, b)) in source.named_tensors().into_iter().zip(target.named_tensors()) {
            assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap(), "{name}");
        }
    });
}

/// The gradient of `sum(f(x))` by `x`, by central differences.
fn numeric_grad(x: &[f64], f: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    let h = 1e-6;
    (0..x.len())
        .map(|i| {
            let at = |d: f64| {
                let mut p = x.to_vec();
                p[i] += d;
                f(&p).iter().sum::<f64>()
            };
            (at(h) - at(-h)) / (2.0 * h)
        })
        .collect()
}

/// `got` within tinygrad's gradient tolerance of `want`.
fn close_grad(what: &str, got: &Tensor, want: &[f64]) {
    let got = values(got);
    assert_eq!(got.len(), want.len(), "{what}");
    let ok = got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1e-4 + 1e-3 * w.abs());
    assert!(ok, "{what}: {got:?} != {want:?}");
}

fn tensor(x: &[f64], shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(x.iter().map(|&v| v as f32).collect(), shape).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

/// Values in [-2, 2], as tinygrad's op tests draw them.
fn inputs(n: usize, seed: u64) -> Vec<f64> {
    values(&Tensor::uniform(&[n], -2.0, 2.0, seed).unwrap())
}

/// The transposed 1-d convolution of `x` `(b, cin, len)` by `w` `(cin, cout / g, k)`, written
/// out from its definition: each input position scatters its weighted taps to
/// `i * stride - padding + t * dilation`.
fn conv_transpose1d_ref(
    x: &[f64],
    w: &[f64],
    bias: &[f64],
    dims: [usize; 4],
    opts: ConvOpts,
    out_pad: usize,
) -> Vec<f64> {
    let [b, cin, len, k] = dims;
    let (cout, g) = (bias.len(), opts.groups);
    let (cin_g, cout_g) = (cin / g, cout / g);
    let out_len = (len - 1) * opts.stride + opts.dilation * (k - 1) + out_pad + 1 - 2 * opts.padding;
    let mut y: Vec<f64> = (0..b * cout * out_len).map(|q| bias[q / out_len % cout]).collect();
    for n in 0..b {
        for ci in 0..cin {
            for co_l in 0..cout_g {
                let co = ci / cin_g * cout_g + co_l;
                for i in 0..len {
                    for t in 0..k {
                        let o = (i * opts.stride + t * opts.dilation) as isize - opts.padding as isize;
                        if (0..out_len as isize).contains(&o) {
                            y[(n * cout + co) * out_len + o as usize] +=
                                x[(n * cin + ci) * len + i] * w[(ci * cout_g + co_l) * k + t];
                        }
                    }
                }
            }
        }
    }
    y
}

#[test]
fn conv_transpose1d_matches_the_reference_forward_and_backward() {
    on_every_device(|| {
        let opts = ConvOpts { stride: 2, padding: 1, dilation: 2, groups: 2 };
        let layer = ConvTranspose1d::new(4, 6, 3, opts, 1, true, 9).unwrap();
        assert_eq!(layer.weight.shape(), [4, 3, 3]);
        within("conv_transpose1d weight", &layer.weight, (1.0f64 / 9.0).sqrt());
        let xs = inputs(2 * 4 * 5, 1);
        let x = tensor(&xs, &[2, 4, 5]);
        let (w, b) = (values(&layer.weight), values(layer.bias.as_ref().unwrap()));
        let y = layer.forward(&x).unwrap();
        // (5 - 1) * 2 - 2 * 1 + 2 * (3 - 1) + 1 + 1
        assert_eq!(y.shape(), [2, 6, 12]);
        let dims = [2, 4, 5, 3];
        close("conv_transpose1d", &values(&y), &conv_transpose1d_ref(&xs, &w, &b, dims, opts, 1));
        y.sum(&[], false).unwrap().backward().unwrap();
        let dx = numeric_grad(&xs, |x| conv_transpose1d_ref(x, &w, &b, dims, opts, 1));
        close_grad("d/dx", &x.grad().unwrap(), &dx);
        let dw = numeric_grad(&w, |w| conv_transpose1d_ref(&xs, w, &b, dims, opts, 1));
        close_grad("d/dweight", &layer.weight.grad().unwrap(), &dw);
    });
    let c = ConvTranspose1d::new(2, 2, 3, ConvOpts::default(), 0, false, 0).unwrap();
    let err = c.forward(&Tensor::rand(&[1, 2, 3, 3], 0).unwrap()).unwrap_err();
    assert!(matches!(err, TensorError::Shapes { op: "conv_transpose1d", .. }), "{err}");
}

/// Each group of `n` values `stride` apart in blocks of `block`, normalized; the rest of the
/// index picks the block. `(x - mean) / sqrt(var + eps)`, then `* scale[c] + shift[c]` with
/// `c` from `channel(index)`.
fn normalize_groups(
    x: &[f64],
    members: impl Fn(usize) -> Vec<usize>,
    affine: impl Fn(usize) -> (f64, f64),
) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let group = members(i);
            let n = group.len() as f64;
            let mean = group.iter().map(|&j| x[j]).sum::<f64>() / n;
            let var = group.iter().map(|&j| (x[j] - mean).powi(2)).sum::<f64>() / n;
            let (scale, shift) = affine(i);
            (x[i] - mean) / (var + 1e-5).sqrt() * scale + shift
        })
        .collect()
}

const SCALE: [f64; 3] = [0.5, 2.0, -1.0];
const SHIFT: [f64; 3] = [0.25, -1.0, 0.5];

fn set_affine(weight: &Option<Tensor>, bias: &Option<Tensor>) {
    let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
    weight.as_ref().unwrap().assign(&Tensor::from_vec(f32s(&SCALE), &[3]).unwrap()).unwrap();
    bias.as_ref().unwrap().assign(&Tensor::from_vec(f32s(&SHIFT), &[3]).unwrap()).unwrap();
}

#[test]
fn instancenorm_normalizes_each_channel_of_each_sample() {
    on_every_device(|| {
        let norm = InstanceNorm::new(3).unwrap();
        set_affine(&norm.weight, &norm.bias);
        let xs = inputs(2 * 3 * 4, 2);
        let x = tensor(&xs, &[2, 3, 4]);
        let reference = |x: &[f64]| {
            normalize_groups(
                x,
                |i| (i / 4 * 4..i / 4 * 4 + 4).collect(),
                |i| (SCALE[i / 4 % 3], SHIFT[i / 4 % 3]),
            )
        };
        let y = norm.forward(&x).unwrap();
        close("instancenorm", &values(&y), &reference(&xs));
        y.sum(&[], false).unwrap().backward().unwrap();
        close_grad("instancenorm d/dx", &x.grad().unwrap(), &numeric_grad(&xs, reference));
    });
    let names: Vec<String> =
        InstanceNorm::new(2).unwrap().named_tensors().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    let err = InstanceNorm::new(2).unwrap().forward(&Tensor::rand(&[2, 4, 3], 0).unwrap()).unwrap_err();
    assert!(matches!(err, TensorError::Movement { op: "InstanceNorm", .. }), "{err}");
}

#[test]
fn layernorm2d_normalizes_the_channels_at_each_position() {
    on_every_device(|| {
        let norm = LayerNorm2d::new(3).unwrap();
        set_affine(&norm.0.weight, &norm.0.bias);
        let xs = inputs(2 * 3 * 2 * 2, 3);
        let x = tensor(&xs, &[2, 3, 2, 2]);
        // (n, c, p): the channels of one position are 4 apart
        let reference = |x: &[f64]| {
            normalize_groups(
                x,
                |i| (0..3).map(|c| i / 12 * 12 + c * 4 + i % 4).collect(),
                |i| (SCALE[i / 4 % 3], SHIFT[i / 4 % 3]),
            )
        };
        let y = norm.forward(&x).unwrap();
        assert_eq!(y.shape(), [2, 3, 2, 2]);
        close("layernorm2d", &values(&y), &reference(&xs));
        y.sum(&[], false).unwrap().backward().unwrap();
        close_grad("layernorm2d d/dx", &x.grad().unwrap(), &numeric_grad(&xs, reference));
    });
    let names: Vec<String> =
        LayerNorm2d::new(2).unwrap().named_tensors().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight", "bias"]);
    let err = LayerNorm2d::new(3).unwrap().forward(&Tensor::rand(&[2, 3, 4], 0).unwrap()).unwrap_err();
    assert!(matches!(err, TensorError::Movement { op: "LayerNorm2d", .. }), "{err}");
}

/// One LSTM step in f64: `(h, c)` from `x` `(b, input)`, weights and biases as the layer
/// stores them, state `(h, c)` `(b, hidden)`.
fn lstm_ref(
    x: &[f64],
    w: [&[f64]; 4],
    h: &[f64],
    c: &[f64],
    (b, input, hidden): (usize, usize, usize),
) -> (Vec<f64>, Vec<f64>) {
    let [w_ih, w_hh, b_ih, b_hh] = w;
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    let (mut h2, mut c2) = (vec![0.0; b * hidden], vec![0.0; b * hidden]);
    for n in 0..b {
        let gate = |row: usize| {
            let from_x: f64 = (0..input).map(|j| x[n * input + j] * w_ih[row * input + j]).sum();
            let from_h: f64 = (0..hidden).map(|j| h[n * hidden + j] * w_hh[row * hidden + j]).sum();
            from_x + from_h + b_ih[row] + b_hh[row]
        };
        for u in 0..hidden {
            let (i, f, g, o) = (gate(u), gate(hidden + u), gate(2 * hidden + u), gate(3 * hidden + u));
            let q = n * hidden + u;
            c2[q] = sigmoid(f) * c[q] + sigmoid(i) * g.tanh();
            h2[q] = sigmoid(o) * c2[q].tanh();
        }
    }
    (h2, c2)
}

#[test]
fn lstmcell_matches_the_reference_over_two_steps() {
    on_every_device(|| {
        let dims = (2, 3, 2);
        let cell = LSTMCell::new(3, 2, true, 4).unwrap();
        assert_eq!((cell.weight_ih.shape(), cell.weight_hh.shape()), (&[8, 3][..], &[8, 2][..]));
        within("weight_hh", &cell.weight_hh, 1.0 / 2f64.sqrt());
        assert_eq!(values(cell.bias_ih.as_ref().unwrap()), [0.0; 8]);
        for (bias, seed) in [(&cell.bias_ih, 5), (&cell.bias_hh, 6)] {
            bias.as_ref().unwrap().assign(&Tensor::uniform(&[8], -1.0, 1.0, seed).unwrap()).unwrap();
        }
        let (x1, x2) = (inputs(6, 7), inputs(6, 8));
        let (w_ih, w_hh) = (values(&cell.weight_ih), values(&cell.weight_hh));
        let (b_ih, b_hh) = (values(cell.bias_ih.as_ref().unwrap()), values(cell.bias_hh.as_ref().unwrap()));
        let two_steps = |w_ih: &[f64]| {
            let zeros = vec![0.0; 4];
            let (h, c) = lstm_ref(&x1, [w_ih, &w_hh, &b_ih, &b_hh], &zeros, &zeros, dims);
            let (h, c) = lstm_ref(&x2, [w_ih, &w_hh, &b_ih, &b_hh], &h, &c, dims);
            [h, c].concat()
        };
        let (h, c) = cell.forward(&tensor(&x1, &[2, 3]), None).unwrap();
        let (h, c) = cell.forward(&tensor(&x2, &[2, 3]), Some((&h, &c))).unwrap();
        let want = two_steps(&w_ih);
        close("lstm h", &values(&h), &want[..4]);
        close("lstm c", &values(&c), &want[4..]);
        h.add(&c).unwrap().sum(&[], false).unwrap().backward().unwrap();
        close_grad("lstm d/dweight_ih", &cell.weight_ih.grad().unwrap(), &numeric_grad(&w_ih, two_steps));
    });
    let cell = LSTMCell::new(3, 2, false, 0).unwrap();
    let names: Vec<String> = cell.named_tensors().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["weight_ih", "weight_hh"]);
    let x = Tensor::rand(&[2, 3], 0).unwrap();
    let err = cell.forward(&Tensor::rand(&[2, 4], 0).unwrap(), None).unwrap_err();
    assert!(matches!(err, TensorError::Movement { op: "LSTMCell", .. }), "{err}");
    let bad_state = Tensor::rand(&[2, 3], 1).unwrap();
    let err = cell.forward(&x, Some((&bad_state, &bad_state))).unwrap_err();
    assert!(err.to_string().contains("a state of (2, 2)"), "{err}");
}

#[test]
fn set_training_switches_batchnorm_until_switched_back() {
    let bn = BatchNorm::new(1).unwrap();
    let x = Tensor::from_slice(&[1.0f32, 3.0], &[2, 1]).unwrap();
    let before = set_training(true);
    assert!(!before && is_training());
    // the batch's statistics: mean 2, variance 1
    close(
        "train",
        &values(&bn.forward(&x).unwrap()),
        &[-1.0 / (1.0f64 + 1e-5).sqrt(), 1.0 / (1.0f64 + 1e-5).sqrt()],
    );
    assert!(set_training(false));
    // the running statistics after one batch: mean 0.2, variance 0.9 + 0.1 * 2
    let eval = values(&bn.forward(&x).unwrap());
    close("eval", &eval, &[0.8 / (1.1f64 + 1e-5).sqrt(), 2.8 / (1.1f64 + 1e-5).sqrt()]);
}
