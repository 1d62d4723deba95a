//! Engine of wgrad: scheduling lazy graphs into kernels, realize, JIT and BEAM search (to be built).
