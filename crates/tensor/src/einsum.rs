//! `einsum`: every operand permuted into one sorted order of letters with size-1 dims for the
//! letters it lacks, multiplied (broadcast), and summed over the letters the output lacks:
//! one reduce kernel. A letter repeated within one operand takes its diagonal (a view);
//! `...` stands for broadcast dims.

use std::collections::BTreeMap;

use crate::Tensor;
use crate::error::{Result, TensorError};

/// The letter standing for broadcast dim `i` of the ellipsis (counted from its end).
fn ellipsis_letter(i: usize) -> char {
    char::from_u32(0xE000 + i as u32).unwrap_or_else(|| unreachable!("private-use letters cover every rank"))
}

impl Tensor {
    /// Einstein summation over `operands` (`"ij,jk->ik"`, `"ii->i"`, `"...ij,...jk"`):
    /// letters in the output are kept in its order, all others summed; without `->` the
    /// output is the letters used once, sorted (after any `...` dims).
    pub fn einsum(formula: &str, operands: &[&Tensor]) -> Result<Tensor> {
        let bad = |why: String| TensorError::Parse { op: "einsum", text: formula.to_string(), why };
        let text: String = formula.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match text.split_once("->") {
            Some((l, r)) => (l, Some(r)),
            None => (text.as_str(), None),
        };
        let inputs: Vec<&str> = lhs.split(',').collect();
        if inputs.len() != operands.len() || operands.is_empty() {
            return Err(bad(format!("{} operands for {} inputs", operands.len(), inputs.len())));
        }
        // each operand's letters, `...` spelled out with private letters
        let named = |s: &str| s.replace("...", "").chars().count();
        let rank =
            inputs.iter().zip(operands).map(|(s, t)| t.ndim().saturating_sub(named(s))).max().unwrap_or(0);
        let mut letters: Vec<Vec<char>> = Vec::new();
        for (s, t) in inputs.iter().zip(operands) {
            match s.split_once("...") {
                None => letters.push(s.chars().collect()),
                Some((before, after)) => {
                    let e = t.ndim().saturating_sub(named(s));
                    let dots = (0..e).rev().map(ellipsis_letter);
                    letters.push(before.chars().chain(dots).chain(after.chars()).collect());
                }
            }
        }
        let mut sizes: BTreeMap<char, usize> = BTreeMap::new();
        let mut xs = Vec::with_capacity(operands.len());
        for (ls, t) in letters.iter_mut().zip(operands) {
            if ls.iter().any(|&c| !c.is_alphabetic() && c < ellipsis_letter(0)) || ls.len() != t.ndim() {
                return Err(bad(format!("letters {ls:?} for {}", t.operand())));
            }
            let mut x = (*t).clone();
            while let Some((a, b)) =
                (0..ls.len()).find_map(|a| (a + 1..ls.len()).find(|&b| ls[a] == ls[b]).map(|b| (a, b)))
            {
                if x.shape()[a] != x.shape()[b] {
                    return Err(bad(format!(
                        "letter {} of sizes {} and {}",
                        ls[a],
                        x.shape()[a],
                        x.shape()[b]
                    )));
                }
                x = x.diagonal(0, a as isize, b as isize)?;
                let c = ls[a];
                ls.retain(|&l| l != c);
                ls.push(c);
            }
            for (&c, &d) in ls.iter().zip(x.shape()) {
                let s = sizes.entry(c).or_insert(d);
                match (*s, d) {
                    (s0, d0) if s0 == d0 || d0 == 1 => {}
                    (1, _) => *s = d,
                    (s0, _) => return Err(bad(format!("letter {c} of sizes {s0} and {d}"))),
                }
            }
            xs.push((x, ls.clone()));
        }
        let output: Vec<char> = match rhs {
            Some(r) => {
                r.replace("...", &(0..rank).rev().map(ellipsis_letter).collect::<String>()).chars().collect()
            }
            None => {
                let once = |c: &char| text.matches(*c).count() == 1;
                let mut out: Vec<char> = (0..rank).rev().map(ellipsis_letter).collect();
                out.extend(sizes.keys().filter(|c| c.is_ascii_alphabetic() && once(c)));
                out
            }
        };
        if output.iter().enumerate().any(|(i, c)| !sizes.contains_key(c) || output[..i].contains(c)) {
            return Err(bad("output letters must appear in the inputs, once each".into()));
        }
        let all: Vec<char> = sizes.keys().copied().collect();
        let mut product: Option<Tensor> = None;
        for (x, ls) in xs {
            let mut order: Vec<usize> = (0..ls.len()).collect();
            order.sort_by_key(|&i| ls[i]);
            let x = x.permute(&order.iter().map(|&i| i as isize).collect::<Vec<_>>())?;
            let sorted: Vec<char> = order.iter().map(|&i| ls[i]).collect();
            let shape: Vec<usize> =
                all.iter().map(|c| sorted.iter().position(|l| l == c).map_or(1, |p| x.shape()[p])).collect();
            let x = x.reshape_to(&shape);
            product = Some(match product {
                None => x,
                Some(p) => p.mul(&x)?,
            });
        }
        let product = product.unwrap_or_else(|| unreachable!("at least one operand"));
        let summed: Vec<isize> =
            (0..all.len()).filter(|&i| !output.contains(&all[i])).map(|i| i as isize).collect();
        let y = match summed.is_empty() {
            true => product,
            false => product.sum(&summed, false)?,
        };
        let kept: Vec<char> = all.iter().copied().filter(|c| output.contains(c)).collect();
        let order: Vec<isize> =
            output.iter().map(|c| kept.iter().position(|k| k == c).unwrap_or(0) as isize).collect();
        y.permute(&order)
    }
}
