//! Benchmark: symbolic rewrite of a graph of over 10,000 index-expression nodes.
//! Run with `cargo bench -p wgrad-ops`; prints the node count and the best time.

use std::time::Instant;

use wgrad_ops::{UOp, graph_rewrite, symbolic};

/// Index expressions shaped like lowered views: sums of scaled loop indices under `//` and `%`.
fn graph() -> UOp {
    let g = UOp::special("gidx0", 64);
    let l = UOp::special("lidx0", 16);
    let r = UOp::range(&UOp::index_const(32), 0);
    let a = UOp::variable("a", 1, 128);
    let outs: Vec<UOp> = (0..1200i64)
        .map(|i| {
            let flat = (&g * 16 + &l) * (i % 5 + 1) + &r * 4 + (&a + i % 3) * 2 + i;
            let idx = flat.idiv(4) % (i % 9 + 8) + (&flat % 4) * (i % 4 + 1);
            idx.cmp_lt(i + 100).where_(&idx, &(&idx - &r))
        })
        .collect();
    UOp::sink(outs)
}

fn main() {
    let sink = graph();
    let nodes = sink.toposort().len();
    let pm = symbolic();
    let mut best = f64::INFINITY;
    let mut out_nodes = 0;
    for _ in 0..10 {
        let start = Instant::now();
        let out = graph_rewrite(&sink, pm, &mut ());
        best = best.min(start.elapsed().as_secs_f64() * 1e3);
        out_nodes = out.toposort().len();
    }
    #[allow(clippy::print_stdout)]
    {
        println!("symbolic rewrite: {nodes} nodes -> {out_nodes} nodes in {best:.2} ms (best of 10)");
    }
}
