//! Opt sweep (plain `main`): times the heuristics' kernel against families of hand-listed
//! alternatives for the shapes the heuristics plan for (row, column and softmax reductions,
//! elementwise, GEMM, convolutions), with vector loads where the lanes allow, on the wgpu
//! device; prints the heuristics' time and rank beside the five fastest, then a summary of the
//! heuristics' figures against issue 16's targets. A measuring tool for tuning the heuristics,
//! not a test: `cargo bench -p wgrad-conformance --bench sweep [-- NAME-FILTER]`.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use wgrad_codegen::{Opt, OptMode, OptOps, compile};
use wgrad_conformance::random_ast::Case;
use wgrad_conformance::shapes::{conv, exp_sum, matmul, normalize, reduce, scale_shift, sum};
use wgrad_ops::Ops;
use wgrad_runtime_wgpu::{Buffer, Device, Result};

use OptOps::{Group, Local, Unroll, Upcast};

fn o(op: OptOps, axis: usize, arg: usize) -> Opt {
    Opt::new(op, axis, arg)
}

/// A workload: its kernel, what one run counts (bytes or flops) and its candidate opt lists.
struct Sweep {
    name: String,
    case: Case,
    work: f64,
    unit: &'static str,
    candidates: Vec<Vec<Opt>>,
}

/// What one sweep found: the heuristics' time (none when refused) and the fastest candidate's.
struct Found {
    name: String,
    work: f64,
    unit: &'static str,
    heuristic: Option<Duration>,
    best: Duration,
}

fn reductions() -> Vec<Vec<Opt>> {
    let mut c = vec![vec![o(Unroll, 0, 4), o(Local, 0, 32)]];
    for g in [32, 64, 128, 256, 512, 1024] {
        c.push(vec![o(Group, 0, g)]);
        for u in [2, 4, 8] {
            c.push(vec![o(Unroll, 0, u), o(Group, 0, g)]);
        }
    }
    c
}

fn columns() -> Vec<Vec<Opt>> {
    let mut c = vec![];
    for l in [4, 8, 16, 32, 64] {
        for g in [1, 8, 16, 32, 64, 128] {
            let mut opts = vec![o(Local, 0, l)];
            if g > 1 {
                opts.push(o(Group, 0, g));
            }
            c.push(opts.clone());
            c.push([vec![o(Upcast, 0, 4)], opts].concat());
        }
    }
    c
}

fn elementwise() -> Vec<Vec<Opt>> {
    let mut c = vec![];
    for l in [64, 128, 256, 512, 1024] {
        c.push(vec![o(Local, 0, l)]);
        for u in [2, 4, 8] {
            c.push(vec![o(Upcast, 0, u), o(Local, 0, l)]);
        }
    }
    c
}

/// GEMM tiles: UPCAST m, n; LOCAL n then m; UNROLL k.
/// Softmax's normalize, a row-broadcast elementwise kernel: UPCAST along the row, then
/// workgroups with the row (contiguous) or the column axis fastest.
fn row_broadcast() -> Vec<Vec<Opt>> {
    let mut c = vec![];
    for u in [1, 2, 4, 8] {
        let up = if u > 1 { vec![o(Upcast, 1, u)] } else { vec![] };
        for (lc, lr) in [(16, 16), (32, 8), (64, 4), (128, 2), (256, 1), (64, 1), (128, 1), (32, 4)] {
            let mut row_fastest = up.clone();
            row_fastest.push(o(Local, 1, lc));
            if lr > 1 {
                row_fastest.push(o(Local, 0, lr));
                c.push([up.clone(), vec![o(Local, 0, lr), o(Local, 1, lc)]].concat());
            }
            c.push(row_fastest);
        }
    }
    c
}

fn gemm_tiles() -> Vec<Vec<Opt>> {
    let mut c = vec![];
    for (um, un) in [(4, 4), (4, 8), (8, 4), (8, 8)] {
        for (ln, lm) in [(16, 16), (16, 8), (8, 16), (8, 8), (32, 8), (16, 4), (32, 4), (8, 4)] {
            for u in [4, 8] {
                c.push(vec![
                    o(Upcast, 0, um),
                    o(Upcast, 1, un),
                    o(Unroll, 0, u),
                    o(Local, 1, ln),
                    o(Local, 0, lm),
                ]);
            }
        }
    }
    c
}

