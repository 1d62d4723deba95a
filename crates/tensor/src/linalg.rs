//! Linear algebra from tensor ops, batched over leading dims: `dot`, diagonals, QR by
//! Householder reflections and the SVD by one-sided Jacobi rotations (after a QR), as
//! tinygrad builds them. Everything stays lazy and on the device, and differentiable.

use crate::error::{Result, TensorError};
use crate::{Tensor, with_default_device};

/// Full sweeps of one-sided Jacobi rotations (each sweep pairs every two columns once);
/// float32 converges in fewer.
const SWEEPS: usize = 6;

/// The pairs of columns rotated in each round of one sweep over `n` columns: the circle
/// method (column 0 fixed, the others rotating), so every pair meets once per sweep and the
/// pairs of a round are disjoint. With an odd `n` one column rests each round.
fn round_robin(n: usize) -> Vec<Vec<(usize, usize)>> {
    let m = n + n % 2; // a resting slot when odd
    let mut ring: Vec<usize> = (1..m).collect();
    (0..m - 1)
        .map(|_| {
            let seats: Vec<usize> = std::iter::once(0).chain(ring.iter().copied()).collect();
            let round =
                (0..m / 2).map(|k| (seats[k], seats[m - 1 - k])).filter(|&(a, b)| a < n && b < n).collect();
            ring.rotate_right(1);
            round
        })
        .collect()
}

impl Tensor {
    /// The matrix product: tinygrad's `dot` is its `matmul` (PyTorch's `dot` takes only two
    /// vectors; for them this is the same).
    pub fn dot(&self, w: &Tensor) -> Result<Tensor> {
        self.matmul(w)
    }

    /// The square matrix with this vector on its diagonal (zeros elsewhere).
    pub fn diag(&self) -> Result<Tensor> {
        if self.ndim() != 1 {
            return Err(TensorError::Movement {
                op: "diag",
                arg: "a 1-d input".into(),
                operand: self.operand(),
            });
        }
        let n = self.shape()[0];
        let rows = self.unsqueeze(-1)?.pad(&[(0, 0), (0, n)])?;
        rows.flatten(0)?.shrink(&[(0, n * n)])?.reshape(&[n as isize, n as isize])
    }

    /// The diagonal `offset` (above the main one when positive) of the matrices in dims
    /// `dim1` and `dim2`, as a new last dim; the other dims stay in order (numpy's, PyTorch's
    /// and tinygrad's `diagonal`).
    pub fn diagonal(&self, offset: isize, dim1: isize, dim2: isize) -> Result<Tensor> {
        let (a, b) = (self.axis("diagonal", dim1, self.ndim())?, self.axis("diagonal", dim2, self.ndim())?);
        if a == b {
            return Err(TensorError::Movement {
                op: "diagonal",
                arg: format!("dims {dim1} and {dim2}"),
                operand: self.operand(),
            });
        }
        let order: Vec<isize> =
            (0..self.ndim()).filter(|&d| d != a && d != b).chain([a, b]).map(|d| d as isize).collect();
        let x = self.permute(&order)?;
        let lead = x.shape()[..x.ndim() - 2].to_vec();
        let (rows, cols) = (x.shape()[x.ndim() - 2], x.shape()[x.ndim() - 1]);
        let (r0, c0) = if offset >= 0 { (0, offset.unsigned_abs()) } else { (offset.unsigned_abs(), 0) };
        let d = rows.saturating_sub(r0).min(cols.saturating_sub(c0));
        let mut cut: Vec<(usize, usize)> = lead.iter().map(|&s| (0, s)).collect();
        cut.extend([(r0.min(rows), r0.min(rows) + d), (c0.min(cols), c0.min(cols) + d)]);
        // the d x d block flattened, padded to rows of d + 1: the diagonal is the first column
        let flat = x.shrink(&cut)?.reshape_to(&[&lead[..], &[d * d]].concat());
        let mut pads = vec![(0, 0); lead.len()];
        pads.push((0, d));
        let grid = flat.pad(&pads)?.reshape_to(&[&lead[..], &[d, d + 1]].concat());
        let mut first: Vec<(usize, usize)> = lead.iter().map(|&s| (0, s)).collect();
        first.extend([(0, d), (0, 1)]);
        Ok(grid.shrink(&first)?.reshape_to(&[&lead[..], &[d]].concat()))
    }

