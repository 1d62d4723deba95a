//! Building expressions: ALU helpers on [`UOp`] and the std operators (`+ - * % & | ^ << >>`).
//!
//! As in tinygrad, `-x` is `x * -1` and `x - y` is `x + y * -1` (bools: `!x`, `x ^ y`), so the
//! symbolic rules only ever see `Add` and `Mul`. Scalars on either side become constants of the
//! other operand's dtype.

use std::ops;

use wgrad_dtype::{ConstValue, DType};

use crate::{Arg, GroupOp, Ops, UOp};

impl UOp {
    /// The ALU op `op` over `self` and `rest` (comparisons give bool, all else `self`'s dtype).
    pub fn alu(&self, op: Ops, rest: &[&UOp]) -> UOp {
        let dtype = if GroupOp::COMPARISON.contains(op) {
            DType::BOOL.vec(self.dtype().count())
        } else if op == Ops::Where {
            rest[0].dtype()
        } else {
            self.dtype()
        };
        let src: Vec<UOp> = std::iter::once(self.clone()).chain(rest.iter().map(|&u| u.clone())).collect();
        UOp::new(op, dtype, src, Arg::None)
    }

    /// Value conversion into `dtype` (`self` when it already has it).
    pub fn cast(&self, dtype: DType) -> UOp {
        if self.dtype() == dtype {
            return self.clone();
        }
        UOp::new(Ops::Cast, dtype, [self.clone()], Arg::None)
    }

    /// Bit reinterpretation as `dtype`.
    pub fn bitcast(&self, dtype: DType) -> UOp {
        UOp::new(Ops::Bitcast, dtype, [self.clone()], Arg::None)
    }

    /// `self ? t : f`.
    pub fn where_(&self, t: &UOp, f: &UOp) -> UOp {
        self.alu(Ops::Where, &[t, f])
    }

    /// `max(self, rhs)`.
    pub fn maximum(&self, rhs: impl IntoUOp) -> UOp {
        self.alu(Ops::Max, &[&rhs.into_uop(self)])
    }

    /// Truncating division `self / rhs`.
    pub fn idiv(&self, rhs: impl IntoUOp) -> UOp {
        self.alu(Ops::Idiv, &[&rhs.into_uop(self)])
    }

    /// Float division `self / rhs`.
    pub fn fdiv(&self, rhs: impl IntoUOp) -> UOp {
        self.alu(Ops::Fdiv, &[&rhs.into_uop(self)])
    }

    /// `self ** rhs`.
    pub fn pow(&self, rhs: impl IntoUOp) -> UOp {
        self.alu(Ops::Pow, &[&rhs.into_uop(self)])
    }

    /// `self < rhs` (bool).
    pub fn cmp_lt(&self, rhs: impl IntoUOp) -> UOp {
        self.alu(Ops::CmpLt, &[&rhs.into_uop(self)])
    }

    /// `self != rhs` (bool).
    pub fn cmp_ne(&self, rhs: impl IntoUOp) -> UOp {
        self.alu(Ops::CmpNe, &[&rhs.into_uop(self)])
    }

    /// `self == rhs` (bool), as `!(self != rhs)`.
    pub fn cmp_eq(&self, rhs: impl IntoUOp) -> UOp {
        self.cmp_ne(rhs).logical_not()
    }

    /// Boolean not, as `self != true`.
    pub fn logical_not(&self) -> UOp {
        self.cmp_ne(true)
    }

    /// `1 / self`.
    pub fn recip(&self) -> UOp {
        self.alu(Ops::Recip, &[])
    }

    /// `2 ** self`.
    pub fn exp2(&self) -> UOp {
        self.alu(Ops::Exp2, &[])
    }

    /// `log2(self)`.
    pub fn log2(&self) -> UOp {
        self.alu(Ops::Log2, &[])
    }

    /// `sqrt(self)`.
    pub fn sqrt(&self) -> UOp {
        self.alu(Ops::Sqrt, &[])
    }

    /// `sin(self)`.
    pub fn sin(&self) -> UOp {
        self.alu(Ops::Sin, &[])
    }

    /// Truncation toward zero.
    pub fn trunc(&self) -> UOp {
        self.alu(Ops::Trunc, &[])
    }

    /// Threefry-2x32 of the u64 counter `self` under `key`.
    pub fn threefry(&self, key: &UOp) -> UOp {
        self.alu(Ops::Threefry, &[key])
    }

    /// `Load` of `dtype` from `src` (pointer, view or index, ...).
    pub fn load(dtype: DType, src: impl Into<Box<[UOp]>>) -> UOp {
        UOp::new(Ops::Load, dtype, src, Arg::None)
    }

