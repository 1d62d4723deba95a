//! ggml's tensor types: their block sizes and the dequantization of the quantized ones, as
//! llama.cpp's `dequantize_row_*` define them (scales in f16, arithmetic in f32).
//!
//! A quantized tensor is a run of blocks, each holding a fixed number of elements (32, or
//! 256 for the k-quants) as small integers and one or more scales.

use half::f16;
use wgrad_dtype::DType;

/// A ggml tensor type, by its id in a GGUF file.
#[allow(non_camel_case_types)] // ggml's own names
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgmlType {
    /// 32-bit float.
    F32,
    /// 16-bit float.
    F16,
    /// 4-bit ints in blocks of 32 with an f16 scale: `(q - 8) * d`.
    Q4_0,
    /// 4-bit ints in blocks of 32 with an f16 scale and minimum: `q * d + m`.
    Q4_1,
    /// 5-bit ints in blocks of 32 with an f16 scale: `(q - 16) * d`.
    Q5_0,
    /// 5-bit ints in blocks of 32 with an f16 scale and minimum: `q * d + m`.
    Q5_1,
    /// 8-bit ints in blocks of 32 with an f16 scale: `q * d`.
    Q8_0,
    /// 8-bit ints in blocks of 32 with an f16 scale and sum: `q * d`.
    Q8_1,
    /// 2-bit k-quant: blocks of 256 in 16 groups with 4-bit scales and minimums.
    Q2_K,
    /// 3-bit k-quant: blocks of 256 in 16 groups with 6-bit scales.
    Q3_K,
    /// 4-bit k-quant: blocks of 256 in 8 groups with 6-bit scales and minimums.
    Q4_K,
    /// 5-bit k-quant: blocks of 256 in 8 groups with 6-bit scales and minimums.
    Q5_K,
    /// 6-bit k-quant: blocks of 256 in 16 groups with 8-bit scales.
    Q6_K,
    /// 8-bit k-quant: blocks of 256 with an f32 scale.
    Q8_K,
    /// 8-bit int.
    I8,
    /// 16-bit int.
    I16,
    /// 32-bit int.
    I32,
    /// 64-bit int.
    I64,
    /// 64-bit float.
    F64,
    /// bfloat16.
    BF16,
}

/// Each type with its GGUF id, elements per block and bytes per block.
const TYPES: [(GgmlType, u32, usize, usize); 20] = [
    (GgmlType::F32, 0, 1, 4),
    (GgmlType::F16, 1, 1, 2),
    (GgmlType::Q4_0, 2, 32, 18),
    (GgmlType::Q4_1, 3, 32, 20),
    (GgmlType::Q5_0, 6, 32, 22),
    (GgmlType::Q5_1, 7, 32, 24),
    (GgmlType::Q8_0, 8, 32, 34),
    (GgmlType::Q8_1, 9, 32, 36),
    (GgmlType::Q2_K, 10, 256, 84),
    (GgmlType::Q3_K, 11, 256, 110),
    (GgmlType::Q4_K, 12, 256, 144),
    (GgmlType::Q5_K, 13, 256, 176),
    (GgmlType::Q6_K, 14, 256, 210),
    (GgmlType::Q8_K, 15, 256, 292),
    (GgmlType::I8, 24, 1, 1),
    (GgmlType::I16, 25, 1, 2),
    (GgmlType::I32, 26, 1, 4),
    (GgmlType::I64, 27, 1, 8),
    (GgmlType::F64, 28, 1, 8),
    (GgmlType::BF16, 30, 1, 2),
];

impl GgmlType {
    /// The type of GGUF id `id`, if wgrad reads it.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        TYPES.iter().find(|t| t.1 == id).map(|t| t.0)
    }

    /// Elements per block and bytes per block (1 and the item size for plain types).
    pub fn block(self) -> (usize, usize) {
        TYPES
            .iter()
            .find(|t| t.0 == self)
            .map(|t| (t.2, t.3))
            .unwrap_or_else(|| unreachable!("every type is listed"))
    }

    /// The dtype a tensor of this type loads as: its own for plain types, float32 for
    /// quantized ones.
    pub fn dtype(self) -> DType {
        match self {
            GgmlType::F16 => DType::F16,
            GgmlType::BF16 => DType::BF16,
            GgmlType::F64 => DType::F64,
            GgmlType::I8 => DType::I8,
            GgmlType::I16 => DType::I16,
            GgmlType::I32 => DType::I32,
            GgmlType::I64 => DType::I64,
            _ => DType::F32,
        }
    }

    /// Whether the type is stored as plain little-endian elements of [`GgmlType::dtype`].
    pub fn is_plain(self) -> bool {
        self.block().0 == 1
    }
}

