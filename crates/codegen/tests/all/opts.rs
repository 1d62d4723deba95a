//! Every OptOp: what it does to the axes, counters and trackers, and each typed refusal.

use crate::common;

use common::*;
use wgrad_codegen::{AxisKind, Kernel, Opt, OptError, OptOps, Target};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_shape::{ShapeTracker, Sint, Variable, View};

fn on(ast: &UOp, target: Target) -> Kernel {
    Kernel::new(ast, target).unwrap()
}

fn err(k: &mut Kernel, o: Opt) -> OptError {
    let before = (k.sts().to_vec(), k.applied_opts().len());
    let e = k.apply_opt(o).unwrap_err();
    assert_eq!((k.sts().to_vec(), k.applied_opts().len()), before, "a refused {o} changed the kernel");
    e
}

/// An elementwise copy of a transposed (2, 3, 4) buffer: three axes that do not merge.
fn three_axes() -> UOp {
    store_ast(st(&[2, 3, 4]), load(1, strided(&[2, 3, 4], &[1, 2, 6], 0)))
}

#[test]
fn upcast_splits_an_output_axis_last() {
    let mut k = kernel(&sum_ast(&[8, 16], &[1]));
    k.apply_opt(opt(OptOps::Upcast, 0, 4)).unwrap();
    assert_eq!(full(&k), [2, 16, 4]);
    assert_eq!((k.upcasted(), k.first_reduce(), k.first_upcast()), (1, 1, 2));
    assert_eq!(strides(&k, 1), [64, 1, 16]);
    assert_eq!(k.applied_opts(), [opt(OptOps::Upcast, 0, 4)]);
}

#[test]
fn upcast_zero_takes_the_whole_axis() {
    let mut k = kernel(&three_axes());
    k.apply_opt(opt(OptOps::Upcast, 0, 0)).unwrap();
    assert_eq!(full(&k), [3, 4, 2], "the size-1 rest is dropped");
    assert_eq!(k.upcasted(), 1);
}

#[test]
fn upcast_refusals() {
    let mut k = kernel(&sum_ast(&[64, 16], &[1]));
    assert_eq!(err(&mut k, opt(OptOps::Upcast, 1, 4)), OptError::UpcastReduce(1));
    assert_eq!(
        err(&mut k, opt(OptOps::Upcast, 0, 32)),
        OptError::TooLarge { op: OptOps::Upcast, amt: 32, max: 16 }
    );
    assert!(matches!(err(&mut k, opt(OptOps::Upcast, 0, 3)), OptError::NotDivisible { amt: 3, .. }));
    assert!(matches!(err(&mut k, opt(OptOps::Upcast, 0, 1)), OptError::MeaninglessAmount { .. }));
    assert_eq!(err(&mut k, opt(OptOps::Upcast, 5, 2)), OptError::InvalidAxis { axis: 5, shape_len: 2 });
    let no_axis = Opt { op: OptOps::Upcast, axis: None, arg: 4 };
    assert_eq!(err(&mut k, no_axis), OptError::MissingAxis(OptOps::Upcast));
}

#[test]
fn unroll_counts_from_the_first_reduce() {
    let mut k = kernel(&sum_ast(&[8, 16], &[1]));
    k.apply_opt(opt(OptOps::Unroll, 0, 4)).unwrap();
    assert_eq!(full(&k), [8, 4, 4]);
    assert_eq!(output(&k), [8, 1, 1]);
    assert_eq!(k.axis_kinds(), [AxisKind::Global, AxisKind::Reduce, AxisKind::Unroll]);
}

