//! Gradient rules as rewrite rules (tinygrad's `gradient.py`): for each op, the gradients
//! of its sources from the gradient of its value, as a `Sink` with one entry per source
//! (`Noop`: none). Gradients are lazy graphs like any other, fused when realized. A node with
//! a custom gradient (`custom_grad.rs`) passes its gradient by its own backward instead.

use std::f64::consts::{FRAC_PI_2, LN_2};
use std::sync::{Arc, LazyLock};

use wgrad_dtype::DType;
use wgrad_engine::{Shapes, lazy};
use wgrad_ops::{Arg, OpSet, Ops, PatternMatcher, UOp, UOpMap, UOpSet, UPat, rule};

use crate::Tensor;
use crate::custom_grad::{Backward, custom_grad};
use crate::error::{Result, TensorError, ok};

/// What a rule sees besides the node: the gradient of its value, and the graph's shapes.
pub(crate) struct GradCtx {
    grad: Tensor,
    shapes: Shapes,
}

impl GradCtx {
    /// The forward node `u` as a tensor.
    fn t(&mut self, u: &UOp) -> Tensor {
        let shape = self.shapes.of(u).to_vec();
        Tensor::from_uop(u.clone(), shape, self.grad.device().clone())
    }

    fn shape(&mut self, u: &UOp) -> Vec<usize> {
        self.shapes.of(u).to_vec()
    }
}

/// The rule result: one gradient (or none) per source.
fn grads(gs: impl IntoIterator<Item = Option<Tensor>>) -> Option<UOp> {
    let none = UOp::new(Ops::Noop, DType::VOID, [], Arg::None);
    Some(UOp::sink(gs.into_iter().map(|g| g.map_or_else(|| none.clone(), |t| t.uop())).collect::<Vec<_>>()))
}

fn isize_axes(axes: &[usize]) -> Vec<isize> {
    axes.iter().map(|&a| a as isize).collect()
}

