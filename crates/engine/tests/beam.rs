//! BEAM search and its on-disk cache: the search picks correct opts on every device (the
//! CPU interpreter, and wgpu on lavapipe where it is installed), a second ask is a cache
//! hit, corrupt and foreign cache files are refused untouched, several processes share one
//! file, and the cache key is a stable text.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wgrad_codegen::hand_coded_optimizations;
use wgrad_codegen::{AxisKind, Kernel, Opt, OptMode, OptOps, Target, compile};
use wgrad_dtype::DType;
use wgrad_engine::beam::{
    ACTIONS, BeamCache, Origin, SEARCH_REVISION, beam, cache_key, fnv1a, kernel_actions, neighbours,
};
use wgrad_engine::device::{available_devices, open_device};
use wgrad_engine::{Backend, EngineError, Launch};
use wgrad_ops::{Ops, UOp};
use wgrad_shape::{ShapeTracker, Sint, View};

/// A fresh path for a cache file of this test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wgrad-beam-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.db"));
    let _ = std::fs::remove_file(&path);
    path
}

fn load(slot: i64, shape: &[i64], strides: &[i64]) -> UOp {
    let ints = |xs: &[i64]| xs.iter().map(|&x| Sint::int(x)).collect::<Vec<_>>();
    let view = View::new(&ints(shape), &ints(strides), Sint::int(0), None).unwrap();
    UOp::load(DType::F32, [UOp::define_global(DType::F32, slot), UOp::view(ShapeTracker::from_view(view))])
}

/// The kernel AST of `C (m, n) = A (m, k) @ B (k, n)`.
fn matmul(m: i64, n: i64, k: i64) -> UOp {
    let (a, b) = (load(1, &[m, n, k], &[k, 0, 1]), load(2, &[m, n, k], &[0, 1, n]));
    let out = ShapeTracker::from_shape(&[Sint::int(m), Sint::int(n), Sint::int(1)]).unwrap();
    let value = (a * b).reduce_axis(Ops::Add, &[2]);
    UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), UOp::view(out), value])])
}

