//! Generated programs through the runtime: compile once, launch with buffers by slot and
//! variable values, typed refusals for launches that do not fit and programs WGSL cannot hold.

use crate::common;

use wgrad_codegen::{Opt, OptMode, OptOps, Program, compile};
use wgrad_dtype::DType;
use wgrad_ops::{Ops, UOp};
use wgrad_runtime_wgpu::{Device, RuntimeError};
use wgrad_shape::{ShapeTracker, Sint, Variable, View};

fn contiguous(shape: &[i64]) -> ShapeTracker {
    ShapeTracker::from_shape(&shape.iter().map(|&s| Sint::int(s)).collect::<Vec<_>>()).unwrap()
}

fn load(dtype: DType, slot: i64, st: ShapeTracker) -> UOp {
    UOp::load(dtype, [UOp::define_global(dtype, slot), UOp::view(st)])
}

fn store(st: ShapeTracker, value: UOp) -> UOp {
    UOp::sink([UOp::store([UOp::define_global(value.dtype(), 0), UOp::view(st), value])])
}

fn program(device: &Device, ast: &UOp) -> Program {
    compile(ast, &device.target(), &OptMode::Heuristic, "k").unwrap().1
}

/// `out[i] = sum of the first n elements of row i` of an 8x64 i32 buffer, `n` a variable.
fn row_sums() -> UOp {
    let n = Variable::new("n", 1, 64).unwrap();
    let rows = View::new(&[Sint::int(8), Sint::var(&n)], &[Sint::int(64), Sint::int(1)], Sint::int(0), None)
        .unwrap();
    store(contiguous(&[8, 1]), load(DType::I32, 1, ShapeTracker::from_view(rows)).reduce_axis(Ops::Add, &[1]))
}

#[test]
fn a_kernel_the_device_rejects_names_itself_and_keeps_its_source() {
    let Some(device) = common::device() else { return };
    // one load per buffer past the device's storage-buffer limit: valid WGSL, refused pipeline
    let inputs = device.limits().max_storage_buffers_per_stage as i64 + 1;
    let st = contiguous(&[4]);
    let sum = (1..=inputs).map(|slot| load(DType::F32, slot, st.clone())).reduce(|a, b| a + b).unwrap();
    let p = compile(&store(st.clone(), sum), &device.target(), &OptMode::NoOpt, "E_too_many").unwrap().1;
    let Err(RuntimeError::Kernel { kernel, wgsl, error }) = device.compile(&p) else {
        panic!("a kernel binding {inputs} buffers compiled")
    };
    assert_eq!(kernel, "E_too_many");
    assert!(wgsl.contains("@compute"), "{wgsl}");
    assert!(!matches!(*error, RuntimeError::Kernel { .. }), "{error:?}");
    let out = device.alloc_elements(DType::F32, 4).unwrap();
    assert_eq!(device.read(&out).unwrap().len(), 16, "the device is still usable");
}

#[test]
fn a_generated_kernel_runs_and_compiles_once() {
    let Some(device) = common::device() else { return };
    let n = 1000;
    let ast = store(
        contiguous(&[n]),
        load(DType::F32, 1, contiguous(&[n])) * load(DType::F32, 2, contiguous(&[n])),
    );
    let p = program(&device, &ast);
    let kernel = device.compile(&p).unwrap();
    assert!(kernel.source().contains("@compute"), "{}", kernel.source());
    assert!(kernel.same_pipeline(&device.compile(&p).unwrap()), "the pipeline cache is keyed by source");
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let (out, da, db) = (
        device.alloc_elements(DType::F32, n as usize).unwrap(),
        device.upload(&a).unwrap(),
        device.upload(&a).unwrap(),
    );
    let mut batch = device.batch();
    device.launch(&mut batch, &kernel, &[&out, &da, &db], &[]).unwrap();
    device.submit(batch).unwrap();
    let got = device.read_as::<f32>(&out).unwrap();
    assert!(got.iter().zip(&a).all(|(g, x)| *g == x * x));
}

#[test]
fn prepared_launches_replay_with_the_bind_group_made_once() {
    let Some(device) = common::device() else { return };
    let n = 64;
    let ast = store(
        contiguous(&[n]),
        load(DType::F32, 0, contiguous(&[n])) * load(DType::F32, 1, contiguous(&[n])),
    );
    let kernel = device.compile(&program(&device, &ast)).unwrap();
    let (y, x) = (device.upload(&[1.0f32; 64]).unwrap(), device.upload(&[2.0f32; 64]).unwrap());
    let prepared = device.prepare(&kernel, &[&y, &x], &[]).unwrap();
    let made = device.bind_groups_created();
    for _ in 0..10 {
        let mut batch = device.batch();
        batch.push(&prepared);
        batch.push(&prepared);
        device.submit(batch).unwrap();
    }
    assert_eq!(device.bind_groups_created(), made, "replays make no bind groups");
    assert_eq!(device.read_as::<f32>(&y).unwrap(), [2f32.powi(20); 64]);
    let bad = device.prepare(&kernel, &[&y], &[]).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(bad.contains("no buffer for slot 1"), "{bad}");
}

