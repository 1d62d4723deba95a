//! ShapeTracker: a stack of views, the record of every movement op applied to a buffer.
//!
//! `views[0]` indexes the buffer, each later view indexes the output of the one before, and
//! the last view's shape is the tracker's shape. Invariants:
//! - there is always at least one view;
//! - movement ops only change the last view, except reshape, which pushes a contiguous view
//!   when the last one cannot take the new shape;
//! - `simplify` merges the last two views while one view can express both; it never changes
//!   what index or validity any element gets.

use std::collections::BTreeSet;

use crate::{IndexAlgebra, ShapeError, Sint, VarVals, Variable, View};

/// The views a buffer is read through, last view outermost.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShapeTracker {
    views: Vec<View>,
}

/// The per-dim positions of the row-major linear index `idx` into `shape`. Dims of size 1
/// (and 0) get the constant 0, the innermost dim skips `//1`, the outermost skips `%`: a
/// valid index is always below the size.
fn unravel<A: IndexAlgebra>(shape: &[Sint], idx: &A) -> Vec<A> {
    let outermost = shape.iter().position(|d| *d != 1);
    let mut acc = Sint::int(1);
    let mut out = vec![A::int(0); shape.len()];
    for (i, d) in shape.iter().enumerate().rev() {
        if *d == 1 || *d == 0 {
            continue;
        }
        let x = if acc == 1 { idx.clone() } else { idx.floordiv(&acc.to_algebra()) };
        out[i] = if Some(i) == outermost { x } else { x.rem(&d.to_algebra()) };
        acc = &acc * d;
    }
    out
}

impl ShapeTracker {
    /// A contiguous tracker over a buffer of `shape`.
    pub fn from_shape(shape: &[Sint]) -> Result<Self, ShapeError> {
        Ok(Self::from_view(View::from_shape(shape)?))
    }

    /// A tracker reading the buffer through one view.
    pub fn from_view(view: View) -> Self {
        Self { views: vec![view] }
    }

    /// A tracker over `views` as given (unsimplified), `views[0]` reading the buffer and each
    /// later view reading the output of the one before; `None` when `views` is empty.
    pub fn from_views(views: Vec<View>) -> Option<Self> {
        (!views.is_empty()).then_some(Self { views })
    }

    /// The views, the one that reads the buffer first.
    pub fn views(&self) -> &[View] {
        &self.views
    }

    fn last(&self) -> &View {
        self.views.last().expect("a ShapeTracker always has a view")
    }

    /// The shape of the output.
    pub fn shape(&self) -> &[Sint] {
        self.last().shape()
    }

    /// Number of output elements, symbolic dims taken at their largest value.
    pub fn size(&self) -> i64 {
        self.last().size()
    }

    /// Whether the output reads the buffer row-major from 0, nothing masked.
    pub fn contiguous(&self) -> bool {
        self.views.len() == 1 && self.last().contiguous()
    }

    /// Whether the output reads the buffer row-major, unmasked, from any offset.
    pub fn consecutive(&self) -> bool {
        let v = self.last();
        self.views.len() == 1 && v.mask().is_none() && v.strides() == crate::strides_for_shape(v.shape())
    }

    /// The same tracker with the last two views merged for as long as one view can do it.
    pub fn simplify(&self) -> Self {
        let mut views = self.views.clone();
        while let [.., a, b] = views.as_slice()
            && let Some(merged) = a.merge(b)
        {
            views.truncate(views.len() - 2);
            views.push(merged);
        }
        Self { views }
    }

    /// `other` applied on top of `self`'s output, simplified one view at a time.
    pub fn compose(&self, other: &ShapeTracker) -> Self {
        other.views.iter().fold(self.clone(), |st, v| {
            let mut views = st.views;
            views.push(v.clone());
            Self { views }.simplify()
        })
    }

    /// The tracker that maps this one's output back to a buffer of `out_shape`, when every
    /// view only permutes, flips and reshapes.
    pub fn invert(&self, out_shape: &[Sint]) -> Option<Self> {
        let shapes = self.views.iter().rev().skip(1).map(View::shape).chain([out_shape]);
        let views =
            self.views.iter().rev().zip(shapes).map(|(v, s)| v.invert(s)).collect::<Option<Vec<_>>>()?;
        Self { views }.reshape(out_shape).ok()
    }

    fn with_last(&self, op: impl FnOnce(&View) -> Result<View, ShapeError>) -> Result<Self, ShapeError> {
        let mut views = self.views.clone();
        let last = views.pop().expect("a ShapeTracker always has a view");
        views.push(op(&last)?);
        Ok(Self { views })
    }

