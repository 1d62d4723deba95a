//! PyTorch checkpoints (`torch.save`'s `.pt`/`.pth` files): the zip format of PyTorch >= 1.6
//! (`<name>/data.pkl` and one file `<name>/data/<key>` per storage) and the older legacy
//! format (a sequence of pickles followed by the storages' bytes). The pickle is read by
//! `pickle/`, which never runs code; each tensor is then cut from its storage (strided
//! views gathered on the host) and uploaded.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Cursor, Read};
use std::path::Path;

use indexmap::IndexMap;
use thiserror::Error;
use wgrad_dtype::DType;
use zip::{CompressionMethod, ZipArchive};

use crate::Tensor;
use crate::error::{Result, TensorError};
use crate::nn::state::map_file;
use crate::nn::state::pickle::{self, Id, Obj, Pickle, StorageRef, TensorRecord};

/// What is wrong with a file that is not a valid PyTorch checkpoint.
#[derive(Debug, Error)]
pub enum TorchError {
    /// Neither a zip archive nor a legacy checkpoint (which starts with torch's magic number).
    #[error("neither a zip archive nor a legacy torch.save file")]
    Format,
    /// The zip archive is damaged (truncated, bad central directory, ...).
    #[error("zip archive: {0}")]
    Zip(#[from] zip::result::ZipError),
    /// A file the checkpoint needs is not in the archive.
    #[error("the archive has no `{0}`")]
    MissingEntry(String),
    /// The pickle ends before its STOP opcode (or a storage before its last byte).
    #[error("the data ends early (at byte {offset})")]
    Truncated {
        /// Where the data ends.
        offset: usize,
    },
    /// A pickle opcode that checkpoints do not use.
    #[error("pickle opcode {opcode:#04x} at byte {offset} is not one a checkpoint uses")]
    Opcode {
        /// The opcode.
        opcode: u8,
        /// Its position in the pickle.
        offset: usize,
    },
    /// A global other than the ones checkpoints name (tensor rebuild functions, storage
    /// classes, dtypes, `OrderedDict`): loading it would mean importing code.
    #[error(
        "the pickle names `{module}.{name}` (at byte {offset}), which a checkpoint loader does not import"
    )]
    Global {
        /// The module.
        module: String,
        /// The name in it.
        name: String,
        /// Its position in the pickle.
        offset: usize,
    },
    /// A pickle whose opcodes do not describe a checkpoint (bad stack, arguments, memo).
    #[error("malformed pickle at byte {offset}: {what}")]
    Pickle {
        /// Where the reader was.
        offset: usize,
        /// What it found.
        what: String,
    },
    /// A tensor that does not fit its storage.
    #[error("tensor `{name}`: {why}")]
    Tensor {
        /// Its path in the checkpoint (`model.fc.weight`).
        name: String,
        /// What does not fit.
        why: String,
    },
}

/// A value of a checkpoint: what the pickle held, tensors uploaded.
#[derive(Clone, Debug)]
pub enum TorchValue {
    /// `None`.
    None,
    /// A bool.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// Bytes.
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<TorchValue>),
    /// A tuple (or `torch.Size`).
    Tuple(Vec<TorchValue>),
    /// A dict or `OrderedDict`, in insertion order.
    Dict(Vec<(TorchValue, TorchValue)>),
    /// A tensor or parameter.
    Tensor(Tensor),
}

/// Every tensor of the PyTorch checkpoint at `path`, as tinygrad's `torch_load`: a state
/// dict's tensors under their keys, and those of a nested checkpoint under dotted paths
/// (`{"model": {"fc.weight": ..}}` gives `model.fc.weight`; list items by index). Other
/// values (an epoch, hyperparameters) are left out; [`torch_load_object`] has them all. A
/// file of one bare tensor gives it under the empty name.
/// Tensors keep their dtype and are uploaded to the default device.
pub fn torch_load(path: impl AsRef<Path>) -> Result<IndexMap<String, Tensor>> {
    let mut tensors = IndexMap::new();
    flatten(String::new(), torch_load_object(path)?, &mut tensors);
    Ok(tensors)
}

