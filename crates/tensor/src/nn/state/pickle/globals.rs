//! The globals a PyTorch checkpoint names, and what the pickle reader makes of them: storage
//! classes and dtypes become values, and a REDUCE of `OrderedDict`, a tensor or parameter
//! rebuild function, `torch.Size` or `_codecs.encode` is interpreted from its arguments.

use wgrad_dtype::DType;

use super::{Id, Machine, Obj};
use crate::nn::state::torch::TorchError;

/// A storage a tensor reads from: a persistent id of the checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::nn::state) struct StorageRef {
    /// The element type (bytes for an untyped storage).
    pub dtype: DType,
    /// Its key: the file `data/<key>` in a zip checkpoint.
    pub key: String,
    /// Its length in elements of `dtype`.
    pub numel: usize,
}

/// A tensor as `_rebuild_tensor_v2` describes it: a strided view of a storage.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::nn::state) struct TensorRecord {
    /// The storage it views.
    pub storage: StorageRef,
    /// The element type (the storage's, unless `_rebuild_tensor_v3` gives one).
    pub dtype: DType,
    /// The first element's index in the storage, in elements of `dtype`.
    pub offset: usize,
    /// The dims.
    pub size: Vec<usize>,
    /// The step in elements between neighbours along each dim.
    pub stride: Vec<usize>,
}

/// The globals a checkpoint may name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::nn::state) enum Global {
    OrderedDict,
    RebuildTensor,
    RebuildTensorV2,
    RebuildTensorV3,
    RebuildParameter,
    RebuildParameterWithState,
    RebuildFromTypeV2,
    TensorClass,
    Size,
    CodecsEncode,
    /// A storage class: typed (`torch.FloatStorage`) or untyped (bytes).
    StorageClass(DType),
    /// A dtype (`torch.float32`).
    Dtype(DType),
}

/// torch's names of the storage classes and their dtypes.
const STORAGES: [(&str, DType); 11] = [
    ("DoubleStorage", DType::F64),
    ("FloatStorage", DType::F32),
    ("HalfStorage", DType::F16),
    ("BFloat16Storage", DType::BF16),
    ("LongStorage", DType::I64),
    ("IntStorage", DType::I32),
    ("ShortStorage", DType::I16),
    ("CharStorage", DType::I8),
    ("ByteStorage", DType::U8),
    ("BoolStorage", DType::BOOL),
    ("UntypedStorage", DType::U8),
];

/// torch's dtype names (`torch.float32` pickles as the global `torch float32`) that wgrad
/// has; float8, complex and sub-byte dtypes are not among them.
const DTYPES: [(&str, DType); 19] = [
    ("float64", DType::F64),
    ("double", DType::F64),
    ("float32", DType::F32),
    ("float", DType::F32),
    ("float16", DType::F16),
    ("half", DType::F16),
    ("bfloat16", DType::BF16),
    ("int64", DType::I64),
    ("long", DType::I64),
    ("int32", DType::I32),
    ("int", DType::I32),
    ("int16", DType::I16),
    ("short", DType::I16),
    ("int8", DType::I8),
    ("uint8", DType::U8),
    ("bool", DType::BOOL),
    ("uint16", DType::U16),
    ("uint32", DType::U32),
    ("uint64", DType::U64),
];

