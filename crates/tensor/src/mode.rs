//! Training mode (tinygrad's `Tensor.training`): whether dropout drops and batch norm
//! normalises with the batch's statistics. Off unless a [`training`] scope turns it on.

use std::cell::Cell;

thread_local! {
    /// Whether this thread is in training mode.
    static TRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Puts the mode back when dropped (also on panic).
struct Restore(bool);

impl Drop for Restore {
    fn drop(&mut self) {
        TRAINING.with(|t| t.set(self.0));
    }
}

/// Runs `f` with training mode `on` (on this thread), then restores the mode it had.
pub fn training<T>(on: bool, f: impl FnOnce() -> T) -> T {
    let _restore = Restore(TRAINING.with(|t| t.replace(on)));
    f()
}

/// Whether this thread is in training mode.
pub fn is_training() -> bool {
    TRAINING.with(Cell::get)
}