/// The object saved in the PyTorch checkpoint at `path`, tensors included (uploaded to the
/// default device in their own dtype). The pickle is read without running code: an
/// opcode or global that checkpoints do not use is a [`TorchError`].
pub fn torch_load_object(path: impl AsRef<Path>) -> Result<TorchValue> {
    let path = path.as_ref();
    let io_error = |source| TensorError::File { path: path.to_path_buf(), source };
    let map = map_file(&File::open(path).map_err(io_error)?).map_err(io_error)?;
    let torch_error = |source| TensorError::Torch { path: path.to_path_buf(), source };
    let (pickle, mut storages) = match map.starts_with(b"PK\x03\x04") || map.starts_with(b"PK\x05\x06") {
        true => Storages::zip(&map).map_err(torch_error)?,
        false => Storages::legacy(&map).map_err(torch_error)?,
    };
    let budget = pickle.objs.len().saturating_mul(64).saturating_add(1 << 20);
    let mut reader =
        Reader { pickle: &pickle, storages: &mut storages, depth: 0, budget, tensors: HashMap::new() };
    reader.value(pickle.root, "").map_err(|e| match e {
        Failure::Torch(source) => torch_error(source),
        Failure::Tensor(e) => e,
    })
}

/// Where the storages' bytes are.
struct Storages<'a> {
    /// Each storage's bytes by key (borrowed from the map, or inflated).
    bytes: HashMap<String, Cow<'a, [u8]>>,
    /// Whether elements are stored big-endian.
    big_endian: bool,
}

impl<'a> Storages<'a> {
    /// A zip checkpoint's pickle and storages: `<name>/data.pkl`, `<name>/data/<key>` and
    /// `<name>/byteorder`.
    fn zip(map: &'a [u8]) -> Result<(Pickle, Storages<'a>), TorchError> {
        let mut archive = ZipArchive::new(Cursor::new(map))?;
        let names: Vec<String> =
            archive.file_names().map(|n| n.map(|n| n.into_owned())).collect::<Result<_, _>>()?;
        let pkl = names
            .iter()
            .find(|n| n.ends_with("data.pkl") && n.matches('/').count() == 1)
            .ok_or_else(|| TorchError::MissingEntry("<name>/data.pkl".into()))?;
        let prefix = pkl.trim_end_matches("data.pkl").to_string();
        let (pickle, _) = pickle::load(&entry(&mut archive, map, pkl)?)?;
        let byteorder = match names.iter().any(|n| *n == format!("{prefix}byteorder")) {
            true => entry(&mut archive, map, &format!("{prefix}byteorder"))?.into_owned(),
            false => b"little".to_vec(),
        };
        let mut bytes = HashMap::new();
        for name in &names {
            if let Some(key) = name.strip_prefix(&format!("{prefix}data/")) {
                bytes.insert(key.to_string(), entry(&mut archive, map, name)?);
            }
        }
        Ok((pickle, Storages { bytes, big_endian: byteorder == b"big" }))
    }

    /// A legacy checkpoint: pickles of torch's magic number, the protocol version and the
    /// system info, then the object, then the list of storage keys; then each storage as
    /// its element count (8 bytes) and its elements, in the list's order, little-endian
    /// whatever machine wrote them.
    fn legacy(map: &'a [u8]) -> Result<(Pickle, Storages<'a>), TorchError> {
        let (magic, mut pos) = pickle::load(map).map_err(|_| TorchError::Format)?;
        // 0x1950a86a20f9469cfc6c, torch's MAGIC_NUMBER, little-endian
        const MAGIC: [u8; 10] = [0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];
        if magic.objs[magic.root] != Obj::BigInt(MAGIC.to_vec()) {
            return Err(TorchError::Format);
        }
        let next = |pos: &mut usize| -> Result<Pickle, TorchError> {
            let (p, n) = pickle::load(&map[*pos..]).map_err(|e| shift(e, *pos))?;
            *pos += n;
            Ok(p)
        };
        let _protocol = next(&mut pos)?;
        let _system_info = next(&mut pos)?;
        let pickle = next(&mut pos)?;
        let keys = next(&mut pos)?;
        let dtypes: HashMap<&str, DType> = pickle
            .objs
            .iter()
            .filter_map(|o| match o {
                Obj::Storage(s) => Some((s.key.as_str(), s.dtype)),
                _ => None,
            })
            .collect();
        let mut bytes = HashMap::new();
        let Obj::List(key_ids) = &keys.objs[keys.root] else {
            return Err(TorchError::Pickle { offset: pos, what: "the storage keys are not a list".into() });
        };
        for &id in key_ids {
            let Obj::Str(key) = &keys.objs[id] else {
                return Err(TorchError::Pickle { offset: pos, what: "a storage key is not a string".into() });
            };
            let Some(&dtype) = dtypes.get(key.as_str()) else {
                let what = format!("storage {key} is listed but no tensor uses it");
                return Err(TorchError::Pickle { offset: pos, what });
            };
            let header = map.get(pos..pos + 8).ok_or(TorchError::Truncated { offset: map.len() })?;
            let header: [u8; 8] = header.try_into().unwrap_or_else(|_| unreachable!("8 bytes"));
            let numel = u64::from_le_bytes(header);
            let len = usize::try_from(numel).ok().and_then(|n| n.checked_mul(dtype.itemsize()));
            let end = len.and_then(|l| (pos + 8).checked_add(l)).filter(|&e| e <= map.len());
            let end = end.ok_or(TorchError::Truncated { offset: map.len() })?;
            bytes.insert(key.clone(), Cow::Borrowed(&map[pos + 8..end]));
            pos = end;
        }
        Ok((pickle, Storages { bytes, big_endian: false }))
    }
}