/// The global `module.name`, if a checkpoint may name it.
fn resolve(module: &str, name: &str) -> Option<Global> {
    let table = |t: &[(&str, DType)]| t.iter().find(|(n, _)| *n == name).map(|&(_, d)| d);
    Some(match (module, name) {
        ("collections", "OrderedDict") => Global::OrderedDict,
        ("torch._utils", "_rebuild_tensor") => Global::RebuildTensor,
        ("torch._utils", "_rebuild_tensor_v2") => Global::RebuildTensorV2,
        ("torch._utils", "_rebuild_tensor_v3") => Global::RebuildTensorV3,
        ("torch._utils", "_rebuild_parameter") => Global::RebuildParameter,
        ("torch._utils", "_rebuild_parameter_with_state") => Global::RebuildParameterWithState,
        ("torch._tensor", "_rebuild_from_type_v2") => Global::RebuildFromTypeV2,
        ("torch", "Tensor") | ("torch.nn.parameter", "Parameter") => Global::TensorClass,
        ("torch", "Size") => Global::Size,
        ("_codecs", "encode") => Global::CodecsEncode,
        // PyTorch >= 2.x names the untyped storage of a `_rebuild_tensor_v3` by its module
        ("torch.storage", "UntypedStorage") => Global::StorageClass(DType::U8),
        ("torch", _) => match table(&STORAGES) {
            Some(d) => Global::StorageClass(d),
            None => Global::Dtype(table(&DTYPES)?),
        },
        _ => return None,
    })
}

