//! Shared by the test files: a plain evaluation algebra and a brute-force simulation of
//! movement ops on a materialized array of buffer element ids (-1 for padding).
#![allow(dead_code)] // each test file uses its own part

use wgrad_shape::{IndexAlgebra, ShapeTracker, Sint, Variable};

/// Plain integer evaluation: booleans are 0/1.
#[derive(Clone, Debug, PartialEq)]
pub struct Eval(pub i64);

impl IndexAlgebra for Eval {
    fn int(v: i64) -> Self {
        Eval(v)
    }
    fn bool(v: bool) -> Self {
        Eval(i64::from(v))
    }
    fn var(v: &Variable) -> Self {
        panic!("unbound variable {v} in a concrete index")
    }
    fn add(&self, rhs: &Self) -> Self {
        Eval(self.0 + rhs.0)
    }
    fn mul(&self, rhs: &Self) -> Self {
        Eval(self.0 * rhs.0)
    }
    fn floordiv(&self, rhs: &Self) -> Self {
        Eval(self.0.div_euclid(rhs.0))
    }
    fn rem(&self, rhs: &Self) -> Self {
        Eval(self.0.rem_euclid(rhs.0))
    }
    fn lt(&self, rhs: &Self) -> Self {
        Eval(i64::from(self.0 < rhs.0))
    }
    fn and(&self, rhs: &Self) -> Self {
        Eval(i64::from(self.0 != 0 && rhs.0 != 0))
    }
}

/// A materialized tensor of buffer element ids, row-major.
#[derive(Clone, Debug)]
pub struct Arr {
    pub shape: Vec<usize>,
    pub data: Vec<i64>,
}

pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut acc = 1;
    let mut out = vec![0; shape.len()];
    for (i, s) in shape.iter().enumerate().rev() {
        out[i] = acc;
        acc *= s;
    }
    out
}

pub fn positions(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let st = strides(shape);
    (0..n).map(|i| shape.iter().zip(&st).map(|(s, st)| i / st % s).collect()).collect()
}

impl Arr {
    pub fn new(shape: &[usize]) -> Self {
        let n: usize = shape.iter().product();
        Arr { shape: shape.to_vec(), data: (0..n as i64).collect() }
    }
    /// A new array of `shape` whose element at `p` is `f(p)`.
    fn build(shape: Vec<usize>, f: impl Fn(&[usize]) -> i64) -> Self {
        let data = positions(&shape).iter().map(|p| f(p)).collect();
        Arr { shape, data }
    }
    pub fn at(&self, p: &[usize]) -> i64 {
        self.data[p.iter().zip(strides(&self.shape)).map(|(p, s)| p * s).sum::<usize>()]
    }
}

/// One movement op with concrete arguments.
#[derive(Clone, Debug)]
pub enum Op {
    Reshape(Vec<usize>),
    Permute(Vec<usize>),
    Expand(Vec<usize>),
    Pad(Vec<(usize, usize)>),
    Shrink(Vec<(usize, usize)>),
    Flip(Vec<bool>),
}

pub fn sints(xs: &[usize]) -> Vec<Sint> {
    xs.iter().map(|x| Sint::from(*x as i64)).collect()
}

pub fn pairs(xs: &[(usize, usize)]) -> Vec<(Sint, Sint)> {
    xs.iter().map(|(a, b)| (Sint::from(*a as i64), Sint::from(*b as i64))).collect()
}

impl Op {
    pub fn apply_tracker(&self, st: &ShapeTracker) -> ShapeTracker {
        let r = match self {
            Op::Reshape(s) => st.reshape(&sints(s)),
            Op::Permute(a) => st.permute(a),
            Op::Expand(s) => st.expand(&sints(s)),
            Op::Pad(a) => st.pad(&pairs(a)),
            Op::Shrink(a) => st.shrink(&pairs(a)),
            Op::Flip(f) => st.flip(f),
        };
        r.unwrap_or_else(|e| panic!("{self:?} on {:?}: {e}", st.shape()))
    }