/// `e` with its offset moved by `by` (a pickle read from the middle of a file).
fn shift(e: TorchError, by: usize) -> TorchError {
    match e {
        TorchError::Truncated { offset } => TorchError::Truncated { offset: offset + by },
        TorchError::Opcode { opcode, offset } => TorchError::Opcode { opcode, offset: offset + by },
        TorchError::Global { module, name, offset } => {
            TorchError::Global { module, name, offset: offset + by }
        }
        TorchError::Pickle { offset, what } => TorchError::Pickle { offset: offset + by, what },
        e => e,
    }
}

/// The bytes of the archive's file `name`: a slice of the map when stored, else inflated.
fn entry<'a>(
    archive: &mut ZipArchive<Cursor<&'a [u8]>>,
    map: &'a [u8],
    name: &str,
) -> Result<Cow<'a, [u8]>, TorchError> {
    let mut file = archive.by_name(name)?;
    let size = usize::try_from(file.size()).map_err(|_| TorchError::Truncated { offset: map.len() })?;
    if file.compression() == CompressionMethod::Stored
        && let Some(start) = file.data_start().and_then(|s| usize::try_from(s).ok())
    {
        let end = start.checked_add(size).filter(|&e| e <= map.len());
        let end = end.ok_or(TorchError::Truncated { offset: map.len() })?;
        return Ok(Cow::Borrowed(&map[start..end]));
    }
    let mut bytes = Vec::with_capacity(size.min(map.len()));
    file.read_to_end(&mut bytes).map_err(|e| TorchError::Zip(e.into()))?;
    Ok(Cow::Owned(bytes))
}

/// A checkpoint error or a failed upload.
enum Failure {
    Torch(TorchError),
    Tensor(TensorError),
}

impl From<TorchError> for Failure {
    fn from(e: TorchError) -> Failure {
        Failure::Torch(e)
    }
}

/// How deep containers may nest: deeper (or a cycle) is a malformed pickle, not a stack
/// overflow.
const MAX_DEPTH: usize = 512;

/// Turns the pickle's objects into values, uploading tensors.
struct Reader<'p, 's, 'a> {
    pickle: &'p Pickle,
    storages: &'s mut Storages<'a>,
    depth: usize,
    /// Values left to make: a container shared by reference is copied wherever it is
    /// referenced, so a pickle of containers holding one another twice over could otherwise
    /// expand exponentially.
    budget: usize,
    /// Each tensor object's upload, so a tensor referenced twice is one tensor.
    tensors: HashMap<Id, Tensor>,
}

