//! A pickle reader for what PyTorch checkpoints hold, and nothing else.
//!
//! It runs the opcodes of pickle protocols 2 to 5 that describe plain data (numbers,
//! strings, bytes, lists, tuples, dicts, memo references) and recognizes a fixed list of
//! globals: `collections.OrderedDict`, torch's tensor and parameter rebuild functions,
//! storage classes and dtypes, `torch.Size` and `_codecs.encode`. A reduce of one of those
//! is interpreted here, never called; any other opcode or global is an error naming it, so
//! reading a checkpoint never imports or runs code.
//!
//! Objects live in an arena and the stack holds their ids, so a list or dict memoized
//! before it is filled (as pickle always does) is the same object wherever it is referenced.

use std::collections::HashMap;

use wgrad_dtype::DType;

use crate::nn::state::torch::TorchError;

/// An object's index in [`Pickle::objs`].
pub(super) type Id = usize;

/// A storage a tensor reads from: a persistent id of the checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct StorageRef {
    /// The element type (bytes for an untyped storage).
    pub dtype: DType,
    /// Its key: the file `data/<key>` in a zip checkpoint.
    pub key: String,
    /// Its length in elements of `dtype`.
    pub numel: usize,
}

/// A tensor as `_rebuild_tensor_v2` describes it: a strided view of a storage.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct TensorRecord {
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
pub(super) enum Global {
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

/// An unpickled object.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Obj {
    None,
    Bool(bool),
    Int(i64),
    /// An integer wider than 64 bits: its little-endian two's-complement bytes.
    BigInt(Vec<u8>),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Id>),
    Tuple(Vec<Id>),
    /// A dict or `OrderedDict`, in insertion order.
    Dict(Vec<(Id, Id)>),
    Global(Global),
    Storage(StorageRef),
    Tensor(TensorRecord),
}

/// A finished pickle: its objects and the one it describes.
pub(super) struct Pickle {
    /// Every object, by id.
    pub objs: Vec<Obj>,
    /// The pickled object.
    pub root: Id,
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
        ("torch", _) => match table(&STORAGES) {
            Some(d) => Global::StorageClass(d),
            None => Global::Dtype(table(&DTYPES)?),
        },
        _ => return None,
    })
}

/// Unpickles the pickle at the start of `data`; returns it and the bytes it took.
pub(super) fn load(data: &[u8]) -> Result<(Pickle, usize), TorchError> {
    let mut m = Machine { data, pos: 0, objs: vec![], stack: vec![], marks: vec![], memo: HashMap::new() };
    let root = m.run()?;
    Ok((Pickle { objs: m.objs, root }, m.pos))
}

/// The state of the unpickler.
struct Machine<'a> {
    data: &'a [u8],
    /// The next byte to read.
    pos: usize,
    objs: Vec<Obj>,
    stack: Vec<Id>,
    /// Stack lengths at each MARK.
    marks: Vec<usize>,
    memo: HashMap<u32, Id>,
}

