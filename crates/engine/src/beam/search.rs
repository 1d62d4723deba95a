//! The search: tinygrad's BEAM over a kernel's opts, on the device it will run on.
//!
//! Each round expands every kernel of the beam by every legal action ([`kernel_actions`]),
//! compiles the candidates on all host cores (codegen, WGSL, pipelines: backends compile
//! from many threads), drops those with too many uops, that fail to compile or whose
//! device source is one already timed, then times the rest one by one and keeps the
//! `width` fastest. A candidate's time is the fastest of [`RUNS`] back-to-back runs (one
//! submission) after an uncounted one, each on at most [`SAMPLE_WORKGROUPS`] workgroups and
//! scaled to the whole grid; an uncounted run slower than three times the best so far ends
//! it. Before each candidate the device's clocks are brought up ([`Backend::raise_clocks`]):
//! a GPU whose driver lowered them while the host compiled would time the first candidates of
//! a round slower than the last. The search stops when a round gains less than
//! [`MIN_PROGRESS`]. Then the faster of its winner and the default (hand-coded) opts is
//! refined: a hill climb over the lists one opt change away (`refine.rs`). The result is
//! timed against the default opts on the whole grid (tinygrad's `BEAM_COMPARE`), and kept
//! only if faster and if its results match the default opts' on the same random inputs.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use wgrad_codegen::{CodegenError, Kernel, Opt, OptMode, compile, compile_kernel, hand_coded_optimizations};
use wgrad_ops::UOp;

use super::actions::kernel_actions;
use super::inputs::{Inputs, compare_results};
use super::refine::{REFINE_ROUNDS, neighbours};
use crate::{Backend, CompiledProgram, EngineError, flags};

/// Timing runs per candidate (the fastest counts).
pub const RUNS: usize = 3;
/// Workgroups a candidate is timed on at most; larger grids run a part, time scaled up.
pub const SAMPLE_WORKGROUPS: usize = 65536;
/// A round must improve the best time by this much for the search to go on.
pub const MIN_PROGRESS: Duration = Duration::from_nanos(10);
/// Candidates with more uops than this are not timed (tinygrad's `BEAM_UOPS_MAX`).
pub const MAX_UOPS: usize = 3000;
/// The seed of the random inputs.
const SEED: u64 = 0x5eed;

/// What a search found for one kernel.
#[derive(Clone, Debug)]
pub struct Searched {
    /// The opts chosen: the search's winner, or the default (hand-coded) opts when those
    /// are as fast or the winner's results differ from theirs.
    pub opts: Vec<Opt>,
    /// The chosen kernel's device time (whole grid, fastest of [`RUNS`]).
    pub time: Duration,
    /// The default opts.
    pub default_opts: Vec<Opt>,
    /// The default opts' device time, measured the same way.
    pub default_time: Duration,
    /// Rounds of the beam run.
    pub rounds: usize,
    /// Refinement rounds that found a faster list (`refine.rs`).
    pub refined: usize,
    /// Candidates timed over all rounds.
    pub timed: usize,
    /// Wall time of the search.
    pub elapsed: Duration,
    /// Why the winner was dropped for the default opts, when its results differed.
    pub mismatch: Option<String>,
}

/// A candidate compiled for the device.
struct Candidate {
    kernel: Kernel,
    program: CompiledProgram,
}

/// A timed candidate.
struct Timed {
    candidate: Candidate,
    time: Duration,
}

/// `kernel` compiled on `backend`; `None` when it does not compile or has too many uops.
fn compile_candidate(kernel: Kernel, backend: &dyn Backend, name: &str) -> Option<Candidate> {
    let program = compile_kernel(&kernel, name).ok().filter(|p| p.uops.len() < MAX_UOPS)?;
    let program = backend.compile_once(&program).ok()?;
    Some(Candidate { kernel, program })
}

