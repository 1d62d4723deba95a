//! The graph fuzzer: random Tensor programs (elementwise ops with broadcasting, reductions over
//! random axes, movement chains, matmul, casts, getitem, where, cumsum, softmax, argmax, and
//! backward through all of it) run on wgpu and on the CPU interpreter, compared with tinygrad's
//! tolerances. A difference that the program's own rounding sensitivity explains (`noise.rs`)
//! is counted, not failed. A failing program is minimized and printed as a Rust reproducer that
//! becomes a regression test (`assert_agree`). tinygrad's counterpart is `test/external/fuzz_*`.

mod generate;
mod minimize;
mod noise;
mod program;
mod run;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use wgrad_tensor::DeviceName;

pub use generate::generate;
pub use minimize::{minimize, prune};
pub use noise::spread;
pub use program::{Binary, Idx, Op, Program, Reduce, Unary, apply, input_tensor};
pub use run::{Outcome, Run, catch, compare, run, run_with_noise};

/// The device checked against the interpreter.
pub const GPU: DeviceName = DeviceName::Wgpu(None);

/// What comparing a program's runs on the two devices found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Same numbers (within tolerance).
    Agree,
    /// Both refused it with the same kind of typed error (counted, not a failure).
    BothErrored(String),
    /// Different numbers, but only where a few ulp of rounding noise moves the interpreter's
    /// numbers as far (counted, not a failure): the first such difference.
    Sensitive(String),
    /// Different numbers, or only one device failed.
    Mismatch(String),
    /// A device panicked.
    Panic(String),
}

impl Verdict {
    /// Whether this is a bug.
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::Mismatch(_) | Verdict::Panic(_))
    }

    /// Whether `other` is the same kind of outcome (for minimizing).
    fn same_kind(&self, other: &Verdict) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// Runs `program` on the interpreter and on [`GPU`] and compares.
pub fn check(program: &Program) -> Verdict {
    let want = run(program, &DeviceName::Cpu);
    verdict(program, &run(program, &GPU), &want)
}

/// What `got` (a device's run of `program`) against `want` (the interpreter's) shows.
pub fn verdict(program: &Program, got: &Run, want: &Run) -> Verdict {
    match (got, want) {
        (Run::Panic(p), _) => Verdict::Panic(format!("wgpu: {p}")),
        (_, Run::Panic(p)) => Verdict::Panic(format!("cpu: {p}")),
        (Run::Done(g), Run::Done(w)) => match compare(g, w, None) {
            None => Verdict::Agree,
            Some(difference) => match spread(program, w) {
                Some(s) if compare(g, w, Some(&s)).is_none() => Verdict::Sensitive(difference),
                _ => Verdict::Mismatch(difference),
            },
        },
        (Run::Error(a, _), Run::Error(b, _)) if a == b => Verdict::BothErrored(a.clone()),
        (Run::Error(kind, message), _) => Verdict::Mismatch(format!("only wgpu failed: {kind}: {message}")),
        (_, Run::Error(kind, message)) => {
            Verdict::Mismatch(format!("only the cpu failed: {kind}: {message}"))
        }
    }
}

/// Panics with the program and the verdict unless the devices agree (or both refuse it the
/// same way): the body of a regression test made from a reproducer.
pub fn assert_agree(program: &Program) {
    let verdict = check(program);
    assert!(!verdict.is_failure(), "{verdict:?}\n{program}");
}

/// A failure the fuzzer found, minimized.
#[derive(Clone, Debug)]
pub struct Found {
    /// The seed of the program that failed.
    pub seed: u64,
    /// The minimized program's verdict.
    pub verdict: Verdict,
    /// The minimized program.
    pub program: Program,
}

/// What a fuzzing run found.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Programs run.
    pub graphs: usize,
    /// Programs whose numbers differed (or that only one device refused).
    pub mismatches: usize,
    /// Programs that panicked on a device.
    pub panics: usize,
    /// Programs whose numbers differed only within their rounding spread.
    pub sensitive: usize,
    /// Programs both devices refused, by error kind.
    pub errors: BTreeMap<String, usize>,
    /// The failures, minimized.
    pub found: Vec<Found>,
}

impl std::fmt::Display for Summary {
    /// One line: `fuzz: 200 graphs, 0 mismatches, 0 panics, 1 rounding-sensitive; errors:
    /// NoGradient 3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fuzz: {} graphs, {} mismatches, {} panics, {} rounding-sensitive",
            self.graphs, self.mismatches, self.panics, self.sensitive
        )?;
        let errors: Vec<String> = self.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        match errors.is_empty() {
            true => write!(f, "; errors: none"),
            false => write!(f, "; errors: {}", errors.join(", ")),
        }
    }
}

/// What to fuzz.
#[derive(Clone, Debug)]
pub struct Config {
    /// Number of programs.
    pub graphs: usize,
    /// Program `i` is generated from `seed + i`.
    pub seed: u64,
    /// Ops per program at most (besides its inputs).
    pub max_ops: usize,
    /// Programs run at once (threads).
    pub workers: usize,
}

/// Runs `config.graphs` programs, calling `progress` after each, and minimizes every failure.
pub fn fuzz(config: &Config, progress: &(dyn Fn(&Summary) + Sync)) -> Summary {
    let next = AtomicUsize::new(0);
    let summary = Mutex::new(Summary::default());
    std::thread::scope(|s| {
        for _ in 0..config.workers.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= config.graphs {
                        break;
                    }
                    let seed = config.seed.wrapping_add(i as u64);
                    let program = generate(seed, config.max_ops);
                    let verdict = check(&program);
                    let found = verdict.is_failure().then(|| {
                        let small = minimize(&program, |p| check(p).same_kind(&verdict));
                        Found { seed, verdict: check(&small), program: small }
                    });
                    let mut sum = summary.lock().unwrap_or_else(|p| p.into_inner());
                    sum.graphs += 1;
                    match &verdict {
                        Verdict::Mismatch(_) => sum.mismatches += 1,
                        Verdict::Panic(_) => sum.panics += 1,
                        Verdict::BothErrored(kind) => *sum.errors.entry(kind.clone()).or_default() += 1,
                        Verdict::Sensitive(_) => sum.sensitive += 1,
                        Verdict::Agree => {}
                    }
                    sum.found.extend(found);
                    progress(&sum);
                }
            });
        }
    });
    let mut summary = summary.into_inner().unwrap_or_else(|p| p.into_inner());
    summary.found.sort_by_key(|f| f.seed);
    summary
}
