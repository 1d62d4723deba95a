//! Writing by index, as tinygrad builds it from one-hot masks (`select.rs` reads by index
//! the same way): `scatter`, `scatter_reduce`, and the selections whose size depends on the
//! data, `masked_select` and `nonzero`.

use wgrad_dtype::DType;

use crate::error::{Result, TensorError, ok};
use crate::{Tensor, Value, with_default_device};

/// How [`Tensor::scatter_reduce`] combines the values written to one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterReduce {
    /// Their sum.
    Sum,
    /// Their product.
    Prod,
    /// Their mean (a float, also for integer tensors, as in tinygrad).
    Mean,
    /// Their maximum.
    Amax,
    /// Their minimum.
    Amin,
}

/// `src` spread along a new last dim and the one-hot mask that says where each goes.
struct Spread {
    /// `src`, shaped as this tensor plus a last dim over the index's positions along `axis`.
    src: Tensor,
    /// Whether index position `k` (the last dim) writes this element.
    mask: Tensor,
}

impl Tensor {
    fn scatter_error(&self, op: &'static str, rhs: &Tensor, why: String) -> TensorError {
        TensorError::Shapes { op, lhs: self.operand(), rhs: rhs.operand(), why }
    }

    /// Checks `index` and `src` against this tensor (tinygrad's rules: one rank; the index no
    /// larger than `src` anywhere, nor than this tensor off `axis`; one dtype; indices in
    /// range) and spreads them for a reduce over the index's positions along `axis`.
    ///
    /// The range check reads the index's smallest and largest values back (one small sync):
    /// an index that matches no position would otherwise be dropped silently.
    fn spread(&self, op: &'static str, axis: isize, index: &Tensor, src: &Tensor) -> Result<Spread> {
        let a = self.axis(op, axis, self.ndim())?;
        if !index.dtype().is_int() {
            return Err(TensorError::DType { op, lhs: self.operand(), rhs: index.operand() });
        }
        if src.dtype() != self.dtype() {
            return Err(TensorError::DType { op, lhs: self.operand(), rhs: src.operand() });
        }
        if index.device() != self.device() || src.device() != self.device() {
            let other = if index.device() != self.device() { index } else { src };
            return Err(TensorError::Device { op, lhs: self.device().clone(), rhs: other.device().clone() });
        }
        let fits = |t: &Tensor, skip: Option<usize>| {
            t.ndim() == index.ndim()
                && index
                    .shape()
                    .iter()
                    .zip(t.shape())
                    .enumerate()
                    .all(|(d, (i, s))| Some(d) == skip || i <= s)
        };
        if !fits(self, Some(a)) {
            let why = format!("index dims must be at most the input's except along axis {a}");
            return Err(self.scatter_error(op, index, why));
        }
        if !fits(src, None) {
            return Err(self.scatter_error(op, src, "src dims must be at least the index's".into()));
        }
        let n = self.shape()[a];
        if index.numel() > 0 {
            let range =
                Tensor::stack(&[&index.min(&[], false)?, &index.max(&[], false)?], 0)?.cast(DType::I64);
            let (low, high) = match range.to_vec::<i64>()?[..] {
                [l, h] => (l, h),
                _ => unreachable!("two values stacked"),
            };
            if low < 0 || high >= n as i64 {
                let why = format!("indices in [{low}, {high}] are out of range for a dim of {n}");
                return Err(self.scatter_error(op, index, why));
            }
        }
        // (.., positions along `axis`, ..) -> (.., n along `axis`, .., positions last)
        let to_last = |t: Tensor| ok(ok(t.unsqueeze(-1)).transpose(-1, a as isize));
        let mut cut: Vec<(usize, usize)> = index.shape().iter().map(|&d| (0, d)).collect();
        let src = to_last(src.shrink(&cut)?);
        let mut wide = src.shape().to_vec();
        wide[a] = n;
        let src = src.expand(&wide)?;
        let mask = index.one_hot_mask(op, n)?.transpose(-1, a as isize)?;
        // dims off `axis` padded up to this tensor's (those places get nothing)
        cut = self.shape().iter().map(|_| (0, 0)).collect();
        for (d, (&s, &i)) in self.shape().iter().zip(index.shape()).enumerate() {
            cut[d] = (0, if d == a { 0 } else { s - i });
        }
        cut.push((0, 0));
        Ok(Spread { src: src.pad(&cut)?, mask: mask.pad(&cut)? })
    }

