//! `rearrange` with einops patterns (`"b c (h w) -> b (c h) w"`): named dims split by the
//! left side's groups, reordered, and merged by the right side's groups: one reshape, one
//! permute and one reshape, views only.

use std::collections::HashMap;

use crate::Tensor;
use crate::error::{Result, TensorError};

/// One entry of a side: a named dim (or `...`), or a parenthesized group of names (`1` is
/// the empty group, a dim of size 1).
#[derive(Debug)]
enum Entry {
    Name(String),
    Group(Vec<String>),
}

/// The entries of one side of a pattern.
fn parse_side(side: &str, bad: &impl Fn(String) -> TensorError) -> Result<Vec<Entry>> {
    let spaced = side.replace('…', "...").replace('(', " ( ").replace(')', " ) ");
    let mut entries = vec![];
    let mut group: Option<Vec<String>> = None;
    for token in spaced.split_whitespace() {
        match (token, &mut group) {
            ("(", None) => group = Some(vec![]),
            ("(", Some(_)) => return Err(bad("nested parentheses".into())),
            (")", g @ Some(_)) => entries.push(Entry::Group(g.take().unwrap_or_default())),
            (")", None) => return Err(bad("a `)` without its `(`".into())),
            ("1", None) => entries.push(Entry::Group(vec![])),
            ("1", Some(_)) => {}
            (name, g) => {
                let ellipsis = name == "...";
                let identifier = name.chars().next().is_some_and(|c| c.is_alphabetic())
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                    && !name.ends_with('_');
                if !ellipsis && !identifier {
                    return Err(bad(format!("`{name}` is not an axis name")));
                }
                match g {
                    Some(_) if ellipsis => return Err(bad("`...` inside parentheses".into())),
                    Some(g) => g.push(name.to_string()),
                    None => entries.push(Entry::Name(name.to_string())),
                }
            }
        }
    }
    if group.is_some() {
        return Err(bad("a `(` without its `)`".into()));
    }
    Ok(entries)
}

/// The names of a side in order (groups opened), with `...` as the `ellipsis` names.
fn names(side: &[Entry], ellipsis: &[String]) -> Vec<String> {
    side.iter()
        .flat_map(|e| match e {
            Entry::Name(n) if n == "..." => ellipsis.to_vec(),
            Entry::Name(n) => vec![n.clone()],
            Entry::Group(g) => g.clone(),
        })
        .collect()
}

impl Tensor {
    /// The dims rearranged by an einops `pattern` (`"left -> right"`): each side lists the
    /// dims by name, `(a b)` for dims merged into one, `1` for a dim of size 1, `...` for the
    /// dims not named. A left group is split using `sizes` (`[("h", 2)]`) for all but at
    /// most one of its names. Every name appears once on each side.
    pub fn rearrange(&self, pattern: &str, sizes: &[(&str, usize)]) -> Result<Tensor> {
        let bad = |why: String| TensorError::Parse { op: "rearrange", text: pattern.to_string(), why };
        let (left, right) = match pattern.split("->").collect::<Vec<_>>()[..] {
            [l, r] => (parse_side(l, &bad)?, parse_side(r, &bad)?),
            _ => return Err(bad("a pattern needs exactly one `->`".into())),
        };
        let count =
            |side: &[Entry]| side.iter().filter(|e| matches!(e, Entry::Name(n) if n == "...")).count();
        if count(&left) > 1 || count(&right) != count(&left) {
            return Err(bad("`...` must appear once on both sides, or on neither".into()));
        }
        if left.len() - count(&left) > self.ndim() || (count(&left) == 0 && left.len() != self.ndim()) {
            return Err(bad(format!("the left side names {} dims of {}", left.len(), self.operand())));
        }
        // `...` stands for the dims the other entries leave; names with a space never clash
        let ellipsis: Vec<String> =
            (0..self.ndim() + count(&left) - left.len()).map(|i| format!("... {i}")).collect();
        let (from, to) = (names(&left, &ellipsis), names(&right, &ellipsis));
        let (mut a, mut b) = (from.clone(), to.clone());
        a.sort();
        b.sort();
        if a != b || a.windows(2).any(|w| w[0] == w[1]) {
            return Err(bad("each name must appear once on each side".into()));
        }
        if let Some((n, _)) = sizes.iter().find(|(n, _)| !from.iter().any(|f| f == n)) {
            return Err(bad(format!("a size is given for `{n}`, which the left side does not name")));
        }
        let given: HashMap<&str, usize> = sizes.iter().copied().collect();
        // the size of every name, from the input's dims and the given sizes
        let mut size: HashMap<String, usize> = HashMap::new();
        let mut dims = self.shape().iter().copied();
        for entry in left.iter().flat_map(|e| match e {
            Entry::Name(n) if n == "..." => ellipsis.iter().map(|n| Entry::Name(n.clone())).collect(),
            Entry::Name(n) => vec![Entry::Name(n.clone())],
            Entry::Group(g) => vec![Entry::Group(g.clone())],
        }) {
            let dim =
                dims.next().unwrap_or_else(|| unreachable!("the left side was counted against the dims"));
            match entry {
                Entry::Name(n) => {
                    if given.get(n.as_str()).is_some_and(|&g| g != dim) {
                        return Err(bad(format!("`{n}` is {dim}, not {}", given[n.as_str()])));
                    }
                    size.insert(n, dim);
                }
                Entry::Group(g) => {
                    let known: usize = g.iter().filter_map(|n| given.get(n.as_str())).product();
                    let unknown: Vec<&String> =
                        g.iter().filter(|n| !given.contains_key(n.as_str())).collect();
                    let rest = match unknown.len() {
                        0 if known == dim => 1,
                        1 if known > 0 && dim.is_multiple_of(known) => dim / known,
                        0 | 1 => {
                            return Err(bad(format!(
                                "the group ({}) cannot split a dim of {dim}",
                                g.join(" ")
                            )));
                        }
                        _ => {
                            return Err(bad(format!(
                                "the group ({}) needs sizes for all but one name",
                                g.join(" ")
                            )));
                        }
                    };
                    for n in g {
                        let s = given.get(n.as_str()).copied().unwrap_or(rest);
                        size.insert(n, s);
                    }
                }
            }
        }
        let split: Vec<usize> = from.iter().map(|n| size[n]).collect();
        let order: Vec<isize> =
            to.iter().map(|n| from.iter().position(|f| f == n).unwrap_or(0) as isize).collect();
        let merged: Vec<usize> = right
            .iter()
            .flat_map(|e| match e {
                Entry::Name(n) if n == "..." => ellipsis.iter().map(|n| size[n]).collect(),
                Entry::Name(n) => vec![size[n]],
                Entry::Group(g) => vec![g.iter().map(|n| size[n]).product()],
            })
            .collect();
        Ok(self.reshape_to(&split).permute(&order)?.reshape_to(&merged))
    }
}