/// Runs `ast` compiled with `mode` on `backend` for A = i % 7 - 3, B = i % 5 - 2 and
/// returns C.
fn run(backend: &dyn Backend, ast: &UOp, mode: &OptMode, (m, n, k): (usize, usize, usize)) -> Vec<f32> {
    let (_, program) = compile(ast, backend.target(), mode, "k").unwrap();
    let program = backend.compile(&program).unwrap();
    let upload = |values: Vec<f32>| {
        let buf = backend.alloc(DType::F32, values.len()).unwrap();
        backend.copy_in(&buf, &values.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
        buf
    };
    let out = backend.alloc(DType::F32, m * n).unwrap();
    let a = upload((0..m * k).map(|i| (i % 7) as f32 - 3.0).collect());
    let b = upload((0..k * n).map(|i| (i % 5) as f32 - 2.0).collect());
    backend.run(&[Launch { program: &program, buffers: vec![&out, &a, &b], vars: vec![] }], false).unwrap();
    let bytes = backend.copy_out(&out).unwrap();
    bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn a_small_gemm_gets_correct_opts_searched_once_on_every_device() {
    let (m, n, k) = (4, 8, 8);
    let ast = matmul(m as i64, n as i64, k as i64);
    let want: Vec<f32> = (0..m * n)
        .map(|o| {
            (0..k)
                .map(|j| ((o / n * k + j) % 7) as f32 - 3.0)
                .zip((0..k).map(|j| ((j * n + o % n) % 5) as f32 - 2.0))
                .map(|(a, b)| a * b)
                .sum()
        })
        .collect();
    for device in available_devices() {
        let backend = open_device(&device).unwrap();
        let path = scratch(&format!("gemm-{device}"));
        let cache = BeamCache::open(&path).unwrap();
        let found = beam(&ast, backend.as_ref(), 2, "r_4_8_8", Some(&cache)).unwrap();
        let Origin::Search(searched) = &found.origin else { panic!("{device}: a new cache cannot hit") };
        assert!(searched.rounds >= 1 && searched.timed > 0, "{device}: {searched:?}");
        assert_eq!(searched.mismatch, None, "{device}");
        assert!(searched.time <= searched.default_time, "{device}: the default opts are kept unless beaten");
        assert_eq!(found.opts, searched.opts);
        assert_eq!(
            run(backend.as_ref(), &ast, &OptMode::Given(found.opts.clone()), (m, n, k)),
            want,
            "{device}"
        );
        assert!(found.summary("r_4_8_8").starts_with("beam r_4_8_8: searched"), "{}", found.summary("x"));

        let again = beam(&ast, backend.as_ref(), 2, "r_4_8_8", Some(&cache)).unwrap();
        assert!(matches!(again.origin, Origin::Cache { .. }), "{device}: the second ask is a hit");
        assert_eq!(again.opts, found.opts);
        assert!(again.summary("r_4_8_8").contains("from the cache"), "DEBUG=2 says so");
        // another process (here: another connection) reads what was written
        let reopened = BeamCache::open(&path).unwrap();
        assert_eq!(reopened.get(&cache_key(&ast, backend.as_ref(), 2)).unwrap(), Some(found.opts.clone()));
        assert_eq!(
            reopened.get(&cache_key(&ast, backend.as_ref(), 3)).unwrap(),
            None,
            "the width is in the key"
        );
    }
}

#[test]
fn candidates_are_one_legal_action_away_within_the_limits() {
    let base = Kernel::new(&matmul(64, 64, 64), Target::generic_gpu()).unwrap();
    let next = kernel_actions(&base);
    assert!(next.len() > 20, "{}", next.len());
    for k in &next {
        assert_eq!(k.applied_opts().len(), 1);
        assert!(ACTIONS.contains(&k.applied_opts()[0]));
    }
    // deeper: no candidate exceeds 256 registers or 1024 threads
    let deeper: Vec<Kernel> =
        next.iter().take(12).flat_map(kernel_actions).flat_map(|k| kernel_actions(&k)).collect();
    for k in &deeper {
        let size = |kinds: &[AxisKind]| -> i64 {
            k.axis_kinds()
                .iter()
                .zip(k.full_shape())
                .filter(|(a, _)| kinds.contains(a))
                .map(|(_, s)| s.vmax())
                .product()
        };
        assert!(size(&[AxisKind::Upcast, AxisKind::Unroll]) <= 256, "{}", k.describe());
        assert!(size(&[AxisKind::Local, AxisKind::GroupReduce]) <= 1024, "{}", k.describe());
    }
    // UPCAST 0 and UPCAST 4 of an axis of 4 are one kernel: only the 0 is tried
    let small = Kernel::new(&matmul(4, 8, 64), Target::generic_gpu()).unwrap();
    let first: Vec<Opt> = kernel_actions(&small).iter().map(|k| k.applied_opts()[0]).collect();
    assert!(
        first.contains(&Opt::new(OptOps::Upcast, 0, 0)) && first.contains(&Opt::new(OptOps::Upcast, 1, 4))
    );
    assert!(!first.contains(&Opt::new(OptOps::Upcast, 0, 4)), "{first:?}");
    let every_op: Vec<OptOps> = ACTIONS.iter().map(|o| o.op).collect();
    for op in [
        OptOps::Upcast,
        OptOps::Unroll,
        OptOps::Local,
        OptOps::Group,
        OptOps::Grouptop,
        OptOps::Padto,
        OptOps::Swap,
        OptOps::Nolocals,
    ] {
        assert!(every_op.contains(&op), "{op}");
    }
}

#[test]
fn refinement_changes_one_opt_of_the_hand_coded_plan() {
    let target = Target {
        max_local_size: vec![1024, 1024, 64],
        max_local_invocations: 1024,
        shared_max: 49152,
        ..Target::generic_gpu()
    };
    let base = Kernel::new(&matmul(1024, 1024, 1024), target).unwrap();
    let mut default = base.clone();
    hand_coded_optimizations(&mut default);
    let plan = default.applied_opts().to_vec();
    assert!(plan.len() >= 6 && plan.last() == Some(&Opt::double_stage()), "a staged register tile: {plan:?}");
    let next = neighbours(&base, &plan);
    let lists: Vec<Vec<Opt>> = next.iter().map(|k| k.applied_opts().to_vec()).collect();
    assert!(lists.len() > 10, "{}", lists.len());
    for (i, list) in lists.iter().enumerate() {
        assert_ne!(list, &plan, "the plan itself is not a neighbour");
        assert!(!lists[..i].contains(list), "each list once: {list:?}");
        let differing = list.iter().zip(&plan).filter(|(a, b)| a != b).count();
        let dropped = plan.len() - list.len();
        assert!(
            (dropped == 0 && differing == 1)
                || (dropped == 1 && plan.iter().filter(|o| !list.contains(o)).count() <= 1),
            "one change: {list:?} from {plan:?}"
        );
    }
    // the first upcast halved, and one block instead of two
    let halved = Opt { arg: plan[0].arg / 2, ..plan[0] };
    assert!(lists.iter().any(|l| l[0] == halved && l[1..] == plan[1..]), "{lists:?}");
    let one_block: Vec<Opt> = plan[..plan.len() - 1].iter().copied().chain([Opt::stage()]).collect();
    assert!(lists.contains(&one_block));
    // a list that breaks a later opt (an axis used up) is no candidate
    assert!(next.iter().all(|k| k.applied_opts().len() + 1 >= plan.len()));
}

fn refusal(path: &Path) -> String {
    match BeamCache::open(path) {
        Err(e @ EngineError::Cache { .. }) => e.to_string(),
        Err(e) => panic!("expected a cache refusal, got {e}"),
        Ok(_) => panic!("{} was accepted", path.display()),
    }
}

#[test]
fn corrupt_and_foreign_files_are_refused_and_left_alone() {
    let garbage = scratch("garbage");
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(&garbage, &bytes).unwrap();
    assert!(refusal(&garbage).contains("not a database"), "{}", refusal(&garbage));
    assert_eq!(std::fs::read(&garbage).unwrap(), bytes, "a refused file is not written");

    let foreign = scratch("foreign");
    let other = rusqlite::Connection::open(&foreign).unwrap();
    other.execute_batch("CREATE TABLE cache_beam_search (key TEXT, val BLOB)").unwrap();
    drop(other);
    let before = std::fs::read(&foreign).unwrap();
    assert!(refusal(&foreign).contains("another program's database"), "{}", refusal(&foreign));
    assert_eq!(std::fs::read(&foreign).unwrap(), before);

    let newer = scratch("newer");
    drop(BeamCache::open(&newer).unwrap());
    rusqlite::Connection::open(&newer).unwrap().pragma_update(None, "user_version", 99).unwrap();
    assert!(refusal(&newer).contains("schema version 99"), "{}", refusal(&newer));

    // a directory where the file should be
    let dir = scratch("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    refusal(&dir);
}

#[test]
fn an_unreadable_entry_is_searched_again_and_replaced() {
    let backend = open_device(&wgrad_engine::DeviceName::Cpu).unwrap();
    let ast = matmul(4, 4, 4);
    let path = scratch("unreadable");
    let cache = BeamCache::open(&path).unwrap();
    let key = cache_key(&ast, backend.as_ref(), 1);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO beam VALUES (?1, ?2, 'Opt(op=WARP, axis=1)')",
        rusqlite::params![fnv1a(key.as_bytes()) as i64, key],
    )
    .unwrap();
    assert!(cache.get(&key).is_err());
    let found = beam(&ast, backend.as_ref(), 1, "r_4_4_4", Some(&cache)).unwrap();
    assert!(matches!(found.origin, Origin::Search(_)));
    assert_eq!(cache.get(&key).unwrap(), Some(found.opts));
    // opts that no longer apply (an older build's) are a miss too
    conn.execute("UPDATE beam SET opts = 'Opt(op=UPCAST, axis=9, arg=4)'", []).unwrap();
    assert!(matches!(
        beam(&ast, backend.as_ref(), 1, "r_4_4_4", Some(&cache)).unwrap().origin,
        Origin::Search(_)
    ));
}

#[test]
fn keys_are_stable_text() {
    assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    let backend = open_device(&wgrad_engine::DeviceName::Cpu).unwrap();
    let key = cache_key(&matmul(8, 8, 8), backend.as_ref(), 2);
    assert_eq!(key, cache_key(&matmul(8, 8, 8), backend.as_ref(), 2));
    assert_ne!(key, cache_key(&matmul(8, 8, 4), backend.as_ref(), 2));
    let head = format!("wgrad {} search {SEARCH_REVISION} BEAM=2\nCPU\n", env!("CARGO_PKG_VERSION"));
    assert!(key.starts_with(&head), "{key}");
    assert!(key.contains("REDUCE_AXIS") && key.contains("DEFINE_GLOBAL"), "{key}");
}

/// With `WGRAD_BEAM_WORKER` naming a cache file and an id, writes and reads back 40 rows;
/// run by `several_processes_share_one_file` as child processes.
#[test]
#[ignore = "a child process of several_processes_share_one_file"]
fn cache_worker() {
    let Ok(task) = std::env::var("WGRAD_BEAM_WORKER") else { return };
    let (path, id) = task.rsplit_once('|').unwrap();
    let cache = BeamCache::open(Path::new(path)).unwrap();
    let opts = [Opt::new(OptOps::Upcast, 0, 4), Opt::nolocals()];
    for i in 0..40 {
        cache.put(&format!("worker {id} key {i}"), &opts[..i % 3]).unwrap();
    }
    for i in 0..40 {
        assert_eq!(cache.get(&format!("worker {id} key {i}")).unwrap().as_deref(), Some(&opts[..i % 3]));
    }
}

#[test]
fn several_processes_share_one_file() {
    let path = scratch("shared");
    let children: Vec<_> = (0..4)
        .map(|id| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "cache_worker", "--ignored", "--nocapture", "--test-threads=1"])
                .env("WGRAD_BEAM_WORKER", format!("{}|{id}", path.display()))
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect::<Vec<_>>();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    }
    let cache = BeamCache::open(&path).unwrap();
    for id in 0..4 {
        assert!(cache.get(&format!("worker {id} key 39")).unwrap().is_some());
    }
}

