//! WGSL renderer of wgrad: prints linear UOp programs as WGSL compute shaders (to be built).