impl Machine<'_> {
    /// Pushes the global `module.name`, or fails naming it.
    pub(super) fn global(&mut self, module: &str, name: &str, at: usize) -> Result<(), TorchError> {
        let global = resolve(module, name).ok_or_else(|| TorchError::Global {
            module: module.to_string(),
            name: name.to_string(),
            offset: at,
        })?;
        self.push(Obj::Global(global));
        Ok(())
    }

    /// The items of the tuple or list `id`.
    fn items(&self, id: Id) -> Result<Vec<Id>, TorchError> {
        match &self.objs[id] {
            Obj::Tuple(items) | Obj::List(items) => Ok(items.clone()),
            _ => Err(self.malformed("expected a tuple")),
        }
    }

    fn int(&self, id: Id, what: &str) -> Result<i64, TorchError> {
        match self.objs[id] {
            Obj::Int(v) => Ok(v),
            Obj::Bool(b) => Ok(b.into()),
            _ => Err(self.malformed(format!("{what} is not an integer"))),
        }
    }

    fn count(&self, id: Id, what: &str) -> Result<usize, TorchError> {
        usize::try_from(self.int(id, what)?).map_err(|_| self.malformed(format!("{what} is negative")))
    }

    fn str(&self, id: Id, what: &str) -> Result<String, TorchError> {
        match &self.objs[id] {
            Obj::Str(s) => Ok(s.clone()),
            _ => Err(self.malformed(format!("{what} is not a string"))),
        }
    }

    fn counts(&self, id: Id, what: &str) -> Result<Vec<usize>, TorchError> {
        self.items(id)?.into_iter().map(|i| self.count(i, what)).collect()
    }

    /// The storage of a persistent id: `('storage', storage class, key, location, numel, ..)`.
    pub(super) fn persistent(&self, pid: Id) -> Result<StorageRef, TorchError> {
        let items = self.items(pid)?;
        let bad = || self.malformed("a persistent id that is not ('storage', class, key, location, numel)");
        if items.len() < 5 || self.objs[items[0]] != Obj::Str("storage".into()) {
            return Err(bad());
        }
        let Obj::Global(Global::StorageClass(dtype)) = self.objs[items[1]] else { return Err(bad()) };
        let key = match &self.objs[items[2]] {
            Obj::Str(s) => s.clone(),
            Obj::Int(i) => i.to_string(),
            _ => return Err(bad()),
        };
        Ok(StorageRef { dtype, key, numel: self.count(items[4], "a storage's length")? })
    }

    /// The object `callable(*args)` describes, for the callables checkpoints use.
    pub(super) fn reduce(&mut self, callable: Id, args: Id) -> Result<Reduced, TorchError> {
        let Obj::Global(global) = self.objs[callable] else {
            return Err(self.malformed("REDUCE of something that is not a known global"));
        };
        let args = self.items(args)?;
        let arity = |lo: usize, hi: usize| -> Result<(), TorchError> {
            match (lo..=hi).contains(&args.len()) {
                true => Ok(()),
                false => Err(self.malformed(format!("{global:?} given {} arguments", args.len()))),
            }
        };
        Ok(Reduced::New(match global {
            Global::OrderedDict => {
                arity(0, 1)?;
                self.objs.push(Obj::Dict(vec![]));
                let dict = self.objs.len() - 1;
                if let Some(&pairs) = args.first() {
                    let mut items = vec![];
                    for pair in self.items(pairs)? {
                        items.extend(self.items(pair)?);
                    }
                    self.stack.push(dict);
                    self.set_items(items)?;
                    self.stack.pop();
                }
                return Ok(Reduced::Existing(dict));
            }
            Global::RebuildTensor | Global::RebuildTensorV2 | Global::RebuildTensorV3 => {
                let (lo, hi) = match global {
                    Global::RebuildTensor => (4, 4),
                    Global::RebuildTensorV2 => (4, 7),
                    _ => (7, 8),
                };
                arity(lo, hi)?;
                let Obj::Storage(storage) = self.objs[args[0]].clone() else {
                    return Err(self.malformed("a tensor rebuilt from something that is not a storage"));
                };
                let dtype = match global {
                    Global::RebuildTensorV3 => match self.objs[args[6]] {
                        Obj::Global(Global::Dtype(d)) => d,
                        _ => return Err(self.malformed("_rebuild_tensor_v3's dtype is not a torch dtype")),
                    },
                    _ => storage.dtype,
                };
                let offset = self.count(args[1], "a storage offset")?;
                let size = self.counts(args[2], "a size")?;
                let stride = self.counts(args[3], "a stride")?;
                if size.len() != stride.len() {
                    return Err(self.malformed("a tensor's size and stride differ in length"));
                }
                Obj::Tensor(TensorRecord { storage, dtype, offset, size, stride })
            }
            Global::RebuildParameter | Global::RebuildParameterWithState => {
                arity(3, 4)?;
                return self.tensor_arg(args[0]);
            }
            Global::RebuildFromTypeV2 => {
                arity(4, 4)?;
                if self.objs[args[1]] != Obj::Global(Global::TensorClass) {
                    return Err(
                        self.malformed("_rebuild_from_type_v2 of a class other than Tensor or Parameter")
                    );
                }
                let rebuilt = self.reduce(args[0], args[2])?;
                let id = match rebuilt {
                    Reduced::New(obj) => {
                        self.objs.push(obj);
                        self.objs.len() - 1
                    }
                    Reduced::Existing(id) => id,
                };
                return self.tensor_arg(id);
            }
            Global::Size => {
                arity(1, 1)?;
                Obj::Tuple(self.items(args[0])?)
            }
            Global::CodecsEncode => {
                arity(1, 2)?;
                let text = self.str(args[0], "_codecs.encode's text")?;
                let bytes =
                    text.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect::<Option<Vec<u8>>>();
                Obj::Bytes(bytes.ok_or_else(|| self.malformed("_codecs.encode of text beyond latin-1"))?)
            }
            Global::TensorClass | Global::StorageClass(_) | Global::Dtype(_) => {
                return Err(self.malformed(format!("{global:?} called")));
            }
        }))
    }

    /// `id`, which must be a tensor.
    fn tensor_arg(&self, id: Id) -> Result<Reduced, TorchError> {
        match self.objs[id] {
            Obj::Tensor(_) => Ok(Reduced::Existing(id)),
            _ => Err(self.malformed("a parameter of something that is not a tensor")),
        }
    }

    /// BUILD: sets the object's attributes from `state`. Dicts and tensors take attribute
    /// dicts (a state dict's `_metadata`) and keep them nowhere.
    pub(super) fn build(&mut self, state: Id) -> Result<(), TorchError> {
        let top = self.top()?;
        match (&self.objs[top], &self.objs[state]) {
            (Obj::Dict(_) | Obj::Tensor(_), Obj::Dict(_) | Obj::None | Obj::Tuple(_)) => Ok(()),
            _ => Err(self.malformed("BUILD of something that is not a dict or tensor")),
        }
    }
}

/// What a REDUCE gives: a new object, or one that already has an id.
pub(super) enum Reduced {
    New(Obj),
    Existing(Id),
}
