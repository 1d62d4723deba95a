//! A pickle reader for what PyTorch checkpoints hold, and nothing else.
//!
//! It runs the opcodes of pickle protocols 2 to 5 that describe plain data (numbers,
//! strings, bytes, lists, tuples, dicts, memo references) and recognizes a fixed list of
//! globals (`globals.rs`): `collections.OrderedDict`, torch's tensor and parameter rebuild
//! functions, storage classes and dtypes, `torch.Size` and `_codecs.encode`. A reduce of one
//! of those is interpreted there, never called; any other opcode or global is an error
//! naming it, so reading a checkpoint never imports or runs code.
//!
//! Objects live in an arena and the stack holds their ids, so a list or dict memoized
//! before it is filled (as pickle always does) is the same object wherever it is referenced.

mod globals;

use std::collections::HashMap;

use crate::nn::state::torch::TorchError;

use globals::Reduced;
pub(super) use globals::{Global, StorageRef, TensorRecord};

/// An object's index in [`Pickle::objs`].
pub(super) type Id = usize;

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
