//! A random Tensor program: a list of steps, each a Tensor op on earlier steps' values. The
//! same [`apply`] builds it while generating (lazily, to learn shapes and dtypes) and runs it
//! on each device, so the generator and the runs cannot disagree on what a step means.

use std::fmt;

use wgrad_tensor::{DType, Index, Result, Tensor};

/// Elementwise ops of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unary {
    /// `-x`
    Neg,
    /// `max(x, 0)`
    Relu,
    /// `|x|`
    Abs,
    /// `x * x`
    Square,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// `tanh x`
    Tanh,
    /// `e^x`
    Exp,
    /// `sin x`
    Sin,
    /// `sqrt(|x|)`
    SqrtAbs,
    /// `log(|x| + 1)`
    LogAbs1,
    /// `!x` (bools)
    Not,
}

/// Elementwise ops of two operands (broadcast).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `max(a, b)`
    Maximum,
    /// `a / (|b| + 1)`: a division that never divides by zero
    DivSafe,
    /// `a // b` on ints, truncating (division by zero is defined)
    Idiv,
    /// `a < b`
    Lt,
    /// `a == b`
    Eq,
    /// `a ^ b` (ints, bools)
    Xor,
}

/// Reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduce {
    /// `sum`
    Sum,
    /// `max`
    Max,
    /// `min`
    Min,
    /// `mean`
    Mean,
}

/// One entry of a getitem index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Idx {
    /// One position (negative: from the end).
    Int(isize),
    /// `start:stop:step`.
    Slice(Option<isize>, Option<isize>, Option<isize>),
}

/// One step: a value made from earlier steps' values (operands are step numbers).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Host data: `shape` of `dtype`, values drawn from `seed`; `grad` asks for its gradient.
    Input {
        /// The shape.
        shape: Vec<usize>,
        /// The dtype.
        dtype: DType,
        /// Seed of the values.
        seed: u64,
        /// Whether it requires grad (floats only).
        grad: bool,
    },
    /// An elementwise op.
    Unary(Unary, usize),
    /// An elementwise op of two values, broadcast.
    Binary(Binary, usize, usize),
    /// A reduction over axes, keeping them or not.
    Reduce(Reduce, usize, Vec<isize>, bool),
    /// `argmax` along an axis.
    Argmax(usize, isize),
    /// `reshape`.
    Reshape(usize, Vec<isize>),
    /// `permute`.
    Permute(usize, Vec<isize>),
    /// `expand`.
    Expand(usize, Vec<usize>),
    /// `pad` with zeros.
    Pad(usize, Vec<(usize, usize)>),
    /// `shrink`.
    Shrink(usize, Vec<(usize, usize)>),
    /// `flip`.
    Flip(usize, Vec<isize>),
    /// `matmul`.
    Matmul(usize, usize),
    /// `cast`.
    Cast(usize, DType),
    /// `cond.where_(a, b)`.
    Where(usize, usize, usize),
    /// `cumsum` along an axis.
    Cumsum(usize, isize),
    /// `softmax` along an axis.
    Softmax(usize, isize),
    /// `get` with ints and slices.
    Get(usize, Vec<Idx>),
    /// `contiguous` (a buffer of its own).
    Contiguous(usize),
}

impl Op {
    /// The step numbers this step reads.
    pub fn operands(&self) -> Vec<usize> {
        match self {
            Op::Input { .. } => vec![],
            Op::Binary(_, a, b) | Op::Matmul(a, b) => vec![*a, *b],
            Op::Where(c, a, b) => vec![*c, *a, *b],
            Op::Unary(_, a)
            | Op::Reduce(_, a, ..)
            | Op::Argmax(a, _)
            | Op::Reshape(a, _)
            | Op::Permute(a, _)
            | Op::Expand(a, _)
            | Op::Pad(a, _)
            | Op::Shrink(a, _)
            | Op::Flip(a, _)
            | Op::Cast(a, _)
            | Op::Cumsum(a, _)
            | Op::Softmax(a, _)
            | Op::Get(a, _)
            | Op::Contiguous(a) => vec![*a],
        }
    }