#[test]
fn unroll_of_the_whole_reduce_keeps_the_counters() {
    let mut k = kernel(&sum_ast(&[8, 16], &[1]));
    k.apply_opt(opt(OptOps::Unroll, 0, 0)).unwrap();
    assert_eq!(full(&k), [8, 16]);
    assert_eq!((k.local_dims(), k.upcasted(), k.first_reduce()), (0, 1, 1));
    assert_eq!(k.axis_kinds(), [AxisKind::Global, AxisKind::Unroll]);
    assert_eq!(err(&mut k, opt(OptOps::Unroll, 0, 2)), OptError::Upcasted(OptOps::Unroll));
}

#[test]
fn unroll_limit() {
    let mut k = kernel(&sum_ast(&[8, 64], &[1]));
    assert_eq!(
        err(&mut k, opt(OptOps::Unroll, 0, 64)),
        OptError::TooLarge { op: OptOps::Unroll, amt: 64, max: 32 }
    );
}

#[test]
fn local_moves_part_of_a_global_axis_into_the_workgroup() {
    let mut k = kernel(&matmul_ast(64, 16, 64));
    k.apply_opt(opt(OptOps::Local, 0, 8)).unwrap();
    assert_eq!(full(&k), [8, 16, 8, 64]);
    assert_eq!((k.local_dims(), k.global_dims(), k.first_reduce()), (1, 2, 3));
    assert_eq!(k.local_size(), 8);
    k.apply_opt(opt(OptOps::Local, 1, 16)).unwrap();
    assert_eq!(full(&k), [8, 8, 16, 64], "a whole axis leaves no size-1 global behind");
    assert_eq!((k.local_dims(), k.global_dims()), (2, 1));
}

#[test]
fn local_refusals() {
    let ast = matmul_ast(64, 64, 64);
    assert_eq!(err(&mut on(&ast, Target::no_locals()), opt(OptOps::Local, 0, 4)), OptError::NoLocal);
    let mut k = kernel(&ast);
    assert_eq!(err(&mut k, opt(OptOps::Local, 2, 4)), OptError::NotGlobal { axis: 2, global_dims: 2 });
    let mut tiny = on(&ast, Target::tiny());
    assert_eq!(err(&mut tiny, opt(OptOps::Local, 0, 16)), OptError::TooManyLocals { size: 16, max: 8 });
    tiny.apply_opt(opt(OptOps::Local, 0, 4)).unwrap();
    assert_eq!(err(&mut tiny, opt(OptOps::Local, 1, 4)), OptError::TooManyLocals { size: 16, max: 8 });
}

#[test]
fn stage_takes_a_tiled_matmul_last_and_refuses_the_rest() {
    let mut k = kernel(&matmul_ast(64, 64, 64));
    for o in [opt(OptOps::Upcast, 0, 4), opt(OptOps::Upcast, 1, 4), opt(OptOps::Unroll, 0, 4)] {
        k.apply_opt(o).unwrap();
    }
    assert!(matches!(err(&mut k, Opt::stage()), OptError::Stage(_)), "no workgroup yet");
    k.apply_opt(opt(OptOps::Local, 1, 16)).unwrap();
    k.apply_opt(opt(OptOps::Local, 0, 8)).unwrap();
    k.apply_opt(Opt::stage()).unwrap();
    assert_eq!(k.applied_opts().last(), Some(&Opt::stage()));
    assert!(matches!(err(&mut k, opt(OptOps::Upcast, 0, 2)), OptError::Stage(_)), "STAGE is the last opt");
    assert_eq!("Opt(op=STAGE)".parse::<Opt>(), Ok(Opt::stage()));
    // two blocks of each factor: printed with the amount, parsed back; other amounts refused
    assert_eq!(Opt::double_stage().to_string(), "Opt(op=STAGE, arg=2)");
    assert_eq!("Opt(op=STAGE, arg=2)".parse::<Opt>(), Ok(Opt::double_stage()));
    let mut twice = kernel(&matmul_ast(64, 64, 64));
    for o in [
        opt(OptOps::Upcast, 0, 4),
        opt(OptOps::Upcast, 1, 4),
        opt(OptOps::Unroll, 0, 4),
        opt(OptOps::Local, 1, 16),
        opt(OptOps::Local, 0, 8),
    ] {
        twice.apply_opt(o).unwrap();
    }
    let three = Opt { arg: 3, ..Opt::stage() };
    assert!(matches!(err(&mut twice.clone(), three), OptError::Stage(_)), "one or two blocks");
    twice.apply_opt(Opt::double_stage()).unwrap();
    // a sum of one load, and a target without workgroup memory, have nothing to stage
    let mut sum = kernel(&sum_ast(&[64, 256], &[1]));
    sum.apply_opt(opt(OptOps::Local, 0, 16)).unwrap();
    assert!(matches!(err(&mut sum, Opt::stage()), OptError::Stage(_)));
    assert!(matches!(
        err(&mut on(&matmul_ast(64, 64, 64), Target::no_locals()), Opt::stage()),
        OptError::Stage(_)
    ));
}

