//! Hash-consing: equal UOps are one allocation, dropped graphs leave the table, and threads
//! intern concurrently. Tests here share the global table, so they run one at a time.

use std::sync::Mutex;
use std::thread;

use wgrad_ops::{UOp, live_uops};

static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn equal_structure_is_the_same_node() {
    let _g = SERIAL.lock().unwrap();
    let a = UOp::variable("hc_a", 0, 9) * 4 + 1;
    let b = UOp::variable("hc_a", 0, 9) * 4 + 1;
    assert_eq!(a, b);
    assert_eq!(a.structural_hash(), b.structural_hash());
    assert_ne!(a, UOp::variable("hc_a", 0, 9) * 4 + 2);
    // -0.0 and 0.0 are different constants, NaN is one constant
    let z = UOp::constant(wgrad_dtype::DType::F32, 0.0);
    assert_ne!(z, UOp::constant(wgrad_dtype::DType::F32, -0.0));
    assert_eq!(
        UOp::constant(wgrad_dtype::DType::F32, f64::NAN),
        UOp::constant(wgrad_dtype::DType::F32, f64::NAN)
    );
}

#[test]
fn dropping_a_graph_frees_its_nodes() {
    let _g = SERIAL.lock().unwrap();
    let before = live_uops();
    {
        let x = UOp::variable("hc_drop", 0, 100);
        let mut e = x.clone();
        for i in 0..1000 {
            e = (&e + &x) * (i % 7 + 2);
        }
        assert!(live_uops() >= before + 1000);
        let _ = e.simplify();
    }
    assert_eq!(live_uops(), before);
}

#[test]
fn deep_chains_drop_without_recursion() {
    let _g = SERIAL.lock().unwrap();
    let before = live_uops();
    thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let mut e = UOp::variable("hc_deep", 0, 1);
            for _ in 0..100_000 {
                e = e + 1;
            }
            drop(e);
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(live_uops(), before);
}

#[test]
fn threads_intern_concurrently() {
    let _g = SERIAL.lock().unwrap();
    let before = live_uops();
    let results: Vec<Vec<UOp>> = (0..8)
        .map(|_| {
            thread::spawn(|| {
                (0..2000)
                    .map(|i| {
                        let x = UOp::variable("hc_thr", 0, 50);
                        (&x * (i % 50)) + (i % 13)
                    })
                    .collect()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    for r in &results[1..] {
        assert!(r.iter().zip(&results[0]).all(|(a, b)| a == b));
    }
    drop(results);
    assert_eq!(live_uops(), before);
}
