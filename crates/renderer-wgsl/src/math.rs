//! Precise f32 math helpers: device `exp2`/`log2`/`sin` only promise loose bounds (Vulkan:
//! `exp2` 3 + 2|x| ULP, `log2` 2^-21 absolute near 1, `sin` 2^-11 absolute and only on
//! [-pi, pi]), so these compute with their own reductions and polynomials, in plain f32
//! arithmetic, with the special values of `exec_alu` (IEEE, through f64).

/// `2^x` for `pow` (the `Exp2` op itself renders as the builtin): `x = n + f` with `n = round(x)`, `2^f` by its Taylor series to degree 7 on
/// `|f| <= 1/2` (truncation below 1e-8 relative), scaled by `2^n` in two exact steps.
pub(crate) const EXP2: &str = "fn NAME(x: f32) -> f32 {
  if (is_nan(x)) { return x; }
  if (x >= 128.0) { return bitcast<f32>(0x7f800000u); }
  if (x < -150.0) { return 0.0; }
  let n = round(x);
  let f = x - n;
  var p = 1.5252733804059838e-5;
  p = p * f + 1.5403530393381606e-4;
  p = p * f + 1.3333558146428441e-3;
  p = p * f + 9.618129107628477e-3;
  p = p * f + 5.5504108664821576e-2;
  p = p * f + 0.2402265069591007;
  p = p * f + 0.6931471805599453;
  p = p * f + 1.0;
  let k = i32(n);
  let half = k / 2;
  let scale1 = bitcast<f32>(u32(half + 127) << 23u);
  let scale2 = bitcast<f32>(u32(k - half + 127) << 23u);
  return p * scale1 * scale2;
}
";

/// `log2(x)`: `x = m * 2^e` with `m` in `[sqrt(1/2), sqrt(2))` and `f = m - 1` (exact);
/// `ln(1 + f) = f - f^2/2 + s * (f^2/2 + R)` with `s = f / (2 + f)` and `R` the series of
/// `2 atanh(s) / s - 2` to `s^10` (truncation below 1e-9); the leading part is kept to 12 bits
/// so its product with the high part of `1 / ln 2` is exact, and the sum with `e` is
/// compensated (the scheme of fdlibm's `log2f`).
pub(crate) const LOG2: &str = "fn NAME(x: f32) -> f32 {
  if (is_nan(x) || x < 0.0) { return bitcast<f32>(0x7fc00000u); }
  if (x == 0.0) { return bitcast<f32>(0xff800000u); }
  if (x == bitcast<f32>(0x7f800000u)) { return x; }
  var bits = bitcast<u32>(x);
  var e = -127;
  if (bits < 0x00800000u) {
    bits = bitcast<u32>(x * 8388608.0);
    e -= 23;
  }
  e += i32(bits >> 23u);
  var m = bitcast<f32>((bits & 0x007fffffu) | 0x3f800000u);
  if (m > 1.4142135) {
    m *= 0.5;
    e += 1;
  }
  let f = m - 1.0;
  let s = f / (2.0 + f);
  let z = s * s;
  var r = 0.18181818181818182;
  r = r * z + 0.2222222222222222;
  r = r * z + 0.2857142857142857;
  r = r * z + 0.4;
  r = r * z + 0.6666666666666666;
  r = r * z;
  let hfsq = 0.5 * f * f;
  let hi = bitcast<f32>(bitcast<u32>(f - hfsq) & 0xfffff000u);
  let lo = (f - hi) - hfsq + s * (hfsq + r);
  let y = f32(e);
  let t_hi = hi * 1.4423828125;
  let t_lo = (lo + hi) * 3.1222839606925845e-4 + lo * 1.4423828125;
  let w = y + t_hi;
  return (t_lo + ((y - w) + t_hi)) + w;
}
";

/// `sin(x)`: |x| <= pi/4 directly; otherwise Payne-Hanek reduction in integer arithmetic:
/// `|x| * 2/pi` from 96 bits of 2/pi starting where the product's integer bits above 2 vanish
/// (a 24 x 96-bit product in 16-bit limbs) gives the quadrant and a 94-bit fraction in
/// [-1/2, 1/2], so arguments near multiples of pi/2 keep full precision at any magnitude. The
/// fraction times pi/2 is carried as `r + d` (two f32s, with an exact product), and Taylor
/// series of sin (to r^9) and cos (to r^10, with `1 - r^2/2` compensated) take the
/// correction `d` to first order.
pub(crate) const SIN: &str = "const TWO_OVER_PI = array<u32, 8>(0x00000000u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u,
  0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu);

