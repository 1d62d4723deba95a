//! The verifier: checks a graph against the IR's type rules and names the offending node.
//!
//! Invariants checked, per op:
//! - ALU ops have their arity; operands have the node's dtype, except: comparisons yield bool
//!   (same vector width) from two operands of one dtype; `Where`'s condition is bool;
//!   shift amounts may be any integer; `Threefry` is u64. Bitwise ops are not on floats.
//! - `Const` has no sources (a kernel AST's masked constant: one `View`) and a constant arg;
//!   `DefineVar` an int dtype and a variable arg;
//!   `Range` one integer source of its own dtype; `Special` a (name, size) arg.
//! - `Bitcast` keeps the item size; `Cast` has one source.
//! - `Index` is (pointer, int index, bool gate?) and the same pointer, or a pointer to vectors of
//!   its element (`T.vec(w).ptr()`: the index counts vectors of `w`); `Load` reads from a pointer
//!   (optionally through a view or index, optionally gated) the pointer's element type;
//!   `Store` is void and its value has the pointer's element type; `Sink` is void.
//! - `ReduceAxis` has an (Add|Mul|Max, axes) arg; `Reduce` reduces over `Range` sources.
//! - `Vectorize` builds a `T.vec(n)` from `n >= 2` scalars of `T`; `Gep` picks lanes (in range)
//!   of one vector source, its dtype the scalar `.vec(number of lanes)`.
//! - `CoopLoad` is (pointer, int stride) with a cooperative arg and the pointer's element
//!   `.vec(n * n)` for a tile side `n` of 8 or 16; `CoopStore` is void, (pointer, such a tile of
//!   the element, int stride); `Wmma` is (a, b, acc) of one tile size, its dtype the acc's.
//! - `SubgroupReduce` has one source of its dtype and an `Add`, `Max` or `Mul` arg.

use wgrad_dtype::DType;

use crate::{Arg, OpSet, Ops, OpsError, UOp};

/// A type rule a node breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecViolation {
    /// Wrong number of sources.
    #[error("takes {expected} sources, has {got}")]
    Arity {
        /// What the op takes (a description, e.g. `2` or `1..=3`).
        expected: &'static str,
        /// Sources present.
        got: usize,
    },
    /// A source has the wrong dtype.
    #[error("source {index} is {got}, expected {expected}")]
    SourceDType {
        /// Which source.
        index: usize,
        /// Its dtype.
        got: DType,
        /// What the op needs there.
        expected: DType,
    },
    /// The node's own dtype is wrong.
    #[error("dtype is {got}, expected {expected}")]
    ResultDType {
        /// Its dtype.
        got: DType,
        /// What the op produces.
        expected: DType,
    },
    /// A source or the node should be of a class of dtypes (int, bool, pointer).
    #[error("{what} must be {class}, is {got}")]
    DTypeClass {
        /// Which value (`"source 1"`, `"result"`).
        what: &'static str,
        /// The class (`"an int"`, `"a pointer"`).
        class: &'static str,
        /// Its dtype.
        got: DType,
    },
    /// The arg is not the variant the op takes.
    #[error("arg {got} is not {expected}")]
    Arg {
        /// What the op takes.
        expected: &'static str,
        /// What it has.
        got: String,
    },
}

/// Checks every node under `root` (see the module docs); the error names the first bad node
/// and its index in `root.toposort()`.
pub fn verify(root: &UOp) -> Result<(), OpsError> {
    verify_uops(&root.toposort())
}

/// Checks every node of a list (a linearized program, or any toposort).
pub fn verify_uops(uops: &[UOp]) -> Result<(), OpsError> {
    for (index, u) in uops.iter().enumerate() {
        check(u).map_err(|violation| OpsError::Spec { index, node: u.clone(), violation })?;
    }
    Ok(())
}

fn arity(u: &UOp, ok: impl Fn(usize) -> bool, expected: &'static str) -> Result<(), SpecViolation> {
    if ok(u.src().len()) { Ok(()) } else { Err(SpecViolation::Arity { expected, got: u.src().len() }) }
}

fn source_is(u: &UOp, index: usize, expected: DType) -> Result<(), SpecViolation> {
    let got = u.src()[index].dtype();
    if got == expected { Ok(()) } else { Err(SpecViolation::SourceDType { index, got, expected }) }
}

fn class(ok: bool, what: &'static str, class: &'static str, got: DType) -> Result<(), SpecViolation> {
    if ok { Ok(()) } else { Err(SpecViolation::DTypeClass { what, class, got }) }
}

fn arg(ok: bool, u: &UOp, expected: &'static str) -> Result<(), SpecViolation> {
    if ok { Ok(()) } else { Err(SpecViolation::Arg { expected, got: u.arg().to_string() }) }
}