    /// Reads the same elements in `new_shape`, stacking a view if the last cannot reshape.
    pub fn reshape(&self, new_shape: &[Sint]) -> Result<Self, ShapeError> {
        let mut views = self.views.clone();
        match self.last().reshape(new_shape)? {
            Some(v) => *views.last_mut().expect("a ShapeTracker always has a view") = v,
            None => views.push(View::from_shape(new_shape)?),
        }
        Ok(Self { views })
    }

    /// See [`View::permute`].
    pub fn permute(&self, axes: &[usize]) -> Result<Self, ShapeError> {
        self.with_last(|v| v.permute(axes))
    }

    /// See [`View::expand`].
    pub fn expand(&self, new_shape: &[Sint]) -> Result<Self, ShapeError> {
        self.with_last(|v| v.expand(new_shape))
    }

    /// See [`View::pad`].
    pub fn pad(&self, arg: &[(Sint, Sint)]) -> Result<Self, ShapeError> {
        self.with_last(|v| v.pad(arg))
    }

    /// See [`View::shrink`].
    pub fn shrink(&self, arg: &[(Sint, Sint)]) -> Result<Self, ShapeError> {
        self.with_last(|v| v.shrink(arg))
    }

    /// See [`View::flip`].
    pub fn flip(&self, arg: &[bool]) -> Result<Self, ShapeError> {
        self.with_last(|v| v.flip(arg))
    }

    /// The buffer index and validity of output element `idxs` (one index per output dim),
    /// built in any index algebra: tinygrad's `to_indexed_uops`.
    pub fn to_indexed<A: IndexAlgebra>(&self, idxs: &[A]) -> (A, A) {
        let mut views = self.views.iter().rev();
        let (mut idx, mut valid) = self.last().index(idxs, None);
        views.next();
        for view in views {
            let view = view.minify();
            (idx, valid) = view.index(&unravel(view.shape(), &idx), valid);
        }
        (idx, valid.unwrap_or_else(|| A::bool(true)))
    }

    /// Per output dim, the buffer stride of that dim when the index is linear in it (`0` when
    /// the index does not depend on it), `None` when it is not, or when the dim is masked
    /// (unless `ignore_valid`).
    pub fn real_strides(&self, ignore_valid: bool) -> Vec<Option<Sint>> {
        let last = self.last();
        if self.views.len() == 1 && last.mask().is_none() {
            return last.strides().iter().cloned().map(Some).collect();
        }
        let vars = self.axis_vars();
        let (idx, valid) = self.to_indexed(&vars.iter().map(Sint::var).collect::<Vec<_>>());
        let mut ret = idx.linear_coeffs(&vars);
        if !ignore_valid {
            for (r, v) in ret.iter_mut().zip(&vars) {
                if valid.mentions(v) {
                    *r = None;
                }
            }
        }
        ret
    }

    /// The output dims whose real stride is 1.
    pub fn unit_stride_axes(&self, ignore_valid: bool) -> Vec<usize> {
        let strides = self.real_strides(ignore_valid);
        strides
            .iter()
            .enumerate()
            .filter(|(_, s)| s.as_ref().is_some_and(|s| *s == 1))
            .map(|(i, _)| i)
            .collect()
    }

    /// Whether any view masks its elements (a pad or shrink left validity conditions).
    pub fn has_mask(&self) -> bool {
        self.views().iter().any(|v| v.mask().is_some())
    }

    /// Whether the validity of an element depends on its position along `axis`.
    pub fn axis_is_masked(&self, axis: usize) -> bool {
        let vars = self.axis_vars();
        let (_, valid) = self.to_indexed(&vars.iter().map(Sint::var).collect::<Vec<_>>());
        vars.get(axis).is_some_and(|v| valid.mentions(v))
    }

    /// One index variable per output dim, ranging over that dim.
    fn axis_vars(&self) -> Vec<Variable> {
        let var = |(i, s): (usize, &Sint)| Variable::new(&format!("ridx{i}"), 0, (s.vmax() - 1).max(0));
        self.shape().iter().enumerate().map(|d| var(d).expect("0 <= max")).collect()
    }

    /// The variables any view mentions.
    pub fn vars(&self) -> BTreeSet<Variable> {
        self.views.iter().flat_map(View::vars).collect()
    }

    /// The tracker with its bound variables made plain, and the values they were bound to.
    pub fn unbind(&self) -> (Self, VarVals) {
        let mut vals = VarVals::new();
        let views = self
            .views
            .iter()
            .map(|v| {
                let (v, x) = v.unbind();
                vals.extend(x);
                v
            })
            .collect();
        (Self { views }, vals)
    }
}