#[test]
fn double_stage_needs_a_reduce_of_known_length() {
    // A stored (k, m) times B (k, n): over a symbolic k the next step's copy could read past
    // the real end, so only one block is staged; over k = 64 both work
    let tiled = |k: Sint| {
        let shape = [Sint::int(64), Sint::int(64), k];
        let view = |strides: &[i64]| {
            ShapeTracker::from_view(View::new(&shape, &sints(strides), Sint::int(0), None).unwrap())
        };
        let product = load(1, view(&[1, 0, 64])) * load(2, view(&[0, 1, 64]));
        let mut k = kernel(&store_ast(st(&[64, 64, 1]), product.reduce_axis(Ops::Add, &[2])));
        for (op, axis, amt) in
            [(OptOps::Upcast, 0, 4), (OptOps::Upcast, 1, 4), (OptOps::Local, 1, 4), (OptOps::Local, 0, 4)]
        {
            k.apply_opt(opt(op, axis, amt)).unwrap();
        }
        k
    };
    let symbolic = tiled(Sint::var(&Variable::new("k", 1, 64).unwrap()));
    assert!(matches!(err(&mut symbolic.clone(), Opt::double_stage()), OptError::Stage(_)));
    symbolic.clone().apply_opt(Opt::stage()).unwrap();
    tiled(Sint::int(64)).apply_opt(Opt::double_stage()).unwrap();
}

#[test]
fn group_takes_the_inner_part_and_grouptop_the_outer() {
    let mut g = kernel(&sum_ast(&[4, 256], &[1]));
    g.apply_opt(opt(OptOps::Group, 0, 16)).unwrap();
    assert_eq!(full(&g), [4, 16, 16]);
    assert_eq!((g.group_for_reduces(), g.first_reduce()), (1, 1));
    assert_eq!(strides(&g, 1), [256, 1, 16]);
    assert_eq!(g.axis_kinds(), [AxisKind::Global, AxisKind::GroupReduce, AxisKind::Reduce]);
    let mut t = kernel(&sum_ast(&[4, 256], &[1]));
    t.apply_opt(opt(OptOps::Grouptop, 0, 16)).unwrap();
    assert_eq!(strides(&t, 1), [256, 16, 1]);
    t.apply_opt(opt(OptOps::Grouptop, 0, 4)).unwrap();
    assert_eq!(full(&t), [4, 16, 4, 4], "the second group axis counts from the first's end");
    assert_eq!(t.group_for_reduces(), 2);
}

/// Workgroup memory holds a boolean as a 32-bit word and, without f16, a half as an f32: a
/// group's 32 partials are counted at that size.
#[test]
fn group_partials_of_booleans_and_emulated_halves_take_words() {
    let max = |dtype| store_ast(st(&[4, 1]), load_dt(dtype, 1, st(&[4, 256])).reduce_axis(Ops::Max, &[1]));
    let small = Target { shared_max: 64, has_f16: true, ..Target::generic_gpu() };
    let group = opt(OptOps::Group, 0, 32);
    let words = OptError::SharedMemory { needed: 128, max: 64 };
    assert_eq!(err(&mut on(&max(DType::BOOL), small.clone()), group), words);
    assert_eq!(err(&mut on(&max(DType::F16), Target { has_f16: false, ..small.clone() }), group), words);
    on(&max(DType::F16), small).apply_opt(group).unwrap();
}

