//! A program that returns from `main` right after making a model exits cleanly: on lavapipe
//! the model's initialising kernels may still be compiling then, and exiting under the
//! compiler aborted about a third of such processes ("free(): invalid size").

use std::process::Command;

use wgrad_tensor::nn::{BatchNorm, Linear};
use wgrad_tensor::{DType, Tensor};

/// Set in the child processes the test starts.
const CHILD: &str = "WGRAD_EXIT_TEST_CHILD";
const TEST: &str = "exiting_right_after_making_a_model_exits_cleanly";

#[test]
fn exiting_right_after_making_a_model_exits_cleanly() {
    if std::env::var_os(CHILD).is_some() {
        let layers = (Linear::new(4, 3, true, 0), BatchNorm::new(3), Linear::new(3, 2, false, 1));
        let scale = Tensor::ones(&[3], DType::F32);
        drop((layers, scale));
        std::process::exit(0);
    }
    let exe = std::env::current_exe().unwrap();
    for run in 0..20 {
        let out =
            Command::new(&exe).args([TEST, "--exact", "--test-threads=1"]).env(CHILD, "1").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "run {run} ended with {}: {stderr}", out.status);
    }
}
