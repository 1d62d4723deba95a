//! [`PatternMatcher`]: an ordered table of (pattern, rule) pairs, indexed by root op.

use std::ops;
use std::sync::Arc;

use crate::upat::Captures;
use crate::{OpSet, Ops, UOp, UPat};

type RuleFn<C> = dyn Fn(&Captures, &mut C) -> Option<UOp> + Send + Sync;

/// A rewrite rule: when `pat` matches, the function may return a replacement.
///
/// Build rules with [`rule!`](crate::rule), which binds the pattern's names as variables.
pub struct Rule<C = ()> {
    pat: UPat,
    early: Vec<OpSet>,
    f: Arc<RuleFn<C>>,
}

impl<C> Clone for Rule<C> {
    fn clone(&self) -> Self {
        Rule { pat: self.pat.clone(), early: self.early.clone(), f: self.f.clone() }
    }
}

impl<C> Rule<C> {
    /// A rule whose function reads the captures `names` of `pat`.
    ///
    /// # Panics
    /// When a name in `names` is not bound by `pat`: a rule table bug caught when built.
    pub fn new(
        pat: UPat,
        names: &[&str],
        f: impl Fn(&Captures, &mut C) -> Option<UOp> + Send + Sync + 'static,
    ) -> Rule<C> {
        let bound = pat.names();
        if let Some(missing) = names.iter().find(|n| !bound.contains(n)) {
            panic!("rule uses {missing:?}, which its pattern does not bind (binds {bound:?})");
        }
        let early = pat.required_source_ops();
        Rule { pat, early, f: Arc::new(f) }
    }
}

/// Builds a [`Rule`] from a pattern and a closure over the pattern's names:
/// `rule!(UPat::var("x") * 1 => |x| Some(x.clone()))`. With a context, name and type it first,
/// then a semicolon: `rule!(pat => |ctx: Vec<UOp>; x| ...)`. Each name is a `&UOp`; the closure returns
/// `Option<UOp>`. Names are checked against the pattern when the rule is built.
#[macro_export]
macro_rules! rule {
    ($pat:expr => |$ctx:ident: $cty:ty; $($name:ident),* $(,)?| $body:expr) => {
        $crate::Rule::new($pat, &[$(stringify!($name)),*], move |caps: &$crate::Captures, $ctx: &mut $cty| {
            $(let $name: &$crate::UOp = &caps[stringify!($name)];)*
            $body
        })
    };
    ($pat:expr => |$($name:ident),* $(,)?| $body:expr) => {
        $crate::Rule::new($pat, &[$(stringify!($name)),*], move |caps: &$crate::Captures, _: &mut _| {
            $(let $name: &$crate::UOp = &caps[stringify!($name)];)*
            $body
        })
    };
}

/// An ordered list of rules; the first rule whose pattern matches and whose function returns
/// `Some` rewrites the node. Rules are indexed by the op at their pattern's root.
pub struct PatternMatcher<C = ()> {
    rules: Vec<Rule<C>>,
    by_op: Vec<Vec<usize>>,
}

impl<C> Clone for PatternMatcher<C> {
    fn clone(&self) -> Self {
        PatternMatcher::new(self.rules.clone())
    }
}

impl<C> PatternMatcher<C> {
    /// A matcher trying `rules` in order.
    pub fn new(rules: Vec<Rule<C>>) -> PatternMatcher<C> {
        let mut by_op = vec![Vec::new(); Ops::ALL.len()];
        for (i, r) in rules.iter().enumerate() {
            for op in Ops::ALL {
                if r.pat.root_ops().is_none_or(|s| s.contains(op)) {
                    by_op[op as usize].push(i);
                }
            }
        }
        PatternMatcher { rules, by_op }
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The replacement of `u` by the first rule that gives one.
    pub fn rewrite(&self, u: &UOp, ctx: &mut C) -> Option<UOp> {
        let mut caps = Captures::default();
        for &i in &self.by_op[u.op() as usize] {
            let rule = &self.rules[i];
            if !rule.early.iter().all(|ops| u.src().iter().any(|s| ops.contains(s.op()))) {
                continue;
            }
            caps.clear();
            let found = rule.pat.match_with(u, &mut caps, &mut |c| (rule.f)(c, ctx));
            if found.is_some() {
                return found;
            }
        }
        None
    }
}

impl<C> ops::Add for PatternMatcher<C> {
    type Output = PatternMatcher<C>;

    /// The rules of `self`, then those of `rhs`.
    fn add(self, rhs: PatternMatcher<C>) -> PatternMatcher<C> {
        let mut rules = self.rules;
        rules.extend(rhs.rules);
        PatternMatcher::new(rules)
    }
}
