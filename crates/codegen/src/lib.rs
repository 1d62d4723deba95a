//! Kernel optimisation and lowering of wgrad: OptOps, heuristics, lowerer, expander and linearizer (to be built).
