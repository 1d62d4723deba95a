//! Random kernel ASTs under no opts, the heuristics on three targets and random accepted opt
//! sequences, and the vectorizer's cases: lowered, vectorized, linearized and interpreted, the
//! result equals the independent AST evaluator's. `WGRAD_DIFF_CASES` sets the number of random
//! cases (500).

use wgrad_codegen::ast_eval::eval_ast;
use wgrad_codegen::{CodegenError, Kernel, LowerError, Opt, OptError, OptMode, OptOps, Target, compile};
use wgrad_conformance::one_hot::one_hot_cases;
use wgrad_conformance::random_ast::Case;
use wgrad_conformance::shapes::{nested_tuned_cases, tuned_cases, tuned_targets};
use wgrad_conformance::vectors::{vector_accesses, vector_cases};
use wgrad_conformance::{Rng, close};
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Ops, UOp};
use wgrad_runtime_cpu::run;
use wgrad_shape::{ShapeTracker, Sint};

/// Compiles `case` with `mode` for `target`, runs it on the interpreter and compares with the
/// evaluator; returns the program's number of vector accesses.
fn check_on(target: &Target, case: &Case, mode: &OptMode, inputs: &[Vec<ConstValue>], label: &str) -> usize {
    let mut expected: Vec<Vec<ConstValue>> = case
        .buffers
        .iter()
        .zip(inputs)
        .map(
            |(&(dt, n), inp)| if inp.is_empty() { vec![ConstValue::Int(0).cast(dt); n] } else { inp.clone() },
        )
        .collect();
    eval_ast(&case.ast, &mut expected).unwrap_or_else(|e| panic!("{label}: evaluator failed: {e}"));
    let (k, program) = match compile(&case.ast, target, mode, "k") {
        Ok(done) => done,
        // a grid too large for a tiny target is a typed refusal, not a wrong answer
        Err(CodegenError::Lower(LowerError::LaunchTooLarge { .. })) if target.name == "tiny" => return 0,
        Err(e) => panic!("{label}: compile failed: {e}"),
    };
    let mut bufs = case.cpu_buffers(inputs);
    run(&program, &mut bufs, &[])
        .unwrap_or_else(|e| panic!("{label}: run failed: {e}\n{}", k.describe_opts()));
    for (slot, (buf, want)) in bufs.iter().zip(&expected).enumerate() {
        let got = buf.to_values();
        let bad = got.iter().zip(want).position(|(&g, &w)| !close(g, w));
        assert!(
            bad.is_none(),
            "{label}: slot {slot} differs at {bad:?}: got {got:?}, want {want:?}\nopts {} shape {}\n{program}",
            k.describe_opts(),
            k.describe(),
        );
    }
    vector_accesses(&program)
}