/// Convolution tiles over (b, co, oy, ox | ci, ky, kx): UPCAST on an `m` axis (b, oy or ox) and
/// on co, kx (reduce axis `kx`: 1 when ci = 1 left the kernel) unrolled whole, then locals on co,
/// the `m` axis and b; and the same tiles with the input channels split over a group.
fn conv_tiles(co: usize, o_: usize, kx: usize) -> Vec<Vec<Opt>> {
    let mut c = vec![];
    if kx == 2 {
        for g in [2, 4, 8] {
            for (um, un, lb, lc) in [(8, 8, 8, 4), (4, 8, 8, 4), (8, 4, 4, 8), (4, 4, 8, 4)] {
                if !co.is_multiple_of(un) || co == un {
                    continue;
                }
                c.push(vec![
                    o(Upcast, 0, um),
                    o(Upcast, 1, un),
                    o(Unroll, 2, 0),
                    o(Local, 1, lc),
                    o(Local, 0, lb),
                    o(Group, 0, g),
                ]);
            }
        }
    }
    for (m, msize) in [(0usize, 512usize), (2, o_), (3, o_)] {
        for um in [2, 4, 8] {
            for un in [4, 8] {
                if !msize.is_multiple_of(um) || msize == um || !co.is_multiple_of(un) || co == un {
                    continue;
                }
                for (ln, lm, lb) in [
                    (4, 8, 8),
                    (4, 4, 16),
                    (2, 8, 16),
                    (8, 4, 8),
                    (4, 16, 4),
                    (1, 16, 16),
                    (4, 8, 1),
                    (8, 16, 1),
                    (2, 4, 4),
                ] {
                    let mut opts = vec![o(Upcast, m, um), o(Upcast, 1, un), o(Unroll, kx, 0)];
                    for (axis, l) in [(1, ln), (m, lm), (0, lb)] {
                        if l > 1 {
                            opts.push(o(Local, axis, l));
                        }
                    }
                    c.push(opts);
                }
            }
        }
    }
    c
}

fn sweeps() -> Vec<Sweep> {
    let (rows, cols) = (4096, 8192);
    let bytes = (rows * cols * 4) as f64;
    let gemm = |n: usize| Sweep {
        name: format!("gemm {n}"),
        case: matmul(n, n, n),
        work: 2.0 * (n as f64).powi(3),
        unit: "TFLOP/s",
        candidates: gemm_tiles(),
    };
    let conv_sweep = |b: usize, ci: usize, co: usize, hw: usize, k: usize| {
        let o_ = hw - k + 1;
        Sweep {
            name: format!("conv b{b} ci{ci} co{co} {hw}x{hw} k{k}"),
            case: conv(b, ci, co, hw, k),
            work: 2.0 * (b * co * o_ * o_ * ci * k * k) as f64,
            unit: "TFLOP/s",
            candidates: conv_tiles(co, o_, if ci == 1 { 1 } else { 2 }),
        }
    };
    vec![
        Sweep {
            name: "row sum 4096x8192".into(),
            case: sum(rows, cols, 1),
            work: bytes,
            unit: "GB/s",
            candidates: reductions(),
        },
        Sweep {
            name: "column sum 4096x8192".into(),
            case: sum(rows, cols, 0),
            work: bytes,
            unit: "GB/s",
            candidates: columns(),
        },
        Sweep {
            name: "softmax max 4096x8192".into(),
            case: reduce(rows, cols, 1, Ops::Max),
            work: bytes,
            unit: "GB/s",
            candidates: reductions(),
        },
        Sweep {
            name: "softmax exp-sum 4096x8192".into(),
            case: exp_sum(rows, cols),
            work: bytes,
            unit: "GB/s",
            candidates: reductions(),
        },
        Sweep {
            name: "softmax normalize 4096x8192".into(),
            case: normalize(rows, cols),
            work: 2.0 * bytes,
            unit: "GB/s",
            candidates: row_broadcast(),
        },
        Sweep {
            name: "x*2+1 32M".into(),
            case: scale_shift(32 << 20),
            work: 8.0 * (32 << 20) as f64,
            unit: "GB/s",
            candidates: elementwise(),
        },
        gemm(1024),
        gemm(4096),
        conv_sweep(512, 1, 32, 28, 5),
        conv_sweep(512, 32, 32, 24, 5),
        conv_sweep(512, 32, 64, 10, 3),
        conv_sweep(512, 64, 64, 8, 3),
    ]
}

