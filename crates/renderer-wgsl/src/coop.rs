//! Cooperative matrices (`enable wgpu_cooperative_matrix;`): the tiles of the TC OptOp.
//!
//! A tile value (`T.vec(n * n)`, see `wgrad_ops::coop_side`) is a `coop_matNxN<T, R>`: role A
//! or B when a `CoopLoad` of that role made it, C for accumulators, `Wmma` results and their
//! zero constant. Loads and stores take a pointer `&buf[i]` whose index is always a `let` of its
//! own (naga 30's SPIR-V writer panics on an inline index expression there) and a `u32` stride;
//! `coopLoadT`/`coopStoreT` are the row-major forms.

use wgrad_ops::{Arg, CoopRole, Ops, UOp, coop_side};

use crate::RenderError;
use crate::types::Reg;
use crate::writer::Writer;

/// The directive a shader that uses cooperative matrices begins with.
pub const COOPERATIVE_MATRIX_ENABLE: &str = "enable wgpu_cooperative_matrix;";

impl Writer<'_> {
    /// The WGSL type of a tile of `u`'s dtype in `role`.
    fn tile_type(&self, index: usize, u: &UOp, role: CoopRole) -> Result<String, RenderError> {
        let bad = RenderError::UnsupportedOp { index, op: u.op(), reason: "not an 8x8 or 16x16 tile" };
        let n = coop_side(u.dtype()).ok_or(bad)?;
        let elem = match self.reg(u.dtype().scalar_dtype()) {
            Reg::F16 => "f16",
            Reg::F32 => "f32",
            _ => {
                return Err(RenderError::UnsupportedOp { index, op: u.op(), reason: "tiles are f16 or f32" });
            }
        };
        Ok(format!("coop_mat{n}x{n}<{elem},{role:?}>"))
    }

    /// Renders a tile op (`CoopLoad`, `CoopStore`, `Wmma`, and a tile's zero, accumulator and
    /// assignment); `false` when `u` is none of them.
    pub(crate) fn coop(&mut self, index: usize, u: &UOp) -> Result<bool, RenderError> {
        let tile = coop_side(u.dtype()).is_some();
        let unsupported = |reason| RenderError::UnsupportedOp { index, op: u.op(), reason };
        if !(matches!(u.op(), Ops::CoopLoad | Ops::CoopStore | Ops::Wmma) || tile) {
            return Ok(false);
        }
        if !self.caps.cooperative_matrix {
            return Err(unsupported(
                "cooperative matrices need the adapter's EXPERIMENTAL_COOPERATIVE_MATRIX",
            ));
        }
        self.uses_coop = true;
        match u.op() {
            Ops::Const if u.arg().as_const().is_some_and(|c| !c.is_truthy()) => {
                let ty = self.tile_type(index, u, CoopRole::C)?;
                self.name(u, format!("{ty}()"));
            }
            Ops::DefineAcc => {
                let (ty, init) = (self.tile_type(index, u, CoopRole::C)?, self.src(index, u, 0)?);
                let name = self.fresh("acc");
                self.line(format!("var {name}: {ty} = {init};"));
                self.name(u, name);
            }
            Ops::Assign => {
                let (acc, value) = (self.src(index, u, 0)?, self.src(index, u, 1)?);
                self.line(format!("{acc} = {value};"));
                self.name(u, acc);
            }
            Ops::Wmma => {
                let [a, b, c] = [0, 1, 2].map(|i| self.src(index, u, i));
                let expr = format!("coopMultiplyAdd({}, {}, {})", a?, b?, c?);
                self.bind(u, "wmma", expr);
            }
            Ops::CoopLoad | Ops::CoopStore => {
                let Arg::Coop(coop) = u.arg() else {
                    return Err(unsupported("a tile access without a layout"));
                };
                let t = if coop.row_major { "T" } else { "" };
                let ptr = &u.src()[0];
                let (buf, at) = (self.src(index, ptr, 0)?, self.src(index, ptr, 1)?);
                if let Some(slot) =
                    ptr.src()[0].arg().as_int().filter(|_| ptr.src()[0].op() == Ops::DefineGlobal)
                {
                    self.touched.insert(usize::try_from(slot).map_err(|_| unsupported("bad slot"))?);
                }
                let idx = self.fresh("cidx");
                self.line(format!("let {idx}: i32 = {at};"));
                let stride = self.src(index, u, if u.op() == Ops::CoopLoad { 1 } else { 2 })?;
                if u.op() == Ops::CoopLoad {
                    let ty = self.tile_type(index, u, coop.role)?;
                    self.bind(u, "tile", format!("coopLoad{t}<{ty}>(&{buf}[{idx}], u32({stride}))"));
                } else {
                    let value = self.src(index, u, 1)?;
                    self.line(format!("coopStore{t}({value}, &{buf}[{idx}], u32({stride}));"));
                }
            }
            _ => return Err(unsupported("tiles are only loaded, multiplied, accumulated and stored")),
        }
        Ok(true)
    }
}