/// The f16 at the start of `b`, as f32.
fn half(b: &[u8]) -> f32 {
    f16::from_le_bytes([b[0], b[1]]).to_f32()
}

/// The elements of `data`, whole blocks of the quantized type `ty`, as f32.
pub(super) fn dequantize(ty: GgmlType, data: &[u8]) -> Vec<f32> {
    let (n, bytes) = ty.block();
    let mut out = Vec::with_capacity(data.len() / bytes * n);
    for block in data.chunks_exact(bytes) {
        match ty {
            GgmlType::Q4_0 | GgmlType::Q4_1 => q4(ty, block, &mut out),
            GgmlType::Q5_0 | GgmlType::Q5_1 => q5(ty, block, &mut out),
            GgmlType::Q8_0 | GgmlType::Q8_1 => {
                let d = half(block);
                let qs = &block[bytes - 32..];
                out.extend(qs.iter().map(|&q| d * f32::from(q as i8)));
            }
            GgmlType::Q2_K => q2_k(block, &mut out),
            GgmlType::Q3_K => q3_k(block, &mut out),
            GgmlType::Q4_K | GgmlType::Q5_K => q45_k(ty, block, &mut out),
            GgmlType::Q6_K => q6_k(block, &mut out),
            GgmlType::Q8_K => {
                let d = f32::from_le_bytes([block[0], block[1], block[2], block[3]]);
                out.extend(block[4..260].iter().map(|&q| d * f32::from(q as i8)));
            }
            _ => unreachable!("{ty:?} is not quantized"),
        }
    }
    out
}

/// Q4_0 (`d`, 16 bytes of nibbles, low halves first: `(q - 8) d`) and Q4_1 (`d`, `m`,
/// nibbles: `q d + m`).
fn q4(ty: GgmlType, b: &[u8], out: &mut Vec<f32>) {
    let d = half(b);
    let (offset, m, qs) = match ty {
        GgmlType::Q4_1 => (0, half(&b[2..]), &b[4..20]),
        _ => (8, 0.0, &b[2..18]),
    };
    let value = |q: u8| (i32::from(q) - offset) as f32 * d + m;
    out.extend(qs.iter().map(|&q| value(q & 0xF)));
    out.extend(qs.iter().map(|&q| value(q >> 4)));
}

/// Q5_0 (`d`, 32 fifth bits, nibbles: `(q - 16) d`) and Q5_1 (`d`, `m`, fifth bits,
/// nibbles: `q d + m`).
fn q5(ty: GgmlType, b: &[u8], out: &mut Vec<f32>) {
    let d = half(b);
    let (offset, m, rest) = match ty {
        GgmlType::Q5_1 => (0, half(&b[2..]), &b[4..]),
        _ => (16, 0.0, &b[2..]),
    };
    let qh = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
    let qs = &rest[4..20];
    let value =
        |low: u8, bit: usize| (i32::from(low) + (((qh >> bit) & 1) << 4) as i32 - offset) as f32 * d + m;
    out.extend(qs.iter().enumerate().map(|(j, &q)| value(q & 0xF, j)));
    out.extend(qs.iter().enumerate().map(|(j, &q)| value(q >> 4, j + 16)));
}