fn run(device: &Device, sweep: &Sweep) -> Result<Found> {
    let buffers: Vec<Buffer> = sweep
        .case
        .buffers
        .iter()
        .enumerate()
        .map(|(i, &(dt, n))| {
            let buf = device.alloc_elements(dt, n)?;
            if i >= sweep.case.outputs {
                let data: Vec<f32> = (0..n).map(|j| ((j % 7) as f32 - 3.0) / 8.0).collect();
                device.write(&buf, 0, bytemuck::cast_slice(&data))?;
            }
            Ok(buf)
        })
        .collect::<Result<_>>()?;
    let bound: Vec<&Buffer> = buffers.iter().collect();
    let target = device.target();
    let mut modes = vec![("heuristic".to_owned(), OptMode::Heuristic)];
    modes.extend(sweep.candidates.iter().map(|c| (format!("{c:?}"), OptMode::Given(c.clone()))));
    let mut results: Vec<(Duration, String, String)> = vec![];
    for (label, mode) in modes {
        let Ok((k, program)) = compile(&sweep.case.ast, &target, &mode, "sweep") else { continue };
        let kernel = device.compile(&program)?;
        let t = device.time_kernel(&kernel, &bound, 5)?;
        let opts =
            if label == "heuristic" { format!("heuristic {}", k.describe_opts()) } else { k.describe_opts() };
        results.push((t, opts, k.describe()));
    }
    results.sort();
    println!("== {} ({} candidates)", sweep.name, results.len());
    let heuristic = results.iter().position(|r| r.1.starts_with("heuristic"));
    for (rank, (t, opts, shape)) in results.iter().enumerate() {
        if rank < 5 || Some(rank) == heuristic {
            let rate = rate(sweep.work, sweep.unit, *t);
            println!(
                "  #{rank:<3} {rate:>9.2} {} {:>9.1} us  {shape}  {opts}",
                sweep.unit,
                t.as_secs_f64() * 1e6
            );
        }
    }
    Ok(Found {
        name: sweep.name.clone(),
        work: sweep.work,
        unit: sweep.unit,
        heuristic: heuristic.map(|h| results[h].0),
        best: results.first().map(|r| r.0).unwrap_or_default(),
    })
}

/// `work` per run at `t`, in `unit` (GB/s, else TFLOP/s).
fn rate(work: f64, unit: &str, t: Duration) -> f64 {
    work / t.as_secs_f64() / if unit == "GB/s" { 1e9 } else { 1e12 }
}

/// Issue 16's target for a workload, in its unit.
fn target(name: &str) -> Option<f64> {
    match name {
        "row sum 4096x8192" => Some(3000.0),
        "x*2+1 32M" => Some(3500.0),
        "gemm 4096" => Some(20.0),
        "gemm 1024" => Some(12.0),
        _ => None,
    }
}

/// The heuristics' figure, the best candidate's and the target, one line a workload; and
/// softmax's three kernels together, counted as issue 16 does (8 bytes an element).
fn summary(found: &[Found]) {
    println!("\n== summary: the heuristics' kernels (best candidate in brackets)");
    for f in found {
        let heuristic = f.heuristic.map_or("refused".to_string(), |t| {
            format!("{:>9.2} {} {:>9.1} us", rate(f.work, f.unit, t), f.unit, t.as_secs_f64() * 1e6)
        });
        let best = rate(f.work, f.unit, f.best);
        let target = target(&f.name).map_or(String::new(), |t| format!("  target >= {t}"));
        println!("  {:<36} {heuristic}  [{best:.2}]{target}", f.name);
    }
    let softmax: Vec<&Found> = found.iter().filter(|f| f.name.starts_with("softmax")).collect();
    if softmax.len() == 3 {
        let time = |pick: &dyn Fn(&Found) -> Option<Duration>| -> Option<f64> {
            softmax.iter().map(|f| pick(f).map(|t| t.as_secs_f64())).sum()
        };
        let bytes = 8.0 * 4096.0 * 8192.0;
        let heuristic = time(&|f| f.heuristic);
        let best = time(&|f| Some(f.best));
        if let (Some(h), Some(b)) = (heuristic, best) {
            println!(
                "  {:<36} {:>9.2} GB/s {:>9.1} us  [{:.2}]  target >= 2000 (8 bytes an element)",
                "softmax 4096x8192 (3 kernels)",
                bytes / h / 1e9,
                h * 1e6,
                bytes / b / 1e9
            );
        }
    }
}

/// Keeps the GPU busy for about a second so its clocks are up before anything is timed (the
/// first kernel timed on an idle H200 ran 5x slow).
fn warm_up(device: &Device) -> Result<()> {
    let case = matmul(2048, 2048, 2048);
    let (_, program) = compile(&case.ast, &device.target(), &OptMode::Heuristic, "warm_up").expect("codegen");
    let kernel = device.compile(&program)?;
    let buffers: Vec<Buffer> =
        case.buffers.iter().map(|&(dt, n)| device.alloc_elements(dt, n)).collect::<Result<_>>()?;
    device.time_kernel(&kernel, &buffers.iter().collect::<Vec<_>>(), 200)?;
    Ok(())
}

fn main() -> Result<()> {
    let device = Device::new()?;
    println!("adapter: {}", device.adapter().name);
    warm_up(&device)?;
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let mut found = vec![];
    for sweep in sweeps() {
        if filter.is_empty() || filter.iter().any(|f| sweep.name.contains(f.as_str())) {
            found.push(run(&device, &sweep)?);
        }
    }
    summary(&found);
    Ok(())
}