/// The fastest of `runs` runs of `program`, recorded back to back in one submission, on at
/// most [`SAMPLE_WORKGROUPS`] workgroups with `sample`, once the device's clocks are up
/// ([`Backend::raise_clocks`]). A first run, submitted alone, is not counted (drivers may
/// finish a pipeline on its first dispatch); when it is slower than `early_stop` it is the
/// answer.
fn time_program(
    backend: &dyn Backend,
    inputs: &Inputs,
    program: &CompiledProgram,
    runs: usize,
    early_stop: Duration,
    sample: bool,
) -> Result<Duration, EngineError> {
    let launch = inputs.launch(program);
    let sample = sample.then_some(SAMPLE_WORKGROUPS);
    backend.raise_clocks()?;
    let first = backend.time_launch(&launch, sample, 1)?.into_iter().min().unwrap_or(Duration::MAX);
    if first > early_stop {
        return Ok(first);
    }
    Ok(backend.time_launch(&launch, sample, runs.max(1))?.into_iter().min().unwrap_or(first))
}

/// The device time of `ast` compiled with `mode` on `backend`, from random inputs: the
/// fastest of `runs` runs on the whole grid (how a search compares its winner with the
/// default opts, for benchmarks to measure the same way).
pub fn time_opts(
    ast: &UOp,
    backend: &dyn Backend,
    mode: &OptMode,
    runs: usize,
) -> Result<Duration, EngineError> {
    let name = "timed";
    let codegen = |e: CodegenError| EngineError::Codegen { name: name.into(), source: Box::new(e) };
    let (_, program) = compile(ast, backend.target(), mode, name).map_err(codegen)?;
    let program = backend.compile(&program)?;
    time_program(backend, &Inputs::new(ast, backend, SEED)?, &program, runs, Duration::MAX, false)
}

/// A beam member: its kernel, its program (none for the kernel without opts) and its time.
type Member = (Kernel, Option<CompiledProgram>, Duration);

/// What a round needs besides the beam: where and on what it times, and the sources it has
/// timed already.
struct Round<'a> {
    backend: &'a dyn Backend,
    inputs: &'a Inputs,
    name: &'a str,
    seen: HashSet<u64>,
    hasher: RandomState,
}

impl Round<'_> {
    /// Every kernel one action from the beam, through [`Round::time_all`].
    fn run(&mut self, beam: &[Member], early_stop: Duration) -> (usize, Vec<Timed>) {
        self.time_all(beam.iter().flat_map(|(k, _, _)| kernel_actions(k)).collect(), early_stop)
    }

    /// `kernels` compiled in parallel and timed one by one unless their source was timed
    /// before: how many there were, and the timed ones, fastest first.
    fn time_all(&mut self, kernels: Vec<Kernel>, early_stop: Duration) -> (usize, Vec<Timed>) {
        let count = kernels.len();
        let compiled: Vec<Option<Candidate>> =
            kernels.into_par_iter().map(|k| compile_candidate(k, self.backend, self.name)).collect();
        let mut timed: Vec<Timed> = vec![];
        for candidate in compiled.into_iter().flatten() {
            let p = &candidate.program;
            if !self.first_sight(p) {
                continue;
            }
            // a candidate the device fails to run is dropped, as one that fails to compile
            if let Ok(time) = time_program(self.backend, self.inputs, p, RUNS, early_stop, true) {
                timed.push(Timed { candidate, time });
            }
        }
        timed.sort_by_key(|t| t.time);
        (count, timed)
    }

    /// Whether `program`'s device source is seen for the first time (and notes it).
    fn first_sight(&mut self, program: &CompiledProgram) -> bool {
        let source = self.backend.source(program).unwrap_or_else(|| program.program.to_string());
        self.seen.insert(self.hasher.hash_one(source))
    }

    /// The hill climb of `refine.rs` from `start` (a kernel of `base`'s, its program unless
    /// it has the default opts, its sampled time): the best kernel found. Counts the rounds
    /// that gained in `refined` and the candidates timed in `timed`.
    fn refine(&mut self, base: &Kernel, start: Member, refined: &mut usize, timed: &mut usize) -> Member {
        let mut best = start;
        for _ in 0..REFINE_ROUNDS {
            let (count, results) =
                self.time_all(neighbours(base, best.0.applied_opts()), best.2.saturating_mul(3));
            *timed += results.len();
            let gained = results.into_iter().next().filter(|t| best.2.saturating_sub(t.time) >= MIN_PROGRESS);
            if flags::debug() >= 2 {
                let us = gained.as_ref().map_or(best.2, |t| t.time).as_secs_f64() * 1e6;
                eprintln!("beam {}: refined from {count:4} candidates: {us:10.2} us", self.name);
            }
            let Some(t) = gained else { break };
            best = (t.candidate.kernel, Some(t.candidate.program), t.time);
            *refined += 1;
        }
        best
    }
}

