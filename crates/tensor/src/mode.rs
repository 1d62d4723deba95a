//! Training mode (tinygrad's `Tensor.training`): whether dropout drops and batch norm
//! normalises with the batch's statistics. Off unless a [`training`] scope or
//! [`set_training`] turns it on.

use std::cell::Cell;

thread_local! {
    /// Whether this thread is in training mode.
    static TRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Puts the mode back when dropped (also on panic).
struct Restore(bool);

impl Drop for Restore {
    fn drop(&mut self) {
        set_training(self.0);
    }
}

/// Runs `f` with training mode `on` (on this thread), then restores the mode it had.
pub fn training<T>(on: bool, f: impl FnOnce() -> T) -> T {
    let _restore = Restore(set_training(on));
    f()
}

/// Whether this thread is in training mode.
pub fn is_training() -> bool {
    TRAINING.with(Cell::get)
}

/// Sets this thread's training mode and returns the mode it had: tinygrad's
/// `Tensor.training = on`, and PyTorch's `model.train()` / `model.eval()`, except that the
/// mode is this thread's, for every layer, not one model's (as in tinygrad).
pub fn set_training(on: bool) -> bool {
    TRAINING.with(|t| t.replace(on))
}