fn as_isize(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

// ---- rules longer than one expression ----

/// `d max(x, y)`: to the larger; ties split it evenly.
fn max_grad(ctx: &mut GradCtx, ret: &UOp) -> Option<UOp> {
    let (x, y, g) = (ctx.t(&ret.src()[0]), ctx.t(&ret.src()[1]), ctx.grad.clone());
    let tie = ok(ok(x.ne(&y)).where_(g.zeros_like(), &g * 0.5));
    let gx = ok(ok(x.gt(&y)).where_(&g, &tie));
    let gy = ok(ok(x.lt(&y)).where_(&g, &tie));
    grads([Some(gx), Some(gy)])
}

/// `d where(c, x, y)`: to `x` where `c`, to `y` elsewhere.
fn where_grad(ctx: &mut GradCtx, ret: &UOp) -> Option<UOp> {
    let (c, g) = (ctx.t(&ret.src()[0]), ctx.grad.clone());
    grads([None, Some(ok(c.where_(&g, g.zeros_like()))), Some(ok(c.where_(g.zeros_like(), &g)))])
}

/// `d reduce(x)`: a sum spreads the gradient back; a max sends it to the maxima (split
/// evenly among ties); a product sends each factor `g` times the product of the others:
/// `prod / x` where `x != 0`, at a lone zero the product of the rest, 0 where more are zero.
fn reduce_grad(ctx: &mut GradCtx, ret: &UOp) -> Option<UOp> {
    let Arg::ReduceAxis(op, axes) = ret.arg() else { return None };
    let x = ctx.t(&ret.src()[0]);
    let g = ok(ctx.grad.expand(x.shape()));
    let axes = isize_axes(axes);
    let gx = match op {
        Ops::Add => g,
        Ops::Max => {
            // compared against values computed once, the max taken again from them: the input
            // recomputed in the gradient's kernels may round otherwise than in the forward's
            // max (a driver's division on an H200, fuzz seed 343295), and then no element
            // equals the stored max
            let x = computed_once(&x);
            let max = ok(ok(x.reduce(Ops::Max, "max", &axes, true)).expand(x.shape()));
            let is_max = ok(x.eq(&max)).cast(g.dtype());
            let count = ok(ok(is_max.sum(&axes, true)).expand(x.shape()));
            ok(ok(is_max.div(&count)).mul(&g))
        }
        _ => {
            let zero = ok(x.eq(0));
            let safe = ok(zero.where_(1, &x));
            let zeros = ok(ok(zero.sum(&axes, true)).expand(x.shape()));
            let rest = ok(ok(safe.reduce(Ops::Mul, "prod", &axes, true)).expand(x.shape()));
            let at_zero = ok(ok(zeros.eq(1)).where_(&rest, 0));
            let out = ok(ctx.t(ret).expand(x.shape()));
            ok(ok(zero.where_(&at_zero, ok(out.div(&safe)))).mul(&g))
        }
    };
    grads([Some(gx)])
}

/// `x` with the node under its movement ops (a pooling's windows of an activation) computed
/// once into a buffer of its own layout, the movements applied to that buffer; `x` itself when
/// that node is a buffer or a constant, which every kernel reads alike.
fn computed_once(x: &Tensor) -> Tensor {
    let base = crate::tensor::base(&x.uop());
    if matches!(base.op(), Ops::Buffer | Ops::Const | Ops::Contiguous) {
        return x.clone();
    }
    let map = UOpMap::from_iter([(base.clone(), lazy::contiguous(&base))]);
    Tensor::from_uop(x.uop().substitute(&map), x.shape().to_vec(), x.device().clone())
}

/// `d expand(x)`: summed over the broadcast dims.
fn expand_grad(ctx: &mut GradCtx, ret: &UOp) -> Option<UOp> {
    let (from, to) = (ctx.shape(&ret.src()[0]), ctx.shape(ret));
    let axes: Vec<isize> = (0..from.len()).filter(|&i| from[i] != to[i]).map(|i| i as isize).collect();
    let g = match axes.is_empty() {
        true => ctx.grad.clone(),
        false => ok(ctx.grad.sum(&axes, true)),
    };
    grads([Some(g)])
}

/// `d permute(x)`: permuted back.
fn permute_grad(ctx: &mut GradCtx, ret: &UOp) -> Option<UOp> {
    let order = lazy::arg_usizes(ret.arg());
    let mut inverse = vec![0isize; order.len()];
    order.iter().enumerate().for_each(|(i, &a)| inverse[a] = i as isize);
    grads([Some(ok(ctx.grad.permute(&inverse)))])
}

/// `d pad(x)`: the padding cut off.
fn pad_grad(ctx: &mut GradCtx, ret: &UOp) -> Option<UOp> {
    let shape = ctx.shape(&ret.src()[0]);
    let arg: Vec<(usize, usize)> =
        lazy::arg_pairs(ret.arg()).iter().zip(&shape).map(|(&(b, _), s)| (b, b + s)).collect();
    grads([Some(ok(ctx.grad.shrink(&arg)))])
}

/// `d shrink(x)`: zeros put back around.
fn shrink_grad(ctx: &mut GradCtx, ret: &UOp) -> Option<UOp> {
    let shape = ctx.shape(&ret.src()[0]);
    let arg: Vec<(usize, usize)> =
        lazy::arg_pairs(ret.arg()).iter().zip(&shape).map(|(&(b, e), s)| (b, s - e)).collect();
    grads([Some(ok(ctx.grad.pad(&arg)))])
}

/// `d flip(x)`: flipped back.
fn flip_grad(ctx: &mut GradCtx, ret: &UOp) -> Option<UOp> {
    let axes: Vec<isize> =
        lazy::flip_axes(ret.arg()).iter().enumerate().filter(|(_, f)| **f).map(|(i, _)| i as isize).collect();
    grads([Some(ok(ctx.grad.flip(&axes)))])
}

/// Ops whose sources get no gradient: comparisons, integer and bit ops, rounding.
const NO_GRADIENT: OpSet = OpSet::of(&[
    Ops::CmpLt,
    Ops::CmpNe,
    Ops::Idiv,
    Ops::Mod,
    Ops::And,
    Ops::Or,
    Ops::Xor,
    Ops::Shl,
    Ops::Shr,
    Ops::Threefry,
    Ops::Trunc,
    Ops::Bitcast,
    Ops::Detach,
]);

/// The gradient rules, one per op.
fn pm_gradient() -> &'static PatternMatcher<GradCtx> {
    static PM: LazyLock<PatternMatcher<GradCtx>> = LazyLock::new(|| {
        let r = |op: Ops| UPat::op(op).named("ret");
        PatternMatcher::new(vec![
            // d cast(x) = g cast back; none through a cast to integers or booleans, whose
            // steps have no slope (PyTorch's `x.bool()` leaves the graph): cast back, a tiny
            // gradient of rounding became 1 (fuzz seed 340545)
            rule!(r(Ops::Cast) => |ctx: GradCtx; ret| match ret.dtype().is_float() {
                true => grads([Some(ctx.grad.cast(ret.src()[0].dtype()))]),
                false => grads([None]),
            }),
            // d (1/x) = -g / x^2 = -g * ret * ret
            rule!(r(Ops::Recip) => |ctx: GradCtx; ret| {
                let r = ctx.t(ret);
                grads([Some(&(&ctx.grad.neg() * &r) * &r)])
            }),
            // d sin(x) = g cos(x) = g sin(pi/2 - x)
            rule!(r(Ops::Sin) => |ctx: GradCtx; ret| {
                let x = ctx.t(&ret.src()[0]);
                grads([Some(&ok(x.rsub(FRAC_PI_2)).sin() * &ctx.grad)])
            }),
            // d log2(x) = g / (x ln 2)
            rule!(r(Ops::Log2) => |ctx: GradCtx; ret| {
                let x = ctx.t(&ret.src()[0]);
                grads([Some(&ctx.grad / &(&x * LN_2))])
            }),
            // d 2^x = g 2^x ln 2
            rule!(r(Ops::Exp2) => |ctx: GradCtx; ret| {
                let r = ctx.t(ret);
                grads([Some(&(&r * &ctx.grad) * LN_2)])
            }),
            // d sqrt(x) = g / (2 sqrt(x))
            rule!(r(Ops::Sqrt) => |ctx: GradCtx; ret| {
                let r = ctx.t(ret);
                grads([Some(&ctx.grad / &(&r * 2.0))])
            }),
            // d -x = -g
            rule!(r(Ops::Neg) => |ctx: GradCtx; ret| grads([Some(ctx.grad.neg())])),
            // d (x + y) = (g, g)
            rule!(r(Ops::Add) => |ctx: GradCtx; ret| grads([Some(ctx.grad.clone()), Some(ctx.grad.clone())])),
            // d (x * y) = (g y, g x)
            rule!(r(Ops::Mul) => |ctx: GradCtx; ret| {
                let (x, y) = (ctx.t(&ret.src()[0]), ctx.t(&ret.src()[1]));
                grads([Some(&y * &ctx.grad), Some(&x * &ctx.grad)])
            }),
            rule!(r(Ops::Max) => |ctx: GradCtx; ret| max_grad(ctx, ret)),
            rule!(r(Ops::Where) => |ctx: GradCtx; ret| where_grad(ctx, ret)),
            rule!(r(Ops::ReduceAxis) => |ctx: GradCtx; ret| reduce_grad(ctx, ret)),
            // d contiguous(x) = g
            rule!(r(Ops::Contiguous) => |ctx: GradCtx; ret| grads([Some(ctx.grad.clone())])),
            // d contiguous_backward(x) = contiguous(g)
            rule!(r(Ops::ContiguousBackward) => |ctx: GradCtx; ret| grads([Some(ctx.grad.contiguous())])),
            // d copy(x) = g copied back
            rule!(r(Ops::Copy) => |ctx: GradCtx; ret| {
                let device = lazy::device_of(&ret.src()[0]).ok()?;
                grads([Some(ctx.grad.to(&device)), None])
            }),
            // d reshape(x) = g reshaped back
            rule!(r(Ops::Reshape) => |ctx: GradCtx; ret| {
                let shape = ctx.shape(&ret.src()[0]);
                grads([Some(ok(ctx.grad.reshape(&as_isize(&shape))))])
            }),
            rule!(r(Ops::Expand) => |ctx: GradCtx; ret| expand_grad(ctx, ret)),
            rule!(r(Ops::Permute) => |ctx: GradCtx; ret| permute_grad(ctx, ret)),
            rule!(r(Ops::Pad) => |ctx: GradCtx; ret| pad_grad(ctx, ret)),
            rule!(r(Ops::Shrink) => |ctx: GradCtx; ret| shrink_grad(ctx, ret)),
            rule!(r(Ops::Flip) => |ctx: GradCtx; ret| flip_grad(ctx, ret)),
            // no gradient through comparisons, integer ops, rounding and detach
            rule!(UPat::ops(NO_GRADIENT).named("ret") => |ctx: GradCtx; ret| grads(vec![None; ret.src().len()])),
        ])
    });
    &PM
}

