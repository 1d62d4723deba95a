//! Errors of the shape algebra: every bad movement-op argument maps to one variant whose
//! message names the shapes involved. Movement ops never panic on bad input.

use crate::{Sint, Variable};

/// A movement op or constructor was given arguments that do not fit the shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// A dimension was negative.
    #[error("negative dimension in shape {}", dims(.shape))]
    NegativeDim {
        /// The offending shape.
        shape: Vec<Sint>,
    },
    /// An argument had a different number of axes than the shape.
    #[error("{op} got {got} axes for shape {} ({} axes)", dims(.shape), .shape.len())]
    AxisCount {
        /// The op that was called.
        op: &'static str,
        /// How many axes the argument had.
        got: usize,
        /// The shape the op was applied to.
        shape: Vec<Sint>,
    },
    /// A reshape to a shape with a different number of elements.
    #[error("cannot reshape {} to {}: sizes differ", dims(.from), dims(.to))]
    ReshapeSize {
        /// The shape before the reshape.
        from: Vec<Sint>,
        /// The requested shape.
        to: Vec<Sint>,
    },
    /// A non-contiguous view reshaped to a symbolic shape whose dims do not match its own.
    #[error("cannot reshape non-contiguous {} to symbolic {}", dims(.from), dims(.to))]
    SymbolicReshape {
        /// The shape before the reshape.
        from: Vec<Sint>,
        /// The requested shape.
        to: Vec<Sint>,
    },
    /// A permutation with a repeated, missing or out-of-range axis.
    #[error("invalid permutation {axes:?} of shape {}", dims(.shape))]
    Permute {
        /// The requested axis order.
        axes: Vec<usize>,
        /// The shape being permuted.
        shape: Vec<Sint>,
    },
    /// An expand of a dim that is neither 1 nor already the target size.
    #[error("cannot expand {} to {}", dims(.from), dims(.to))]
    Expand {
        /// The shape before the expand.
        from: Vec<Sint>,
        /// The requested shape.
        to: Vec<Sint>,
    },
    /// A shrink whose bounds are not `0 <= begin <= end <= dim`.
    #[error("shrink {} out of bounds for shape {}", pairs(.arg), dims(.shape))]
    Shrink {
        /// The requested `(begin, end)` per axis.
        arg: Vec<(Sint, Sint)>,
        /// The shape being shrunk.
        shape: Vec<Sint>,
    },
    /// A pad with a negative amount.
    #[error("pad {} is negative for shape {}", pairs(.arg), dims(.shape))]
    Pad {
        /// The requested `(before, after)` per axis.
        arg: Vec<(Sint, Sint)>,
        /// The shape being padded.
        shape: Vec<Sint>,
    },
    /// A mask given to a view that is not `0 <= begin <= end <= dim`.
    #[error("mask {} out of bounds for shape {}", pairs(.mask), dims(.shape))]
    Mask {
        /// The offending mask.
        mask: Vec<(Sint, Sint)>,
        /// The view's shape.
        shape: Vec<Sint>,
    },
    /// A symbolic mask bound whose `min`/`max` cannot be decided from the variables' ranges.
    #[error("cannot decide mask bounds {} for shape {}", pairs(.mask), dims(.shape))]
    UndecidableMask {
        /// The mask being combined.
        mask: Vec<(Sint, Sint)>,
        /// The view's shape.
        shape: Vec<Sint>,
    },
    /// A variable bound to a value outside its range.
    #[error("cannot bind {var} to {value}: outside [{}, {}]", .var.min(), .var.max())]
    BindOutOfRange {
        /// The variable.
        var: Variable,
        /// The rejected value.
        value: i64,
    },
}

/// Prints dims like a Python tuple: `(2, a, 3)`, `(4,)`, `()`.
pub(crate) fn dims(shape: &[Sint]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")),
    }
}

fn pairs(arg: &[(Sint, Sint)]) -> String {
    let inner: Vec<String> = arg.iter().map(|(b, e)| format!("({b}, {e})")).collect();
    format!("({})", inner.join(", "))
}
