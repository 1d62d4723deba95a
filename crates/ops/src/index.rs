//! `UOp` as an index algebra: views build their index and validity expressions directly as
//! UOps (`int32` indices, bool validity; `floordiv` is `Idiv`, `rem` is `Mod`).

use wgrad_shape::{IndexAlgebra, Variable};

use crate::{Ops, UOp};

impl IndexAlgebra for UOp {
    fn int(v: i64) -> UOp {
        UOp::index_const(v)
    }

    fn bool(v: bool) -> UOp {
        UOp::constant(wgrad_dtype::DType::BOOL, v)
    }

    fn var(v: &Variable) -> UOp {
        UOp::define_var(v)
    }

    fn add(&self, rhs: &UOp) -> UOp {
        self.alu(Ops::Add, &[rhs])
    }

    fn mul(&self, rhs: &UOp) -> UOp {
        self.alu(Ops::Mul, &[rhs])
    }

    fn floordiv(&self, rhs: &UOp) -> UOp {
        self.alu(Ops::Idiv, &[rhs])
    }

    fn rem(&self, rhs: &UOp) -> UOp {
        self.alu(Ops::Mod, &[rhs])
    }

    fn lt(&self, rhs: &UOp) -> UOp {
        self.alu(Ops::CmpLt, &[rhs])
    }

    fn and(&self, rhs: &UOp) -> UOp {
        self.alu(Ops::And, &[rhs])
    }
}