/// A node with a custom gradient: its inputs and its backward function.
type Custom = (Vec<UOp>, Arc<Backward>);

/// The sources autograd sees of `u`: its custom gradient's inputs, or its own.
fn sources<'a>(customs: &'a UOpMap<Custom>, u: &'a UOp) -> &'a [UOp] {
    customs.get(u).map_or(u.src(), |(inputs, _)| inputs.as_slice())
}

/// The graph under `root` in topological order as autograd sees it: a node with a custom
/// gradient (returned in the map) has its inputs as sources, and the graph inside it is not
/// visited.
fn grad_graph(root: &UOp) -> (Vec<UOp>, UOpMap<Custom>) {
    let mut customs = UOpMap::default();
    let mut seen = UOpSet::default();
    let mut order = vec![];
    let mut stack: Vec<(UOp, bool)> = vec![(root.clone(), false)];
    while let Some((u, expanded)) = stack.pop() {
        if expanded {
            order.push(u);
            continue;
        }
        if !seen.insert(u.clone()) {
            continue;
        }
        stack.push((u.clone(), true));
        if let Some(custom) = custom_grad(&u) {
            customs.insert(u.clone(), custom);
        }
        stack.extend(
            sources(&customs, &u).iter().rev().filter(|s| !seen.contains(*s)).map(|s| (s.clone(), false)),
        );
    }
    (order, customs)
}

