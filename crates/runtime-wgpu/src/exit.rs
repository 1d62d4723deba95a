//! Waiting for the devices before the process exits.
//!
//! Mesa's lavapipe compiles a kernel on its queue thread when it first runs it. A process that
//! exits meanwhile has C++ global destructors (LLVM's, some registered at that first compile)
//! run under the compiling thread, and aborts ("free(): invalid size", or a segfault): a third
//! of the runs of a program that submitted a few kernels and returned from `main`. So every
//! open device is listed here, and a thread that opened one or submitted work waits, when it
//! ends, for each listed device to finish what was submitted to it (at most [`EXIT_WAIT`] a
//! device, after its submit thread has submitted what it was handed). The wait is a
//! thread-local's destructor: `exit` runs those before any global destructor (an
//! `atexit` handler runs after the ones registered later). Work recorded but never submitted
//! is dropped, as before.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::submitter::Handoff;

/// The longest the wait takes for one device (a hung device must not hang exit).
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// The open devices.
static OPEN: Mutex<Vec<Open>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Waits for the open devices when the thread that opened one ends.
    static WAIT_WHEN_THREAD_ENDS: WaitForDevices = const { WaitForDevices };
}

/// An open device: its id, and its submit thread's handoff.
struct Open {
    id: u64,
    device: wgpu::Device,
    handoff: Option<Arc<Handoff>>,
}

/// A device's entry in the list, removed when the device is dropped.
pub(crate) struct ExitGuard(u64);

/// Lists `device` (and its submit thread's `handoff`), and makes the calling thread wait for
/// the listed devices when it ends.
pub(crate) fn wait_at_exit(device: &wgpu::Device, handoff: Option<Arc<Handoff>>) -> ExitGuard {
    wait_when_thread_ends();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    lock().push(Open { id, device: device.clone(), handoff });
    ExitGuard(id)
}

/// Makes the calling thread wait for the listed devices when it ends (once registered, a
/// thread-local access).
pub(crate) fn wait_when_thread_ends() {
    WAIT_WHEN_THREAD_ENDS.with(|_| {});
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        lock().retain(|open| open.id != self.0);
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Open>> {
    OPEN.lock().unwrap_or_else(|p| p.into_inner())
}

struct WaitForDevices;

impl Drop for WaitForDevices {
    /// Polls on a thread of its own: this thread's other thread-locals (wgpu's among them)
    /// may already be gone.
    fn drop(&mut self) {
        let open: Vec<_> = lock().iter().map(|o| (o.device.clone(), o.handoff.clone())).collect();
        if open.is_empty() {
            return;
        }
        let waiter = std::thread::Builder::new().name("wgrad exit".into()).spawn(move || {
            for (device, handoff) in open {
                // what the submit thread holds goes to the device first
                if let Some(handoff) = handoff {
                    handoff.settle();
                }
                let _ =
                    device.poll(wgpu::PollType::Wait { submission_index: None, timeout: Some(EXIT_WAIT) });
            }
        });
        if let Ok(waiter) = waiter {
            let _ = waiter.join();
        }
    }
}
