//! Delta debugging over a failing program's steps: the smallest program found that still fails
//! the same way. Three moves, repeated until none helps: make an earlier step the output (and
//! drop what it does not read), route a step's readers to one of its operands instead (when the
//! program stays valid), and drop an input's gradient.

use super::program::{Op, Program};

/// `program` without the steps its output does not read, renumbered.
pub fn prune(program: &Program) -> Program {
    let (n, live) = (program.steps.len(), program.live_steps());
    let mut new_index = vec![usize::MAX; n];
    let mut steps = vec![];
    for i in 0..n {
        if live[i] {
            new_index[i] = steps.len();
            steps.push(program.steps[i].renumbered(|o| new_index[o]));
        }
    }
    Program { steps }
}

/// Programs one move smaller than `p`, smallest first.
fn candidates(p: &Program) -> Vec<Program> {
    let n = p.steps.len();
    let mut out = vec![];
    for end in 0..n.saturating_sub(1) {
        out.push(prune(&Program { steps: p.steps[..=end].to_vec() }));
    }
    for (j, op) in p.steps.iter().enumerate() {
        for via in op.operands() {
            let steps: Vec<Op> = p
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| if i > j { s.renumbered(|o| if o == j { via } else { o }) } else { s.clone() })
                .collect();
            if j + 1 < n {
                out.push(prune(&Program { steps }));
            }
        }
    }
    for (i, op) in p.steps.iter().enumerate() {
        if let Op::Input { shape, dtype, seed, grad: true } = op {
            let mut steps = p.steps.clone();
            steps[i] = Op::Input { shape: shape.clone(), dtype: *dtype, seed: *seed, grad: false };
            out.push(Program { steps });
        }
    }
    out.retain(|c| c != p);
    out
}

/// The smallest program reachable from `program` by the moves for which `fails` holds;
/// `fails(program)` must hold.
pub fn minimize(program: &Program, fails: impl Fn(&Program) -> bool) -> Program {
    let mut best = prune(program);
    if !fails(&best) {
        best = program.clone();
    }
    'shrink: loop {
        for c in candidates(&best) {
            if c.steps.len() <= best.steps.len() && fails(&c) {
                best = c;
                continue 'shrink;
            }
        }
        return best;
    }
}