fn NAME(x: f32) -> f32 {
  if ((bitcast<u32>(x) & 0x7fffffffu) >= 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
  let a = abs(x);
  var r = a;
  var d = 0.0;
  var q = 0u;
  if (a > 0.78539816) {
    let bits = bitcast<u32>(a);
    let m = (bits & 0x7fffffu) | 0x800000u;
    // |x| = m * 2^(e - 23); the window starts at bit e - 24 of 2/pi (the table has a zero word
    // in front, so the bit offset e + 7 is never negative)
    let start = (bits >> 23u) - 120u;
    let w = start / 32u;
    let sh = start % 32u;
    var win = array<u32, 4>(TWO_OVER_PI[w], TWO_OVER_PI[w + 1u], TWO_OVER_PI[w + 2u], TWO_OVER_PI[w + 3u]);
    if (sh != 0u) {
      for (var k = 0u; k < 3u; k++) {
        win[k] = (win[k] << sh) | (win[k + 1u] >> (32u - sh));
      }
    }
    // p = m * window mod 2^96, in 16-bit limbs, least significant first
    let limbs = array<u32, 6>(win[2] & 0xffffu, win[2] >> 16u, win[1] & 0xffffu, win[1] >> 16u,
      win[0] & 0xffffu, win[0] >> 16u);
    let m_lo = m & 0xffffu;
    let m_hi = m >> 16u;
    var p = array<u32, 6>();
    var carry = 0u;
    var below = 0u;
    for (var k = 0u; k < 6u; k++) {
      let lo = m_lo * limbs[k];
      let hi = m_hi * below;
      let sum = carry + (lo & 0xffffu) + (hi & 0xffffu);
      p[k] = sum & 0xffffu;
      carry = (sum >> 16u) + (lo >> 16u) + (hi >> 16u);
      below = limbs[k];
    }
    // |x| * 2/pi mod 4 = p / 2^94: quadrant in bits 94-95, fraction in bits 0-93
    q = p[5] >> 14u;
    var f2 = ((p[5] & 0x3fffu) << 16u) | p[4];
    var f1 = (p[3] << 16u) | p[2];
    var f0 = (p[1] << 16u) | p[0];
    let upper = (f2 & 0x20000000u) != 0u;
    if (upper) {
      // fraction >= 1/2: take the next quadrant and the negated fraction 2^94 - f
      q += 1u;
      f0 = ~f0 + 1u;
      let c0 = select(0u, 1u, f0 == 0u);
      f1 = ~f1 + c0;
      let c1 = select(0u, 1u, c0 == 1u && f1 == 0u);
      f2 = (~f2 + c1) & 0x3fffffffu;
    }
    // normalise (top bit to bit 95): the fraction is (f2 * 2^32 + f1) * 2^(-62 - s) to 64 bits
    var s = 0u;
    if (f2 == 0u) {
      f2 = f1;
      f1 = f0;
      f0 = 0u;
      s = 32u;
    }
    let z = countLeadingZeros(f2);
    if (z != 0u && z != 32u) {
      f2 = (f2 << z) | (f1 >> (32u - z));
      f1 = (f1 << z) | (f0 >> (32u - z));
    }
    s += z;
    let fh = ldexp(f32(f2 & 0xffffff00u), -30 - i32(s));
    let fl = ldexp(f32(f2 & 0xffu) * 4294967296.0 + f32(f1), -62 - i32(s));
    // (fh + fl) * pi/2 as r + d
    let p_hi = fh * 1.5707963705062866;
    let p_lo = two_prod_err(fh, 1.5707963705062866, p_hi) + (fh * -4.371139006309477e-8 + fl * 1.5707963705062866);
    r = p_hi + p_lo;
    d = p_lo - (r - p_hi);
    if (upper) {
      r = -r;
      d = -d;
    }
  }
  let r2 = r * r;
  var sp = 2.7557319223985893e-6;
  sp = sp * r2 - 1.984126984126984e-4;
  sp = sp * r2 + 8.333333333333333e-3;
  sp = sp * r2 - 0.16666666666666666;
  let sin_r = r + (r * r2 * sp + d * (1.0 - 0.5 * r2));
  var cp = -2.755731922398589e-7;
  cp = cp * r2 + 2.48015873015873e-5;
  cp = cp * r2 - 1.388888888888889e-3;
  cp = cp * r2 + 4.1666666666666664e-2;
  let hz = 0.5 * r2;
  let w = 1.0 - hz;
  let cos_r = w + (((1.0 - w) - hz) - 0.5 * two_prod_err(r, r, r2) + (r2 * r2 * cp - r * d));
  var y = select(sin_r, cos_r, (q & 1u) == 1u);
  y = select(y, -y, (q & 2u) == 2u);
  return select(y, -y, x < 0.0);
}
";

/// `powf` semantics: `x^0 = 1^y = 1` (even NaN), NaN otherwise propagates, `(+-1)^+-inf = 1`,
/// `|x|^y` through `exp2(y * log2|x|)`, negative bases only for integer `y` (odd ones negate).
pub(crate) const POW: &str = "fn NAME(a: f32, b: f32) -> f32 {
  if (b == 0.0 || a == 1.0) { return 1.0; }
  if (is_nan(a) || is_nan(b)) { return bitcast<f32>(0x7fc00000u); }
  let inf = bitcast<f32>(0x7f800000u);
  let m = abs(a);
  if (m == 1.0 && abs(b) == inf) { return 1.0; }
  let r = precise_exp2(b * precise_log2(m));
  if ((bitcast<u32>(a) >> 31u) == 0u) { return r; }
  let integral = trunc(b) == b;
  if (!integral && m != 0.0 && m != inf) { return bitcast<f32>(0x7fc00000u); }
  let odd = integral && abs(b) < 16777216.0 && trunc(b * 0.5) != b * 0.5;
  return select(r, -r, odd);
}
";