#[test]
fn targets_with_tensor_cores_add_tc_actions_for_half_matmuls() {
    use wgrad_codegen::TensorCoreShape;
    let half = |slot: i64, strides: &[i64]| {
        let ints = |xs: &[i64]| xs.iter().map(|&x| Sint::int(x)).collect::<Vec<_>>();
        let view = View::new(&ints(&[64, 64, 64]), &ints(strides), Sint::int(0), None).unwrap();
        UOp::load(
            DType::F16,
            [UOp::define_global(DType::F16, slot), UOp::view(ShapeTracker::from_view(view))],
        )
    };
    let value = (half(1, &[64, 0, 1]) * half(2, &[0, 1, 64])).cast(DType::F32).reduce_axis(Ops::Add, &[2]);
    let out = ShapeTracker::from_shape(&[Sint::int(64), Sint::int(64), Sint::int(1)]).unwrap();
    let ast = UOp::sink([UOp::store([UOp::define_global(DType::F32, 0), UOp::view(out), value])]);
    let tc = TensorCoreShape { dims: (16, 16, 16), dtype_in: DType::F16, dtype_out: DType::F32 };
    let target = Target { tensor_cores: vec![tc], ..Target::generic_gpu() };
    let tc_opts = |target: &Target| {
        let k = Kernel::new(&ast, target.clone()).unwrap();
        let next = kernel_actions(&k);
        let tc: Vec<Kernel> = next.into_iter().filter(|k| k.tensor_core().is_some()).collect();
        // a TC kernel's tile axes do not count against the register limit: it can grow
        let deeper = tc.iter().flat_map(kernel_actions).count();
        (tc.iter().map(|k| k.describe_opts()).collect::<Vec<_>>(), deeper)
    };
    let (opts, deeper) = tc_opts(&target);
    assert_eq!(opts, ["[Opt(op=TC, axis=0, arg=0)]"]);
    assert!(deeper > 0, "no UPCAST after TC");
    assert_eq!(tc_opts(&Target::generic_gpu()).0, Vec::<String>::new());
}