#[test]
fn random_kernels_match_the_ast_evaluator() {
    let cases = std::env::var("WGRAD_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(500u64);
    let generic = Target::generic_gpu();
    let mut vectorized = 0;
    for seed in 0..cases {
        let mut r = Rng(seed);
        let case = Case::random(&mut r);
        let inputs = case.inputs(&mut r);
        check_on(&generic, &case, &OptMode::NoOpt, &inputs, &format!("seed {seed} noopt"));
        check_on(&generic, &case, &OptMode::Heuristic, &inputs, &format!("seed {seed} heuristic"));
        check_on(&Target::tiny(), &case, &OptMode::Heuristic, &inputs, &format!("seed {seed} tiny target"));
        check_on(
            &Target::no_locals(),
            &case,
            &OptMode::Heuristic,
            &inputs,
            &format!("seed {seed} no locals"),
        );
        let opts = case.random_opts(&mut r, &generic);
        let wide = check_on(&generic, &case, &opts, &inputs, &format!("seed {seed} opts {opts:?}"));
        vectorized += usize::from(wide > 0);
        // grouped partials combined in subgroups (the interpreter's subgroup is the workgroup)
        let subgroups = Target { subgroup_ops: true, ..generic.clone() };
        check_on(&subgroups, &case, &opts, &inputs, &format!("seed {seed} subgroups opts {opts:?}"));
        check_on(&subgroups, &case, &OptMode::Heuristic, &inputs, &format!("seed {seed} subgroups"));
    }
    // the random opts must keep exercising the vectorizer
    assert!(
        vectorized as u64 * 10 >= cases,
        "{vectorized} of {cases} random opt sequences made vector accesses"
    );
}

#[test]
fn vector_cases_match_the_ast_evaluator() {
    let targets = [
        Target::generic_gpu(),
        Target { has_f16: false, ..Target::generic_gpu() },
        Target { vector_widths: vec![1, 3], ..Target::generic_gpu() },
    ];
    let cases = vector_cases();
    let mut vectorized = 0;
    for (name, case, opts) in &cases {
        let inputs = case.inputs(&mut Rng(11));
        for target in &targets {
            let label = format!("{name} (f16: {}, widths {:?})", target.has_f16, target.vector_widths);
            let wide = check_on(target, case, &OptMode::Given(opts.clone()), &inputs, &label);
            vectorized += usize::from(wide > 0);
        }
    }
    assert!(
        vectorized * 3 >= cases.len(),
        "only {vectorized} of {} programs made vector accesses",
        2 * cases.len()
    );
}

#[test]
fn tuned_shapes_match_the_ast_evaluator() {
    for (name, case) in tuned_cases() {
        let inputs = case.inputs(&mut Rng(7));
        for target in
            tuned_targets(&Target::generic_gpu()).iter().chain([&Target::no_locals(), &Target::tiny()])
        {
            let label = format!("{name} on {} wanting {} threads", target.name, target.parallelism);
            check_on(target, &case, &OptMode::Heuristic, &inputs, &label);
        }
    }
}

#[test]
fn nested_tuned_shapes_match_the_plain_kernel() {
    for (name, case) in nested_tuned_cases() {
        let inputs = case.inputs(&mut Rng(7));
        let results = |target: &Target, mode: &OptMode| {
            let (k, program) =
                compile(&case.ast, target, mode, "k").unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut bufs = case.cpu_buffers(&inputs);
            run(&program, &mut bufs, &[]).unwrap_or_else(|e| panic!("{name}: run failed: {e}"));
            (bufs.iter().take(case.outputs).map(|b| b.to_values()).collect::<Vec<_>>(), k.describe_opts())
        };
        let (plain, _) = results(&Target::generic_gpu(), &OptMode::NoOpt);
        for target in tuned_targets(&Target::generic_gpu()) {
            let (got, opts) = results(&target, &OptMode::Heuristic);
            for (slot, (g, w)) in got.iter().zip(&plain).enumerate() {
                let bad = g.iter().zip(w).position(|(&g, &w)| !close(g, w));
                assert!(
                    bad.is_none(),
                    "{name} wanting {} threads, {opts}: slot {slot} differs at {bad:?}",
                    target.parallelism
                );
            }
        }
    }
}

#[test]
fn one_hot_reduces_collapse_and_match_the_ast_evaluator() {
    for one_hot in one_hot_cases() {
        let inputs = one_hot.inputs(&mut Rng(5));
        for target in [Target::generic_gpu(), Target::no_locals(), Target::tiny()] {
            for mode in [OptMode::NoOpt, OptMode::Heuristic] {
                let label = format!("{} on {} ({mode:?})", one_hot.name, target.name);
                check_on(&target, &one_hot.case, &mode, &inputs, &label);
                if let Ok((_, program)) = compile(&one_hot.case.ast, &target, &mode, "k") {
                    let loops = program.uops.iter().any(|u| u.op() == Ops::DefineAcc);
                    assert!(!loops, "{label}: the reduce is left as a loop\n{program}");
                }
            }
        }
    }
}

/// [`check_on`] with no opts and with the heuristics, on the tuned generic targets, one
/// without locals and the tiny one.
fn check_unoptimised_and_planned(case: &Case, inputs: &[Vec<ConstValue>], label: &str) {
    let generic = Target::generic_gpu();
    for target in tuned_targets(&generic).iter().chain([&Target::no_locals(), &Target::tiny()]) {
        for mode in [OptMode::NoOpt, OptMode::Heuristic] {
            check_on(target, case, &mode, inputs, &format!("{label} on {} ({mode:?})", target.name));
        }
    }
}

/// The trackers of `rows` rows of `cols` and of their reduced outputs.
fn row_trackers(rows: usize, cols: usize) -> (ShapeTracker, ShapeTracker) {
    let tracker = |shape: [i64; 2]| ShapeTracker::from_shape(&shape.map(Sint::from)).expect("a shape");
    (tracker([rows as i64, cols as i64]), tracker([rows as i64, 1]))
}

/// A logsumexp kernel over rows of `cols`: `log2(sum(exp2(x - max(x)))) + max(x)`, the max a
/// reduce nested in the sum over the same axis (as the scheduler fuses a softmax's).
fn logsumexp_case(rows: usize, cols: usize) -> Case {
    let (full, out) = row_trackers(rows, cols);
    let x = UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), UOp::view(full)]);
    let max = x.reduce_axis(Ops::Max, &[1]);
    let sum = (&x - &max).exp2().reduce_axis(Ops::Add, &[1]);
    let value = &sum.log2() + &max;
    let store = UOp::store([UOp::define_global(DType::F32, 0), UOp::view(out), value]);
    Case { ast: UOp::sink([store]), buffers: vec![(DType::F32, rows), (DType::F32, rows * cols)], outputs: 1 }
}

