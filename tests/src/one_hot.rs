//! One-hot reduces as the Tensor front end schedules them (`embedding`, `gather`, tensor
//! indexing: an index compared with an arange, the matching element kept, summed over the
//! indexed dim), whose reduce collapses into one gated load in codegen; with index data inside
//! and outside the indexed dim (negative, past the end), which must pick zeros.

use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::Arg;
use wgrad_tensor::{DeviceName, Index, Tensor, with_default_device};

use crate::Rng;
use crate::random_ast::Case;

/// A one-hot reduce kernel and the length of the dim it indexes.
pub struct OneHot {
    /// What it computes.
    pub name: &'static str,
    /// The kernel AST and its buffers.
    pub case: Case,
    /// The length of the indexed dim.
    pub indexed: usize,
}

impl OneHot {
    /// Input data per slot: int slots hold indices in `[-3, indexed + 3)`, float slots small
    /// values in quarters (outputs get an empty list).
    pub fn inputs(&self, r: &mut Rng) -> Vec<Vec<ConstValue>> {
        let mut inputs = self.case.inputs(r);
        for (slot, &(dtype, n)) in self.case.buffers.iter().enumerate().skip(self.case.outputs) {
            if dtype.is_int() {
                inputs[slot] =
                    (0..n).map(|_| ConstValue::Int(r.below(self.indexed + 6) as i64 - 3)).collect();
            }
        }
        inputs
    }
}

/// The one kernel that realizes `t` (its inputs realized already), as a [`Case`].
fn kernel_of(t: Tensor) -> Case {
    let schedule = t.schedule(32).expect("the graph schedules");
    assert_eq!(schedule.kernel_count(), 1, "one kernel: {:#?}", schedule.kernels());
    let ast = schedule.kernels()[0].clone();
    let buffers = schedule.items[0]
        .bufs
        .iter()
        .map(|b| match b.arg() {
            Arg::Buffer { size, .. } => (b.dtype(), *size),
            other => panic!("a kernel buffer with arg {other}"),
        })
        .collect();
    Case { ast, buffers, outputs: 1 }
}

/// A realized float tensor of `shape` (its values do not matter: the cases bring their own).
fn floats(shape: &[usize], dtype: DType) -> Tensor {
    let t = Tensor::zeros(shape, dtype).expect("zeros").contiguous();
    t.realize().expect("realized");
    t
}

/// A realized int32 tensor of `shape`.
fn ints(shape: &[usize]) -> Tensor {
    let t = Tensor::zeros(shape, DType::I32).expect("zeros").contiguous();
    t.realize().expect("realized");
    t
}

/// The cases, scheduled on the CPU device: embeddings (f32 and f16 tables, 1-d and 2-d ids),
/// a gather, a tensor index and two broadcast tensor indices.
pub fn one_hot_cases() -> Vec<OneHot> {
    with_default_device(&DeviceName::Cpu, || {
        let case = |name, indexed, t: wgrad_tensor::Result<Tensor>| OneHot {
            name,
            case: kernel_of(t.expect("the op builds")),
            indexed,
        };
        let two = [Index::Tensor(ints(&[5])), Index::Tensor(ints(&[5]))];
        vec![
            case("embedding 200 x 16", 200, ints(&[8]).embedding(&floats(&[200, 16], DType::F32))),
            case("embedding f16 100 x 8", 100, ints(&[2, 4]).embedding(&floats(&[100, 8], DType::F16))),
            case("gather axis 1", 50, floats(&[6, 50], DType::F32).gather(1, &ints(&[6, 3]))),
            case("tensor index", 40, floats(&[40, 8], DType::F32).get(&[Index::Tensor(ints(&[5]))])),
            case("two tensor indices", 12, floats(&[12, 12], DType::F32).get(&two)),
        ]
    })
}

/// The word embedding kernel of all-MiniLM-L6-v2 (a vocabulary of 30522 rows of 384) for
/// `tokens` token ids.
pub fn minilm_embedding(tokens: usize) -> Case {
    with_default_device(&DeviceName::Cpu, || {
        kernel_of(ints(&[tokens]).embedding(&floats(&[30522, 384], DType::F32)).expect("an embedding"))
    })
}
