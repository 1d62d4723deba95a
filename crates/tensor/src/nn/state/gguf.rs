//! GGUF files (llama.cpp's model format, versions 2 and 3): a header of typed metadata and
//! tensor descriptions, then the aligned tensor data. Plain tensors upload as they are;
//! quantized ones are dequantized to float32 on the host (`ggml.rs`) first.

use std::fs::File;
use std::path::Path;

use indexmap::IndexMap;
use thiserror::Error;

use crate::Tensor;
use crate::error::{Result, TensorError};
use crate::nn::state::ggml::{self, GgmlType};
use crate::nn::state::map_file;

/// What is wrong with a file that is not a valid GGUF file.
#[derive(Debug, Error)]
pub enum GgufError {
    /// The file does not start with `GGUF`.
    #[error("it does not start with the GGUF magic")]
    Magic,
    /// A version other than 2 and 3 (1 has narrower counts; a big-endian file reads as a
    /// huge version).
    #[error("GGUF version {0} is not supported (2 and 3 are, little-endian)")]
    Version(u32),
    /// The file ends inside the header or a tensor's data.
    #[error("the file ends early, reading {what} at byte {offset}")]
    Truncated {
        /// What was being read.
        what: String,
        /// Where.
        offset: usize,
    },
    /// A header field with a value no GGUF file can have.
    #[error("{what} at byte {offset}")]
    Header {
        /// What is wrong.
        what: String,
        /// Where.
        offset: usize,
    },
    /// A tensor of a ggml type wgrad does not read (IQ and TQ quants, MXFP4, ...).
    #[error("tensor `{name}` has ggml type {type_id}, which wgrad does not read")]
    TensorType {
        /// The tensor.
        name: String,
        /// Its type id.
        type_id: u32,
    },
    /// A tensor whose dims, offset or size do not fit its type or the file.
    #[error("tensor `{name}`: {why}")]
    Tensor {
        /// The tensor.
        name: String,
        /// What does not fit.
        why: String,
    },
}

/// A metadata value of a GGUF file.
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    /// uint8.
    U8(u8),
    /// int8.
    I8(i8),
    /// uint16.
    U16(u16),
    /// int16.
    I16(i16),
    /// uint32.
    U32(u32),
    /// int32.
    I32(i32),
    /// float32.
    F32(f32),
    /// bool.
    Bool(bool),
    /// UTF-8 string.
    Str(String),
    /// An array of values of one type.
    Array(Vec<GgufValue>),
    /// uint64.
    U64(u64),
    /// int64.
    I64(i64),
    /// float64.
    F64(f64),
}

impl GgufValue {
    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(v.into()),
            GgufValue::U16(v) => Some(v.into()),
            GgufValue::U32(v) => Some(v.into()),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
}

/// The metadata and tensors of the GGUF file at `path`, as tinygrad's `gguf_load`: tensors
/// by name in file order, shaped as ggml's dims reversed (outermost first), on the default
/// device. F32, F16, BF16, F64 and integer tensors keep their dtype; quantized ones (Q4_0,
/// Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K to Q6_K, Q8_K) are dequantized to float32 as
/// llama.cpp does.
pub fn gguf_load(path: impl AsRef<Path>) -> Result<(IndexMap<String, GgufValue>, IndexMap<String, Tensor>)> {
    let path = path.as_ref();
    let io_error = |source| TensorError::File { path: path.to_path_buf(), source };
    let map = map_file(&File::open(path).map_err(io_error)?).map_err(io_error)?;
    let gguf_error = |source| TensorError::Gguf { path: path.to_path_buf(), source };
    let (metadata, infos) = parse(&map).map_err(gguf_error)?;
    let mut tensors = IndexMap::new();
    for info in infos {
        let data = &map[info.start..info.end];
        let tensor = match info.ty.is_plain() {
            true => Tensor::from_bytes(data, info.ty.dtype(), &info.shape)?,
            false => {
                let values = ggml::dequantize(info.ty, data);
                Tensor::from_vec(values, &info.shape)?
            }
        };
        tensors.insert(info.name, tensor);
    }
    Ok((metadata, tensors))
}

/// Where a tensor is and what it is.
struct TensorInfo {
    name: String,
    /// Outermost dim first.
    shape: Vec<usize>,
    ty: GgmlType,
    /// Its bytes in the file.
    start: usize,
    end: usize,
}

/// The metadata and the tensors' places in the GGUF file `data`, every offset and size
/// checked against the file.
fn parse(data: &[u8]) -> Result<(IndexMap<String, GgufValue>, Vec<TensorInfo>), GgufError> {
    let mut r = Reader { data, pos: 0 };
    if r.take(4, "the magic")? != b"GGUF" {
        return Err(GgufError::Magic);
    }
    let version = r.u32("the version")?;
    if !(2..=3).contains(&version) {
        return Err(GgufError::Version(version));
    }
    let n_tensors = r.u64("the tensor count")?;
    let n_kv = r.u64("the metadata count")?;
    let mut metadata = IndexMap::new();
    for _ in 0..n_kv {
        let key = r.string("a metadata key")?;
        let type_id = r.u32("a metadata type")?;
        let value = r.value(type_id, &key, 0)?;
        metadata.insert(key, value);
    }
    let alignment = match metadata.get("general.alignment") {
        None => 32,
        Some(v) => match v.as_u64().and_then(|a| usize::try_from(a).ok()).filter(|a| a.is_power_of_two()) {
            Some(a) => a,
            None => return Err(r.header(format!("general.alignment {v:?} is not a power of two"))),
        },
    };
    let mut described = vec![];
    for _ in 0..n_tensors {
        let name = r.string("a tensor name")?;
        let n_dims = r.u32("a tensor's dim count")?;
        if n_dims > 4 {
            return Err(GgufError::Tensor { name, why: format!("{n_dims} dims (ggml has at most 4)") });
        }
        let dims = (0..n_dims).map(|_| r.u64("a tensor dim")).collect::<Result<Vec<_>, _>>()?;
        let type_id = r.u32("a tensor type")?;
        let offset = r.u64("a tensor offset")?;
        let ty = GgmlType::from_id(type_id)
            .ok_or_else(|| GgufError::TensorType { name: name.clone(), type_id })?;
        described.push((name, dims, ty, offset));
    }
    let data_start = r.pos.next_multiple_of(alignment);
    let mut infos: Vec<TensorInfo> = vec![];
    for (name, dims, ty, offset) in described {
        let info = place(name, &dims, ty, offset, data_start, alignment, data.len())?;
        if infos.iter().any(|i| i.name == info.name) {
            return Err(GgufError::Tensor { name: info.name, why: "the name appears twice".into() });
        }
        infos.push(info);
    }
    Ok((metadata, infos))
}

