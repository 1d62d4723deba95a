//! BEAM through realize (one test: the flags are process-wide): with `BEAM=1` kernels get
//! searched opts, compute the right values and land in the cache file; with `CACHELEVEL=0`
//! nothing is written; a corrupt cache file is warned about and searches go on without it.

mod common;

use common::{tensor, values};
use wgrad_engine::beam::{BeamCache, cache_key, set_cache_path, shared_cache};
use wgrad_engine::device::open_device;
use wgrad_engine::{DeviceName, ItemKind, KernelLimits, flags, lazy, realize, schedule_with};
use wgrad_ops::{Ops, UOp};

/// `x @ w` of `(n, d) @ (d, d)` as a broadcast multiply and a sum.
fn matmul(x: &UOp, w: &UOp, n: usize, d: usize) -> UOp {
    let xs = lazy::expand(&lazy::reshape(x, &[n, d, 1]), &[n, d, d]);
    let ws = lazy::expand(&lazy::reshape(w, &[1, d, d]), &[n, d, d]);
    lazy::reshape(&lazy::reduce(&(&xs * &ws), Ops::Add, &[1]), &[n, d])
}

/// The kernel ASTs of `y`'s schedule.
fn kernels(y: &UOp) -> Vec<UOp> {
    let schedule = schedule_with(std::slice::from_ref(y), KernelLimits::new(32, true, false)).unwrap();
    schedule
        .items
        .iter()
        .filter_map(|i| if let ItemKind::Kernel(a) = &i.kind { Some(a.clone()) } else { None })
        .collect()
}

#[test]
fn beam_realizes_through_the_cache() {
    let dir = std::env::temp_dir().join(format!("wgrad-beam-realize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cache.db");
    let _ = std::fs::remove_file(&path);
    set_cache_path(Some(path.clone()));
    flags::set_beam(1);
    let cpu = open_device(&DeviceName::Cpu).unwrap();
    let (n, d) = (6, 8);
    let x = tensor(&(0..n * d).map(|i| (i % 5) as f32 - 2.0).collect::<Vec<_>>(), &[n, d]);
    let w = tensor(&(0..d * d).map(|i| (i % 3) as f32).collect::<Vec<_>>(), &[d, d]);
    let y = matmul(&x, &w, n, d);
    let ast = kernels(&y).pop().unwrap();
    let got = values(&realize(&[y]).unwrap()[0]);
    let want: Vec<f32> = (0..n * d)
        .map(|o| {
            (0..d)
                .map(|j| (((o / d) * d + j) % 5) as f32 - 2.0)
                .zip((0..d).map(|j| ((j * d + o % d) % 3) as f32))
                .map(|(a, b)| a * b)
                .sum()
        })
        .collect();
    assert_eq!(got, want);
    let cache = BeamCache::open(&path).unwrap();
    assert!(cache.get(&cache_key(&ast, cpu.as_ref(), 1)).unwrap().is_some(), "the search's opts are stored");

    // CACHELEVEL=0: searched, not stored
    flags::set_cachelevel(0);
    assert!(shared_cache().is_none());
    let y2 = &matmul(&x, &w, n, d) + &x;
    let ast2 = kernels(&y2).pop().unwrap();
    let plus: Vec<f32> = want.iter().zip(values(&x)).map(|(a, b)| a + b).collect();
    assert_eq!(values(&realize(&[y2]).unwrap()[0]), plus);
    assert_eq!(cache.get(&cache_key(&ast2, cpu.as_ref(), 1)).unwrap(), None);
    flags::set_cachelevel(2);

    // a corrupt file: a warning, then searches without a cache
    let corrupt = dir.join("corrupt.db");
    std::fs::write(&corrupt, b"this is not an SQLite database, not even close; 0123456789abcdef").unwrap();
    set_cache_path(Some(corrupt.clone()));
    assert!(shared_cache().is_none());
    let y3 = &matmul(&x, &w, n, d) * &x;
    let times: Vec<f32> = want.iter().zip(values(&x)).map(|(a, b)| a * b).collect();
    assert_eq!(values(&realize(&[y3]).unwrap()[0]), times);
    assert!(std::fs::read(&corrupt).unwrap().starts_with(b"this is not an SQLite"));
    flags::set_beam(0);
    set_cache_path(None);
}
