//! View: one strided, offset and optionally masked window onto a flat buffer.
//!
//! Element `(i0, i1, ..)` of a view reads buffer index `offset + sum(ik * strides[k])` when
//! every `ik` lies in `mask[k]` (half open), and is padding otherwise. Invariants, kept by
//! every constructor and movement op (tinygrad's canonical form):
//! - `shape`, `strides` and `mask` have one entry per axis; dims are non-negative;
//! - size-1 dims have stride 0;
//! - a zero in the shape gives strides 0, offset 0, no mask;
//! - a mask covering the whole shape is `None`; a dim masked to one element has stride 0
//!   (its offset folded in); a view with an empty mask has strides 0, offset 0 and all
//!   masks `(0, 0)`;
//! - `contiguous` is exactly: offset 0, no mask, strides those of a row-major buffer.

mod merge;

use crate::error::dims;
use crate::{IndexAlgebra, ShapeError, Sint, VarVals, Variable};

/// One strided window onto a buffer; movement ops return new views.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct View {
    shape: Vec<Sint>,
    strides: Vec<Sint>,
    offset: Sint,
    mask: Option<Vec<(Sint, Sint)>>,
    contiguous: bool,
}

/// Row-major strides of `shape`, 0 on size-1 dims.
pub fn strides_for_shape(shape: &[Sint]) -> Vec<Sint> {
    let mut acc = Sint::int(1);
    let mut out = vec![Sint::int(0); shape.len()];
    for (i, s) in shape.iter().enumerate().rev() {
        if *s != 1 {
            out[i] = acc.clone();
        }
        acc = &acc * s;
    }
    out
}

/// `a == b` unless the bounds prove otherwise (tinygrad's `resolve(a == b)`).
fn maybe_eq(a: &Sint, b: &Sint) -> bool {
    let d = a - b;
    d.vmin() <= 0 && d.vmax() >= 0
}

/// `a <= b` unless the bounds prove otherwise.
fn maybe_le(a: &Sint, b: &Sint) -> bool {
    (b - a).vmax() >= 0
}

/// `a < b` for every value of the variables.
fn surely_lt(a: &Sint, b: &Sint) -> bool {
    a.lt(b).as_bool() == Some(true)
}

fn all_int(xs: &[Sint]) -> Option<Vec<i64>> {
    xs.iter().map(Sint::as_int).collect()
}

fn check_axes(op: &'static str, got: usize, shape: &[Sint]) -> Result<(), ShapeError> {
    match got == shape.len() {
        true => Ok(()),
        false => Err(ShapeError::AxisCount { op, got, shape: shape.to_vec() }),
    }
}

fn check_non_negative(shape: &[Sint]) -> Result<(), ShapeError> {
    match shape.iter().any(|s| s.vmin() < 0) {
        true => Err(ShapeError::NegativeDim { shape: shape.to_vec() }),
        false => Ok(()),
    }
}

/// Position of `offset` along each dim of a row-major `shape` (numpy's `unravel_index`).
fn unravel(shape: &[Sint], offset: &Sint) -> Vec<Sint> {
    let mut acc = Sint::int(1);
    let mut out = vec![Sint::int(0); shape.len()];
    for (i, d) in shape.iter().enumerate().rev() {
        out[i] = (offset / &acc) % d;
        acc = &acc * d;
    }
    out
}

