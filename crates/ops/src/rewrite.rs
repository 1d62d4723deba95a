//! `graph_rewrite`: apply a [`PatternMatcher`] over a whole graph until nothing changes.
//!
//! Both walks are iterative (explicit stacks), memoize every node they finish, and rewrite
//! each result again until no rule applies, so the output is a fixed point of the matcher.

use std::cell::RefCell;

use crate::graph::UOpMap;
use crate::{PatternMatcher, UOp};

enum Task {
    /// Start on a node.
    Visit(UOp),
    /// Its sources are done: rebuild it (bottom-up) or finish it (top-down, with the node
    /// its own rewrites led to).
    Build(UOp, UOp),
    /// The first node's result is the second's result.
    Link(UOp, UOp),
}

/// Rewrites sources first, then each rebuilt node, until no rule applies anywhere.
pub fn graph_rewrite<C>(root: &UOp, pm: &PatternMatcher<C>, ctx: &mut C) -> UOp {
    rewrite_graph(root, pm, ctx, false)
}

/// Rewrites each node first (until no rule applies to it), then its sources.
pub fn graph_rewrite_top_down<C>(root: &UOp, pm: &PatternMatcher<C>, ctx: &mut C) -> UOp {
    rewrite_graph(root, pm, ctx, true)
}

fn rewrite_graph<C>(root: &UOp, pm: &PatternMatcher<C>, ctx: &mut C, top_down: bool) -> UOp {
    let mut done = SPARE.with(|s| s.borrow_mut().take()).unwrap_or_default();
    let mut stack = vec![Task::Visit(root.clone())];
    while let Some(task) = stack.pop() {
        match task {
            Task::Visit(n) => {
                if done.contains_key(&n) {
                    continue;
                }
                let mut last = n.clone();
                if top_down {
                    while let Some(x) = pm.rewrite(&last, ctx) {
                        last = x;
                    }
                }
                // sources are visited first, in order
                stack.push(Task::Build(n, last.clone()));
                stack.extend(
                    last.src()
                        .iter()
                        .rev()
                        .filter(|s| !done.contains_key(*s))
                        .map(|s| Task::Visit(s.clone())),
                );
            }
            Task::Build(n, last) => {
                if done.contains_key(&n) {
                    continue;
                }
                let same = last.src().iter().all(|s| done[s] == *s);
                // a rebuilt node is visited again: its own rules may apply now
                let next = if !same {
                    Some(last.with_src(last.src().iter().map(|s| done[s].clone()).collect::<Vec<_>>()))
                } else if top_down {
                    None
                } else {
                    pm.rewrite(&last, ctx)
                };
                match next {
                    None => {
                        done.insert(n, last);
                    }
                    Some(x) => match done.get(&x) {
                        Some(r) => {
                            let r = r.clone();
                            done.insert(n, r);
                        }
                        None => {
                            stack.push(Task::Link(n, x.clone()));
                            stack.push(Task::Visit(x));
                        }
                    },
                }
            }
            Task::Link(n, x) => {
                let r = done[&x].clone();
                done.insert(n, r);
            }
        }
    }
    let out = done.remove(root).unwrap_or_else(|| root.clone());
    done.clear();
    if done.capacity() <= 1 << 16 {
        SPARE.with(|s| *s.borrow_mut() = Some(done));
    }
    out
}

thread_local! {
    /// The memo table of the last rewrite on this thread, emptied, to reuse its allocation.
    static SPARE: RefCell<Option<UOpMap<UOp>>> = const { RefCell::new(None) };
}
