//! The vectorizer's job is memory width: it folds the scalar loads and stores of neighbouring
//! lanes into vector ones (tinygrad's float4 folding), where the index proves them contiguous
//! and aligned, so a thread moves 8 or 16 bytes per access instead of 4.
//!
//! The lowerer gives every upcast and unroll lane its own scalar access; after simplification a
//! lane's index is `root + c` (the symbolic rules move constants to the outside). Accesses of one
//! buffer with the same `root` and gate differ only by `c`. A run of `w` of them at offsets
//! `c, c+1, ..., c+w-1`, with `w` one of the target's vector widths (widest first) and `root + c`
//! provably a multiple of `w` (from its constant factors: [`UOp::divides`]), becomes one access
//! through `Index(buf, (root + c) / w, gate)` of dtype `T.vec(w).ptr()`: a `Load` of `T.vec(w)`
//! whose lanes the scalar users read through `Gep`s, or a `Store` of a `Vectorize` of the lanes'
//! values. Everything else stays scalar: unaligned or partial runs, lanes with different gates
//! (a padded axis), odd sizes.
//!
//! Invariants: only buffer arguments (`DefineGlobal`, bound from their first element, so the base
//! is aligned) and workgroup arrays (`DefineLocal`) of 32-bit elements, or f16 on a target with
//! f16, are folded, and loads of 8-bit buffer arguments into runs of 4 (one `u32` word of the
//! renderers' packed arrays, where every lane would otherwise load the word again); stores are folded where they are sources of the sink or of a `Barrier` (with the
//! barrier a store comes after, if it names one, kept); a
//! vector access touches exactly the elements its scalar lanes touched, under the same gate;
//! the output is a lowered graph in the sense of `LOWERED.md`.

use std::collections::{BTreeMap, HashMap};

use wgrad_dtype::{DType, ScalarType};
use wgrad_ops::{Arg, Ops, UOp, UOpMap};

use crate::Target;

/// What the lanes of one vector access share.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    buf: UOp,
    root: UOp,
    gate: Option<UOp>,
    /// The `Barrier` a load comes after.
    after: Option<UOp>,
    store: bool,
}

/// A run of lanes folded into one access: the accesses in lane order and the vector index.
struct Run {
    lanes: Vec<UOp>,
    index: UOp,
}

/// Folds contiguous, aligned scalar accesses of the lowered graph `sink` into vector accesses
/// of the target's vector widths (see the module doc). `sink` should be simplified first.
pub fn vectorize(sink: &UOp, target: &Target) -> UOp {
    let mut widths: Vec<usize> = target.vector_widths.iter().copied().filter(|&w| w > 1).collect();
    widths.sort_unstable_by(|a, b| b.cmp(a));
    if widths.is_empty() {
        return sink.clone();
    }
    let mut groups: HashMap<Key, BTreeMap<i128, Vec<UOp>>> = HashMap::new();
    for u in sink.toposort() {
        if let Some((key, offset)) = access(&u, target) {
            groups.entry(key).or_default().entry(offset).or_default().push(u);
        }
    }
    let runs: Vec<Run> = groups
        .iter()
        .flat_map(|(key, lanes)| runs(lanes, if packed(key.buf.dtype().base()) { &WORD } else { &widths }))
        .collect();
    if runs.is_empty() {
        return sink.clone();
    }
    rebuild(sink, &runs)
}

/// A foldable scalar access: its key and its index's constant offset.
fn access(u: &UOp, target: &Target) -> Option<(Key, i128)> {
    let store = match u.op() {
        Ops::Load if u.src().len() == 1 || (u.src().len() == 2 && u.src()[1].op() == Ops::Barrier) => false,
        Ops::Store if u.src().len() == 2 || (u.src().len() == 3 && u.src()[1].op() == Ops::Barrier) => true,
        _ => return None,
    };
    let index = &u.src()[0];
    if index.op() != Ops::Index {
        return None;
    }
    let buf = &index.src()[0];
    let element = buf.dtype().base();
    let word_load = !store && buf.op() == Ops::DefineGlobal && packed(element);
    if !matches!(buf.op(), Ops::DefineGlobal | Ops::DefineLocal)
        || index.dtype() != buf.dtype()
        || !(vectorizable(element, target) || word_load)
    {
        return None;
    }
    let idx = &index.src()[1];
    let (root, offset) = match (idx.op(), idx.const_int()) {
        (_, Some(c)) => (idx.const_like(0), c),
        (Ops::Add, _) => match idx.src()[1].const_int() {
            Some(c) => (idx.src()[0].clone(), c),
            None => (idx.clone(), 0),
        },
        _ => (idx.clone(), 0),
    };
    // the barrier a load comes after, or a store (a staged copy of a register: `Store(index,
    // barrier, value)`)
    let after = if store && u.src().len() == 2 { None } else { u.src().get(1).cloned() };
    Some((Key { buf: buf.clone(), root, gate: index.src().get(2).cloned(), after, store }, offset))
}

