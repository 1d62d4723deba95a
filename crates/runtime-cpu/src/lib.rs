//! Reference CPU interpreter of wgrad: runs linear UOp programs with exact ALU semantics.
//!
//! The interpreter is the executable definition of the linear form (`LOWERED.md` in
//! `wgrad-codegen`): a [`Program`](wgrad_codegen::Program) is compiled once into a compact
//! instruction array over numbered registers ([`CpuProgram`]), then run for every workgroup
//! (`gidx`) and every thread of it (`lidx`):
//! - ALU ops go through [`wgrad_ops::exec_alu`], casts through `ConstValue::cast`, bitcasts
//!   through [`wgrad_ops::bitcast`]: the results are those of constant folding, bit for bit;
//! - a load whose index is invalid yields 0 and touches no memory, a store whose index is
//!   invalid is skipped, a valid access out of bounds is [`CpuError::OutOfBounds`];
//! - a vector value of `w` lanes lives in `w` consecutive registers: a load or store through
//!   an index of `T.vec(w).ptr()` moves elements `idx*w .. idx*w + w`, a `Gep` of one lane is
//!   that lane's register, a `Vectorize` copies its lanes in; other vector ops are refused;
//! - `DefineLocal` memory is shared by the threads of one workgroup and zeroed for each;
//! - the threads of a workgroup step round-robin from barrier to barrier, so a `Barrier`
//!   (inside loops too) holds every thread until all reached it;
//! - workgroups run in parallel on scoped threads; buffers hold each element in an
//!   `AtomicU64`, so concurrent stores are safe without `unsafe`.

mod buffer;
mod compile;
mod error;
mod exec;

pub use buffer::CpuBuffer;
pub use compile::CpuProgram;
pub use error::{CpuError, Memory};
pub use exec::run;
