//! `cargo xtask fuzz [--graphs N] [--seed S] [--max-ops M] [--workers W] [--show]`: random Tensor
//! programs on wgpu against the CPU interpreter, forward and backward. Prints each failure
//! minimized as a Rust reproducer, then one summary line; exits non-zero when anything failed.
//! Program `i` is generated from seed `S + i`, so `--seed 885 --graphs 1` runs seed 885 alone;
//! `--show` prints every program run (not minimized) with its verdict.

#![allow(clippy::print_stdout)]

use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use wgrad_conformance::graph_fuzz::{Config, check, fuzz, generate};

const USAGE: &str = "usage: fuzz_graphs [--graphs N] [--seed S] [--max-ops M] [--workers W] [--show]";

/// The run asked for, and whether to show every program.
fn parse() -> Result<(Config, bool), String> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut config = Config { graphs: 1000, seed: 0, max_ops: 8, workers };
    let mut show = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--show" {
            show = true;
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = value.parse::<u64>().map_err(|_| format!("{flag} {value}: not a number\n{USAGE}"))?;
        match flag.as_str() {
            "--graphs" => config.graphs = number as usize,
            "--seed" => config.seed = number,
            "--max-ops" => config.max_ops = number as usize,
            "--workers" => config.workers = number as usize,
            _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
        }
    }
    Ok((config, show))
}

/// Prints each program of `config` with its verdict, one after another, as reproducers;
/// false when one failed.
fn show(config: &Config) -> bool {
    let mut passed = true;
    for i in 0..config.graphs as u64 {
        let seed = config.seed.wrapping_add(i);
        let program = generate(seed, config.max_ops);
        let verdict = check(&program);
        passed &= !verdict.is_failure();
        println!("// seed {seed}: {verdict:?}\n{program}");
    }
    passed
}

fn main() -> ExitCode {
    let (config, show_all) = match parse() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if show_all {
        return if show(&config) { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    let bar = ProgressBar::new(config.graphs as u64);
    let style =
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {per_sec} ETA {eta} {msg}");
    bar.set_style(style.unwrap_or_else(|_| ProgressStyle::default_bar()));
    let start = std::time::Instant::now();
    let summary = fuzz(&config, &|s| {
        bar.set_position(s.graphs as u64);
        bar.set_message(format!("{} mismatches, {} panics", s.mismatches, s.panics));
    });
    bar.finish_and_clear();
    for found in &summary.found {
        println!("// seed {}: {:?}\n{}", found.seed, found.verdict, found.program);
    }
    println!(
        "{summary} (seed {}, {} workers, {:.1} s)",
        config.seed,
        config.workers,
        start.elapsed().as_secs_f64()
    );
    if summary.mismatches + summary.panics == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