#[test]
fn symbolic_variables_are_passed_at_launch() {
    let Some(device) = common::device() else { return };
    let kernel = device.compile(&program(&device, &row_sums())).unwrap();
    let data: Vec<i32> = (0..8 * 64).collect();
    let (out, input) = (device.alloc_elements(DType::I32, 8).unwrap(), device.upload(&data).unwrap());
    let mut made = (0, 0);
    for (i, len) in [1i64, 5, 64, 1, 5, 64].into_iter().enumerate() {
        let mut batch = device.batch();
        device.launch(&mut batch, &kernel, &[&out, &input], &[len]).unwrap();
        device.submit(batch).unwrap();
        let want: Vec<i32> = (0..8).map(|r| (0..len as i32).map(|c| r * 64 + c).sum()).collect();
        assert_eq!(device.read_as::<i32>(&out).unwrap(), want, "n = {len}");
        if i == 2 {
            made = (device.memory().created, device.bind_groups_created());
        }
    }
    let again = (device.memory().created, device.bind_groups_created());
    assert_eq!(again, made, "values seen before reuse their variable buffer and bind group");
}

#[test]
fn launches_that_do_not_fit_are_refused() {
    let Some(device) = common::device() else { return };
    let kernel = device.compile(&program(&device, &row_sums())).unwrap();
    let buf = device.alloc_elements(DType::I32, 8 * 64).unwrap();
    let mut batch = device.batch();
    let bad = |r: Result<(), RuntimeError>| match r {
        Err(RuntimeError::BadLaunch { kernel, message }) => format!("{kernel}: {message}"),
        other => panic!("expected BadLaunch, got {other:?}"),
    };
    assert!(bad(device.launch(&mut batch, &kernel, &[&buf], &[3])).contains("no buffer for slot 1"));
    assert!(bad(device.launch(&mut batch, &kernel, &[&buf, &buf], &[])).contains("0 variable values for 1"));
    assert!(
        bad(device.launch(&mut batch, &kernel, &[&buf, &buf], &[1 << 40])).contains("does not fit in i32")
    );
    assert!(batch.is_empty());
}

#[test]
fn programs_wgsl_cannot_hold_are_typed_errors() {
    let Some(device) = common::device() else { return };
    let ast = store(contiguous(&[4]), load(DType::F64, 1, contiguous(&[4])));
    match device.compile(&program(&device, &ast)) {
        Err(RuntimeError::Render(e)) => {
            assert!(e.to_string().contains("f64") || e.to_string().contains("float64"), "{e}")
        }
        Err(e) => panic!("expected a render error, got {e}"),
        Ok(_) => panic!("f64 compiled"),
    }
}

#[test]
fn the_target_follows_the_adapter() {
    let Some(device) = common::device() else { return };
    let target = device.target();
    let limits = device.limits();
    assert_eq!(target.max_local_invocations, limits.max_invocations_per_workgroup as usize);
    assert_eq!(target.shared_max, limits.max_workgroup_storage_size as usize);
    assert_eq!(target.has_f16, device.features().f16);
    assert_eq!(target.vector_widths, [1, 2, 4], "16-byte loads and stores");
}

#[test]
fn vector_kernels_read_16_bytes_and_bind_buffers_smaller_than_a_vector() {
    let Some(device) = common::device() else { return };
    // out = a * 2 over 4 floats, one vec4 access each
    let ast = store(contiguous(&[4]), load(DType::F32, 1, contiguous(&[4])) * 2.0f32);
    let opts = OptMode::Given(vec![wgrad_codegen::Opt::new(wgrad_codegen::OptOps::Upcast, 0, 4)]);
    let kernel = device.compile(&compile(&ast, &device.target(), &opts, "k").unwrap().1).unwrap();
    assert!(kernel.source().contains("data1: array<vec4<f32>>"), "{}", kernel.source());
    let (out, a) =
        (device.alloc_elements(DType::F32, 4).unwrap(), device.upload(&[1.5f32, -2.0, 3.0, 4.0]).unwrap());
    let mut batch = device.batch();
    device.launch(&mut batch, &kernel, &[&out, &a], &[]).unwrap();
    device.submit(batch).unwrap();
    assert_eq!(device.read_as::<f32>(&out).unwrap(), [3.0, -4.0, 6.0, 8.0]);
    // an 8-byte buffer still binds to the vec4 array (the kernel may only read its 2 floats)
    let short = device.upload(&[0.5f32, 1.0]).unwrap();
    let mut batch = device.batch();
    device.launch(&mut batch, &kernel, &[&out, &short], &[]).unwrap();
    device.submit(batch).unwrap();
    assert_eq!(device.read_as::<f32>(&out).unwrap()[..2], [1.0, 2.0]);
}