impl Reader<'_, '_, '_> {
    /// The value of object `id`, found at `name` (for errors).
    fn value(&mut self, id: Id, name: &str) -> Result<TorchValue, Failure> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let what = format!("containers nest deeper than {MAX_DEPTH} (or hold themselves)");
            return Err(TorchError::Pickle { offset: 0, what }.into());
        }
        self.budget = self.budget.checked_sub(1).ok_or_else(|| {
            let what = "shared containers expand to too many values".to_string();
            TorchError::Pickle { offset: 0, what }
        })?;
        let join = |k: &str| if name.is_empty() { k.to_string() } else { format!("{name}.{k}") };
        let value = match &self.pickle.objs[id] {
            Obj::None => TorchValue::None,
            &Obj::Bool(b) => TorchValue::Bool(b),
            &Obj::Int(i) => TorchValue::Int(i),
            Obj::BigInt(_) => {
                let what = format!("`{name}` is an integer wider than 64 bits");
                return Err(TorchError::Pickle { offset: 0, what }.into());
            }
            &Obj::Float(f) => TorchValue::Float(f),
            Obj::Str(s) => TorchValue::Str(s.clone()),
            Obj::Bytes(b) => TorchValue::Bytes(b.clone()),
            Obj::List(items) | Obj::Tuple(items) => {
                let values = items
                    .iter()
                    .enumerate()
                    .map(|(i, &item)| self.value(item, &join(&i.to_string())))
                    .collect::<Result<Vec<_>, _>>()?;
                match self.pickle.objs[id] {
                    Obj::List(_) => TorchValue::List(values),
                    _ => TorchValue::Tuple(values),
                }
            }
            Obj::Dict(items) => {
                let mut pairs = vec![];
                for &(k, v) in items {
                    let key = self.value(k, name)?;
                    let value = self.value(v, &join(&key_name(&key)))?;
                    pairs.push((key, value));
                }
                TorchValue::Dict(pairs)
            }
            Obj::Global(g) => {
                let what = format!("`{name}` is the bare global {g:?}, not data");
                return Err(TorchError::Pickle { offset: 0, what }.into());
            }
            Obj::Storage(_) => {
                let what = format!("`{name}` is a bare storage, not a tensor");
                return Err(TorchError::Pickle { offset: 0, what }.into());
            }
            Obj::Tensor(record) => match self.tensors.get(&id) {
                Some(t) => TorchValue::Tensor(t.clone()),
                None => {
                    let t = self.tensor(record, name)?;
                    self.tensors.insert(id, t.clone());
                    TorchValue::Tensor(t)
                }
            },
        };
        self.depth -= 1;
        Ok(value)
    }

    /// The tensor `record` describes, cut from its storage and uploaded.
    fn tensor(&mut self, record: &TensorRecord, name: &str) -> Result<Tensor, Failure> {
        let bad = |why: String| TorchError::Tensor { name: name.to_string(), why };
        let storage = self.storages.bytes.get(&record.storage.key).ok_or_else(|| {
            let key = &record.storage.key;
            TorchError::MissingEntry(format!("data/{key} (the storage of tensor `{name}`)"))
        })?;
        let bytes = strided_bytes(record, storage).map_err(bad)?;
        let bytes = match self.storages.big_endian {
            true => bytes.chunks(record.dtype.itemsize()).flat_map(|e| e.iter().rev().copied()).collect(),
            false => bytes,
        };
        Tensor::from_bytes(&bytes, record.dtype, &record.size).map_err(Failure::Tensor)
    }
}

/// A dict key as a name: a string as it is, a number in decimal.
fn key_name(key: &TorchValue) -> String {
    match key {
        TorchValue::Str(s) => s.clone(),
        TorchValue::Int(i) => i.to_string(),
        TorchValue::Bool(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

/// The row-major bytes of the strided view `record` of `storage` (whose stated length it
/// must not outrun, nor the bytes actually there).
fn strided_bytes(record: &TensorRecord, storage: &[u8]) -> Result<Vec<u8>, String> {
    let item = record.dtype.itemsize();
    let StorageRef { numel, dtype, .. } = &record.storage;
    let available = numel.saturating_mul(dtype.itemsize()).min(storage.len()) / item;
    if record.size.contains(&0) {
        return Ok(vec![]);
    }
    let last = record
        .size
        .iter()
        .zip(&record.stride)
        .try_fold(record.offset, |acc, (&n, &s)| (n - 1).checked_mul(s).and_then(|d| acc.checked_add(d)));
    if last.is_none_or(|last| last >= available) {
        let why = format!(
            "size {:?}, stride {:?} and offset {} reach past its storage of {available} elements",
            record.size, record.stride, record.offset
        );
        return Err(why);
    }
    let count: usize = record.size.iter().product();
    let row_major = record
        .size
        .iter()
        .rev()
        .zip(record.stride.iter().rev())
        .try_fold(1, |want, (&n, &s)| (n == 1 || s == want).then_some(want * n));
    if row_major.is_some() {
        return Ok(storage[record.offset * item..(record.offset + count) * item].to_vec());
    }
    let mut out = Vec::with_capacity(count * item);
    let mut index = vec![0; record.size.len()];
    for _ in 0..count {
        let at = record.offset + index.iter().zip(&record.stride).map(|(i, s)| i * s).sum::<usize>();
        out.extend_from_slice(&storage[at * item..(at + 1) * item]);
        for (i, &n) in index.iter_mut().zip(&record.size).rev() {
            *i += 1;
            if *i < n {
                break;
            }
            *i = 0;
        }
    }
    Ok(out)
}

/// Every tensor in `value` under its dotted path below `name`.
fn flatten(name: String, value: TorchValue, out: &mut IndexMap<String, Tensor>) {
    let join = |k: String| if name.is_empty() { k } else { format!("{name}.{k}") };
    match value {
        TorchValue::Tensor(t) => {
            out.insert(name, t);
        }
        TorchValue::List(items) | TorchValue::Tuple(items) => {
            items.into_iter().enumerate().for_each(|(i, v)| flatten(join(i.to_string()), v, out));
        }
        TorchValue::Dict(pairs) => pairs.into_iter().for_each(|(k, v)| flatten(join(key_name(&k)), v, out)),
        _ => {}
    }
}
