//! The whole pipeline: AST -> opts -> lowered graph -> Program, its DEBUG listings, and the
//! verifier's verdict on malformed ASTs.

use std::sync::Arc;

use wgrad_codegen::{CodegenError, Kernel, OptMode, Target, compile, hand_coded_optimizations, lower};
use wgrad_dtype::DType;
use wgrad_ops::{Arg, Ops, OpsError, UOp, print_uops};
use wgrad_shape::{ShapeTracker, Sint};

fn view(shape: &[i64]) -> UOp {
    let shape: Vec<Sint> = shape.iter().map(|&d| Sint::from(d)).collect();
    UOp::new(Ops::View, DType::VOID, [], Arg::View(Arc::new(ShapeTracker::from_shape(&shape).unwrap())))
}

/// `out[i] = sum_j a[i, j]` for a 16x64 f32 matrix.
fn row_sum() -> UOp {
    let a = UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), view(&[16, 64])]);
    UOp::sink([UOp::store([
        UOp::define_global(DType::F32, 0),
        view(&[16, 1]),
        a.reduce_axis(Ops::Add, &[1]),
    ])])
}

#[test]
fn listings_for_debug_levels() {
    let (k, program) = compile(&row_sum(), &Target::generic_gpu(), &OptMode::Heuristic, "r_16_64").unwrap();
    // DEBUG=3: the applied opts and the axes
    assert!(k.describe_opts().starts_with("[Opt(op="), "{}", k.describe_opts());
    assert!(k.describe().contains("reduce") || k.describe().contains("group"), "{}", k.describe());
    // DEBUG=5: the lowered graph
    let mut k2 = Kernel::new(&row_sum(), Target::generic_gpu()).unwrap();
    hand_coded_optimizations(&mut k2);
    let lowered = print_uops(&lower(&k2).unwrap().toposort());
    assert!(lowered.contains("Ops.REDUCE") && lowered.contains("Ops.SPECIAL"), "{lowered}");
    // DEBUG=6: the linear program
    let listing = program.to_string();
    assert!(listing.contains("r_16_64"), "{listing}");
    assert!(listing.contains("Ops.DEFINE_ACC") && listing.contains("Ops.ASSIGN"), "{listing}");
    assert_eq!(program.buffers.len(), 2);
    assert!(program.buffers[0].writable && !program.buffers[1].writable);
}

#[test]
fn noopt_and_given_opts_compile() {
    let (k, _) = compile(&row_sum(), &Target::generic_gpu(), &OptMode::NoOpt, "r").unwrap();
    assert!(k.applied_opts().is_empty());
    let opts = k.applied_opts().to_vec();
    assert!(compile(&row_sum(), &Target::generic_gpu(), &OptMode::Given(opts), "r").is_ok());
}

#[test]
fn malformed_ast_names_the_node() {
    let a = UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), view(&[4])]);
    let b = UOp::load(DType::I32, [UOp::define_global(DType::I32, 2), view(&[4])]);
    let bad = UOp::new(Ops::Add, DType::F32, [a, b], Arg::None);
    let ast = UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), view(&[4]), bad])]);
    let err = compile(&ast, &Target::generic_gpu(), &OptMode::NoOpt, "bad").unwrap_err();
    let CodegenError::Spec(OpsError::Spec { node, .. }) = &err else {
        panic!("expected a spec error, got {err}")
    };
    assert_eq!(node.op(), Ops::Add);
    assert!(err.to_string().contains("ADD"), "{err}");
}

#[test]
fn oversize_launch_dims_are_split_to_fit() {
    // 32M elements with 256-thread workgroups need 131072 workgroups: more than 65535 per dim
    let n = 1 << 25;
    let a = UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), view(&[n])]);
    let ast = UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), view(&[n]), &a + &a])]);
    let opts = OptMode::Given(vec![wgrad_codegen::Opt::new(wgrad_codegen::OptOps::Local, 0, 256)]);
    let (_, p) = compile(&ast, &Target::generic_gpu(), &opts, "e").unwrap();
    assert!(p.global_size.iter().all(|&g| g <= 65535), "{:?}", p.global_size);
    assert_eq!(p.global_size.iter().product::<usize>() * p.local_size.iter().product::<usize>(), n as usize);
    // a prime count of workgroups over the limit cannot be split exactly: a typed refusal
    let prime = 65537;
    let b = UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), view(&[prime])]);
    let ast = UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), view(&[prime]), b])]);
    let err = compile(&ast, &Target::generic_gpu(), &OptMode::NoOpt, "p").unwrap_err();
    assert!(matches!(err, CodegenError::Lower(wgrad_codegen::LowerError::LaunchTooLarge { .. })), "{err}");
}
