//! Indexing (`get`) and index assignment (`set`) with numpy's rules, as tinygrad builds them:
//! ints, slices (any step) and new axes are views (a shrink, a flip, and a pad + reshape +
//! shrink for the stride); tensor indices are one-hot masks summed over the indexed dims.
//! `set` writes through the inverse views: the value spread back to the full shape and
//! selected with the same views of a mask; with tensor indices, each element takes the value
//! of the last index that hits it.

use crate::error::{Result, TensorError};
use crate::{Index, Tensor, with_default_device};

/// What a basic index keeps of one dim: positions `lo..hi`, walked backwards when `flip`,
/// every `step`-th, `n` of them.
#[derive(Clone, Copy)]
struct Cut {
    lo: usize,
    hi: usize,
    step: usize,
    n: usize,
    flip: bool,
}

impl Cut {
    fn full(d: usize) -> Cut {
        Cut { lo: 0, hi: d, step: 1, n: d, flip: false }
    }

    /// Python's slice `start:stop:step` over a dim of `d`.
    fn slice(d: usize, start: Option<isize>, stop: Option<isize>, step: isize) -> Cut {
        let d_ = d as isize;
        let from_end = |v: isize| if v < 0 { v + d_ } else { v };
        let (lo, hi, n) = if step > 0 {
            let start = start.map_or(0, from_end).clamp(0, d_);
            let stop = stop.map_or(d_, from_end).clamp(0, d_);
            let n = ((stop - start).max(0) as usize).div_ceil(step as usize) as isize;
            (start, if n > 0 { start + (n - 1) * step + 1 } else { start }, n)
        } else {
            let start = start.map_or(d_ - 1, from_end).clamp(-1, d_ - 1);
            let stop = stop.map_or(-1, from_end).clamp(-1, d_ - 1);
            let n = ((start - stop).max(0) as usize).div_ceil(step.unsigned_abs()) as isize;
            if n > 0 { (start + (n - 1) * step, start + 1, n) } else { (0, 0, 0) }
        };
        Cut { lo: lo as usize, hi: hi as usize, step: step.unsigned_abs(), n: n as usize, flip: step < 0 }
    }

    fn len(self) -> usize {
        self.hi - self.lo
    }
}

/// A whole index resolved against a shape: a cut per dim, the shape of the basic view, and
/// the tensor entries with the view dims they index.
struct Plan {
    cuts: Vec<Cut>,
    out: Vec<usize>,
    tensors: Vec<(usize, Tensor)>,
    /// Whether the tensor entries are next to each other in the index.
    adjacent: bool,
}

impl Tensor {
    fn index_error(&self, op: &'static str, why: impl Into<String>) -> TensorError {
        TensorError::Movement { op, arg: why.into(), operand: self.operand() }
    }

    /// The plan of `index` over this tensor's shape.
    fn plan(&self, op: &'static str, index: &[Index]) -> Result<Plan> {
        let used = index.iter().filter(|i| !matches!(i, Index::NewAxis | Index::Ellipsis)).count();
        let ellipses = index.iter().filter(|i| matches!(i, Index::Ellipsis)).count();
        if used > self.ndim() || ellipses > 1 {
            return Err(self.index_error(op, format!("{used} indexed dims, {ellipses} ellipses")));
        }
        let mut entries: Vec<Index> = Vec::new();
        for i in index {
            match i {
                Index::Ellipsis => entries.extend((used..self.ndim()).map(|_| Index::all())),
                other => entries.push(other.clone()),
            }
        }
        if ellipses == 0 {
            entries.extend((used..self.ndim()).map(|_| Index::all()));
        }
        let mut plan = Plan { cuts: vec![], out: vec![], tensors: vec![], adjacent: true };
        let mut last_tensor: Option<usize> = None;
        for (k, entry) in entries.into_iter().enumerate() {
            let d = self.shape().get(plan.cuts.len()).copied().unwrap_or(0);
            match entry {
                Index::NewAxis => plan.out.push(1),
                Index::Int(i) => {
                    let at = if i < 0 { i + d as isize } else { i };
                    if !(0..d as isize).contains(&at) {
                        return Err(self.index_error(op, format!("index {i} of a dim of {d}")));
                    }
                    let at = at as usize;
                    plan.cuts.push(Cut { lo: at, hi: at + 1, step: 1, n: 1, flip: false });
                }
                Index::Slice { start, stop, step } => {
                    let step = step.unwrap_or(1);
                    if step == 0 {
                        return Err(self.index_error(op, "a slice step of 0"));
                    }
                    let cut = Cut::slice(d, start, stop, step);
                    plan.out.push(cut.n);
                    plan.cuts.push(cut);
                }
                Index::Tensor(t) => {
                    if !t.dtype().is_int() {
                        return Err(TensorError::DType { op, lhs: self.operand(), rhs: t.operand() });
                    }
                    plan.adjacent &= last_tensor.is_none_or(|l| l + 1 == k);
                    last_tensor = Some(k);
                    plan.tensors.push((plan.out.len(), t));
                    plan.out.push(d);
                    plan.cuts.push(Cut::full(d));
                }
                Index::Ellipsis => unreachable!("ellipsis expanded above"),
            }
        }
        Ok(plan)
    }