/// The one width an 8-bit load folds into: four lanes, one `u32` word of the renderers' packed
/// arrays.
const WORD: [usize; 1] = [4];

/// Whether `dtype` is kept packed four to a `u32` word (8-bit elements): its loads fold only into
/// whole words, and its stores stay scalar.
fn packed(dtype: DType) -> bool {
    !dtype.is_vector() && dtype.scalar().bits() == 8
}

/// Element types the renderers keep in plain arrays: 32-bit ones, and f16 where the target has it.
fn vectorizable(dtype: DType, target: &Target) -> bool {
    !dtype.is_vector()
        && match dtype.scalar() {
            ScalarType::Float32 | ScalarType::Int32 | ScalarType::UInt32 => true,
            ScalarType::Float16 => target.has_f16,
            _ => false,
        }
}

/// The runs of one group (accesses by offset), greedily from the lowest offset, widest first.
fn runs(lanes: &BTreeMap<i128, Vec<UOp>>, widths: &[usize]) -> Vec<Run> {
    let single = |o: i128| lanes.get(&o).filter(|l| l.len() == 1).map(|l| l[0].clone());
    let mut out = vec![];
    let mut next_free = i128::MIN;
    for &offset in lanes.keys() {
        if offset < next_free {
            continue;
        }
        for &w in widths {
            let Some(run) = (0..w as i128).map(|i| single(offset + i)).collect::<Option<Vec<UOp>>>() else {
                continue;
            };
            let Some(index) = run[0].src()[0].src()[1].divides(w as i128) else { continue };
            next_free = offset + w as i128;
            out.push(Run { lanes: run, index });
            break;
        }
    }
    out
}

/// `sink` with every run replaced by its vector access.
fn rebuild(sink: &UOp, runs: &[Run]) -> UOp {
    // each folded access: (run number, lane)
    let member: UOpMap<(usize, usize)> = runs
        .iter()
        .enumerate()
        .flat_map(|(r, run)| run.lanes.iter().enumerate().map(move |(lane, u)| (u.clone(), (r, lane))))
        .collect();
    let mut images: UOpMap<UOp> = UOpMap::default();
    let mut vectors: HashMap<usize, UOp> = HashMap::new();
    for u in sink.toposort() {
        let image = match member.get(&u) {
            Some(&(r, lane)) if u.op() == Ops::Load => {
                let load = vectors.entry(r).or_insert_with(|| vector_access(&runs[r], &images));
                load.gep(lane)
            }
            // stores are the sources of the sink, or of a barrier (workgroup memory)
            _ if matches!(u.op(), Ops::Sink | Ops::Barrier) => {
                let mut stores = vec![];
                for s in u.src() {
                    match member.get(s) {
                        Some(&(r, 0)) => stores.push(vector_access(&runs[r], &images)),
                        Some(_) => {}
                        None => stores.push(images[s].clone()),
                    }
                }
                u.with_src(stores)
            }
            _ => {
                let src: Vec<UOp> = u.src().iter().map(|s| images[s].clone()).collect();
                if src.iter().zip(u.src()).all(|(a, b)| a == b) { u.clone() } else { u.with_src(src) }
            }
        };
        images.insert(u, image);
    }
    images.remove(sink).unwrap_or_else(|| sink.clone())
}

/// The vector load or store of `run`, built from the images of its sources.
fn vector_access(run: &Run, images: &UOpMap<UOp>) -> UOp {
    let first = &run.lanes[0];
    let index = &first.src()[0];
    let buf = &index.src()[0];
    let width = run.lanes.len() as u32;
    let mut src = vec![buf.clone(), run.index.substitute(images)];
    src.extend(index.src().get(2).map(|gate| images[gate].clone()));
    let vector_index = UOp::new(Ops::Index, buf.dtype().vec(width), src, Arg::None);
    if first.op() == Ops::Load {
        let after = first.src().get(1).map(|b| images[b].clone());
        return UOp::load(
            first.dtype().vec(width),
            [Some(vector_index), after].into_iter().flatten().collect::<Vec<_>>(),
        );
    }
    let values: Vec<UOp> = run.lanes.iter().map(|s| images[&s.src()[s.src().len() - 1]].clone()).collect();
    let after = (first.src().len() == 3).then(|| images[&first.src()[1]].clone());
    UOp::store(
        [Some(vector_index), after, Some(UOp::vectorize(&values))].into_iter().flatten().collect::<Vec<_>>(),
    )
}