/// Two reduces side by side over the rows of `x`, each stored: `sum(x)` and `max(x * y)`.
fn parallel_case(rows: usize, cols: usize) -> Case {
    let (full, out) = row_trackers(rows, cols);
    let x = UOp::load(DType::F32, [UOp::define_global(DType::F32, 2), UOp::view(full.clone())]);
    let y = UOp::load(DType::F32, [UOp::define_global(DType::F32, 3), UOp::view(full)]);
    let sum = x.reduce_axis(Ops::Add, &[1]);
    let max = (&x * &y).reduce_axis(Ops::Max, &[1]);
    let stores = [
        UOp::store([UOp::define_global(DType::F32, 0), UOp::view(out.clone()), sum]),
        UOp::store([UOp::define_global(DType::F32, 1), UOp::view(out), max]),
    ];
    let buffers =
        vec![(DType::F32, rows), (DType::F32, rows), (DType::F32, rows * cols), (DType::F32, rows * cols)];
    Case { ast: UOp::sink(stores), buffers, outputs: 2 }
}

/// A case of `rows` rows of `cols`.
type CaseOf = fn(usize, usize) -> Case;

#[test]
fn nested_and_parallel_reduces_match_the_ast_evaluator_under_every_grouping() {
    let grouped = |op, amt| vec![Opt::new(OptOps::Unroll, 0, 4), Opt::new(op, 0, amt)];
    let cases = [("nested", logsumexp_case as CaseOf), ("parallel", parallel_case)];
    for (kind, case_of) in cases {
        for (rows, cols) in [(4, 256), (3, 192), (1, 1024)] {
            let case = case_of(rows, cols);
            let inputs = case.inputs(&mut Rng(3));
            let generic = Target::generic_gpu();
            check_unoptimised_and_planned(&case, &inputs, &format!("{kind} {rows}x{cols}"));
            for opts in [
                grouped(OptOps::Group, 8),
                grouped(OptOps::Grouptop, 16),
                vec![Opt::new(OptOps::Group, 0, 32)],
            ] {
                let label = format!("{kind} {rows}x{cols} with {opts:?}");
                let mode = OptMode::Given(opts);
                let (_, program) = compile(&case.ast, &generic, &mode, "k")
                    .unwrap_or_else(|e| panic!("{label}: refused: {e}"));
                // each reduce meets its partials in a workgroup buffer of its own
                let buffers = program.uops.iter().filter(|u| u.op() == Ops::DefineLocal).count();
                assert_eq!(buffers, 2, "{label}\n{program}");
                check_on(&generic, &case, &mode, &inputs, &label);
                let subgroups = Target { subgroup_ops: true, ..generic.clone() };
                check_on(&subgroups, &case, &mode, &inputs, &format!("{label} subgroups"));
            }
        }
    }
}

