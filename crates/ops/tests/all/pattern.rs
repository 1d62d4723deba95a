//! Pattern-matcher semantics: captures, commutativity, non-matches, any-length sources,
//! dtype/arg matching, rule checking, and both graph_rewrite walks.

use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{
    Arg, DTypePat, GroupOp, Ops, PatternMatcher, Rule, UOp, UPat, graph_rewrite, graph_rewrite_top_down, rule,
};

fn x() -> UOp {
    UOp::variable("x", 0, 10)
}

fn y() -> UOp {
    UOp::variable("y", 0, 10)
}

#[test]
fn captures_bind_the_matched_nodes() {
    let e = x() + 3;
    let caps = (UPat::var("a") + UPat::cvar("c")).matches(&e).unwrap();
    assert_eq!(caps["a"], x());
    assert_eq!(caps["c"].const_value(), Some(ConstValue::Int(3)));
    assert!(caps.get("missing").is_none());
}

#[test]
fn repeated_names_must_bind_the_same_node() {
    let pat = UPat::var("a") + UPat::var("a");
    assert!(pat.matches(&(x() + x())).is_some());
    assert!(pat.matches(&(x() + y())).is_none());
}

#[test]
fn commutative_ops_match_in_either_order() {
    let pat = UPat::cvar("c") + UPat::var("a");
    let caps = pat.matches(&(x() + 3)).unwrap();
    assert_eq!(caps["a"], x());
    // non-commutative ops keep their order
    assert!(UPat::cvar("c").lt(UPat::var("a")).matches(&x().cmp_lt(3)).is_none());
    assert!(UPat::var("a").lt(UPat::cvar("c")).matches(&x().cmp_lt(3)).is_some());
}

#[test]
fn backtracking_tries_the_other_order_when_a_rule_declines() {
    // (x*2) + (y*3): a rule that only accepts c == 3 must see the second permutation
    let e = x() * 2 + y() * 3;
    let pm: PatternMatcher =
        PatternMatcher::new(vec![rule!(UPat::var("a") * UPat::cvar("c") + UPat::var("b")
        => |a, c, b| (c.const_int() == Some(3)).then(|| a + b))]);
    let out = pm.rewrite(&e, &mut ()).unwrap();
    assert_eq!(out.render(), "(y+(x*2))");
}

#[test]
fn non_matches() {
    assert!(UPat::op(Ops::Mul).matches(&(x() + 1)).is_none());
    assert!((UPat::var("a") + 0).matches(&(x() + 1)).is_none());
    assert!(UPat::op(Ops::Add).src([UPat::any()]).matches(&(x() + 1)).is_none());
}

#[test]
fn any_length_sources() {
    let sink = UOp::sink([x(), y(), x() + 1]);
    let prefix = UPat::op(Ops::Sink).src_prefix([UPat::var("first")]);
    assert_eq!(prefix.matches(&sink).unwrap()["first"], x());
    let each = UPat::op(Ops::Sink).src_each(UPat::ops(GroupOp::ALU.union(Ops::DefineVar.into())));
    assert!(each.matches(&sink).is_some());
    let each_var = UPat::op(Ops::Sink).src_each(UPat::op(Ops::DefineVar));
    assert!(each_var.matches(&sink).is_none());
    assert!(UPat::op(Ops::Sink).src_each(UPat::any()).matches(&UOp::sink([])).is_some());
}

#[test]
fn dtype_and_arg_matching() {
    let f = UOp::constant(DType::F32, 1.0);
    assert!(UPat::cvar("c").dtype(DType::F32).matches(&f).is_some());
    assert!(UPat::cvar("c").dtype(DType::I32).matches(&f).is_none());
    assert!(UPat::any().dtype_class(DTypePat::Float).matches(&f).is_some());
    assert!(UPat::any().dtype_class(DTypePat::Int).matches(&f).is_none());
    assert!(UPat::konst(1.0).matches(&UOp::index_const(1)).is_some());
    let r = UOp::range(&UOp::index_const(4), 2);
    assert!(UPat::op(Ops::Range).arg(Arg::Int(2)).matches(&r).is_some());
    assert!(UPat::op(Ops::Range).arg(Arg::Int(1)).matches(&r).is_none());
}

#[test]
#[should_panic(expected = "does not bind")]
fn rules_check_their_names_when_built() {
    let _: Rule = rule!(UPat::var("x") + 0 => |y| Some(y.clone()));
}

#[test]
fn rules_are_tried_in_order_and_indexed_by_op() {
    let pm: PatternMatcher = PatternMatcher::new(vec![
        rule!(UPat::var("a") * 2 => |a| Some(a + a)),
        rule!(UPat::var("a") * UPat::cvar("c") => |a| Some(a.clone())),
    ]);
    assert_eq!(pm.rewrite(&(x() * 2), &mut ()).unwrap().render(), "(x+x)");
    assert_eq!(pm.rewrite(&(x() * 5), &mut ()).unwrap(), x());
    assert!(pm.rewrite(&(x() + 5), &mut ()).is_none());
    assert_eq!(pm.len(), 2);
}

#[test]
fn context_is_threaded_through_rules() {
    let pm: PatternMatcher<Vec<String>> =
        PatternMatcher::new(vec![rule!(UPat::op(Ops::DefineVar).named("v") => |seen: Vec<String>; v| {
            seen.push(v.render());
            None
        })]);
    let mut seen = Vec::new();
    graph_rewrite(&(x() + y() * x()), &pm, &mut seen);
    seen.sort();
    assert_eq!(seen, ["x", "y"]);
}

#[test]
fn bottom_up_rewrites_to_a_fixed_point() {
    // a+0 chains collapse only once sources are rewritten first
    let e = ((x() + 0) + 0) * 1;
    let pm: PatternMatcher = PatternMatcher::new(vec![
        rule!(UPat::var("a") + 0 => |a| Some(a.clone())),
        rule!(UPat::var("a") * 1 => |a| Some(a.clone())),
    ]);
    assert_eq!(graph_rewrite(&e, &pm, &mut ()), x());
}

#[test]
fn top_down_sees_the_node_before_its_sources() {
    // top-down sees (x+0)*2 first; bottom-up sees x*2 only
    let e = (x() + 0) * 2;
    let pm: PatternMatcher = PatternMatcher::new(vec![
        rule!((UPat::var("a") + 0) * 2 => |a| Some(a * 3)),
        rule!(UPat::var("a") + 0 => |a| Some(a.clone())),
    ]);
    assert_eq!(graph_rewrite_top_down(&e, &pm, &mut ()).render(), "(x*3)");
    assert_eq!(graph_rewrite(&e, &pm, &mut ()).render(), "(x*2)");
}

#[test]
fn printer_lists_nodes_with_source_indices() {
    let e = x() + 3;
    let listing = e.listing();
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("   0 Ops.DEFINE_VAR"), "{listing}");
    assert!(lines[2].contains("Ops.ADD") && lines[2].contains("[0, 1]"), "{listing}");
    assert_eq!(e.to_string(), "(x+3)");
}

#[test]
fn substitute_and_toposort() {
    let e = (x() + y()) * x();
    let order = e.toposort();
    assert_eq!(order.last(), Some(&e));
    assert_eq!(order.len(), 4);
    let map = [(x(), UOp::index_const(2))].into_iter().collect();
    assert_eq!(e.substitute(&map).simplify().render(), "((y*2)+4)");
}