#[test]
fn part_of_a_grid_runs_its_first_workgroups() {
    let Some(device) = common::device() else { return };
    let copy = |n: i64| store(contiguous(&[n]), load(DType::F32, 1, contiguous(&[n])));
    // 16 workgroups of 4 threads; and 70,000 one-thread workgroups, a grid the renderer
    // flattens past the 65,535 per dimension
    for (n, mode, part, written) in [
        (64, OptMode::Given(vec![Opt::new(OptOps::Local, 0, 4)]), [3, 1, 1], 12),
        (70_000, OptMode::NoOpt, [100, 1, 1], 100),
    ] {
        let p = compile(&copy(n), &device.target(), &mode, "part").unwrap().1;
        let pipelines = device.pipeline_count();
        let kernel = device.compile_uncached(&p).unwrap();
        assert_eq!(device.pipeline_count(), pipelines, "an uncached compile leaves the cache alone");
        let data: Vec<f32> = (1..=n).map(|i| i as f32).collect();
        let (out, input) =
            (device.alloc_elements(DType::F32, n as usize).unwrap(), device.upload(&data).unwrap());
        device.write(&out, 0, &vec![0u8; 4 * n as usize]).unwrap();
        let mut batch = device.batch();
        device.launch_part(&mut batch, &kernel, &[&out, &input], &[], part).unwrap();
        device.submit(batch).unwrap();
        let got = device.read_as::<f32>(&out).unwrap();
        assert_eq!(got[..written], data[..written], "n = {n}");
        assert!(got[written..].iter().all(|&x| x == 0.0), "n = {n}: only the first {written} are written");
        let mut batch = device.batch();
        let err = device.launch_part(&mut batch, &kernel, &[&out, &input], &[], [p.global_size[0] + 1, 1, 1]);
        assert!(matches!(err, Err(RuntimeError::BadLaunch { .. })), "a part larger than the grid");
    }
}

#[test]
fn a_wgsl_folder_gets_each_kernel_and_an_edited_copy_compiles_in_its_place() {
    let Some(device) = common::device() else { return };
    let dir = std::env::temp_dir().join(format!("wgrad_wgsl_dir_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    device.set_wgsl_dir(Some(dir.clone()));
    let n = 64;
    let ast = store(contiguous(&[n]), load(DType::F32, 1, contiguous(&[n])) * UOp::constant(DType::F32, 2.0));
    let p = compile(&ast, &device.target(), &OptMode::Heuristic, "E_doubled").unwrap().1;
    let run = |device: &Device| {
        let kernel = device.compile(&p).unwrap();
        let (out, x) =
            (device.alloc_elements(DType::F32, n as usize).unwrap(), device.upload(&[1.5f32; 64]).unwrap());
        let mut batch = device.batch();
        device.launch(&mut batch, &kernel, &[&out, &x], &[]).unwrap();
        device.submit(batch).unwrap();
        (kernel.source().to_string(), device.read_as::<f32>(&out).unwrap())
    };
    let (source, doubled) = run(&device);
    assert!(doubled.iter().all(|&v| v == 3.0), "{doubled:?}");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with("E_doubled_") && name.ends_with(".wgsl"), "{name}");
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), source);
    // the edit: times 3 instead of 2
    let edited = source.replace("2.0f", "3.0f");
    assert_ne!(edited, source, "{source}");
    std::fs::write(&files[0], &edited).unwrap();
    let (compiled, tripled) = run(&device);
    assert_eq!(compiled, edited);
    assert!(tripled.iter().all(|&v| v == 4.5), "{tripled:?}");
    // an unreadable entry is an error naming it, not a panic
    std::fs::remove_file(&files[0]).unwrap();
    std::fs::create_dir(&files[0]).unwrap();
    let Err(RuntimeError::WgslDir { path, .. }) = device.compile(&p) else {
        panic!("a folder read as a kernel")
    };
    assert_eq!(path, files[0]);
    device.set_wgsl_dir(None);
    assert!(device.compile(&p).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}