impl<'a> Machine<'a> {
    /// The error `what` at the current opcode.
    fn malformed(&self, what: impl Into<String>) -> TorchError {
        TorchError::Pickle { offset: self.pos, what: what.into() }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], TorchError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or(TorchError::Truncated { offset: self.data.len() })?;
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], TorchError> {
        Ok(self.take(N)?.try_into().unwrap_or_else(|_| unreachable!("took {N} bytes")))
    }

    fn u8(&mut self) -> Result<u8, TorchError> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, TorchError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn len64(&mut self) -> Result<usize, TorchError> {
        let n = u64::from_le_bytes(self.array()?);
        usize::try_from(n).map_err(|_| TorchError::Truncated { offset: self.data.len() })
    }

    /// The text up to the next newline (GLOBAL's operands).
    fn line(&mut self) -> Result<&'a str, TorchError> {
        let rest = &self.data[self.pos..];
        let n =
            rest.iter().position(|&b| b == b'\n').ok_or(TorchError::Truncated { offset: self.data.len() })?;
        let line = self.take(n + 1)?;
        std::str::from_utf8(&line[..n]).map_err(|_| self.malformed("a global's name is not UTF-8"))
    }

    fn utf8(&mut self, n: usize) -> Result<Obj, TorchError> {
        let bytes = self.take(n)?;
        let s = std::str::from_utf8(bytes).map_err(|_| self.malformed("a string is not UTF-8"))?;
        Ok(Obj::Str(s.to_string()))
    }

    fn push(&mut self, obj: Obj) {
        self.objs.push(obj);
        self.stack.push(self.objs.len() - 1);
    }

    fn pop(&mut self) -> Result<Id, TorchError> {
        let top = self.top()?;
        self.stack.pop();
        Ok(top)
    }

    /// The top of the stack above the last MARK.
    fn top(&self) -> Result<Id, TorchError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match self.stack.len() > floor {
            true => Ok(self.stack[self.stack.len() - 1]),
            false => Err(self.malformed("the stack is empty")),
        }
    }

    /// The items pushed since the last MARK, which is dropped.
    fn pop_mark(&mut self) -> Result<Vec<Id>, TorchError> {
        let mark = self.marks.pop().ok_or_else(|| self.malformed("no MARK to pop to"))?;
        Ok(self.stack.split_off(mark))
    }

    fn memo_put(&mut self, key: u32) -> Result<(), TorchError> {
        let top = self.top()?;
        self.memo.insert(key, top);
        Ok(())
    }

    fn memo_get(&mut self, key: u32) -> Result<(), TorchError> {
        let id = *self.memo.get(&key).ok_or_else(|| self.malformed(format!("memo {key} is empty")))?;
        self.stack.push(id);
        Ok(())
    }

    /// Appends `items` to the list on top of the stack.
    fn append(&mut self, items: Vec<Id>) -> Result<(), TorchError> {
        let top = self.top()?;
        match &mut self.objs[top] {
            Obj::List(list) => list.extend(items),
            _ => return Err(self.malformed("APPEND to something that is not a list")),
        }
        Ok(())
    }

    /// Sets `items` (keys and values alternating) in the dict on top of the stack.
    fn set_items(&mut self, items: Vec<Id>) -> Result<(), TorchError> {
        if !items.len().is_multiple_of(2) {
            return Err(self.malformed("SETITEMS with a key and no value"));
        }
        let top = self.top()?;
        let Obj::Dict(dict) = &mut self.objs[top] else {
            return Err(self.malformed("SETITEM on something that is not a dict"));
        };
        // a pickled dict sets each key once; repeats are resolved where the dict is read
        dict.extend(items.chunks(2).map(|kv| (kv[0], kv[1])));
        Ok(())
    }

    /// Runs opcodes up to STOP; returns the pickled object.
    fn run(&mut self) -> Result<Id, TorchError> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            match op {
                0x80 => {
                    self.u8()?; // PROTO n
                }
                0x95 => {
                    self.array::<8>()?; // FRAME: a length hint
                }
                b'.' => return self.pop(), // STOP
                b'(' => self.marks.push(self.stack.len()),
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let top = self.top()?;
                    self.stack.push(top);
                }
                b'N' => self.push(Obj::None),
                0x88 => self.push(Obj::Bool(true)),
                0x89 => self.push(Obj::Bool(false)),
                b'J' => {
                    let v = i32::from_le_bytes(self.array()?);
                    self.push(Obj::Int(v.into()));
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Obj::Int(v.into()));
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.array()?);
                    self.push(Obj::Int(v.into()));
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a { self.u8()? as usize } else { self.u32()? as usize };
                    let bytes = self.take(n)?;
                    self.push(int_from_le(bytes));
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.array()?);
                    self.push(Obj::Float(v));
                }
                0x8c | b'U' => {
                    let n = self.u8()? as usize;
                    let s = self.utf8(n)?;
                    self.push(s);
                }
                b'X' | b'T' => {
                    // BINSTRING is Python 2's str, read as UTF-8 as torch.load does
                    let n = self.u32()? as usize;
                    let s = self.utf8(n)?;
                    self.push(s);
                }
                0x8d => {
                    let n = self.len64()?;
                    let s = self.utf8(n)?;
                    self.push(s);
                }
                b'C' | b'B' | 0x8e | 0x96 => {
                    let n = match op {
                        b'C' => self.u8()? as usize,
                        b'B' => self.u32()? as usize,
                        _ => self.len64()?,
                    };
                    let bytes = self.take(n)?.to_vec();
                    self.push(Obj::Bytes(bytes));
                }
                b']' => self.push(Obj::List(vec![])),
                b'l' => {
                    let items = self.pop_mark()?;
                    self.push(Obj::List(items));
                }
                b'a' => {
                    let item = self.pop()?;
                    self.append(vec![item])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    self.append(items)?;
                }
                b')' => self.push(Obj::Tuple(vec![])),
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Obj::Tuple(items));
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < self.marks.last().copied().unwrap_or(0) + n {
                        return Err(self.malformed("TUPLE of more items than the stack holds"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.push(Obj::Tuple(items));
                }
                b'}' => self.push(Obj::Dict(vec![])),
                b'd' => {
                    let items = self.pop_mark()?;
                    self.push(Obj::Dict(vec![]));
                    self.set_items(items)?;
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    self.set_items(vec![k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    self.set_items(items)?;
                }
                b'q' => {
                    let key = self.u8()?;
                    self.memo_put(key.into())?;
                }
                b'r' => {
                    let key = self.u32()?;
                    self.memo_put(key)?;
                }
                0x94 => {
                    let key = u32::try_from(self.memo.len()).map_err(|_| self.malformed("memo overflow"))?;
                    self.memo_put(key)?;
                }
                b'h' => {
                    let key = self.u8()?;
                    self.memo_get(key.into())?;
                }
                b'j' => {
                    let key = self.u32()?;
                    self.memo_get(key)?;
                }
                b'c' => {
                    let (module, name) = (self.line()?, self.line()?);
                    self.global(module, name, at)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Obj::Str(module), Obj::Str(name)) = (&self.objs[module], &self.objs[name]) else {
                        return Err(self.malformed("STACK_GLOBAL of something other than two strings"));
                    };
                    let (module, name) = (module.clone(), name.clone());
                    self.global(&module, &name, at)?;
                }
                b'Q' => {
                    let pid = self.pop()?;
                    let storage = self.persistent(pid)?;
                    self.push(Obj::Storage(storage));
                }
                b'R' | 0x81 => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let obj = self.reduce(callable, args)?;
                    match obj {
                        Reduced::New(obj) => self.push(obj),
                        Reduced::Existing(id) => self.stack.push(id),
                    }
                }
                b'b' => {
                    let state = self.pop()?;
                    self.build(state)?;
                }
                _ => return Err(TorchError::Opcode { opcode: op, offset: at }),
            }
        }
    }

    /// Pushes the global `module.name`, or fails naming it.
    fn global(&mut self, module: &str, name: &str, at: usize) -> Result<(), TorchError> {
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
    fn persistent(&self, pid: Id) -> Result<StorageRef, TorchError> {
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
    fn reduce(&mut self, callable: Id, args: Id) -> Result<Reduced, TorchError> {
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
    fn build(&mut self, state: Id) -> Result<(), TorchError> {
        let top = self.top()?;
        match (&self.objs[top], &self.objs[state]) {
            (Obj::Dict(_) | Obj::Tensor(_), Obj::Dict(_) | Obj::None | Obj::Tuple(_)) => Ok(()),
            _ => Err(self.malformed("BUILD of something that is not a dict or tensor")),
        }
    }
}

/// What a REDUCE gives: a new object, or one that already has an id.
enum Reduced {
    New(Obj),
    Existing(Id),
}

/// The integer of little-endian two's-complement `bytes` (LONG1, LONG4).
fn int_from_le(bytes: &[u8]) -> Obj {
    if bytes.len() > 8 {
        return Obj::BigInt(bytes.to_vec());
    }
    let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
    let mut buf = [if negative { 0xff } else { 0 }; 8];
    buf[..bytes.len()].copy_from_slice(bytes);
    Obj::Int(i64::from_le_bytes(buf))
}