/// Groups of dims that reshape can treat as one: `(size, stride, size without broadcast)`.
/// Stride-0 and size-1 dims, dims masked to one element, and contiguous runs are merged.
fn merge_dims(shape: &[Sint], strides: &[Sint], mask: Option<&[(Sint, Sint)]>) -> Vec<(Sint, Sint, Sint)> {
    let Some((s0, st0)) = shape.first().zip(strides.first()) else { return vec![] };
    let single = |i: usize| match mask {
        Some(m) => &m[i].1 - &m[i].0 == 1,
        None => shape[i] == 1,
    };
    let mut ret = vec![(s0.clone(), st0.clone(), if *st0 != 0 { s0.clone() } else { Sint::int(0) })];
    let mut merging = single(0);
    for (i, (s, st)) in shape.iter().zip(strides).enumerate().skip(1) {
        if *s == 1 {
            continue;
        }
        let last = ret.last_mut().expect("ret starts non-empty");
        if merging || last.1 == s * st {
            let real = if merging { s.clone() } else { &last.2 * s };
            *last = (&last.0 * s, st.clone(), real);
        } else {
            ret.push((s.clone(), st.clone(), s.clone()));
        }
        merging = single(i);
    }
    ret
}

/// The mask after reshaping an integer-shaped masked view, or `None` if a mask range would be
/// cut into pieces that one range per new dim cannot describe.
fn reshape_mask(mask: &[(i64, i64)], old: &[i64], new: &[i64]) -> Option<Vec<(i64, i64)>> {
    let (mut masks, mut olds, mut news) =
        (mask.iter().rev().copied(), old.iter().rev().copied(), new.iter().rev().copied());
    let mut out = Vec::with_capacity(new.len());
    let (mut stride, mut old_dim, mut new_dim) = (1, olds.next().unwrap_or(1), news.next().unwrap_or(1));
    let mut m = masks.next().unwrap_or((0, 1));
    while out.len() < new.len() {
        let ((l, r), next_stride) = (m, new_dim * stride);
        if old_dim == next_stride {
            // the old dim ends here: copy its mask, scaled down by what came before
            out.push((l.div_euclid(stride), (r - 1).div_euclid(stride) + 1));
            (stride, old_dim, new_dim) = (1, olds.next().unwrap_or(1), news.next().unwrap_or(1));
            m = masks.next().unwrap_or((0, 1));
        } else if old_dim > next_stride {
            // split the old dim: only possible when the mask does not straddle a row
            let straddles = (l % next_stride != 0 || r % next_stride != 0)
                && l.div_euclid(next_stride) != (r - 1).div_euclid(next_stride);
            if old_dim % next_stride != 0 || straddles {
                return None;
            }
            out.push((l.rem_euclid(next_stride) / stride, (r - 1).rem_euclid(next_stride) / stride + 1));
            (stride, new_dim) = (next_stride, news.next().unwrap_or(1));
        } else {
            // combine with the next old dim: only if the mask unfolds into one range
            let next = masks.next().unwrap_or((0, 1));
            if m != (0, old_dim) && l != r && next.1 - next.0 != 1 {
                return None;
            }
            m = (next.0 * old_dim + l, (next.1 - 1) * old_dim + r);
            old_dim *= olds.next().unwrap_or(1);
        }
    }
    out.reverse();
    Some(out)
}

impl View {
    /// The canonical view; `shape` must be non-negative, strides default to row-major.
    pub(crate) fn create(
        shape: Vec<Sint>,
        strides: Option<Vec<Sint>>,
        offset: Sint,
        mask: Option<Vec<(Sint, Sint)>>,
    ) -> View {
        let mut strides = match strides {
            Some(st) => shape.iter().zip(st).map(|(s, st)| if *s == 1 { Sint::int(0) } else { st }).collect(),
            None => strides_for_shape(&shape),
        };
        if shape.iter().any(|s| *s == 0) {
            let strides = vec![Sint::int(0); shape.len()];
            return View { shape, strides, offset: Sint::int(0), mask: None, contiguous: true };
        }
        let mut offset = offset;
        let mut mask = mask.filter(|m| !m.iter().zip(&shape).all(|((b, e), s)| *b == 0 && e == s));
        if let Some(m) = &mut mask {
            let single: Vec<bool> = m.iter().map(|(b, e)| !surely_lt(&(b + 1), e)).collect();
            if m.iter().any(|(b, e)| !surely_lt(b, e)) {
                strides.fill(Sint::int(0));
                offset = Sint::int(0);
                m.fill((Sint::int(0), Sint::int(0)));
            }
            for ((st, (b, _)), single) in strides.iter_mut().zip(m.iter()).zip(single) {
                if single {
                    offset = &offset + &(&*st * b);
                    *st = Sint::int(0);
                }
            }
        }
        let contiguous = offset == 0 && mask.is_none() && strides == strides_for_shape(&shape);
        View { shape, strides, offset, mask, contiguous }
    }

