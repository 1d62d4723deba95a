//! [`Index`]: one entry of a numpy-style index (`x[1:, ::2, None, idx]`), and a parser for
//! the written form.

use crate::Tensor;
use crate::error::{Result, TensorError};

/// One entry of an index, as Python writes them between the brackets.
#[derive(Clone, Debug)]
pub enum Index {
    /// One position (negative: from the end); the dim is dropped.
    Int(isize),
    /// `start:stop:step`, Python's slice (negative bounds from the end, a negative step
    /// walks backwards; `None` is the default for the step's direction).
    Slice {
        /// First position.
        start: Option<isize>,
        /// Position to stop before.
        stop: Option<isize>,
        /// Step (not 0); `None` is 1.
        step: Option<isize>,
    },
    /// `None`: a new size-1 dim.
    NewAxis,
    /// `...`: as many full slices as the other entries leave dims.
    Ellipsis,
    /// Int indices along the dim (negative: from the end), broadcast with the other tensor
    /// entries (numpy's advanced indexing).
    Tensor(Tensor),
}

impl Index {
    /// The full slice `:`.
    pub fn all() -> Index {
        Index::Slice { start: None, stop: None, step: None }
    }

    /// The entries of a written index such as `"[1:, ::2, -3:]"`, `"[2, None, ..., ::-1]"`
    /// (brackets optional): ints, slices, `None` and `...`.
    pub fn parse(text: &str) -> Result<Vec<Index>> {
        let bad = |why: String| TensorError::Parse { op: "index", text: text.to_string(), why };
        let inner = text.trim();
        let inner = inner.strip_prefix('[').and_then(|s| s.strip_suffix(']')).unwrap_or(inner).trim();
        if inner.is_empty() {
            return Ok(vec![]);
        }
        let int = |s: &str| -> Result<Option<isize>> {
            let s = s.trim();
            match s.is_empty() {
                true => Ok(None),
                false => s.parse().map(Some).map_err(|_| bad(format!("{s:?} is not an integer"))),
            }
        };
        inner
            .split(',')
            .map(|entry| {
                let entry = entry.trim();
                match entry {
                    "None" => Ok(Index::NewAxis),
                    "..." => Ok(Index::Ellipsis),
                    _ if entry.contains(':') => {
                        let parts: Vec<&str> = entry.split(':').collect();
                        if parts.len() > 3 {
                            return Err(bad(format!("{entry:?} has more than two colons")));
                        }
                        let step = parts.get(2).map_or(Ok(None), |s| int(s))?;
                        Ok(Index::Slice { start: int(parts[0])?, stop: int(parts[1])?, step })
                    }
                    _ => int(entry)?.map(Index::Int).ok_or_else(|| bad("an empty entry".into())),
                }
            })
            .collect()
    }
}