/// A softmax kernel over rows of `cols`, stored whole: `exp2(x - lse)` with `lse =
/// log2(sum(exp2(x - max(x)))) + max(x)`, its reduces read back over their own rows (as the
/// scheduler fuses a softmax on a device with workgroup memory): they span an output axis.
fn softmax_case(rows: usize, cols: usize) -> Case {
    let full =
        ShapeTracker::from_shape(&[Sint::from(rows as i64), Sint::from(cols as i64)]).expect("a shape");
    let x = UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), UOp::view(full.clone())]);
    let max = x.reduce_axis(Ops::Max, &[1]);
    let sum = (&x - &max).exp2().reduce_axis(Ops::Add, &[1]);
    let value = (&x - &(&sum.log2() + &max)).exp2();
    let store = UOp::store([UOp::define_global(DType::F32, 0), UOp::view(full), value]);
    Case {
        ast: UOp::sink([store]),
        buffers: vec![(DType::F32, rows * cols), (DType::F32, rows * cols)],
        outputs: 1,
    }
}

#[test]
fn long_rows_combine_their_partials_in_subgroups() {
    // rows of 128 over a workgroup of 4 threads of 32 values each, two subgroups of 2 (small,
    // for the evaluator; an H200 takes rows of 8192 as 256 threads): where the target has
    // subgroup ops, each subgroup combines its partials and one per subgroup meets in
    // workgroup memory, the row's workgroup its own; elsewhere rows share a workgroup and
    // every thread reads its row's 4 partials back
    let case = softmax_case(2, 128);
    let inputs = case.inputs(&mut Rng(9));
    let pairs = Target { subgroup_size: Some(2), ..Target::generic_gpu() };
    let subgroups = Target { subgroup_ops: true, ..pairs.clone() };
    for (target, combined, workgroup) in [(&subgroups, true, (4, 1)), (&pairs, false, (8, 2))] {
        let (k, program) = compile(&case.ast, target, &OptMode::Heuristic, "k").expect("the plan compiles");
        assert_eq!((k.local_size(), k.local_dims()), workgroup, "{}", k.describe_opts());
        assert_eq!(k.row_subgroup_partials(), combined, "{}", k.describe_opts());
        let reduced = program.uops.iter().filter(|u| u.op() == Ops::SubgroupReduce).count();
        assert_eq!(reduced, if combined { 2 } else { 0 }, "{program}");
        check_on(target, &case, &OptMode::Heuristic, &inputs, &format!("4096-wide rows on {}", target.name));
    }
    // a workgroup holding two rows' threads keeps its partials per invocation
    let two_rows = OptMode::Given(vec![
        Opt::new(OptOps::Upcast, 1, 4),
        Opt::new(OptOps::Local, 1, 4),
        Opt::new(OptOps::Local, 0, 2),
        Opt::new(OptOps::Upcast, 1, 0),
    ]);
    let (k, _) = compile(&case.ast, &subgroups, &two_rows, "k").expect("two rows a workgroup");
    assert!(!k.row_subgroup_partials(), "{}", k.describe_opts());
    check_on(&subgroups, &case, &two_rows, &inputs, "two rows a workgroup");
}

#[test]
fn rows_one_subgroup_wide_combine_without_workgroup_memory() {
    // rows of 64 as 4 threads of 16 values, subgroups of 4 (small, for the evaluator; an H200
    // takes a layer norm's rows of 384 as 32 threads of 12): where every subgroup has the same
    // size, a row is one subgroup, whose combine finishes each reduce with no workgroup memory
    // or barrier, and the workgroup holds 8 rows; where the size may vary, the partials meet in
    // workgroup memory
    let case = softmax_case(8, 64);
    let inputs = case.inputs(&mut Rng(11));
    let fixed = Target { subgroup_size: Some(4), subgroup_ops: true, ..Target::generic_gpu() };
    let varying = Target { fixed_subgroup_size: false, ..fixed.clone() };
    for (target, in_subgroups) in [(&fixed, true), (&varying, false)] {
        let (k, program) = compile(&case.ast, target, &OptMode::Heuristic, "k").expect("the plan compiles");
        assert_eq!(k.rows_in_subgroups(), in_subgroups, "{}", k.describe_opts());
        let workgroup = if in_subgroups { (32, 2) } else { (16, 2) };
        assert_eq!((k.local_size(), k.local_dims()), workgroup, "{}", k.describe_opts());
        let count = |op| program.uops.iter().filter(|u| u.op() == op).count();
        let expected = if in_subgroups { (2, 0, 0) } else { (0, 2, 2) };
        assert_eq!(
            (count(Ops::SubgroupReduce), count(Ops::DefineLocal), count(Ops::Barrier)),
            expected,
            "{program}"
        );
        check_on(target, &case, &OptMode::Heuristic, &inputs, &format!("rows of 64 on {}", target.name));
    }
    // the rows' axis the first local one, the row's second: a subgroup spans rows, so the
    // partials meet in workgroup memory
    let rows_first = OptMode::Given(vec![
        Opt::new(OptOps::Local, 0, 2),
        Opt::new(OptOps::Upcast, 1, 4),
        Opt::new(OptOps::Local, 1, 4),
    ]);
    let (k, _) = compile(&case.ast, &fixed, &rows_first, "k").expect("rows first");
    assert!(!k.rows_in_subgroups(), "{}", k.describe_opts());
    check_on(&fixed, &case, &rows_first, &inputs, "rows first");
}