    /// The basic part of `plan`: views only.
    fn basic_view(&self, plan: &Plan) -> Result<Tensor> {
        let cuts = &plan.cuts;
        let mut x = self.shrink(&cuts.iter().map(|c| (c.lo, c.hi)).collect::<Vec<_>>())?;
        if cuts.iter().any(|c| c.flip) {
            let axes: Vec<isize> = (0..cuts.len()).filter(|&i| cuts[i].flip).map(|i| i as isize).collect();
            x = x.flip(&axes)?;
        }
        if cuts.iter().any(|c| c.step > 1) {
            // each dim padded to n * step, split into (n, step), the first of each kept
            x = x.pad(&cuts.iter().map(|c| (0, c.n * c.step - c.len())).collect::<Vec<_>>())?;
            x = x.reshape_to(&cuts.iter().flat_map(|c| [c.n, c.step]).collect::<Vec<_>>());
            x = x.shrink(&cuts.iter().flat_map(|c| [(0, c.n), (0, 1)]).collect::<Vec<_>>())?;
        }
        Ok(x.reshape_to(&plan.out))
    }

    /// `value` in the basic view's shape spread back to this tensor's shape (zeros outside):
    /// the inverse of `basic_view`.
    fn basic_unview(&self, plan: &Plan, value: &Tensor) -> Result<Tensor> {
        let cuts = &plan.cuts;
        let mut v = value.reshape_to(&cuts.iter().flat_map(|c| [c.n, 1]).collect::<Vec<_>>());
        v = v.pad(&cuts.iter().flat_map(|c| [(0, 0), (0, c.step - 1)]).collect::<Vec<_>>())?;
        v = v.reshape_to(&cuts.iter().map(|c| c.n * c.step).collect::<Vec<_>>());
        v = v.shrink(&cuts.iter().map(|c| (0, c.len())).collect::<Vec<_>>())?;
        if cuts.iter().any(|c| c.flip) {
            let axes: Vec<isize> = (0..cuts.len()).filter(|&i| cuts[i].flip).map(|i| i as isize).collect();
            v = v.flip(&axes)?;
        }
        v.pad(&cuts.iter().zip(self.shape()).map(|(c, &d)| (c.lo, d - c.hi)).collect::<Vec<_>>())
    }

