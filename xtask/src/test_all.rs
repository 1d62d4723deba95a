//! `cargo xtask test-all`: setup, formatting, clippy with warnings denied, layering, and every
//! test of every crate, then the build directory's size and the disk's free space, ending in
//! one summary line (`test-all: N passed, N failed, N skipped`).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Totals parsed from cargo test's `test result:` lines.
#[derive(Default)]
struct Counts {
    passed: u64,
    failed: u64,
    ignored: u64,
}

impl Counts {
    /// Adds the numbers of a line like `test result: ok. 5 passed; 0 failed; 1 ignored; ...`.
    fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else { return };
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(kind), Some(n)) = (words.next(), words.next()) else { continue };
            let Ok(n) = n.parse::<u64>() else { continue };
            match kind {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }
}

/// Runs `cmd`, echoing its output, and returns success plus the test counts it printed.
fn run_streaming(mut cmd: Command) -> (bool, Counts) {
    let mut counts = Counts::default();
    let mut child = match cmd.stdout(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => {
            println!("cannot start {cmd:?}: {e}");
            return (false, counts);
        }
    };
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            counts.add_line(&line);
            println!("{line}");
        }
    }
    (child.wait().is_ok_and(|s| s.success()), counts)
}

fn step(name: &str, results: &mut Vec<(String, bool, f64)>, f: impl FnOnce() -> bool) -> bool {
    println!("\n== {name}");
    let t = Instant::now();
    let ok = f();
    results.push((name.to_string(), ok, t.elapsed().as_secs_f64()));
    ok
}

/// Prints the build directory's size and the disk's free space (`du`, `df`), where the
/// machine has them: a CI link that died of a full disk (a bus error in `ld`) shows here.
fn disk_report() {
    println!("\n== disk");
    let root = crate::workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into);
    let du = Command::new("du").arg("-sh").arg(&target).output();
    let df = Command::new("df").arg("-h").arg(&root).output();
    for (tool, out) in [("du", du), ("df", df)] {
        match out {
            Ok(out) => print!("{}", String::from_utf8_lossy(&out.stdout)),
            Err(e) => println!("{tool}: {e}"),
        }
    }
}

fn status(mut cmd: Command) -> bool {
    cmd.status().is_ok_and(|s| s.success())
}

/// Runs every step (later steps run even when earlier ones fail) and prints the summary.
pub fn run() -> bool {
    let mut results = Vec::new();
    let mut counts = Counts::default();
    step("setup", &mut results, crate::setup::run);
    step("cargo fmt --check", &mut results, || {
        let mut cmd = crate::cargo();
        cmd.args(["fmt", "--all", "--", "--check"]);
        status(cmd)
    });
    step("cargo clippy -D warnings", &mut results, || {
        let mut cmd = crate::cargo();
        cmd.args(["clippy", "--workspace", "--all-targets", "--quiet", "--", "-D", "warnings"]);
        status(cmd)
    });
    step("layering", &mut results, crate::layering::run);
    step("cargo test", &mut results, || {
        let mut cmd = crate::cargo();
        cmd.args(["test", "--workspace", "--no-fail-fast"]);
        let (ok, c) = run_streaming(cmd);
        counts = c;
        ok && counts.failed == 0
    });
    disk_report();
    println!("\n== summary");
    for (name, ok, secs) in &results {
        println!("{:<28} {:<6} {secs:>7.1}s", name, if *ok { "ok" } else { "FAILED" });
    }
    let failed_steps: Vec<&str> = results.iter().filter(|r| !r.1).map(|r| r.0.as_str()).collect();
    if !failed_steps.is_empty() {
        println!("FAILED steps: {}", failed_steps.join(", "));
    }
    println!("test-all: {} passed, {} failed, {} skipped", counts.passed, counts.failed, counts.ignored);
    failed_steps.is_empty()
}