/// The rounding error of `p = x * y`, so that `x * y == p + e` exactly (Dekker's product with
/// Veltkamp's split; a compiler contracting it into fma keeps it exact).
pub(crate) const TWO_PROD_ERR: &str = "fn NAME(x: f32, y: f32, p: f32) -> f32 {
  let cx = 4097.0 * x;
  let xh = cx - (cx - x);
  let xl = x - xh;
  let cy = 4097.0 * y;
  let yh = cy - (cy - y);
  let yl = y - yh;
  return ((xh * yh - p) + xh * yl + xl * yh) + xl * yl;
}
";

/// `trunc(a / b)` of the exact quotient, as `exec_alu` computes it in f64: the f32 quotient
/// (rounded, and on devices not even correctly) may cross an integer, so `|q * b|` is compared
/// with `|a|` exactly and `q` stepped by one where it did (for |q| < 2^24 and operands of
/// ordinary magnitude; other cases keep the f32 quotient).
pub(crate) const IDIV: &str = "fn NAME(a: f32, b: f32) -> f32 {
  let q = trunc(a / b);
  let m = abs(q);
  let aa = abs(a);
  let ab = abs(b);
  if (!(m < 16777216.0) || !(aa < 1e30) || !(ab < 1e30) || ab < 1e-30) { return q; }
  let s = select(1.0, -1.0, (a < 0.0) != (b < 0.0));
  let p0 = m * ab;
  if ((p0 - aa) + two_prod_err(m, ab, p0) > 0.0) { return q - s; }
  let p1 = (m + 1.0) * ab;
  if ((p1 - aa) + two_prod_err(m + 1.0, ab, p1) <= 0.0) { return q + s; }
  return q;
}
";

/// `fmod(a, b)` exactly: subtract `|b| * 2^k`, the largest such not above the remainder,
/// until the remainder is below `|b|` (each subtraction is exact, each lowers the remainder's
/// exponent, so 300 steps cover every f32 pair); the sign of `a`. NaN for `b == 0` or
/// infinite `a`, `a` for infinite `b`.
pub(crate) const FMOD: &str = "fn NAME(a: f32, b: f32) -> f32 {
  let ab = abs(b);
  if (is_nan(a) || is_nan(b) || ab == 0.0 || abs(a) == bitcast<f32>(0x7f800000u)) {
    return bitcast<f32>(0x7fc00000u);
  }
  var r = abs(a);
  for (var i = 0; i < 300 && r >= ab; i++) {
    var d = ldexp(ab, frexp(r).exp - frexp(ab).exp);
    if (d > r) { d *= 0.5; }
    r -= d;
  }
  return select(r, -r, a < 0.0);
}
";
