//! Reference CPU interpreter of wgrad: runs linear UOp programs with exact ALU semantics (to be built).
