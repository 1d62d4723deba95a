//! Named integer variables with inclusive bounds: the leaves of symbolic shapes.

use std::fmt;
use std::sync::Arc;

use crate::{ShapeError, Sint};

/// A named integer unknown in `[min, max]` (both inclusive), e.g. a sequence length.
///
/// Two variables are the same when name and bounds are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variable {
    name: Arc<str>,
    min: i64,
    max: i64,
}

impl Variable {
    /// A variable called `name` taking values in `[min, max]`; `None` when `min > max`.
    pub fn new(name: &str, min: i64, max: i64) -> Option<Self> {
        (min <= max).then(|| Self { name: name.into(), min, max })
    }

    /// The variable's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Smallest value the variable can take.
    pub fn min(&self) -> i64 {
        self.min
    }

    /// Largest value the variable can take.
    pub fn max(&self) -> i64 {
        self.max
    }

    /// The variable bound to `value`, for use as a dim; [`Sint::unbind`] takes it back apart.
    pub fn bind(&self, value: i64) -> Result<Sint, ShapeError> {
        if !(self.min..=self.max).contains(&value) {
            return Err(ShapeError::BindOutOfRange { var: self.clone(), value });
        }
        Ok(Sint::bound(self, value))
    }
}

impl fmt::Display for Variable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}
