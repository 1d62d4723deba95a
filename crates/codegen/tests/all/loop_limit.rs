//! A target whose driver stops long loops silently (Mesa llvmpipe: 65,535 iterations an
//! invocation) gets no kernel that would loop longer: such a kernel is refused with
//! `LowerError::LoopLimit`, a grouped one that stays under the limit compiles, and targets
//! without a limit take anything.

use crate::common;

use common::sum_ast;
use wgrad_codegen::{CodegenError, LowerError, OptMode, Target, compile};

fn llvmpipe() -> Target {
    Target { max_loop_iterations: Some(65_535), ..Target::generic_gpu() }
}

fn iterations_refused(ast: &wgrad_ops::UOp, mode: &OptMode) -> Option<u128> {
    match compile(ast, &llvmpipe(), mode, "k") {
        Ok(_) => None,
        Err(CodegenError::Lower(LowerError::LoopLimit { iterations, limit })) => {
            assert_eq!(limit, 65_535);
            Some(iterations)
        }
        Err(e) => panic!("expected LoopLimit, got {e}"),
    }
}

#[test]
fn a_loop_past_the_limit_is_refused_and_nested_loops_count_in_full() {
    // 65,537 is prime: no grouping or split shortens the loop
    let prime = sum_ast(&[65_537], &[0]);
    for mode in [OptMode::Heuristic, OptMode::NoOpt] {
        assert_eq!(iterations_refused(&prime, &mode), Some(65_537));
    }
    let message = compile(&prime, &llvmpipe(), &OptMode::NoOpt, "k").map(|_| ()).unwrap_err().to_string();
    assert!(message.contains("65537") && message.contains("65535"), "{message}");
    // axes 0 and 2 of (256, 2, 256) cannot merge: two nested loops, the outer runs 256 times
    // and the inner 256 * 256; contiguous axes merge into one loop
    assert_eq!(iterations_refused(&sum_ast(&[256, 2, 256], &[0, 2]), &OptMode::NoOpt), Some(256 + 65_536));
    assert_eq!(iterations_refused(&sum_ast(&[256, 256], &[0, 1]), &OptMode::NoOpt), Some(65_536));
    assert_eq!(iterations_refused(&sum_ast(&[65_535], &[0]), &OptMode::NoOpt), None);
}

#[test]
fn grouping_keeps_a_long_sum_under_the_limit_and_other_targets_have_none() {
    let long = sum_ast(&[1 << 20], &[0]);
    assert!(iterations_refused(&long, &OptMode::NoOpt).is_some());
    assert_eq!(iterations_refused(&long, &OptMode::Heuristic), None);
    for target in [Target::generic_gpu(), Target::no_locals()] {
        compile(&sum_ast(&[65_537], &[0]), &target, &OptMode::NoOpt, "k").unwrap();
    }
}