    /// A copy of this tensor with `src[.., i, ..]` written at `[.., index[.., i, ..], ..]`
    /// along `axis` (PyTorch's and tinygrad's `scatter`); where several write one place the
    /// last wins. `src` is a tensor (of this dtype) or a scalar. Indices must be in range
    /// (checked: see [`Tensor::scatter_reduce`]). tinygrad's `reduce="add"`/`"multiply"`
    /// forms are [`Tensor::scatter_reduce`] with `Sum`/`Prod`.
    pub fn scatter(&self, axis: isize, index: &Tensor, src: impl Into<Value>) -> Result<Tensor> {
        let src = match src.into() {
            Value::Tensor(t) => t,
            Value::Scalar(c) => Tensor::constant(index.shape(), c, self.dtype(), self.device()),
        };
        let s = self.spread("scatter", axis, index, &src)?;
        let k = *s.mask.shape().last().unwrap_or(&0);
        let position = with_default_device(self.device(), || Tensor::arange(k))?;
        // the last writer of each place, -1 where none writes
        let last = s.mask.where_(&position, -1)?.max(&[-1], true)?;
        let picked = s.mask.bitwise_and(position.eq(&last)?)?;
        let value = picked.where_(&s.src, Tensor::constant(&[], 0.into(), self.dtype(), self.device()))?;
        let value = value.sum(&[-1], false)?.cast(self.dtype());
        last.squeeze(-1)?.ge(0)?.where_(&value, self)
    }

    /// A copy of this tensor with each `src[.., i, ..]` combined by `reduce` into
    /// `[.., index[.., i, ..], ..]` along `axis` (tinygrad's `scatter_reduce`), together with
    /// the value there when `include_self` (places nothing writes keep it either way).
    ///
    /// Indices must lie in `[0, dim)`: they are checked by reading back their smallest and
    /// largest values (one small sync), since an index that matches no place would
    /// otherwise be dropped silently.
    pub fn scatter_reduce(
        &self,
        axis: isize,
        index: &Tensor,
        src: &Tensor,
        reduce: ScatterReduce,
        include_self: bool,
    ) -> Result<Tensor> {
        let Spread { src, mask } = self.spread("scatter_reduce", axis, index, src)?;
        let written = mask.any(&[-1], false)?;
        // this tensor, or (without include_self) `empty` where something is written
        let base = |empty: Value| -> Result<Tensor> {
            match include_self {
                true => Ok(self.clone()),
                false => written.where_(empty, self),
            }
        };
        let (dtype, device) = (self.dtype(), self.device());
        let fill = |v: wgrad_dtype::ConstValue| Tensor::constant(&[], v.cast(dtype), dtype, device);
        match reduce {
            ScatterReduce::Sum => {
                mask.where_(&src, fill(0.into()))?.sum(&[-1], false)?.cast(dtype).add(base(0.into())?)
            }
            ScatterReduce::Prod => {
                mask.where_(&src, fill(1.into()))?.prod(&[-1], false)?.mul(base(1.into())?)
            }
            ScatterReduce::Amax => {
                let m = dtype.min_value();
                mask.where_(&src, fill(m))?.max(&[-1], false)?.maximum(base(Value::Scalar(m))?)
            }
            ScatterReduce::Amin => {
                let m = dtype.max_value();
                mask.where_(&src, fill(m))?.min(&[-1], false)?.minimum(base(Value::Scalar(m))?)
            }
            ScatterReduce::Mean => {
                let total = mask.where_(&src, fill(0.into()))?.sum(&[-1], false)?.add(base(0.into())?)?;
                let own =
                    if include_self { Value::from(1) } else { written.logical_not().cast(DType::I32).into() };
                let count = mask.cast(DType::I32).sum(&[-1], false)?.add(own)?;
                total.div(&count)
            }
        }
    }