    /// The QR decomposition of the matrices in the last two dims, `(m, n)`: `Q` `(m, m)`
    /// orthogonal and `R` `(m, n)` upper triangular with `self = Q R`, by `min(m, n)`
    /// Householder reflections (tinygrad's; `R`'s diagonal takes the sign opposite to the
    /// column it came from, so it may differ from LAPACK's by the signs of rows of `R` and
    /// columns of `Q`).
    pub fn qr(&self) -> Result<(Tensor, Tensor)> {
        let (m, n) = self.matrix_dims("qr")?;
        let x = self.as_float();
        let lead = x.shape()[..x.ndim() - 2].to_vec();
        let eye = with_default_device(x.device(), || Tensor::eye(m, x.dtype()))?;
        let mut q = eye.expand(&[&lead[..], &[m, m]].concat())?;
        let mut r = x.clone();
        let row = with_default_device(x.device(), || Tensor::arange(m))?;
        for i in 0..m.min(n) {
            // column i of R below the diagonal (zeros above it)
            let mut cut: Vec<(usize, usize)> = r.shape().iter().map(|&s| (0, s)).collect();
            cut[x.ndim() - 1] = (i, i + 1);
            let col = r.shrink(&cut)?.squeeze(-1)?;
            let at = row.eq(i as i64)?;
            let v = row.ge(i as i64)?.where_(&col, 0.0)?;
            let norm = v.square().sum(&[-1], true)?.sqrt();
            let x0 = at.where_(&v, 0.0)?.sum(&[-1], true)?;
            let sign = x0.ne(0.0)?.where_(x0.sign(), 1.0)?;
            let active = norm.ne(0.0)?;
            let u0 = x0.add(sign.mul(&norm)?)?;
            // the reflector scaled so that v[i] = 1, and tau = 2 / |v|^2
            let v = at.where_(&u0, &v)?.div(active.where_(&u0, 1.0)?)?.unsqueeze(-1)?;
            let tau = active.where_(sign.mul(&u0)?.div(active.where_(&norm, 1.0)?)?, 0.0)?;
            let w = v.mul(tau.unsqueeze(-1)?)?;
            r = r.sub(w.matmul(&v.t()?.matmul(&r)?)?)?;
            q = q.sub(q.matmul(&v)?.matmul(&w.t()?)?)?;
        }
        Ok((q, r))
    }

    /// The singular value decomposition of the matrices in the last two dims, `(m, n)`:
    /// `(U, S, Vh)` with `self = U diag(S) Vh`, `S` descending, `k = min(m, n)`: `U` `(m, m)`
    /// and `Vh` `(n, n)` with `full_matrices`, else `(m, k)` and `(k, n)`. A QR first, then one-sided
    /// Jacobi rotations of the `k` columns of `R` for a fixed number of sweeps (as tinygrad;
    /// singular vectors are unique only up to sign).
    pub fn svd(&self, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let (m, n) = self.matrix_dims("svd")?;
        if m < n {
            let (u, s, vh) = self.t()?.svd(full_matrices)?;
            return Ok((vh.t()?, s, u.t()?));
        }
        let (q, r) = self.qr()?;
        let lead = q.shape()[..q.ndim() - 2].to_vec();
        let mut cut: Vec<(usize, usize)> = lead.iter().map(|&s| (0, s)).collect();
        cut.extend([(0, n), (0, n)]);
        let mut u = r.shrink(&cut)?.contiguous();
        let dtype = u.dtype();
        let eye = |k: usize| with_default_device(self.device(), || Tensor::eye(k, dtype));
        let mut v = eye(n)?.expand(&[&lead[..], &[n, n]].concat())?.contiguous();
        let rounds = round_robin(n);
        for _ in 0..SWEEPS {
            for pairs in rounds.iter().filter(|p| !p.is_empty()) {
                (u, v) = self.jacobi_round(&u, &v, pairs)?;
            }
        }
        // singular values are the column norms; sort them, and the columns with them
        let (s, order) = u.square().sum(&[-2], false)?.sqrt().sort(-1, true)?;
        let order = order.unsqueeze(-2)?.expand(u.shape())?;
        let u = u.gather(-1, &order)?.div(s.ne(0.0)?.where_(&s, 1.0)?.unsqueeze(-2)?)?;
        let v = v.gather(-1, &order)?;
        // U: Q times the block of the rotated columns and an identity for the rest
        let mut pads = vec![(0, 0); lead.len()];
        pads.extend([(0, m - n), (0, m - n)]);
        let block = u.pad(&pads)?.add(eye(m)?.sub(eye(n)?.pad(&[(0, m - n), (0, m - n)])?)?)?;
        let u = q.matmul(&block)?;
        let u = match full_matrices {
            true => u,
            false => {
                let mut first: Vec<(usize, usize)> = u.shape().iter().map(|&s| (0, s)).collect();
                first[u.ndim() - 1] = (0, n);
                u.shrink(&first)?
            }
        };
        Ok((u, s, v.t()?))
    }