    /// The tensor entries of `plan` over the basic view `x`: indices made positive and
    /// broadcast together, the view's dims split into picked and others, and the mask of
    /// where each batch element's indices hit.
    fn advanced(&self, op: &'static str, plan: &Plan) -> Result<Advanced> {
        let mut idx = Vec::with_capacity(plan.tensors.len());
        for (at, t) in &plan.tensors {
            let d = plan.out[*at];
            let t = t.to(self.device());
            idx.push(t.lt(0)?.where_(t.add(d as i64)?, &t)?);
        }
        let batch = idx.iter().try_fold(vec![], |b, t| {
            crate::binary::broadcast_shape(&b, t.shape()).ok_or_else(|| {
                let shapes: Vec<&[usize]> = idx.iter().map(Tensor::shape).collect();
                self.index_error(op, format!("tensor indices of shapes {shapes:?}"))
            })
        })?;
        let m = idx.len();
        let picked: Vec<usize> = plan.tensors.iter().map(|(at, _)| *at).collect();
        let others: Vec<usize> = (0..plan.out.len()).filter(|i| !picked.contains(i)).collect();
        // (batch.., indexed..): true where every index hits
        let mut mask: Option<Tensor> = None;
        for (j, t) in idx.iter().enumerate() {
            let hot = t.broadcast_to(&batch).one_hot_mask(op, plan.out[picked[j]])?;
            let mut shape = batch.clone();
            shape.extend((0..m).map(|k| if k == j { plan.out[picked[j]] } else { 1 }));
            let hot = hot.reshape_to(&shape);
            mask = Some(match mask {
                None => hot,
                Some(acc) => acc.bitwise_and(&hot)?,
            });
        }
        let mask = mask.unwrap_or_else(|| unreachable!("at least one tensor index"));
        // the batch dims go where the first indexed dim was (adjacent entries), else in front
        let front = match plan.adjacent {
            true => others.iter().filter(|&&i| i < picked[0]).count(),
            false => 0,
        };
        Ok(Advanced { batch, picked, others, front, mask })
    }

    /// The elements picked by `index` (numpy's rules): ints drop their dim, slices keep
    /// it, `NewAxis` adds one, `Ellipsis` stands for the dims not named; tensor entries pick
    /// along their dims, broadcast together, and their dims go where the first one was when
    /// they are adjacent in the index, in front otherwise. Out-of-range tensor indices pick
    /// zeros.
    pub fn get(&self, index: &[Index]) -> Result<Tensor> {
        let plan = self.plan("get", index)?;
        let x = self.basic_view(&plan)?;
        if plan.tensors.is_empty() {
            return Ok(x);
        }
        let adv = self.advanced("get", &plan)?;
        // x with its indexed dims last, a dim of 1 per batch dim before them
        let x = x.permute(&adv.others_then_picked())?;
        let mut lifted: Vec<usize> = adv.others.iter().map(|&i| plan.out[i]).collect();
        lifted.extend(vec![1; adv.batch.len()]);
        lifted.extend(adv.picked.iter().map(|&i| plan.out[i]));
        let x = x.reshape_to(&lifted);
        let zero = Tensor::constant(&[], 0.into(), x.dtype(), x.device());
        let reduced: Vec<isize> = (0..adv.picked.len() as isize).map(|k| -1 - k).collect();
        let y = adv.mask.where_(&x, zero)?.sum(&reduced, false)?.cast(x.dtype());
        y.permute(&adv.result_order())
    }

    /// Writes `value` (broadcast to the indexed part, cast to this tensor's dtype) into the
    /// elements `index` picks, and realizes the result into this tensor's buffer (tinygrad's
    /// `__setitem__`). Tensor entries pick as in [`Tensor::get`]; where several pick one
    /// element the last write wins, and out-of-range ones write nothing. A tensor that
    /// requires a gradient cannot be written.
    pub fn set(&self, index: &[Index], value: &Tensor) -> Result<()> {
        let plan = self.plan("set", index)?;
        if self.requires_grad() || value.requires_grad() {
            return Err(self.index_error("set", "a tensor that requires grad"));
        }
        let (spread, written) = match plan.tensors.is_empty() {
            true => (self.fit_value(value, &plan.out)?, None),
            false => {
                let (v, w) = self.advanced_value(&plan, value)?;
                (v, Some(w))
            }
        };
        let inside = Tensor::constant(&plan.out, true.into(), wgrad_dtype::DType::BOOL, self.device());
        let inside = match written {
            Some(w) => inside.bitwise_and(&w)?,
            None => inside,
        };
        let spread = self.basic_unview(&plan, &spread)?;
        let mask = self.basic_unview(&plan, &inside)?;
        let new = mask.where_(&spread, self)?;
        self.assign(&new)?.realize()?;
        Ok(())
    }