    /// `Store` of `src` (pointer, view or index, ..., value).
    pub fn store(src: impl Into<Box<[UOp]>>) -> UOp {
        UOp::new(Ops::Store, DType::VOID, src, Arg::None)
    }

    /// `self[idx]`: the pointer `self` offset by `idx`.
    pub fn index(&self, idx: &UOp) -> UOp {
        UOp::new(Ops::Index, self.dtype(), [self.clone(), idx.clone()], Arg::None)
    }

    /// Lane `lane` of the vector `self` (a `Gep`).
    pub fn gep(&self, lane: usize) -> UOp {
        let dtype = self.dtype().scalar_dtype();
        UOp::new(Ops::Gep, dtype, [self.clone()], Arg::Ints([lane as i64].into()))
    }

    /// The vector of the scalars `lanes`, all of one dtype (a `Vectorize`).
    pub fn vectorize(lanes: &[UOp]) -> UOp {
        let count = u32::try_from(lanes.len()).unwrap_or(u32::MAX).max(1);
        let dtype = lanes.first().map_or(DType::VOID, UOp::dtype).vec(count);
        UOp::new(Ops::Vectorize, dtype, lanes, Arg::None)
    }

    /// Kernel-AST reduce of `self` with `op` over `axes`.
    pub fn reduce_axis(&self, op: Ops, axes: &[usize]) -> UOp {
        UOp::new(Ops::ReduceAxis, self.dtype(), [self.clone()], Arg::ReduceAxis(op, axes.into()))
    }
}

/// Something usable as an operand next to a UOp: a UOp, or a scalar made a constant of the
/// other operand's dtype.
pub trait IntoUOp {
    /// The operand, with `like` giving the dtype of scalars.
    fn into_uop(self, like: &UOp) -> UOp;
}

impl IntoUOp for UOp {
    fn into_uop(self, _: &UOp) -> UOp {
        self
    }
}

impl IntoUOp for &UOp {
    fn into_uop(self, _: &UOp) -> UOp {
        self.clone()
    }
}

macro_rules! scalar_operand {
    ($($t:ty),*) => {$(
        impl IntoUOp for $t {
            fn into_uop(self, like: &UOp) -> UOp {
                like.const_like(ConstValue::from(self))
            }
        }
    )*};
}
scalar_operand!(i32, i64, u32, u64, f32, f64, bool);

fn neg(x: &UOp) -> UOp {
    if x.dtype().is_bool() { x.logical_not() } else { x.alu(Ops::Mul, &[&x.const_like(-1)]) }
}

fn sub(x: &UOp, y: &UOp) -> UOp {
    if x.dtype().is_bool() { x.alu(Ops::Xor, &[y]) } else { x.alu(Ops::Add, &[&neg(y)]) }
}

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $build:expr) => {
        impl<R: IntoUOp> ops::$trait<R> for &UOp {
            type Output = UOp;
            fn $method(self, rhs: R) -> UOp {
                let rhs = rhs.into_uop(self);
                $build(self, &rhs)
            }
        }
        impl<R: IntoUOp> ops::$trait<R> for UOp {
            type Output = UOp;
            fn $method(self, rhs: R) -> UOp {
                ops::$trait::$method(&self, rhs)
            }
        }
        impl ops::$trait<&UOp> for i64 {
            type Output = UOp;
            fn $method(self, rhs: &UOp) -> UOp {
                let lhs = rhs.const_like(self);
                $build(&lhs, rhs)
            }
        }
    };
}

binary_operator!(Add, add, |x: &UOp, y: &UOp| x.alu(Ops::Add, &[y]));
binary_operator!(Sub, sub, sub);
binary_operator!(Mul, mul, |x: &UOp, y: &UOp| x.alu(Ops::Mul, &[y]));
binary_operator!(Rem, rem, |x: &UOp, y: &UOp| x.alu(Ops::Mod, &[y]));
binary_operator!(BitAnd, bitand, |x: &UOp, y: &UOp| x.alu(Ops::And, &[y]));
binary_operator!(BitOr, bitor, |x: &UOp, y: &UOp| x.alu(Ops::Or, &[y]));
binary_operator!(BitXor, bitxor, |x: &UOp, y: &UOp| x.alu(Ops::Xor, &[y]));
binary_operator!(Shl, shl, |x: &UOp, y: &UOp| x.alu(Ops::Shl, &[y]));
binary_operator!(Shr, shr, |x: &UOp, y: &UOp| x.alu(Ops::Shr, &[y]));

impl ops::Neg for &UOp {
    type Output = UOp;
    fn neg(self) -> UOp {
        neg(self)
    }
}

impl ops::Neg for UOp {
    type Output = UOp;
    fn neg(self) -> UOp {
        neg(&self)
    }
}