    /// A contiguous row-major view of `shape`.
    pub fn from_shape(shape: &[Sint]) -> Result<View, ShapeError> {
        check_non_negative(shape)?;
        Ok(View::create(shape.to_vec(), None, Sint::int(0), None))
    }

    /// A view with explicit strides, offset and mask, brought to canonical form.
    pub fn new(
        shape: &[Sint],
        strides: &[Sint],
        offset: Sint,
        mask: Option<&[(Sint, Sint)]>,
    ) -> Result<View, ShapeError> {
        check_non_negative(shape)?;
        check_axes("strides", strides.len(), shape)?;
        if let Some(m) = mask {
            check_axes("mask", m.len(), shape)?;
            if !m
                .iter()
                .zip(shape)
                .all(|((b, e), s)| maybe_le(&Sint::int(0), b) && maybe_le(b, e) && maybe_le(e, s))
            {
                return Err(ShapeError::Mask { mask: m.to_vec(), shape: shape.to_vec() });
            }
        }
        Ok(View::create(shape.to_vec(), Some(strides.to_vec()), offset, mask.map(<[_]>::to_vec)))
    }

    /// The dims, outermost first.
    pub fn shape(&self) -> &[Sint] {
        &self.shape
    }

    /// Buffer elements skipped per step along each dim.
    pub fn strides(&self) -> &[Sint] {
        &self.strides
    }

    /// Buffer index of element `(0, 0, ..)`.
    pub fn offset(&self) -> &Sint {
        &self.offset
    }

    /// Per dim, the half-open range of positions that read the buffer; `None` when all do.
    pub fn mask(&self) -> Option<&[(Sint, Sint)]> {
        self.mask.as_deref()
    }

    /// Whether the view reads the buffer row-major from 0 with nothing masked.
    pub fn contiguous(&self) -> bool {
        self.contiguous
    }

    /// Number of elements, taking each symbolic dim at its largest value.
    pub fn size(&self) -> i64 {
        self.shape.iter().map(Sint::vmax).product()
    }

    /// The buffer index and validity of element `idxs` (one index per dim).
    pub fn to_indexed<A: IndexAlgebra>(&self, idxs: &[A]) -> (A, A) {
        let (idx, valid) = self.index(idxs, None);
        (idx, valid.unwrap_or_else(|| A::bool(true)))
    }

    /// Like `to_indexed`, and-ing the mask checks onto `valid` (`None` meaning true). Skips
    /// `*1`, `+0`, size-1 and stride-0 dims, and checks against bounds that cover their dim.
    pub(crate) fn index<A: IndexAlgebra>(&self, idxs: &[A], mut valid: Option<A>) -> (A, Option<A>) {
        assert_eq!(idxs.len(), self.shape.len(), "one index per dim of {}", dims(&self.shape));
        let mut idx: Option<A> = (self.offset != 0).then(|| self.offset.to_algebra());
        let mut and = |cond: A| valid = Some(valid.take().map_or_else(|| cond.clone(), |v| v.and(&cond)));
        for (i, (x, (sh, st))) in idxs.iter().zip(self.shape.iter().zip(&self.strides)).enumerate() {
            if *sh != 1 && *st != 0 {
                let term = if *st == 1 { x.clone() } else { x.mul(&st.to_algebra()) };
                idx = Some(idx.map_or_else(|| term.clone(), |a| a.add(&term)));
            }
            if let Some((b, e)) = self.mask.as_ref().map(|m| &m[i]) {
                if *b != 0 {
                    and((b - 1).to_algebra::<A>().lt(x)); // x >= b
                }
                if e != sh {
                    and(x.lt(&e.to_algebra()));
                }
            }
        }
        (idx.unwrap_or_else(|| A::int(0)), valid)
    }

