//! Buffers and workgroup memory: declarations, loads and stores, with 8- and 16-bit elements
//! packed into `u32` words (see [`crate::types`]).
//!
//! A gated load touches no memory when its gate is false (the index may be out of bounds): it
//! becomes `var valN = 0; if (gate) { valN = ...; }`. A gated store becomes `if (gate) { ... }`.
//! A store into a packed buffer clears its lane with `atomicAnd` and sets it with `atomicOr`,
//! so threads writing neighbouring elements of one word never race.

use wgrad_codegen::BufferArg;
use wgrad_dtype::{AddrSpace, ConstValue, DType};
use wgrad_ops::{Ops, UOp};

use crate::RenderError;
use crate::helpers::Helper;
use crate::literal::literal;
use crate::types::{Storage, storage};
use crate::writer::Writer;

/// Where an access goes.
enum Place {
    /// A buffer argument: its name, element dtype and whether it is atomic words.
    Global { name: String, dtype: DType, atomic: bool },
    /// Workgroup memory (always of the register type).
    Local { name: String },
}

impl Writer<'_> {
    /// The declaration of a buffer argument (after its `@group(0) @binding(n)`).
    pub(crate) fn buffer_decl(&self, arg: &BufferArg) -> String {
        let access = if arg.writable { "read_write" } else { "read" };
        let element = match storage(arg.dtype, self.caps) {
            Some(Storage::Native(reg)) => reg.name(),
            _ if arg.writable => "atomic<u32>",
            _ => "u32",
        };
        format!("var<storage, {access}> data{}: array<{element}>;", arg.slot)
    }

    /// `var<workgroup> name: array<T, n>;` for a `DefineLocal`.
    pub(crate) fn define_local(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let bad = RenderError::UnsupportedOp { index, op: u.op(), reason: "workgroup memory needs a size" };
        let size = u.dtype().ptr_size().filter(|_| u.dtype().addr_space() == Some(AddrSpace::Local));
        let size = size.ok_or(bad)?;
        let name = self.claim(&u.arg().to_string().replace('"', ""));
        let ty = self.reg(u.dtype().base()).name();
        self.module.push(format!("var<workgroup> {name}: array<{ty}, {size}>;"));
        self.name(u, name);
        Ok(())
    }

    /// The buffer, index and gate of the `Index` a load or store goes through. A gated access
    /// with a constant index outside the memory (only reached when the gate is false) indexes
    /// element 0 instead, as WGSL rejects constant out-of-bounds indices.
    fn access(&mut self, index: usize, u: &UOp) -> Result<(Place, String, Option<String>), RenderError> {
        let bad = |reason| RenderError::UnsupportedOp { index, op: u.op(), reason };
        let ptr = &u.src()[0];
        if ptr.op() != Ops::Index {
            return Err(bad("loads and stores go through an Index"));
        }
        let buf = &ptr.src()[0];
        let name = self.src(index, ptr, 0)?;
        let gate = if ptr.src().len() > 2 { Some(self.src(index, ptr, 2)?) } else { None };
        let size = buf.dtype().ptr_size().and_then(|n| i128::try_from(n).ok()).unwrap_or(i128::MAX);
        let idx = match self
            .known(&ptr.src()[1])
            .filter(|c| !matches!(c, ConstValue::Float(_)))
            .map(ConstValue::to_i128)
        {
            Some(c) if (c < 0 || c >= size) && gate.is_some() => "0".to_string(),
            Some(c) if c < 0 || c >= size => return Err(bad("a constant index outside the memory")),
            _ => self.src(index, ptr, 1)?,
        };
        let place = match buf.op() {
            Ops::DefineGlobal => {
                let slot = buf.arg().as_int().and_then(|s| usize::try_from(s).ok()).ok_or(bad("bad slot"))?;
                let arg =
                    self.program_buffer(slot).cloned().ok_or(bad("a buffer missing from the program"))?;
                self.touched.insert(slot);
                let packed = matches!(storage(arg.dtype, self.caps), Some(Storage::Packed { .. }));
                Place::Global { name, dtype: arg.dtype, atomic: packed && arg.writable }
            }
            Ops::DefineLocal => Place::Local { name },
            _ => return Err(bad("loads and stores go to a buffer or workgroup memory")),
        };
        Ok((place, idx, gate))
    }

    /// `let valN = buf[idx];`, or the gated form.
    pub(crate) fn load(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let (place, idx, gate) = self.access(index, u)?;
        let value = match place {
            Place::Local { name } => format!("{name}[{idx}]"),
            Place::Global { name, dtype, atomic } => match storage(dtype, self.caps) {
                Some(Storage::Packed { bits }) => {
                    let at = word(&name, &idx, bits);
                    let word = if atomic { format!("atomicLoad(&{at})") } else { at };
                    let get = self.helpers.call(Helper::GetLane { bits });
                    self.value_from_bits(dtype, &format!("{get}({word}, {idx})"))
                }
                _ => format!("{name}[{idx}]"),
            },
        };
        match gate {
            None => self.bind(u, "val", value),
            Some(gate) => {
                let name = self.fresh("val");
                let zero = literal(0.into(), self.reg(u.dtype()));
                self.line(format!("var {name} = {zero};"));
                self.line(format!("if ({gate}) {{ {name} = {value}; }}"));
                self.name(u, name);
            }
        }
        Ok(())
    }

    /// The statements of a store, gated when its index is.
    pub(crate) fn store(&mut self, index: usize, u: &UOp) -> Result<(), RenderError> {
        let (place, idx, gate) = self.access(index, u)?;
        let value = self.src(index, u, u.src().len() - 1)?;
        let statements = match place {
            Place::Local { name } => vec![format!("{name}[{idx}] = {value};")],
            Place::Global { name, dtype, atomic } => match storage(dtype, self.caps) {
                Some(Storage::Packed { bits }) if atomic => {
                    let word = format!("&{}", word(&name, &idx, bits));
                    let keep = self.helpers.call(Helper::KeepLane { bits });
                    let put = self.helpers.call(Helper::PutLane { bits });
                    let value_bits = self.bits_of(dtype, &value);
                    vec![
                        format!("atomicAnd({word}, {keep}({idx}));"),
                        format!("atomicOr({word}, {put}({value_bits}, {idx}));"),
                    ]
                }
                Some(Storage::Packed { .. }) => {
                    let reason = "a store into a buffer the program does not mark writable";
                    return Err(RenderError::UnsupportedOp { index, op: u.op(), reason });
                }
                _ => vec![format!("{name}[{idx}] = {value};")],
            },
        };
        match gate {
            None => statements.into_iter().for_each(|s| self.line(s)),
            Some(gate) if statements.len() == 1 => self.line(format!("if ({gate}) {{ {} }}", statements[0])),
            Some(gate) => {
                self.line(format!("if ({gate}) {{"));
                statements.into_iter().for_each(|s| self.line(format!("  {s}")));
                self.line("}");
            }
        }
        Ok(())
    }
}

/// The word holding element `idx` of a packed buffer of `bits`-bit elements.
fn word(name: &str, idx: &str, bits: u32) -> String {
    format!("{name}[{idx} >> {}u]", if bits == 8 { 2 } else { 1 })
}