/// The gradients of `root` with respect to `targets`, given the gradient `seed` of `root`:
/// each node on a path from `root` to a target, latest first, passes its gradient to its
/// sources by its rule (or its custom backward); gradients reaching one node add up. Targets
/// the graph does not use (or only through a detach) get no entry.
pub(crate) fn compute_gradient(root: &UOp, seed: &Tensor, targets: &[UOp]) -> Result<UOpMap<UOp>> {
    let (topo, customs) = grad_graph(root);
    let wanted: UOpSet = targets.iter().cloned().collect();
    let mut on_path = UOpSet::default();
    for u in &topo {
        let leads = sources(&customs, u).iter().any(|s| wanted.contains(s) || on_path.contains(s));
        if leads && u.op() != Ops::Detach {
            on_path.insert(u.clone());
        }
    }
    // only what the root reaches without passing a detach
    let mut reached: UOpSet = [root.clone()].into_iter().collect();
    for u in topo.iter().rev().filter(|u| u.op() != Ops::Detach) {
        if reached.contains(u) {
            reached.extend(sources(&customs, u).iter().cloned());
        }
    }
    on_path.retain(|u| reached.contains(u));
    let mut ctx = GradCtx { grad: seed.clone(), shapes: Shapes::new() };
    let mut got: UOpMap<Tensor> = [(root.clone(), seed.clone())].into_iter().collect();
    for u in topo.iter().rev().filter(|u| on_path.contains(*u)) {
        let Some(g) = got.get(u).cloned() else { continue };
        ctx.grad = g;
        let srcs = sources(&customs, u);
        let out: Vec<Option<Tensor>> = match customs.get(u) {
            Some((inputs, backward)) => {
                let inputs: Vec<Tensor> = inputs.iter().map(|i| ctx.t(i)).collect();
                backward(&ctx.grad, &inputs)?
            }
            None => {
                let out = pm_gradient().rewrite(u, &mut ctx).ok_or(TensorError::NoGradient(u.op()))?;
                let mut gs = vec![];
                for (s, g) in srcs.iter().zip(out.src()) {
                    gs.push(match g.op() {
                        Ops::Noop => None,
                        _ => Some(Tensor::from_uop(g.clone(), ctx.shape(s), lazy::device_of(g)?)),
                    });
                }
                gs
            }
        };
        for (s, g) in srcs.iter().zip(out) {
            let Some(g) = g.filter(|_| wanted.contains(s) || on_path.contains(s)) else { continue };
            let sum = match got.remove(s) {
                Some(old) => &old + &g,
                None => g,
            };
            got.insert(s.clone(), sum);
        }
    }
    // a target the graph uses (not only through a detach) that no gradient reaches
    // (through rounding, comparisons) gets zeros
    let used = |t: &UOp| *t == *root || on_path.iter().any(|u| sources(&customs, u).contains(t));
    let present: UOpSet = targets.iter().filter(|t| used(t)).cloned().collect();
    let mut out = UOpMap::default();
    for t in targets.iter().filter(|t| present.contains(*t)) {
        let g = got.get(t).cloned().unwrap_or_else(|| ctx.t(t).zeros_like());
        out.insert(t.clone(), g.uop());
    }
    Ok(out)
}
