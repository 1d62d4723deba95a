//! Custom gradients: an op built from other ops may give autograd its own backward instead
//! of the one the rules of [`crate::gradient`] would derive through its graph (a convolution's
//! input gradient as a convolution, not as the gradient of its window views).
//!
//! [`Tensor::with_gradient`] records, for the op's output node, its inputs and a backward
//! function; `backward` then treats that node as one op whose sources are those inputs and
//! never walks the graph inside it. The table holds its keys weakly (an entry lives as long
//! as the node), like the engine's table of realized nodes. Hash-consing makes an equal graph
//! the same node, and an equal graph computes the same function, so it has the same gradient.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use wgrad_ops::{FxBuild, UOp, WeakUOp};

use crate::Tensor;
use crate::autograd::grad_enabled;
use crate::error::Result;

/// The gradients of a custom op's inputs (`None`: none) from the gradient of its output and
/// the inputs themselves.
pub(crate) type Backward = dyn Fn(&Tensor, &[Tensor]) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// A custom op's inputs (held weakly: the output's graph holds them while it lives) and its
/// backward function.
struct Entry {
    inputs: Vec<WeakUOp>,
    backward: Arc<Backward>,
}

#[derive(Default)]
struct Table {
    entries: HashMap<u64, Vec<(WeakUOp, Entry)>, FxBuild>,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The inputs and backward function recorded for node `u`, if any.
pub(crate) fn custom_grad(u: &UOp) -> Option<(Vec<UOp>, Arc<Backward>)> {
    let t = table();
    let same = |(k, _): &&(WeakUOp, Entry)| k.upgrade().is_some_and(|k| k == *u);
    let (_, entry) = t.entries.get(&u.structural_hash())?.iter().find(same)?;
    let inputs = entry.inputs.iter().map(WeakUOp::upgrade).collect::<Option<Vec<UOp>>>()?;
    Some((inputs, entry.backward.clone()))
}

impl Tensor {
    /// This tensor (computed from `inputs`) with `backward` as its gradient: autograd passes
    /// the gradient of this tensor to `backward` with the inputs, and the gradients it returns
    /// (one per input, in order) to the inputs. Outside `no_grad` only; inside, nothing is
    /// recorded.
    pub(crate) fn with_gradient(
        self,
        inputs: &[&Tensor],
        backward: impl Fn(&Tensor, &[Tensor]) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    ) -> Tensor {
        if !grad_enabled() {
            return self;
        }
        let key = self.uop();
        let entry = Entry {
            inputs: inputs.iter().map(|t| t.uop().downgrade()).collect(),
            backward: Arc::new(backward),
        };
        let mut t = table();
        t.entries.retain(|_, v| {
            v.retain(|(k, _)| k.upgrade().is_some_and(|k| k != key));
            !v.is_empty()
        });
        t.entries.entry(key.structural_hash()).or_default().push((key.downgrade(), entry));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceName, no_grad, with_default_device};

    /// `x * 2` whose gradient is declared to be `g * 3`, on the CPU device.
    fn doubled_with_triple_gradient(x: &Tensor) -> Tensor {
        (x * 2.0).with_gradient(&[x], |g, _| Ok(vec![Some(g * 3.0)]))
    }

    #[test]
    fn backward_takes_the_custom_gradient_instead_of_the_graphs() {
        with_default_device(&DeviceName::Cpu, || {
            let x = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
            x.set_requires_grad(true).unwrap();
            let y = doubled_with_triple_gradient(&x);
            (&y * &y).sum(&[], false).unwrap().backward().unwrap();
            // d/dx sum(y^2) = 2 y * 3 with y = 2 x
            assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![12.0, 24.0]);
            assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
        });
    }

    #[test]
    fn nothing_is_recorded_without_gradients_and_entries_die_with_their_node() {
        with_default_device(&DeviceName::Cpu, || {
            let x = Tensor::from_slice(&[5.0f32], &[1]).unwrap();
            let quiet = no_grad(|| doubled_with_triple_gradient(&x));
            assert!(custom_grad(&quiet.uop()).is_none());
            drop(quiet);
            let y = doubled_with_triple_gradient(&x);
            let key = y.uop();
            assert_eq!(custom_grad(&key).map(|(inputs, _)| inputs), Some(vec![x.uop()]));
            let (weak, hash) = (key.downgrade(), key.structural_hash());
            drop((y, key));
            assert!(!weak.is_alive());
            assert!(table().entries.contains_key(&hash));
            // the next registration sweeps the dead entry
            let _z = doubled_with_triple_gradient(&Tensor::from_slice(&[1.0f32], &[1]).unwrap());
            assert!(!table().entries.contains_key(&hash));
        });
    }
}
