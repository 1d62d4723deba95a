//! Data sets to train on: MNIST in the IDX format (the 10,000-digit sample shipped with the
//! repository, or full MNIST from a directory).

pub mod mnist;