    /// Moves the window to `arg[k] = (begin, end)` per dim (may reach outside the buffer),
    /// intersecting the old mask with `mask`.
    fn resize(&self, arg: &[(Sint, Sint)], mask: Option<Vec<(Sint, Sint)>>) -> Result<View, ShapeError> {
        let offset: Sint = self.strides.iter().zip(arg).map(|(st, (b, _))| st * b).sum();
        let mut mask = mask;
        if let Some(old) = &self.mask {
            let undecidable = || ShapeError::UndecidableMask { mask: old.clone(), shape: self.shape.clone() };
            let clamp = |x: Sint, (b, e): &(Sint, Sint)| Sint::int(0).smax(&(&x - b).smin(&(e - b))?);
            let mut moved = Vec::with_capacity(old.len());
            for ((mb, me), a) in old.iter().zip(arg) {
                moved.push((
                    clamp(mb.clone(), a).ok_or_else(undecidable)?,
                    clamp(me.clone(), a).ok_or_else(undecidable)?,
                ));
            }
            mask = Some(match mask {
                None => moved,
                Some(new) => {
                    let mut both = Vec::with_capacity(new.len());
                    for ((b1, e1), (b2, e2)) in moved.iter().zip(&new) {
                        both.push((
                            b1.smax(b2).ok_or_else(undecidable)?,
                            e1.smin(e2).ok_or_else(undecidable)?,
                        ));
                    }
                    both
                }
            });
        }
        let shape = arg.iter().map(|(b, e)| e - b).collect();
        Ok(View::create(shape, Some(self.strides.clone()), &self.offset + &offset, mask))
    }

    /// Pads dim `k` with `arg[k] = (before, after)` masked-off elements.
    pub fn pad(&self, arg: &[(Sint, Sint)]) -> Result<View, ShapeError> {
        check_axes("pad", arg.len(), &self.shape)?;
        if arg.iter().any(|(b, e)| b.vmin() < 0 || e.vmin() < 0) {
            return Err(ShapeError::Pad { arg: arg.to_vec(), shape: self.shape.clone() });
        }
        if arg.iter().all(|(b, e)| *b == 0 && *e == 0) {
            return Ok(self.clone());
        }
        let window = self.shape.iter().zip(arg).map(|(s, (b, e))| (-b, s + e)).collect::<Vec<_>>();
        let mask = self.shape.iter().zip(arg).map(|(s, (b, _))| (b.clone(), s + b)).collect();
        self.resize(&window, Some(mask))
    }

    /// Keeps positions `arg[k].0 .. arg[k].1` of dim `k`.
    pub fn shrink(&self, arg: &[(Sint, Sint)]) -> Result<View, ShapeError> {
        check_axes("shrink", arg.len(), &self.shape)?;
        let zero = Sint::int(0);
        if !arg
            .iter()
            .zip(&self.shape)
            .all(|((b, e), s)| maybe_le(&zero, b) && maybe_le(b, e) && maybe_le(e, s))
        {
            return Err(ShapeError::Shrink { arg: arg.to_vec(), shape: self.shape.clone() });
        }
        self.resize(arg, None)
    }