    /// This step reading `map[i]` wherever it read step `i`.
    pub fn renumbered(&self, map: impl Fn(usize) -> usize) -> Op {
        let mut op = self.clone();
        match &mut op {
            Op::Input { .. } => {}
            Op::Binary(_, a, b) | Op::Matmul(a, b) => (*a, *b) = (map(*a), map(*b)),
            Op::Where(c, a, b) => (*c, *a, *b) = (map(*c), map(*a), map(*b)),
            Op::Unary(_, a)
            | Op::Reduce(_, a, ..)
            | Op::Argmax(a, _)
            | Op::Reshape(a, _)
            | Op::Permute(a, _)
            | Op::Expand(a, _)
            | Op::Pad(a, _)
            | Op::Shrink(a, _)
            | Op::Flip(a, _)
            | Op::Cast(a, _)
            | Op::Cumsum(a, _)
            | Op::Softmax(a, _)
            | Op::Get(a, _)
            | Op::Contiguous(a) => *a = map(*a),
        }
        op
    }
}

impl Op {
    /// Whether this step's float result is rounded (so a device may round it differently, by a
    /// few ulp): arithmetic and transcendentals. Movement, selection, comparisons, `relu`,
    /// `abs`, `neg`, `max`/`min` and casts give exactly what they are given.
    pub fn rounds(&self) -> bool {
        match self {
            Op::Unary(u, _) => !matches!(u, Unary::Neg | Unary::Relu | Unary::Abs | Unary::Not),
            Op::Binary(b, ..) => matches!(b, Binary::Add | Binary::Sub | Binary::Mul | Binary::DivSafe),
            Op::Reduce(r, ..) => matches!(r, Reduce::Sum | Reduce::Mean),
            Op::Matmul(..) | Op::Cumsum(..) | Op::Softmax(..) => true,
            _ => false,
        }
    }
}

/// A program: its steps in order; the last one is the output.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The steps.
    pub steps: Vec<Op>,
}

impl Program {
    /// For each step, whether the output reads it (directly or through other steps).
    pub fn live_steps(&self) -> Vec<bool> {
        let n = self.steps.len();
        let mut live = vec![false; n];
        if n > 0 {
            live[n - 1] = true;
        }
        for i in (0..n).rev() {
            if live[i] {
                for o in self.steps[i].operands() {
                    live[o] = true;
                }
            }
        }
        live
    }
}

/// The host values of an input: floats are multiples of 1/4 in [-2, 2] (so sums of products
/// are exact in float32), ints in [-8, 8], unsigned in [0, 16], bools either.
pub fn input_tensor(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
    let mut rng = crate::Rng(seed);
    let n: usize = shape.iter().product();
    let ints: Vec<i64> = (0..n).map(|_| rng.below(17) as i64 - 8).collect();
    match dtype {
        d if d.is_float() => {
            Ok(Tensor::from_vec(ints.iter().map(|&i| i as f32 / 4.0).collect(), shape)?.cast(d))
        }
        DType::BOOL => Tensor::from_vec(ints.iter().map(|&i| i > 0).collect(), shape),
        d if d.is_unsigned() => {
            Ok(Tensor::from_vec(ints.iter().map(|&i| (i + 8) as u8).collect(), shape)?.cast(d))
        }
        d => Ok(Tensor::from_vec(ints.iter().map(|&i| i as i32).collect(), shape)?.cast(d)),
    }
}

fn index(idx: &[Idx]) -> Vec<Index> {
    idx.iter()
        .map(|i| match *i {
            Idx::Int(p) => Index::Int(p),
            Idx::Slice(start, stop, step) => Index::Slice { start, stop, step },
        })
        .collect()
}

