//! Refinement: a hill climb from the faster of the hand-coded opts and the beam's winner,
//! one opt changed at a time.
//!
//! tinygrad's beam grows an opt list from nothing, an action a round, so it rarely reaches
//! the heuristics' longer plans (a register tile is seven opts in an order whose first steps
//! alone are slow), and it cannot change an opt once taken. Each refinement round times every
//! list one change away from the best so far: an opt dropped, or its amount replaced (a
//! STAGE's blocks 1 <-> 2); the best replaces it while it gains
//! [`MIN_PROGRESS`](super::MIN_PROGRESS), for at most [`REFINE_ROUNDS`] rounds. An opt after a
//! changed one may land on another axis or no longer apply: such lists are other candidates,
//! or none.
//!
//! Measured on an H200 (`beam::search`, width 2): MiniLM's attention `PV` (f32) 80.5 -> 75.3
//! us with 4 query rows a thread instead of 8, which the beam alone did not find.

use wgrad_codegen::{Kernel, Opt, OptOps};

use super::actions::within_limits;

/// Most refinement rounds a search runs.
pub const REFINE_ROUNDS: usize = 3;

/// Amounts a changed UPCAST, UNROLL, LOCAL, GROUP or GROUPTOP tries (0: the whole axis).
const AMOUNTS: [usize; 7] = [0, 2, 3, 4, 8, 16, 32];

/// The lists one change away from `opts`: each opt dropped, then each amount of [`AMOUNTS`]
/// other than its own (a STAGE: the other number of blocks; TC, SWAP, NOLOCALS and PADTO are
/// only dropped).
fn changed(opts: &[Opt]) -> Vec<Vec<Opt>> {
    let mut lists = vec![];
    for (i, opt) in opts.iter().enumerate() {
        let with = |o: Option<Opt>| {
            opts[..i].iter().copied().chain(o).chain(opts[i + 1..].iter().copied()).collect()
        };
        lists.push(with(None));
        let amounts: Vec<usize> = match opt.op {
            OptOps::Upcast | OptOps::Unroll | OptOps::Local | OptOps::Group | OptOps::Grouptop => {
                AMOUNTS.iter().copied().filter(|&a| a != opt.arg).collect()
            }
            OptOps::Stage => vec![if opt.arg == 2 { 0 } else { 2 }],
            OptOps::Tc | OptOps::Swap | OptOps::Nolocals | OptOps::Padto => vec![],
        };
        lists.extend(amounts.into_iter().map(|arg| with(Some(Opt { arg, ..*opt }))));
    }
    lists
}

/// Every kernel whose opts are one change away from `opts` (an opt dropped or its amount
/// replaced, as the module says), applied in order to `base`, each once: lists `apply_opt`
/// refuses or that leave the search's limits (upcast <= 256, workgroup <= 1024) are left out.
pub fn neighbours(base: &Kernel, opts: &[Opt]) -> Vec<Kernel> {
    let mut out: Vec<Kernel> = vec![];
    for list in changed(opts) {
        let mut k = base.clone();
        if list.iter().all(|o| k.apply_opt(*o).is_ok())
            && within_limits(&k)
            && !out.iter().any(|seen| seen.applied_opts() == k.applied_opts())
        {
            out.push(k);
        }
    }
    out
}