/// Searches for the opts of `ast` on `backend` keeping `width` kernels per round (at least
/// one; `name` names the kernel in DEBUG output).
pub fn search(ast: &UOp, backend: &dyn Backend, width: usize, name: &str) -> Result<Searched, EngineError> {
    let (start, width) = (Instant::now(), width.max(1));
    let codegen = |e: CodegenError| EngineError::Codegen { name: name.into(), source: Box::new(e) };
    let base = Kernel::new(ast, backend.target().clone()).map_err(|e| codegen(e.into()))?;
    let inputs = Inputs::new(ast, backend, SEED)?;
    let mut default = base.clone();
    hand_coded_optimizations(&mut default);
    let default_program = backend.compile(&compile_kernel(&default, name).map_err(codegen)?)?;
    // how slow a candidate may be before its timing stops early
    let default_sampled = time_program(backend, &inputs, &default_program, RUNS, Duration::MAX, true)?;
    let mut round =
        Round { backend, inputs: &inputs, name, seen: HashSet::new(), hasher: RandomState::new() };
    // a candidate with the default's source is the default: never timed as a candidate
    round.first_sight(&default_program);
    let mut beam: Vec<Member> = vec![(base.clone(), None, Duration::MAX)];
    let (mut rounds, mut timed, mut refined) = (0, 0, 0);
    loop {
        let (count, results) = round.run(&beam, beam[0].2.min(default_sampled).saturating_mul(3));
        (rounds, timed) = (rounds + 1, timed + results.len());
        let kept_of = results.len();
        let best = results.first().map(|t| t.time);
        let exiting = best.is_none_or(|t| t < MIN_PROGRESS || beam[0].2.saturating_sub(t) < MIN_PROGRESS);
        let kept = if exiting { usize::from(best.is_some_and(|t| t < beam[0].2)) } else { width };
        if kept > 0 {
            let top = results.into_iter().take(kept);
            beam = top.map(|t| (t.candidate.kernel, Some(t.candidate.program), t.time)).collect();
        }
        if flags::debug() >= 2 {
            eprintln!(
                "beam {name}: {:7.2}s: {:>10.2} us from {count:4} -> {kept_of:4} candidates {}",
                start.elapsed().as_secs_f64(),
                beam[0].2.as_secs_f64() * 1e6,
                beam[0].0.describe()
            );
        }
        if exiting {
            break;
        }
    }
    let default_opts = default.applied_opts().to_vec();
    let start_from = match beam.swap_remove(0) {
        best if best.2 < default_sampled => best,
        _ => (default.clone(), None, default_sampled),
    };
    let (winner, winner_program, _) = round.refine(&base, start_from, &mut refined, &mut timed);
    let default_time = time_program(backend, &inputs, &default_program, RUNS, Duration::MAX, false)?;
    let (mut opts, mut time, mut mismatch) = (default_opts.clone(), default_time, None);
    if let Some(program) = winner_program.filter(|_| winner.applied_opts() != default_opts) {
        let winner_time = time_program(backend, &inputs, &program, RUNS, Duration::MAX, false)?;
        if winner_time < default_time {
            mismatch = compare_results(backend, &inputs, &default_program, &program)?;
            if mismatch.is_none() {
                (opts, time) = (winner.applied_opts().to_vec(), winner_time);
            }
        }
    }
    Ok(Searched {
        opts,
        time,
        default_opts,
        default_time,
        rounds,
        refined,
        timed,
        elapsed: start.elapsed(),
        mismatch,
    })
}