#[test]
fn rows_reduced_in_place_match_the_ast_evaluator_under_any_split() {
    let generic = Target::generic_gpu();
    let subgroups = Target { subgroup_ops: true, ..generic.clone() };
    for (rows, cols) in [(4, 64), (3, 10), (2, 48)] {
        let case = softmax_case(rows, cols);
        let mut r = Rng(5);
        let inputs = case.inputs(&mut r);
        check_unoptimised_and_planned(&case, &inputs, &format!("{rows}x{cols}"));
        // the row's axis upcast, local, both, or partly global (each thread walks that part)
        let given = [
            vec![Opt::new(OptOps::Upcast, 1, 2)],
            vec![Opt::new(OptOps::Local, 1, 2)],
            vec![Opt::new(OptOps::Upcast, 1, 2), Opt::new(OptOps::Local, 1, 1 + usize::from(cols % 4 == 0))],
            vec![
                Opt::new(OptOps::Local, 0, rows),
                Opt::new(OptOps::Local, 1, 2),
                Opt::new(OptOps::Upcast, 1, 0),
            ],
        ];
        for opts in given {
            let label = format!("{rows}x{cols} with {opts:?}");
            let mode = OptMode::Given(opts);
            if compile(&case.ast, &generic, &mode, "k").is_ok() {
                check_on(&generic, &case, &mode, &inputs, &label);
                check_on(&subgroups, &case, &mode, &inputs, &format!("{label} subgroups"));
            }
        }
        for _ in 0..4 {
            let opts = case.random_opts(&mut r, &generic);
            check_on(&generic, &case, &opts, &inputs, &format!("{rows}x{cols} with {opts:?}"));
        }
        // the plan: each row's threads hold it whole, its reduces meet in workgroup memory once
        // (no loop over the row's elements)
        let (k, program) = compile(&case.ast, &generic, &OptMode::Heuristic, "k").expect("the plan compiles");
        let buffers = program.uops.iter().filter(|u| u.op() == Ops::DefineLocal).count();
        let loops = program.uops.iter().filter(|u| u.op() == Ops::Range).count();
        let threads = k.local_size();
        assert!(threads > 1 || cols <= 32, "{rows}x{cols}: {}", k.describe_opts());
        assert_eq!(
            (buffers, loops),
            if threads > 1 && k.full_shape().len() > 1 { (2, 2) } else { (0, 0) },
            "{rows}x{cols}\n{program}"
        );
    }
    // the row's partials must fit the workgroup memory: refused, and the kernel left as it was
    let case = softmax_case(4, 64);
    let small = Target { shared_max: 16, ..Target::tiny() };
    let mut k = Kernel::new(&case.ast, small).expect("a kernel");
    k.apply_opt(Opt::new(OptOps::Local, 1, 2)).expect("two partials of 4 bytes for each reduce");
    let refused = k.apply_opt(Opt::new(OptOps::Local, 0, 4));
    assert!(matches!(refused, Err(OptError::SharedMemory { needed: 64, max: 16 })), "{refused:?}");
    assert_eq!(k.local_size(), 2, "{}", k.describe_opts());
}