    /// The elements where `mask` (bool, broadcast to this tensor's shape) holds, in
    /// row-major order. The result's length depends on the data, so this reads the count
    /// back (a sync); [`Tensor::masked_select_sized`] does not.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        let count =
            self.broadcast_mask("masked_select", mask)?.cast(DType::I32).sum(&[], false)?.item::<i32>()?;
        self.masked_select_sized(mask, count as usize, 0)
    }

    /// The first `size` elements where `mask` holds (row-major), `fill` past the last one
    /// (tinygrad's `masked_select(mask, size, fill_value)`): no readback.
    pub fn masked_select_sized(&self, mask: &Tensor, size: usize, fill: impl Into<Value>) -> Result<Tensor> {
        let m = self.broadcast_mask("masked_select", mask)?.flatten(0)?;
        let x = self.flatten(0)?;
        // each selected element's place in the result
        let place = m.cumsum(0)?.sub(1)?;
        let slots = with_default_device(self.device(), || Tensor::arange(size))?.unsqueeze(-1)?;
        let hit = m.unsqueeze(0)?.bitwise_and(place.unsqueeze(0)?.eq(&slots)?)?;
        let zero = Tensor::constant(&[], 0.into(), self.dtype(), self.device());
        let picked = hit.where_(x.unsqueeze(0)?, zero)?.sum(&[-1], false)?.cast(self.dtype());
        hit.any(&[-1], false)?.where_(&picked, fill.into().of(&picked).cast(self.dtype()))
    }

    /// `mask` checked to be bool and broadcast to this tensor's shape.
    fn broadcast_mask(&self, op: &'static str, mask: &Tensor) -> Result<Tensor> {
        if !mask.dtype().is_bool() {
            return Err(TensorError::DType { op, lhs: self.operand(), rhs: mask.operand() });
        }
        mask.expand(self.shape()).map_err(|_| TensorError::Broadcast {
            op,
            lhs: self.operand(),
            rhs: mask.operand(),
        })
    }

    /// The coordinates (int32, one row of `ndim` per element) of the non-zero elements, in
    /// row-major order. The number of rows depends on the data, so this reads the count
    /// back (a sync); [`Tensor::nonzero_sized`] does not.
    pub fn nonzero(&self) -> Result<Tensor> {
        let count = self.ne(0)?.cast(DType::I32).sum(&[], false)?.item::<i32>()?;
        self.nonzero_sized(count as usize, 0)
    }

    /// The coordinates of the first `size` non-zero elements, rows of `fill` past the last
    /// one (tinygrad's `nonzero(size, fill_value)`): no readback.
    pub fn nonzero_sized(&self, size: usize, fill: i32) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Ok(Tensor::constant(&[size, 0], 0.into(), DType::I32, self.device()));
        }
        let coords = (0..self.ndim())
            .map(|d| {
                let mut along = vec![1; self.ndim()];
                along[d] = self.shape()[d];
                let at = with_default_device(self.device(), || Tensor::arange(self.shape()[d]))?;
                at.reshape_to(&along).expand(self.shape())?.flatten(0)
            })
            .collect::<Result<Vec<_>>>()?;
        let coords = Tensor::stack(&coords.iter().collect::<Vec<_>>(), -1)?;
        let mask = self.ne(0)?.flatten(0)?.unsqueeze(-1)?.expand(coords.shape())?;
        Ok(coords.masked_select_sized(&mask, size * self.ndim(), fill)?.reshape_to(&[size, self.ndim()]))
    }
}
