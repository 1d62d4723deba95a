//! Composing views: `earlier.merge(later)` is one view that indexes `earlier`'s buffer the
//! way `later` indexes `earlier`'s output, when such a view exists (tinygrad's `vm2 + vm1`);
//! `invert` undoes views made only of permutes, flips and reshapes.

use super::{View, all_int, surely_lt, unravel};
use crate::sint::fdiv;
use crate::{Sint, Variable};

/// `ceil(a / b)` for `b != 0`.
fn ceil_div(a: i64, b: i64) -> i64 {
    -fdiv(-a, b)
}

impl View {
    /// One view equal to reading `self` through `later`, or `None` if none exists.
    pub fn merge(&self, later: &View) -> Option<View> {
        let (vm2, vm1) = (self, later);
        if vm2.contiguous || vm1.shape.iter().any(|s| *s == 0) {
            return Some(vm1.clone());
        }
        if vm1.contiguous && vm1.shape == vm2.shape {
            return Some(vm2.clone());
        }
        if vm1.contiguous
            && vm1.size() == vm2.size()
            && let Ok(Some(v)) = vm2.reshape(&vm1.shape)
        {
            return Some(v);
        }
        if let Some(mask) = &vm1.mask {
            // merge the unmasked part, then pad the mask back on
            let inner = vm1.shrink(mask).ok()?;
            if inner == *vm1 {
                return None;
            }
            let pads: Vec<(Sint, Sint)> =
                mask.iter().zip(&vm1.shape).map(|((b, e), s)| (b.clone(), s - e)).collect();
            return vm2.merge(&inner)?.pad(&pads).ok();
        }
        let shape1 = all_int(&vm1.shape)?;

        // project vm1's offset and strides onto vm2's dims
        let origin = unravel(&vm2.shape, &vm1.offset);
        let mut terms: Vec<Vec<(usize, Sint)>> = vec![vec![]; vm2.shape.len()];
        let mut strides = vec![Sint::int(0); vm1.shape.len()];
        for (d1, st) in vm1.strides.iter().enumerate().filter(|(_, st)| **st != 0) {
            let step = unravel(&vm2.shape, &(&vm1.offset + st));
            for (d2, (o, s)) in origin.iter().zip(step).enumerate() {
                let s1 = s - o;
                if s1 != 0 {
                    strides[d1] = &strides[d1] + &(&s1 * &vm2.strides[d2]);
                    terms[d2].push((d1, s1));
                }
            }
        }

        // merge vm2's dims only where vm1 walks across them
        let idxs: Vec<Sint> = shape1
            .iter()
            .enumerate()
            .map(|(i, s)| Sint::var(&Variable::new(&format!("idx{i}"), 0, s - 1).expect("non-empty dims")))
            .collect();
        let (mut merged_size, mut merged_term) = (Sint::int(1), Sint::int(0));
        let mut extents: Vec<(Sint, Sint)> = vec![];
        for ((term, s), o) in terms.iter().zip(&vm2.shape).zip(&origin).rev() {
            let walk: Sint = term.iter().map(|(d1, s1)| &idxs[*d1] * s1).sum();
            merged_term = merged_term + (walk + o) * &merged_size;
            merged_size = merged_size * s;
            if surely_lt(&merged_term, &merged_size) && merged_term.vmin() >= 0 {
                extents.push((merged_size, merged_term));
                (merged_size, merged_term) = (Sint::int(1), Sint::int(0));
            }
        }
        if merged_term != 0 {
            return None;
        }
        extents.reverse();
        let shape2: Vec<Sint> = extents.iter().map(|(s, _)| s.clone()).collect();
        if shape2 != vm2.shape {
            return vm2.reshape(&shape2).ok()??.merge(vm1);
        }

        if let Some(mask2) = &vm2.mask {
            // project vm2's mask onto vm1's dims
            let (mut newb, mut newe, mut bad) = (vec![0; shape1.len()], shape1.clone(), false);
            for (((b, e), o), (term, (_, t))) in mask2.iter().zip(&origin).zip(terms.iter().zip(&extents)) {
                if b.vmax() <= t.vmin() && t.vmax() < e.vmin() {
                    continue;
                }
                let [(d1, s1)] = term.as_slice() else {
                    match newe.first_mut() {
                        Some(first) if term.is_empty() => *first = 0,
                        _ => bad = true,
                    }
                    continue;
                };
                let (b, e, o, s1) = (b.as_int()?, e.as_int()?, o.as_int()?, s1.as_int()?);
                newb[*d1] = newb[*d1].max(ceil_div(if s1 > 0 { b - o } else { e - o - 1 }, s1));
                newe[*d1] = newe[*d1].min(fdiv(if s1 < 0 { b - o } else { e - o - 1 }, s1) + 1);
            }
            if newb.iter().zip(&newe).zip(&shape1).any(|((b, e), s)| *b != 0 || e != s) {
                let mask = newb.into_iter().zip(newe).map(|(b, e)| (Sint::int(b), Sint::int(e))).collect();
                return vm2.merge(&View::create(
                    vm1.shape.clone(),
                    Some(vm1.strides.clone()),
                    vm1.offset.clone(),
                    Some(mask),
                ));
            }
            if bad {
                return None;
            }
        }

        let offset = origin.iter().zip(&vm2.strides).map(|(o, s)| o * s).sum::<Sint>() + &vm2.offset;
        Some(View::create(vm1.shape.clone(), Some(strides), offset, None))
    }

    /// The view that undoes `self` into `out_shape`, when `self` reads each element of a
    /// buffer of `out_shape` exactly once (permutes, flips, reshapes and pads; no shrink or
    /// expand) and all its values are integers.
    pub fn invert(&self, out_shape: &[Sint]) -> Option<View> {
        if self.shape.iter().any(|s| *s == 0) {
            return (out_shape.iter().product::<Sint>() == 0).then(|| self.clone());
        }
        let strides = all_int(&self.strides)?;
        let window: Vec<(i64, i64)> = match &self.mask {
            Some(m) => m.iter().map(|(b, e)| b.as_int().zip(e.as_int())).collect::<Option<_>>()?,
            None => all_int(&self.shape)?.into_iter().map(|s| (0, s)).collect(),
        };
        // the unmasked window must cover [0, n) once: strides of a row-major layout, reordered
        let mut runs: Vec<(i64, i64)> =
            window.iter().zip(&strides).map(|((b, e), st)| (st.abs(), e - b)).collect();
        runs.retain(|(_, n)| *n != 1);
        runs.sort_unstable();
        let mut n = 1;
        for (st, len) in runs {
            if st != n {
                return None;
            }
            n *= len;
        }
        let lowest = window
            .iter()
            .zip(&strides)
            .map(|((b, e), st)| b * st + if *st < 0 { (e - b - 1) * st } else { 0 })
            .sum::<i64>();
        if self.offset.as_int()? + lowest != 0 || out_shape.iter().product::<Sint>() != n {
            return None;
        }
        let mut ret = View::create(self.shape.clone(), None, Sint::int(0), None);
        if let Some(m) = &self.mask {
            ret = ret.shrink(m).ok()?;
        }
        ret = ret.flip(&strides.iter().map(|s| *s < 0).collect::<Vec<_>>()).ok()?;
        let mut order: Vec<usize> = (0..strides.len()).collect();
        order.sort_by_key(|&i| -strides[i].abs());
        ret.permute(&order).ok()
    }
}