    /// `value` checked to broadcast to `shape` (on this device) and cast to this dtype.
    fn fit_value(&self, value: &Tensor, shape: &[usize]) -> Result<Tensor> {
        let fits = crate::binary::broadcast_shape(value.shape(), shape).is_some_and(|s| s == shape);
        if !fits || value.device() != self.device() {
            return Err(TensorError::Assign { target: self.operand(), value: value.operand() });
        }
        Ok(value.cast(self.dtype()).broadcast_to(shape))
    }

    /// For a `set` with tensor entries: over the basic view, the value each element gets
    /// and whether any batch element writes it (the last writer wins).
    fn advanced_value(&self, plan: &Plan, value: &Tensor) -> Result<(Tensor, Tensor)> {
        let adv = self.advanced("set", plan)?;
        let (no, nb, np) = (adv.others.len(), adv.batch.len(), adv.picked.len());
        // the value as `get` would return it, then laid out (others.., batch..)
        let mut result: Vec<usize> = adv.others.iter().map(|&i| plan.out[i]).collect();
        result.extend(&adv.batch);
        let order = adv.result_order();
        let shown: Vec<usize> = order.iter().map(|&i| result[i as usize]).collect();
        let mut inverse = vec![0isize; order.len()];
        order.iter().enumerate().for_each(|(k, &i)| inverse[i as usize] = k as isize);
        let v = self.fit_value(value, &shown)?.permute(&inverse)?;
        // the last batch element (row-major) that writes each indexed position
        let count: usize = adv.batch.iter().product();
        let mut flat_shape = adv.batch.clone();
        flat_shape.extend(vec![1; np]);
        let flat = with_default_device(self.device(), || Tensor::arange(count))?.reshape_to(&flat_shape);
        let batch_axes: Vec<isize> = (0..nb as isize).collect();
        let last = adv.mask.where_(&flat, -1)?.max(&batch_axes, true)?;
        let pick = adv.mask.bitwise_and(flat.eq(&last)?)?;
        // (others.., batch.., 1..) against (1.., batch.., picked..), summed over the batch
        let mut v_shape = result.clone();
        v_shape.extend(vec![1; np]);
        let v = v.reshape_to(&v_shape);
        let mut pick_shape = vec![1; no];
        pick_shape.extend(pick.shape());
        let pick = pick.reshape_to(&pick_shape);
        let zero = Tensor::constant(&[], 0.into(), v.dtype(), v.device());
        let summed: Vec<isize> = (no..no + nb).map(|a| a as isize).collect();
        let spread = pick.where_(&v, zero)?.sum(&summed, false)?.cast(self.dtype());
        let written = last.reshape_to(&last.shape()[nb..]).ge(0)?;
        let mut w_shape = vec![1; no];
        w_shape.extend(written.shape());
        let written = written.reshape_to(&w_shape).expand(spread.shape())?;
        // (others.., picked..) back to the basic view's order
        let mut back = vec![0isize; no + np];
        adv.others_then_picked().iter().enumerate().for_each(|(k, &i)| back[i as usize] = k as isize);
        Ok((spread.permute(&back)?, written.permute(&back)?))
    }
}

/// The tensor entries of an index resolved over the basic view (see `Tensor::advanced`).
struct Advanced {
    /// The broadcast shape of the tensor entries.
    batch: Vec<usize>,
    /// The view dims the tensor entries index, in order.
    picked: Vec<usize>,
    /// The other view dims.
    others: Vec<usize>,
    /// How many of `others` come before the batch dims in the result.
    front: usize,
    /// `(batch.., picked..)`: whether each batch element's indices hit each position.
    mask: Tensor,
}

impl Advanced {
    /// The view's dims, others first, then the picked ones.
    fn others_then_picked(&self) -> Vec<isize> {
        self.others.iter().chain(&self.picked).map(|&i| i as isize).collect()
    }

    /// The permutation from `(others.., batch..)` to the result's order.
    fn result_order(&self) -> Vec<isize> {
        let (nb, no) = (self.batch.len(), self.others.len());
        (0..self.front).chain(no..no + nb).chain(self.front..no).map(|i| i as isize).collect()
    }
}