#[test]
fn group_refusals() {
    let ast = sum_ast(&[4, 256], &[1]);
    assert_eq!(err(&mut on(&ast, Target::no_locals()), opt(OptOps::Group, 0, 4)), OptError::NoShared);
    let mut small = on(&ast, Target { shared_max: 64, ..Target::generic_gpu() });
    assert_eq!(err(&mut small, opt(OptOps::Group, 0, 32)), OptError::SharedMemory { needed: 128, max: 64 });
    let mut tiny = on(&ast, Target::tiny());
    assert_eq!(err(&mut tiny, opt(OptOps::Group, 0, 16)), OptError::TooManyLocals { size: 16, max: 8 });
    tiny.apply_opt(opt(OptOps::Group, 0, 8)).unwrap();
    assert_eq!(
        err(&mut tiny, opt(OptOps::Upcast, 0, 4)),
        OptError::SharedMemory { needed: 128, max: 64 },
        "with a group, every split grows the workgroup buffer"
    );
    let mut unrolled = kernel(&ast);
    unrolled.apply_opt(opt(OptOps::Unroll, 0, 16)).unwrap();
    unrolled.apply_opt(opt(OptOps::Unroll, 0, 16)).unwrap();
    assert_eq!(err(&mut unrolled, opt(OptOps::Group, 0, 2)), OptError::NotReduce(1));
}

#[test]
fn group_takes_parallel_reduces() {
    // reduces side by side (a scheduler's sibling kernels) group as nested ones do: a buffer of
    // partials each (tests/tests/all/cpu_vs_ast_eval.rs checks their values)
    let x = load(1, st(&[4, 64]));
    let value = x.reduce_axis(Ops::Add, &[1]) + x.reduce_axis(Ops::Max, &[1]);
    let mut k = kernel(&store_ast(st(&[4, 1]), value));
    k.apply_opt(opt(OptOps::Group, 0, 4)).unwrap();
    assert_eq!(k.group_for_reduces(), 1);
}

#[test]
fn nolocals() {
    let ast = matmul_ast(64, 64, 64);
    let mut k = kernel(&ast);
    k.apply_opt(Opt::nolocals()).unwrap();
    assert!(k.dont_use_locals());
    assert!(k.describe().ends_with("nolocals"));
    assert_eq!(err(&mut k, opt(OptOps::Local, 0, 4)), OptError::LocalsDisabled);
    assert_eq!(err(&mut k, opt(OptOps::Group, 0, 4)), OptError::LocalsDisabled);
    assert_eq!(err(&mut k, Opt::nolocals()), OptError::NolocalsMeaningless);
    assert_eq!(err(&mut on(&ast, Target::no_locals()), Opt::nolocals()), OptError::NolocalsMeaningless);
    let mut l = kernel(&ast);
    l.apply_opt(opt(OptOps::Local, 0, 4)).unwrap();
    assert_eq!(err(&mut l, Opt::nolocals()), OptError::NolocalsWithLocals);
}

#[test]
fn padto_rounds_an_axis_up_with_a_mask() {
    let mut k = kernel(&matmul_ast(30, 30, 30));
    k.apply_opt(opt(OptOps::Padto, 0, 32)).unwrap();
    assert_eq!(full(&k), [32, 30, 30]);
    assert!(k.sts()[0].axis_is_masked(0), "the store is masked");
    k.apply_opt(opt(OptOps::Padto, 2, 32)).unwrap();
    assert_eq!(full(&k), [32, 30, 32], "a sum of products of loads pads its reduce");
}

