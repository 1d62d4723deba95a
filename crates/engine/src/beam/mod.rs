//! BEAM search (`BEAM=n`, or [`flags::set_beam`]): instead of the hand-coded heuristics, each
//! kernel's opts are searched for on the device it runs on ([`search`]), and the result is
//! kept in an on-disk cache shared by every process ([`BeamCache`]), so a kernel is
//! searched for once per device, driver and wgrad version.
//!
//! The method cache asks [`beam`] once per kernel; DEBUG=2 prints a line per kernel saying
//! whether its opts came from the cache or from a search (with the search's rounds).

mod actions;
mod disk;
mod inputs;
mod refine;
mod search;

use std::time::{Duration, Instant};

use wgrad_codegen::Kernel;
use wgrad_ops::UOp;

pub use actions::{ACTIONS, kernel_actions};
pub use disk::{
    BUSY_TIMEOUT, BeamCache, CACHE_DB_ENV, SEARCH_REVISION, cache_key, default_cache_path, fnv1a,
    set_cache_path, shared_cache,
};
pub use refine::{REFINE_ROUNDS, neighbours};
pub use search::{MAX_UOPS, MIN_PROGRESS, RUNS, SAMPLE_WORKGROUPS, Searched, search, time_opts};
pub use wgrad_codegen::{Opt, OptMode, OptOps};

use crate::{Backend, EngineError, flags};

/// Where a kernel's BEAM opts came from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// The on-disk cache, read in `lookup` (building the key, reading the row and checking
    /// that the opts still apply).
    Cache {
        /// Time the hit took.
        lookup: Duration,
    },
    /// A search run now (and stored in the cache, when there is one).
    Search(Searched),
}

/// The opts BEAM chose for a kernel, and where they came from.
#[derive(Clone, Debug)]
pub struct Beamed {
    /// The opts, in order.
    pub opts: Vec<Opt>,
    /// The cache or a search.
    pub origin: Origin,
}

impl Beamed {
    /// The DEBUG=2 line for kernel `name`.
    pub fn summary(&self, name: &str) -> String {
        let opts: Vec<String> = self.opts.iter().map(ToString::to_string).collect();
        let us = |t: Duration| t.as_secs_f64() * 1e6;
        let how = match &self.origin {
            Origin::Cache { lookup } => format!("from the cache in {:.3} ms", lookup.as_secs_f64() * 1e3),
            Origin::Search(s) => {
                let verdict = match &s.mismatch {
                    Some(why) => format!("; the winner's results differ ({why}): default opts kept"),
                    None => String::new(),
                };
                format!(
                    "searched {} rounds (+{} refined), {} candidates in {:.2} s: {:.2} us, default opts {:.2} us{verdict}",
                    s.rounds,
                    s.refined,
                    s.timed,
                    s.elapsed.as_secs_f64(),
                    us(s.time),
                    us(s.default_time)
                )
            }
        };
        format!("beam {name}: {how} [{}]", opts.join(", "))
    }
}

/// Whether `opts` still apply to `ast` on `backend` (a cache entry written by an older
/// build may not).
fn applies(ast: &UOp, backend: &dyn Backend, opts: &[Opt]) -> bool {
    Kernel::new(ast, backend.target().clone()).is_ok_and(|mut k| opts.iter().all(|o| k.apply_opt(*o).is_ok()))
}

/// The opts of `ast` on `backend` with beam `width`: from `cache` when it holds them and
/// they still apply, else from a [`search`] whose result goes into `cache`. A cache that
/// fails to read or write is warned about and otherwise ignored.
pub fn beam(
    ast: &UOp,
    backend: &dyn Backend,
    width: usize,
    name: &str,
    cache: Option<&BeamCache>,
) -> Result<Beamed, EngineError> {
    let start = Instant::now();
    let cache = cache.map(|c| (c, cache_key(ast, backend, width)));
    if let Some((cache, key)) = &cache {
        match cache.get(key) {
            Ok(Some(opts)) if applies(ast, backend, &opts) => {
                return Ok(Beamed { opts, origin: Origin::Cache { lookup: start.elapsed() } });
            }
            Ok(_) => {}
            Err(e) => eprintln!("wgrad: {e}"),
        }
    }
    let searched = search(ast, backend, width, name)?;
    if let Some(Err(e)) = cache.as_ref().map(|(cache, key)| cache.put(key, &searched.opts)) {
        eprintln!("wgrad: {e}");
    }
    Ok(Beamed { opts: searched.opts.clone(), origin: Origin::Search(searched) })
}

/// The opts the method cache compiles `ast` with under `BEAM=width`, through the process's
/// cache; DEBUG=2 prints where they came from.
pub(crate) fn chosen_opts(
    ast: &UOp,
    backend: &dyn Backend,
    width: usize,
    name: &str,
) -> Result<Vec<Opt>, EngineError> {
    let cache = shared_cache();
    let beamed = beam(ast, backend, width, name, cache.as_deref())?;
    if flags::debug() >= 2 {
        eprintln!("{}", beamed.summary(name));
    }
    Ok(beamed.opts)
}