    /// One round of rotations of the column `pairs` of `u` (and the same of `v`), each
    /// making its two columns orthogonal.
    fn jacobi_round(&self, u: &Tensor, v: &Tensor, pairs: &[(usize, usize)]) -> Result<(Tensor, Tensor)> {
        let (n, h) = (u.shape()[u.ndim() - 1], pairs.len());
        // the selector of the left then the right column of every pair: (n, 2h)
        let mut select = vec![0.0f32; n * 2 * h];
        for (k, &(a, b)) in pairs.iter().enumerate() {
            select[a * 2 * h + k] = 1.0;
            select[b * 2 * h + h + k] = 1.0;
        }
        let p = with_default_device(u.device(), || Tensor::from_vec(select, &[n, 2 * h]))?.cast(u.dtype());
        let split = |t: &Tensor| -> Result<(Tensor, Tensor, Tensor)> {
            let pair = t.matmul(&p)?;
            let halves = pair.split(&[h, h], -1)?;
            Ok((pair, halves[0].clone(), halves[1].clone()))
        };
        let (u_pair, left, right) = split(u)?;
        let gamma = left.mul(&right)?.sum(&[-2], true)?;
        let alpha = left.square().sum(&[-2], true)?;
        let beta = right.square().sum(&[-2], true)?;
        // the rotation that zeroes the pair's inner product (t the smaller root, stable)
        let rotate = gamma.ne(0.0)?;
        let zeta = beta.sub(&alpha)?.div(rotate.where_(gamma.mul(2.0)?, 1.0)?)?;
        let t =
            zeta.ne(0.0)?.where_(zeta.sign(), 1.0)?.div(zeta.abs().add(zeta.square().add(1.0)?.sqrt())?)?;
        let t = rotate.where_(&t, 0.0)?;
        let c = t.square().add(1.0)?.rsqrt();
        let s = c.mul(&t)?;
        let apply = |pair: &Tensor, left: &Tensor, right: &Tensor, base: &Tensor| -> Result<Tensor> {
            let new_left = c.mul(left)?.sub(s.mul(right)?)?;
            let new_right = s.mul(left)?.add(c.mul(right)?)?;
            let delta = Tensor::cat(&[&new_left, &new_right], -1)?.sub(pair)?;
            Ok(base.add(delta.matmul(&p.t()?)?)?.contiguous().contiguous_backward())
        };
        let (v_pair, v_left, v_right) = split(v)?;
        Ok((apply(&u_pair, &left, &right, u)?, apply(&v_pair, &v_left, &v_right, v)?))
    }

    /// `(m, n)`, the last two dims, for an op on matrices.
    fn matrix_dims(&self, op: &'static str) -> Result<(usize, usize)> {
        match self.shape() {
            [.., m, n] => Ok((*m, *n)),
            _ => Err(TensorError::Movement {
                op,
                arg: "a matrix (at least 2 dims)".into(),
                operand: self.operand(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::round_robin;

    #[test]
    fn every_pair_meets_once_per_sweep() {
        for n in 1..10 {
            let mut met = vec![];
            for round in round_robin(n) {
                let mut cols: Vec<usize> = round.iter().flat_map(|&(a, b)| [a, b]).collect();
                cols.sort_unstable();
                cols.dedup();
                assert_eq!(cols.len(), 2 * round.len(), "n={n}: disjoint pairs");
                met.extend(round.iter().map(|&(a, b)| (a.min(b), a.max(b))));
            }
            met.sort_unstable();
            let all: Vec<(usize, usize)> = (0..n).flat_map(|a| (a + 1..n).map(move |b| (a, b))).collect();
            assert_eq!(met, all, "n={n}");
        }
    }
}