/// Checks a tensor's dims, type and offset against the file of `file_len` bytes whose data
/// starts at `data_start`; its place.
fn place(
    name: String,
    dims: &[u64],
    ty: GgmlType,
    offset: u64,
    data_start: usize,
    alignment: usize,
    file_len: usize,
) -> Result<TensorInfo, GgufError> {
    let bad = |why: String| GgufError::Tensor { name: name.clone(), why };
    let shape: Vec<usize> = dims
        .iter()
        .rev()
        .map(|&d| usize::try_from(d).map_err(|_| bad(format!("dim {d} is too large"))))
        .collect::<Result<_, _>>()?;
    let numel = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| bad("too many elements".into()))?;
    let (block, block_bytes) = ty.block();
    let row = dims.first().copied().unwrap_or(1);
    if row % block as u64 != 0 {
        return Err(bad(format!("rows of {row} elements are not whole {ty:?} blocks of {block}")));
    }
    let size = (numel / block).checked_mul(block_bytes).ok_or_else(|| bad("too many bytes".into()))?;
    let offset = usize::try_from(offset).map_err(|_| bad(format!("offset {offset} is past the file")))?;
    if !offset.is_multiple_of(alignment) {
        return Err(bad(format!("offset {offset} is not a multiple of the alignment {alignment}")));
    }
    let start = data_start.checked_add(offset);
    let end = start.and_then(|s| s.checked_add(size)).filter(|&e| e <= file_len);
    match (start, end) {
        (Some(start), Some(end)) => Ok(TensorInfo { name, shape, ty, start, end }),
        _ => Err(bad(format!("its {size} bytes at offset {offset} end past the file's {file_len} bytes"))),
    }
}

/// How deep metadata arrays may nest.
const MAX_DEPTH: usize = 8;

/// A cursor over the header.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn header(&self, what: String) -> GgufError {
        GgufError::Header { what, offset: self.pos }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], GgufError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| GgufError::Truncated { what: what.to_string(), offset: self.pos })?;
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        Ok(self.take(N, what)?.try_into().unwrap_or_else(|_| unreachable!("took {N} bytes")))
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, GgufError> {
        let len = self.u64(what)?;
        let len = usize::try_from(len)
            .map_err(|_| GgufError::Truncated { what: what.to_string(), offset: self.pos })?;
        let bytes = self.take(len, what)?;
        let s = std::str::from_utf8(bytes).map_err(|_| self.header(format!("{what} is not UTF-8")))?;
        Ok(s.to_string())
    }

    /// A metadata value of type `type_id` (of key `key`), `depth` arrays deep.
    fn value(&mut self, type_id: u32, key: &str, depth: usize) -> Result<GgufValue, GgufError> {
        let what = format!("metadata `{key}`");
        Ok(match type_id {
            0 => GgufValue::U8(self.array::<1>(&what)?[0]),
            1 => GgufValue::I8(i8::from_le_bytes(self.array(&what)?)),
            2 => GgufValue::U16(u16::from_le_bytes(self.array(&what)?)),
            3 => GgufValue::I16(i16::from_le_bytes(self.array(&what)?)),
            4 => GgufValue::U32(u32::from_le_bytes(self.array(&what)?)),
            5 => GgufValue::I32(i32::from_le_bytes(self.array(&what)?)),
            6 => GgufValue::F32(f32::from_le_bytes(self.array(&what)?)),
            7 => match self.array::<1>(&what)?[0] {
                0 => GgufValue::Bool(false),
                1 => GgufValue::Bool(true),
                b => return Err(self.header(format!("{what} is a bool of value {b}"))),
            },
            8 => GgufValue::Str(self.string(&what)?),
            9 => {
                if depth >= MAX_DEPTH {
                    return Err(self.header(format!("{what} nests arrays deeper than {MAX_DEPTH}")));
                }
                let item_type = self.u32(&what)?;
                let n = self.u64(&what)?;
                // every item takes at least a byte, so a count past the file ends the loop
                let mut items = vec![];
                for _ in 0..n {
                    items.push(self.value(item_type, key, depth + 1)?);
                }
                GgufValue::Array(items)
            }
            10 => GgufValue::U64(u64::from_le_bytes(self.array(&what)?)),
            11 => GgufValue::I64(i64::from_le_bytes(self.array(&what)?)),
            12 => GgufValue::F64(f64::from_le_bytes(self.array(&what)?)),
            t => return Err(self.header(format!("{what} has value type {t}, which GGUF does not define"))),
        })
    }
}