#[test]
fn padto_refusals() {
    let mut k = kernel(&matmul_ast(32, 7, 32));
    assert_eq!(err(&mut k, opt(OptOps::Padto, 0, 32)), OptError::NothingPadded);
    assert_eq!(err(&mut k, opt(OptOps::Padto, 1, 32)), OptError::PadTooMuch { size: 7, amt: 32 });
    k.apply_opt(opt(OptOps::Upcast, 0, 4)).unwrap();
    assert_eq!(err(&mut k, opt(OptOps::Padto, 3, 8)), OptError::Upcasted(OptOps::Padto));
}

#[test]
fn padto_refuses_reduces_that_padding_changes() {
    let x = || load(1, st(&[8, 30]));
    let cases = [
        x().reduce_axis(Ops::Max, &[1]),
        x().exp2().reduce_axis(Ops::Add, &[1]),
        (x() + 1.0f32).reduce_axis(Ops::Add, &[1]),
    ];
    for value in cases {
        let mut k = kernel(&store_ast(st(&[8, 1]), value));
        assert_eq!(err(&mut k, opt(OptOps::Padto, 1, 32)), OptError::PadUnsafeReduce);
        k.apply_opt(opt(OptOps::Padto, 0, 16)).unwrap();
    }
    let mut scaled = kernel(&store_ast(st(&[8, 1]), (x() * 2.0f32).reduce_axis(Ops::Add, &[1])));
    scaled.apply_opt(opt(OptOps::Padto, 1, 32)).unwrap();
    let masked = masked_const(1.0f32, DType::F32, padded(st(&[8, 20]), &[(0, 0), (0, 10)]));
    let mut k = kernel(&store_ast(st(&[8, 1]), (x() + masked).reduce_axis(Ops::Add, &[1])));
    k.apply_opt(opt(OptOps::Padto, 1, 32)).unwrap();
}

#[test]
fn swap_exchanges_global_axes() {
    let mut k = kernel(&three_axes());
    k.apply_opt(opt(OptOps::Swap, 0, 2)).unwrap();
    assert_eq!(full(&k), [4, 3, 2]);
    assert_eq!(strides(&k, 1), [6, 2, 1]);
    assert_eq!(err(&mut k, opt(OptOps::Swap, 1, 0)), OptError::Swap { axis: 1, other: 0, global_dims: 3 });
    let mut r = kernel(&sum_ast(&[4, 8], &[1]));
    assert_eq!(err(&mut r, opt(OptOps::Swap, 0, 1)), OptError::Swap { axis: 0, other: 1, global_dims: 1 });
}

#[test]
fn tensor_cores_need_a_target_that_has_them() {
    let mut k = kernel(&matmul_ast(64, 64, 64));
    let e = err(&mut k, opt(OptOps::Tc, 0, 0));
    assert_eq!(e.to_string(), "tensor cores: the target has 0 tensor-core shapes, not 1");
}

#[test]
fn opts_read_back_as_they_print() {
    let mut opts: Vec<Opt> = OptOps::ALL.iter().map(|&op| opt(op, 3, 16)).collect();
    opts.push(Opt::nolocals());
    for o in opts {
        assert_eq!(o.to_string().parse::<Opt>(), Ok(o), "{o}");
    }
    assert_eq!("Opt(op=GROUPTOP, axis=1, arg=256)".parse(), Ok(opt(OptOps::Grouptop, 1, 256)));
    for bad in [
        "",
        "Opt(op=UPCAST)x",
        "Opt(op=UPCASTS, axis=0, arg=4)",
        "Opt(op=UPCAST, axis=0)",
        "Opt(op=LOCAL, axis=-1, arg=2)",
        "Opt(op=LOCAL, axis=0, arg=2, x=1)",
    ] {
        assert!(matches!(bad.parse::<Opt>(), Err(OptError::Parse(_))), "{bad}");
    }
}