/// Q2_K: 16 scale bytes (low nibble scale, high nibble minimum), 64 bytes of 2-bit values,
/// `d`, `dmin`.
fn q2_k(b: &[u8], out: &mut Vec<f32>) {
    let (scales, qs) = (&b[..16], &b[16..80]);
    let (d, dmin) = (half(&b[80..]), half(&b[82..]));
    let mut is = 0;
    for half_block in qs.chunks(32) {
        for shift in [0, 2, 4, 6] {
            for part in half_block.chunks(16) {
                let (dl, ml) = (d * f32::from(scales[is] & 0xF), dmin * f32::from(scales[is] >> 4));
                is += 1;
                out.extend(part.iter().map(|&q| dl * f32::from((q >> shift) & 3) - ml));
            }
        }
    }
}

/// Q3_K: 32 bytes of high bits, 64 bytes of 2-bit values, 12 bytes of 6-bit scales, `d`.
fn q3_k(b: &[u8], out: &mut Vec<f32>) {
    let (hmask, qs, packed, d) = (&b[..32], &b[32..96], &b[96..108], half(&b[108..]));
    // 16 scales of 6 bits: low 4 bits from bytes 0..8, high 2 bits from bytes 8..12
    let scales: Vec<i32> = (0..16)
        .map(|i| {
            let low = if i < 8 { packed[i] & 0xF } else { packed[i - 8] >> 4 };
            let high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
            i32::from(low | high << 4) - 32
        })
        .collect();
    let mut is = 0;
    let mut m = 1u8;
    for half_block in qs.chunks(32) {
        for shift in [0, 2, 4, 6] {
            for (p, part) in half_block.chunks(16).enumerate() {
                let dl = d * scales[is] as f32;
                is += 1;
                out.extend(part.iter().enumerate().map(|(l, &q)| {
                    let high = if hmask[p * 16 + l] & m != 0 { 0 } else { 4 };
                    dl * (i32::from((q >> shift) & 3) - high) as f32
                }));
            }
            m <<= 1;
        }
    }
}

/// The 6-bit scale and minimum of group `j` of a Q4_K/Q5_K block's 12 packed bytes.
fn scale_min_k4(j: usize, q: &[u8]) -> (f32, f32) {
    let (sc, m) = match j < 4 {
        true => (q[j] & 63, q[j + 4] & 63),
        false => ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)),
    };
    (f32::from(sc), f32::from(m))
}

/// Q4_K (`d`, `dmin`, 12 scale bytes, 128 bytes of nibbles) and Q5_K (the same with 32 bytes
/// of fifth bits before the nibbles).
fn q45_k(ty: GgmlType, b: &[u8], out: &mut Vec<f32>) {
    let (d, dmin, scales) = (half(b), half(&b[2..]), &b[4..16]);
    let (qh, qs) = match ty {
        GgmlType::Q5_K => (Some(&b[16..48]), &b[48..176]),
        _ => (None, &b[16..144]),
    };
    for (g, chunk) in qs.chunks(32).enumerate() {
        for (nibble, shift) in [(0, 0), (1, 4)] {
            let (sc, m) = scale_min_k4(2 * g + nibble, scales);
            let (d1, m1) = (d * sc, dmin * m);
            let bit = 2 * g + nibble;
            out.extend(chunk.iter().enumerate().map(|(l, &q)| {
                let high = qh.map_or(0, |qh| ((qh[l] >> bit) & 1) << 4);
                d1 * f32::from(((q >> shift) & 0xF) | high) - m1
            }));
        }
    }
}

/// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 signed scales, `d`.
fn q6_k(b: &[u8], out: &mut Vec<f32>) {
    let (ql, qh, scales, d) = (&b[..128], &b[128..192], &b[192..208], half(&b[208..]));
    for h in 0..2 {
        let (ql, qh, sc) = (&ql[64 * h..], &qh[32 * h..], &scales[8 * h..]);
        let mut values = [0f32; 128];
        for l in 0..32 {
            let is = l / 16;
            let q = |low: u8, shift: u32| i32::from(low | ((qh[l] >> shift) & 3) << 4) - 32;
            let parts = [q(ql[l] & 0xF, 0), q(ql[l + 32] & 0xF, 2), q(ql[l] >> 4, 4), q(ql[l + 32] >> 4, 6)];
            for (k, v) in parts.into_iter().enumerate() {
                values[l + 32 * k] = d * f32::from(sc[is + 2 * k] as i8) * v as f32;
            }
        }
        out.extend(values);
    }
}