fn check(u: &UOp) -> Result<(), SpecViolation> {
    let dt = u.dtype();
    let src = u.src();
    if let Some(n) = u.op().arity() {
        arity(u, |k| k == n, ["1", "2", "3"][n - 1])?;
        return check_alu(u);
    }
    match u.op() {
        Ops::Const => {
            // a kernel AST's masked constant has its View as the one source
            arity(u, |k| k == 0 || (k == 1 && src[0].op() == Ops::View), "0 (1: a View)")?;
            arg(matches!(u.arg(), Arg::Const(_)), u, "a constant")
        }
        Ops::DefineVar => {
            class(dt.is_int(), "result", "an int", dt)?;
            arg(matches!(u.arg(), Arg::Var(_)), u, "a variable")
        }
        Ops::Range => {
            arity(u, |k| k == 1, "1")?;
            class(dt.is_int(), "result", "an int", dt)?;
            source_is(u, 0, dt)
        }
        Ops::Special => arg(matches!(u.arg(), Arg::Special(..)), u, "(name, size)"),
        Ops::Barrier => arg(
            matches!(u.arg(), Arg::None) || matches!(u.arg(), Arg::Str(s) if &**s == crate::SUBGROUP_BARRIER),
            u,
            "none, or the subgroup scope",
        ),
        Ops::SubgroupReduce => {
            arity(u, |k| k == 1, "1")?;
            source_is(u, 0, dt)?;
            arg(matches!(u.arg(), Arg::Op(Ops::Add | Ops::Max | Ops::Mul)), u, "Add, Max or Mul")
        }
        Ops::Cast => arity(u, |k| k == 1, "1"),
        Ops::Bitcast => {
            arity(u, |k| k == 1, "1")?;
            let from = src[0].dtype();
            let ok = from.itemsize() * from.count() as usize == dt.itemsize() * dt.count() as usize;
            if ok { Ok(()) } else { Err(SpecViolation::ResultDType { got: dt, expected: from }) }
        }
        Ops::Index => {
            arity(u, |k| k == 2 || k == 3, "2..=3")?;
            class(src[0].dtype().is_ptr(), "source 0", "a pointer", src[0].dtype())?;
            class(src[1].dtype().is_int(), "source 1", "an int", src[1].dtype())?;
            check_gate(src.get(2))?;
            let buf = src[0].dtype();
            if dt != buf.vec(dt.count()) || buf.is_vector() {
                return Err(SpecViolation::ResultDType { got: dt, expected: buf });
            }
            Ok(())
        }
        Ops::Load => {
            arity(u, |k| (1..=3).contains(&k), "1..=3")?;
            let ptr = src[0].dtype();
            class(ptr.is_ptr(), "source 0", "a pointer", ptr)?;
            if dt != ptr.base() {
                return Err(SpecViolation::ResultDType { got: dt, expected: ptr.base() });
            }
            check_gate(
                src.get(1).filter(|s| s.op() != Ops::View && !s.dtype().is_ptr() && s.dtype().is_bool()),
            )
        }
        Ops::Store => {
            arity(u, |k| (2..=4).contains(&k), "2..=4")?;
            class(dt == DType::VOID, "result", "void", dt)?;
            let ptr = src[0].dtype();
            class(ptr.is_ptr(), "source 0", "a pointer", ptr)?;
            let value = if src.len() > 2
                && src.last().is_some_and(|g| g.dtype() == DType::BOOL)
                && ptr.base() != DType::BOOL
            {
                src.len() - 2
            } else {
                src.len() - 1
            };
            source_is(u, value, ptr.base())
        }
        Ops::Sink => class(dt == DType::VOID, "result", "void", dt),
        Ops::ReduceAxis => {
            arity(u, |k| k == 1, "1")?;
            let ok = matches!(u.arg(), Arg::ReduceAxis(op, _) if REDUCE_OPS.contains(*op));
            arg(ok, u, "(Add|Mul|Max, axes)")?;
            source_is(u, 0, dt)
        }
        Ops::Reduce => {
            arity(u, |k| k >= 1, "1..")?;
            arg(matches!(u.arg(), Arg::Op(op) if REDUCE_OPS.contains(*op)), u, "Add|Mul|Max")?;
            let (values, ranges) = u.reduce_parts();
            (0..values.len()).try_for_each(|i| source_is(u, i, dt))?;
            match ranges.iter().find(|r| r.op() != Ops::Range) {
                Some(r) => {
                    Err(SpecViolation::DTypeClass { what: "reduce source", class: "a Range", got: r.dtype() })
                }
                None => Ok(()),
            }
        }
        Ops::View => arg(matches!(u.arg(), Arg::View(_)), u, "a view"),
        Ops::Vectorize => {
            arity(u, |k| k >= 2, "2..")?;
            let want = src[0].dtype().vec(src.len() as u32);
            if src[0].dtype().is_vector() || src[0].dtype().is_ptr() || dt != want {
                return Err(SpecViolation::ResultDType { got: dt, expected: want });
            }
            (1..src.len()).try_for_each(|i| source_is(u, i, src[0].dtype()))
        }
        Ops::Gep => {
            arity(u, |k| k == 1, "1")?;
            let count = i64::from(src[0].dtype().count());
            let lanes = match u.arg() {
                Arg::Ints(lanes) if !lanes.is_empty() && lanes.iter().all(|&l| (0..count).contains(&l)) => {
                    lanes
                }
                _ => {
                    return Err(SpecViolation::Arg {
                        expected: "lanes of the vector",
                        got: u.arg().to_string(),
                    });
                }
            };
            let want = src[0].dtype().scalar_dtype().vec(lanes.len() as u32);
            if dt == want { Ok(()) } else { Err(SpecViolation::ResultDType { got: dt, expected: want }) }
        }
        Ops::CoopLoad => {
            arity(u, |k| k == 2 || k == 3, "2 or 3")?;
            check_after(src.get(2))?;
            check_coop_access(u, &src[0], dt, &src[1])
        }
        Ops::CoopStore => {
            arity(u, |k| k == 3 || k == 4, "3 or 4")?;
            class(dt == DType::VOID, "result", "void", dt)?;
            check_after(src.get(3))?;
            check_coop_access(u, &src[0], src[1].dtype(), &src[2])
        }
        Ops::Wmma => {
            arity(u, |k| k == 3, "3")?;
            source_is(u, 2, dt)?;
            let tile = |d: DType| d.count() == dt.count() && coop_side(d).is_some();
            match (0..3).find(|&i| !tile(src[i].dtype())) {
                Some(i) => Err(SpecViolation::DTypeClass {
                    what: "wmma operand",
                    class: "a tile of the result's size",
                    got: src[i].dtype(),
                }),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The side `n` of a cooperative-matrix tile dtype (`T.vec(n * n)`, `n` 8 or 16).
pub fn coop_side(dt: DType) -> Option<u32> {
    [8, 16].into_iter().find(|n| dt.count() == n * n && !dt.is_ptr())
}

/// A cooperative access: a `Coop` arg, an int stride, and a tile of the pointer's element.
fn check_coop_access(u: &UOp, ptr: &UOp, tile: DType, stride: &UOp) -> Result<(), SpecViolation> {
    arg(matches!(u.arg(), Arg::Coop(_)), u, "a cooperative-matrix role and layout")?;
    class(ptr.dtype().is_ptr() && !ptr.dtype().base().is_vector(), "source 0", "a pointer", ptr.dtype())?;
    class(stride.dtype().is_int(), "stride", "an int", stride.dtype())?;
    let want = ptr.dtype().base().vec(coop_side(tile).unwrap_or(16).pow(2));
    if tile == want { Ok(()) } else { Err(SpecViolation::ResultDType { got: tile, expected: want }) }
}

/// A tile access's optional last source orders it after a `Barrier`.
fn check_after(after: Option<&UOp>) -> Result<(), SpecViolation> {
    after.map_or(Ok(()), |b| class(b.op() == Ops::Barrier, "ordering source", "a Barrier", b.dtype()))
}

const REDUCE_OPS: OpSet = OpSet::of(&[Ops::Add, Ops::Mul, Ops::Max]);
const BITWISE: OpSet = OpSet::of(&[Ops::And, Ops::Or, Ops::Xor, Ops::Shl, Ops::Shr]);

fn check_gate(gate: Option<&UOp>) -> Result<(), SpecViolation> {
    gate.map_or(Ok(()), |g| class(g.dtype().scalar_dtype() == DType::BOOL, "gate", "bool", g.dtype()))
}

fn check_alu(u: &UOp) -> Result<(), SpecViolation> {
    let dt = u.dtype();
    let src = u.src();
    match u.op() {
        Ops::CmpLt | Ops::CmpNe => {
            let want = DType::BOOL.vec(src[0].dtype().count());
            if dt != want {
                return Err(SpecViolation::ResultDType { got: dt, expected: want });
            }
            source_is(u, 1, src[0].dtype())
        }
        Ops::Where => {
            class(src[0].dtype().scalar_dtype() == DType::BOOL, "condition", "bool", src[0].dtype())?;
            source_is(u, 1, dt)?;
            source_is(u, 2, dt)
        }
        Ops::Threefry => {
            class(dt == DType::U64, "result", "u64", dt)?;
            source_is(u, 0, dt)?;
            source_is(u, 1, dt)
        }
        op => {
            class(!(BITWISE.contains(op) && dt.is_float()), "result", "an int or bool", dt)?;
            source_is(u, 0, dt)?;
            if matches!(op, Ops::Shl | Ops::Shr) {
                return class(src[1].dtype().is_int(), "shift amount", "an int", src[1].dtype());
            }
            (1..src.len()).try_for_each(|i| source_is(u, i, dt))
        }
    }
}