    pub fn apply_arr(&self, a: &Arr) -> Arr {
        match self {
            Op::Reshape(s) => Arr { shape: s.clone(), data: a.data.clone() },
            Op::Permute(ax) => {
                let shape = ax.iter().map(|&i| a.shape[i]).collect();
                Arr::build(shape, |p| {
                    let mut q = vec![0; p.len()];
                    ax.iter().zip(p).for_each(|(&i, &x)| q[i] = x);
                    a.at(&q)
                })
            }
            Op::Expand(s) => Arr::build(s.clone(), |p| {
                a.at(&p.iter().zip(&a.shape).map(|(x, d)| if *d == 1 { 0 } else { *x }).collect::<Vec<_>>())
            }),
            Op::Pad(arg) => {
                let shape = a.shape.iter().zip(arg).map(|(s, (b, e))| s + b + e).collect();
                Arr::build(shape, |p| {
                    let q: Option<Vec<usize>> = p
                        .iter()
                        .zip(arg)
                        .zip(&a.shape)
                        .map(|((x, (b, _)), s)| x.checked_sub(*b).filter(|y| y < s))
                        .collect();
                    q.map_or(-1, |q| a.at(&q))
                })
            }
            Op::Shrink(arg) => {
                let shape = arg.iter().map(|(b, e)| e - b).collect();
                Arr::build(shape, |p| a.at(&p.iter().zip(arg).map(|(x, (b, _))| x + b).collect::<Vec<_>>()))
            }
            Op::Flip(f) => Arr::build(a.shape.clone(), |p| {
                a.at(&p
                    .iter()
                    .zip(f)
                    .zip(&a.shape)
                    .map(|((x, f), s)| if *f { s - 1 - x } else { *x })
                    .collect::<Vec<_>>())
            }),
        }
    }
}

/// Checks every element's index and validity against the materialized ids.
pub fn check(st: &ShapeTracker, arr: &Arr) -> Result<(), String> {
    if st.shape() != sints(&arr.shape) {
        return Err(format!("shape {:?}, expected {:?}", st.shape(), arr.shape));
    }
    for p in positions(&arr.shape) {
        let idxs: Vec<Eval> = p.iter().map(|x| Eval(*x as i64)).collect();
        let (idx, valid) = st.to_indexed(&idxs);
        let want = arr.at(&p);
        if (valid.0 != 0) != (want >= 0) || (want >= 0 && idx.0 != want) {
            return Err(format!(
                "at {p:?}: got ({}, {}), expected {want}; views {:?}",
                idx.0,
                valid.0,
                st.views()
            ));
        }
    }
    Ok(())
}

/// A tracker and its simulation, moved together; every op re-checks all elements.
pub struct Checked {
    pub st: ShapeTracker,
    pub arr: Arr,
}

impl Checked {
    pub fn new(shape: &[usize]) -> Self {
        let c = Checked { st: ShapeTracker::from_shape(&sints(shape)).unwrap(), arr: Arr::new(shape) };
        c.assert_same();
        c
    }
    pub fn apply(&mut self, op: Op) -> &mut Self {
        self.st = op.apply_tracker(&self.st);
        self.arr = op.apply_arr(&self.arr);
        self.assert_same();
        self
    }
    pub fn reshape(&mut self, s: &[usize]) -> &mut Self {
        self.apply(Op::Reshape(s.to_vec()))
    }
    pub fn permute(&mut self, a: &[usize]) -> &mut Self {
        self.apply(Op::Permute(a.to_vec()))
    }
    pub fn expand(&mut self, s: &[usize]) -> &mut Self {
        self.apply(Op::Expand(s.to_vec()))
    }
    pub fn pad(&mut self, a: &[(usize, usize)]) -> &mut Self {
        self.apply(Op::Pad(a.to_vec()))
    }
    pub fn shrink(&mut self, a: &[(usize, usize)]) -> &mut Self {
        self.apply(Op::Shrink(a.to_vec()))
    }
    pub fn flip(&mut self, f: &[bool]) -> &mut Self {
        self.apply(Op::Flip(f.to_vec()))
    }
    pub fn simplify(&mut self) -> &mut Self {
        self.st = self.st.simplify();
        self.assert_same();
        self
    }
    pub fn assert_same(&self) {
        check(&self.st, &self.arr).unwrap_or_else(|e| panic!("{e}"));
        check(&self.st.simplify(), &self.arr).unwrap_or_else(|e| panic!("simplified: {e}"));
    }
    pub fn views(&self) -> usize {
        self.st.views().len()
    }
}

/// Integer dims as `Sint`s.
pub fn s(xs: &[i64]) -> Vec<Sint> {
    xs.iter().map(|x| Sint::from(*x)).collect()
}

/// Integer ranges as `Sint` pairs.
pub fn m(xs: &[(i64, i64)]) -> Vec<(Sint, Sint)> {
    xs.iter().map(|(a, b)| (Sint::from(*a), Sint::from(*b))).collect()
}

/// A canonical view from integer parts.
pub fn view(shape: &[i64], strides: &[i64], offset: i64, mask: Option<&[(i64, i64)]>) -> wgrad_shape::View {
    wgrad_shape::View::new(&s(shape), &s(strides), Sint::from(offset), mask.map(m).as_deref()).unwrap()
}

/// A tracker over the given views, first view reading the buffer.
pub fn tracker(views: &[wgrad_shape::View]) -> ShapeTracker {
    ShapeTracker::from_views(views.to_vec()).unwrap()
}