    /// Broadcasts size-1 dims to `new_shape`; other dims must already match.
    pub fn expand(&self, new_shape: &[Sint]) -> Result<View, ShapeError> {
        check_axes("expand", new_shape.len(), &self.shape)?;
        check_non_negative(new_shape)?;
        if !self.shape.iter().zip(new_shape).all(|(s, ns)| *s == 1 || maybe_eq(s, ns)) {
            return Err(ShapeError::Expand { from: self.shape.clone(), to: new_shape.to_vec() });
        }
        if self.shape.iter().any(|s| *s == 0) {
            return Ok(View::create(new_shape.to_vec(), None, Sint::int(0), None));
        }
        let mask = self.mask.as_ref().map(|m| {
            let full = (Sint::int(0), Sint::int(1));
            let broadcast = |(r, s, ns): (&(Sint, Sint), &Sint, &Sint)| match (*s == 1, *r == full) {
                (true, true) => (Sint::int(0), ns.clone()),
                (true, false) => (Sint::int(0), Sint::int(0)),
                (false, _) => r.clone(),
            };
            m.iter().zip(&self.shape).zip(new_shape).map(|((r, s), ns)| broadcast((r, s, ns))).collect()
        });
        Ok(View::create(new_shape.to_vec(), Some(self.strides.clone()), self.offset.clone(), mask))
    }

    /// Reorders the dims: dim `k` of the result is dim `axes[k]` of `self`.
    pub fn permute(&self, axes: &[usize]) -> Result<View, ShapeError> {
        let mut seen = vec![false; self.shape.len()];
        let is_perm = axes.len() == seen.len()
            && axes.iter().all(|&a| a < seen.len() && !std::mem::replace(&mut seen[a], true));
        if !is_perm {
            return Err(ShapeError::Permute { axes: axes.to_vec(), shape: self.shape.clone() });
        }
        let pick = |xs: &[Sint]| axes.iter().map(|&a| xs[a].clone()).collect::<Vec<_>>();
        let mask = self.mask.as_ref().map(|m| axes.iter().map(|&a| m[a].clone()).collect());
        Ok(View::create(pick(&self.shape), Some(pick(&self.strides)), self.offset.clone(), mask))
    }

    /// Reverses the dims where `arg[k]` is true (tinygrad's stride -1).
    pub fn flip(&self, arg: &[bool]) -> Result<View, ShapeError> {
        check_axes("flip", arg.len(), &self.shape)?;
        let mut offset = self.offset.clone();
        let mut strides = self.strides.clone();
        let mut mask = self.mask.clone();
        for (k, s) in self.shape.iter().enumerate().filter(|(k, _)| arg[*k]) {
            offset = &offset + &((s - 1) * &strides[k]);
            strides[k] = -&strides[k];
            if let Some(m) = &mut mask {
                m[k] = (s - &m[k].1, s - &m[k].0);
            }
        }
        Ok(View::create(self.shape.clone(), Some(strides), offset, mask))
    }

    /// The same elements in `new_shape` (row-major), or `Ok(None)` when one view cannot
    /// express that and a new view must be stacked on top.
    pub fn reshape(&self, new_shape: &[Sint]) -> Result<Option<View>, ShapeError> {
        if self.shape == new_shape {
            return Ok(Some(self.clone()));
        }
        check_non_negative(new_shape)?;
        let size_diff =
            (self.shape.iter().product::<Sint>() - new_shape.iter().product::<Sint>()).bound_value();
        if !maybe_eq(&size_diff, &Sint::int(0)) {
            return Err(ShapeError::ReshapeSize { from: self.shape.clone(), to: new_shape.to_vec() });
        }
        if self.shape.iter().any(|s| *s == 0) || self.contiguous {
            return Ok(Some(View::create(new_shape.to_vec(), None, Sint::int(0), None)));
        }
        if new_shape.is_empty() && self.mask.as_ref().is_some_and(|m| m.iter().any(|(b, e)| b == e)) {
            return Ok(None);
        }
        if all_int(&self.shape).is_some() && all_int(new_shape).is_none() {
            // a non-contiguous view only takes a symbolic shape whose bound values are its own
            if new_shape.len() != self.shape.len()
                || self.shape.iter().zip(new_shape).any(|(s, n)| *s != n.bound_value())
            {
                return Err(ShapeError::SymbolicReshape { from: self.shape.clone(), to: new_shape.to_vec() });
            }
            return Ok(Some(View { shape: new_shape.to_vec(), ..self.clone() }));
        }
        let Some(strides) = self.reshape_strides(new_shape) else { return Ok(None) };
        let mask = match &self.mask {
            None => new_shape.iter().map(|s| (Sint::int(0), s.clone())).collect(),
            Some(m) => {
                let int_mask: Option<Vec<(i64, i64)>> =
                    m.iter().map(|(b, e)| b.as_int().zip(e.as_int())).collect();
                let (Some(im), Some(old), Some(new)) = (int_mask, all_int(&self.shape), all_int(new_shape))
                else {
                    return Ok(None);
                };
                let Some(nm) = reshape_mask(&im, &old, &new) else { return Ok(None) };
                nm.into_iter().map(|(b, e)| (Sint::int(b), Sint::int(e))).collect::<Vec<_>>()
            }
        };
        let starts =
            |m: &[(Sint, Sint)], st: &[Sint]| -> Sint { m.iter().zip(st).map(|((b, _), s)| b * s).sum() };
        let old_start = self.mask.as_deref().map_or(Sint::int(0), |m| starts(m, &self.strides));
        let offset = &self.offset + &(old_start - starts(&mask, &strides));
        Ok(Some(View::create(new_shape.to_vec(), Some(strides), offset, Some(mask))))
    }

