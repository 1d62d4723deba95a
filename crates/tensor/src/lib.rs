//! Tensor front end of wgrad: lazy tensors, autograd, nn layers and optimizers (to be built).
