//! Printing: the DEBUG=5 listing (one line per node) and the expression renderer.

use std::fmt::{self, Write};

use wgrad_dtype::ConstValue;

use crate::graph::UOpMap;
use crate::{Arg, Ops, UOp};

/// One line per UOp: index, op, dtype, source indices, arg (tinygrad's `print_uops` layout).
///
/// Sources not in `uops` print as `--`.
pub fn print_uops(uops: &[UOp]) -> String {
    let index: UOpMap<usize> = uops.iter().enumerate().map(|(i, u)| (u.clone(), i)).collect();
    let mut out = String::new();
    for (i, u) in uops.iter().enumerate() {
        let src: Vec<String> =
            u.src().iter().map(|s| index.get(s).map_or_else(|| "--".into(), |j| j.to_string())).collect();
        let src = format!("[{}]", src.join(", "));
        // writing to a String cannot fail
        let _ = writeln!(
            out,
            "{i:4} {:<20}: {:<30} {src:<32} {}",
            u.op().to_string(),
            u.dtype().to_string(),
            u.arg()
        );
    }
    out
}

impl UOp {
    /// The DEBUG=5 listing of the graph under `self`, in topological order.
    pub fn listing(&self) -> String {
        print_uops(&self.toposort())
    }

    /// The expression as text: `((x*4)+2)`, `(x//4)`, `max(a, b)`, `(c?x:y)`.
    pub fn render(&self) -> String {
        let mut done: UOpMap<String> = UOpMap::default();
        for u in self.toposort() {
            let s: Vec<&str> = u.src().iter().map(|s| done[s].as_str()).collect();
            let text = render_one(&u, &s);
            done.insert(u, text);
        }
        done.remove(self).unwrap_or_default()
    }
}

fn infix(op: Ops) -> Option<&'static str> {
    Some(match op {
        Ops::Add => "+",
        Ops::Sub => "-",
        Ops::Mul => "*",
        Ops::Idiv => "//",
        Ops::Fdiv => "/",
        Ops::Mod => "%",
        Ops::CmpLt => "<",
        Ops::CmpNe => "!=",
        Ops::And => "&",
        Ops::Or => "|",
        Ops::Xor => "^",
        Ops::Shl => "<<",
        Ops::Shr => ">>",
        _ => return None,
    })
}

fn render_one(u: &UOp, s: &[&str]) -> String {
    match (u.op(), u.arg()) {
        (Ops::Const, Arg::Const(ConstValue::Bool(b))) => if *b { "True" } else { "False" }.into(),
        (Ops::Const, Arg::Const(c)) => c.to_string(),
        (Ops::DefineVar, Arg::Var(v)) => v.name().into(),
        (Ops::Special, Arg::Special(name, _)) => name.to_string(),
        (Ops::Range, arg) => format!("ridx{arg}"),
        (Ops::Bind, _) => s[0].into(),
        (Ops::Where, _) => format!("({}?{}:{})", s[0], s[1], s[2]),
        (Ops::Max, _) => format!("max({}, {})", s[0], s[1]),
        (Ops::Neg, _) => format!("(-{})", s[0]),
        (Ops::Cast, _) => format!("({})({})", u.dtype().name(), s[0]),
        (op, _) => match infix(op) {
            Some(sym) if s.len() == 2 => format!("({}{sym}{})", s[0], s[1]),
            _ => format!("{}({})", format!("{op:?}").to_lowercase(), s.join(", ")),
        },
    }
}

impl fmt::Debug for UOp {
    /// The listing of the graph under this UOp.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.listing())
    }
}

impl fmt::Display for UOp {
    /// The rendered expression.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}