/// The value of `op` given the values of earlier steps.
pub fn apply(op: &Op, v: &[Tensor]) -> Result<Tensor> {
    Ok(match op {
        Op::Input { shape, dtype, seed, grad } => {
            let t = input_tensor(shape, *dtype, *seed)?.contiguous();
            if *grad {
                t.set_requires_grad(true)?;
            }
            t
        }
        Op::Unary(u, a) => {
            let x = &v[*a];
            match u {
                Unary::Neg => x.neg(),
                Unary::Relu => x.relu(),
                Unary::Abs => x.abs(),
                Unary::Square => x.square(),
                Unary::Sigmoid => x.sigmoid(),
                Unary::Tanh => x.tanh(),
                Unary::Exp => x.exp(),
                Unary::Sin => x.sin(),
                Unary::SqrtAbs => x.abs().sqrt(),
                Unary::LogAbs1 => x.abs().add(1.0)?.log(),
                Unary::Not => x.logical_not(),
            }
        }
        Op::Binary(b, x, y) => {
            let (x, y) = (&v[*x], &v[*y]);
            match b {
                Binary::Add => x.add(y)?,
                Binary::Sub => x.sub(y)?,
                Binary::Mul => x.mul(y)?,
                Binary::Maximum => x.maximum(y)?,
                Binary::DivSafe => x.div(y.abs().add(1)?)?,
                Binary::Idiv => x.idiv(y)?,
                Binary::Lt => x.lt(y)?,
                Binary::Eq => x.eq(y)?,
                Binary::Xor => x.bitwise_xor(y)?,
            }
        }
        Op::Reduce(r, a, axes, keep) => match r {
            Reduce::Sum => v[*a].sum(axes, *keep)?,
            Reduce::Max => v[*a].max(axes, *keep)?,
            Reduce::Min => v[*a].min(axes, *keep)?,
            Reduce::Mean => v[*a].mean(axes, *keep)?,
        },
        Op::Argmax(a, axis) => v[*a].argmax(*axis, false)?,
        Op::Reshape(a, shape) => v[*a].reshape(shape)?,
        Op::Permute(a, order) => v[*a].permute(order)?,
        Op::Expand(a, shape) => v[*a].expand(shape)?,
        Op::Pad(a, pads) => v[*a].pad(pads)?,
        Op::Shrink(a, arg) => v[*a].shrink(arg)?,
        Op::Flip(a, axes) => v[*a].flip(axes)?,
        Op::Matmul(a, b) => v[*a].matmul(&v[*b])?,
        Op::Cast(a, dtype) => v[*a].cast(*dtype),
        Op::Where(c, a, b) => v[*c].where_(&v[*a], &v[*b])?,
        Op::Cumsum(a, axis) => v[*a].cumsum(*axis)?,
        Op::Softmax(a, axis) => v[*a].softmax(*axis)?,
        Op::Get(a, idx) => v[*a].get(&index(idx))?,
        Op::Contiguous(a) => v[*a].contiguous(),
    })
}

/// `DType::F32` as Rust source.
fn dtype_src(d: DType) -> String {
    let name = match d {
        DType::F32 => "F32",
        DType::F16 => "F16",
        DType::I32 => "I32",
        DType::U8 => "U8",
        DType::BOOL => "BOOL",
        _ => "F32",
    };
    format!("DType::{name}")
}

/// A Rust expression building `op`, for reproducers.
fn op_src(op: &Op) -> String {
    let vec = |s: String| s.replace('[', "vec![");
    match op {
        Op::Input { shape, dtype, seed, grad } => format!(
            "Op::Input {{ shape: vec!{shape:?}, dtype: {}, seed: {seed}, grad: {grad} }}",
            dtype_src(*dtype)
        ),
        Op::Unary(u, a) => format!("Op::Unary(Unary::{u:?}, {a})"),
        Op::Binary(b, x, y) => format!("Op::Binary(Binary::{b:?}, {x}, {y})"),
        Op::Reduce(r, a, axes, k) => format!("Op::Reduce(Reduce::{r:?}, {a}, vec!{axes:?}, {k})"),
        Op::Cast(a, d) => format!("Op::Cast({a}, {})", dtype_src(*d)),
        Op::Get(a, idx) => {
            let entries: Vec<String> = idx
                .iter()
                .map(|i| match i {
                    Idx::Int(p) => format!("Idx::Int({p})"),
                    Idx::Slice(a, b, c) => format!("Idx::Slice({a:?}, {b:?}, {c:?})"),
                })
                .collect();
            format!("Op::Get({a}, vec![{}])", entries.join(", "))
        }
        other => vec(format!("Op::{other:?}")),
    }
}

impl fmt::Display for Program {
    /// The program as a Rust reproducer: a test that builds it and checks the devices agree.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "#[test]\nfn fuzz_regression() {{\n    let program = Program {{\n        steps: vec![")?;
        for (i, op) in self.steps.iter().enumerate() {
            writeln!(f, "            {}, // v{i}", op_src(op))?;
        }
        writeln!(f, "        ],\n    }};\n    assert_agree(&program);\n}}")
    }
}