    /// Strides for `new_shape` when each merged dim group splits cleanly into new dims.
    fn reshape_strides(&self, new_shape: &[Sint]) -> Option<Vec<Sint>> {
        let mut r_strides = Vec::with_capacity(new_shape.len());
        let mut r_new = new_shape.iter().rev();
        for (merged, mut stride, real) in
            merge_dims(&self.shape, &self.strides, self.mask.as_deref()).into_iter().rev()
        {
            let mut acc = Sint::int(1);
            while maybe_le(&acc, &merged) && acc != merged {
                let new_dim = r_new.next().cloned().unwrap_or(Sint::int(0));
                if !maybe_le(&Sint::int(1), &new_dim) {
                    break;
                }
                r_strides.push(&stride * &acc);
                acc = &acc * &new_dim;
                if !maybe_le(&(&acc + 1), &real) {
                    stride = Sint::int(0); // past the real (non-broadcast) extent
                }
            }
            if acc != merged {
                return None;
            }
        }
        let mut strides = vec![Sint::int(0); new_shape.len() - r_strides.len()];
        strides.extend(r_strides.into_iter().rev());
        Some(strides)
    }

    /// The smallest-rank view equal to this one (merged dims), used before unravelling.
    pub fn minify(&self) -> View {
        let shape: Vec<Sint> =
            merge_dims(&self.shape, &self.strides, self.mask.as_deref()).into_iter().map(|m| m.0).collect();
        match self.reshape(&shape) {
            Ok(Some(v)) => v,
            _ => self.clone(),
        }
    }
}

impl View {
    /// Every value in the view: shape, strides, offset and mask bounds.
    fn sints(&self) -> impl Iterator<Item = &Sint> {
        let mask = self.mask.iter().flatten().flat_map(|(b, e)| [b, e]);
        self.shape.iter().chain(&self.strides).chain([&self.offset]).chain(mask)
    }

    /// The variables the view mentions.
    pub fn vars(&self) -> std::collections::BTreeSet<Variable> {
        self.sints().flat_map(Sint::vars).collect()
    }

    /// The view with its bound variables made plain, and the values they were bound to.
    pub fn unbind(&self) -> (View, VarVals) {
        let mut vals = VarVals::new();
        let mut plain = |x: &Sint| {
            let (x, v) = x.unbind();
            vals.extend(v);
            x
        };
        let shape = self.shape.iter().map(&mut plain).collect();
        let strides = self.strides.iter().map(&mut plain).collect();
        let offset = plain(&self.offset);
        let mask = self.mask.as_ref().map(|m| m.iter().map(|(b, e)| (plain(b), plain(e))).collect());
        (View::create(shape, Some(strides), offset, mask), vals)
    }
}
