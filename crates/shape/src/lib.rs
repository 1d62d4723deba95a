//! Shape algebra of wgrad: symbolic dims, View and ShapeTracker, index and validity expressions.
//!
//! Movement ops (reshape, permute, expand, pad, shrink, flip) never copy: a [`ShapeTracker`]
//! records them as a stack of [`View`]s and turns an output position into a buffer index and
//! a validity condition through any [`IndexAlgebra`]. Dims are [`Sint`]s, so shapes may hold
//! [`Variable`]s. Bad arguments give a [`ShapeError`], never a panic.

mod error;
mod index;
mod sint;
mod tracker;
mod variable;
mod view;

pub use error::ShapeError;
pub use index::IndexAlgebra;
pub use sint::{Sint, VarVals};
pub use tracker::ShapeTracker;
pub use variable::Variable;
pub use view::{View, strides_for_shape};
