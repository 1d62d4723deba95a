//! `gguf_load` on the fixture written by the gguf package (`make_gguf_fixtures.py`: every
//! metadata type, plain tensors, and each quantized type beside its dequantization by the
//! package, llama.cpp's numpy reference), on hand-built files for the types the package
//! cannot write, and on damaged files, which must be typed errors naming the file.

use crate::common;

use std::path::{Path, PathBuf};

use wgrad_tensor::nn::state::{GgufError, GgufValue, gguf_load};
use wgrad_tensor::{DType, Tensor, TensorError, with_default_device};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf/quants.gguf")
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.cast(DType::F32).to_vec::<f32>().unwrap()
}

#[test]
fn the_metadata_reads_every_value_type() {
    let (kv, _) = gguf_load(fixture()).unwrap();
    assert_eq!(kv["general.architecture"], GgufValue::Str("wgrad-test".into()));
    assert_eq!(kv["test.u8"], GgufValue::U8(200));
    assert_eq!(kv["test.i8"], GgufValue::I8(-100));
    assert_eq!(kv["test.u16"], GgufValue::U16(60000));
    assert_eq!(kv["test.i16"], GgufValue::I16(-30000));
    assert_eq!(kv["test.u32"], GgufValue::U32(4_000_000_000));
    assert_eq!(kv["test.i32"], GgufValue::I32(-2_000_000_000));
    assert_eq!(kv["test.f32"], GgufValue::F32(0.25));
    assert_eq!(kv["test.bool"], GgufValue::Bool(true));
    assert_eq!(kv["test.str"], GgufValue::Str("wgrad ✓".into()));
    let ints = [1, 2, 3].map(GgufValue::I32).to_vec();
    assert_eq!(kv["test.array"], GgufValue::Array(ints));
    let strings = vec![GgufValue::Str("a".into()), GgufValue::Str("bc".into())];
    assert_eq!(kv["test.strings"], GgufValue::Array(strings));
    assert_eq!(kv["test.u64"], GgufValue::U64((1 << 63) + 5));
    assert_eq!(kv["test.i64"], GgufValue::I64(-(1 << 62)));
    assert_eq!(kv["test.f64"], GgufValue::F64(-1.5));
}

#[test]
fn plain_tensors_keep_their_dtype_and_reversed_dims() {
    for device in common::devices() {
        with_default_device(&device, || {
            let (_, t) = gguf_load(fixture()).unwrap();
            let base: Vec<f32> = (0..6).map(|i| i as f32).collect();
            let expect = |name: &str, dtype: DType, f: &dyn Fn(f32) -> f32| {
                assert_eq!((t[name].dtype(), t[name].shape()), (dtype, &[2, 3][..]), "{name}");
                assert_eq!(
                    f32s(&t[name]),
                    base.iter().map(|&x| f(x)).collect::<Vec<_>>(),
                    "{name} on {device}"
                );
            };
            expect("f32", DType::F32, &|x| x * 0.5 - 1.0);
            expect("f16", DType::F16, &|x| x * 0.25);
            expect("bf16", DType::BF16, &|x| x * 0.5 - 1.0);
            expect("i8", DType::I8, &|x| x - 3.0);
            expect("i16", DType::I16, &|x| x * 1000.0 - 3000.0);
            expect("i32", DType::I32, &|x| x * 100_000.0 - 300_000.0);
            assert_eq!(t["i64"].dtype(), DType::I64);
            let want: Vec<i64> = (0..6).map(|i| i * 1_000_000_000_000 - 3).collect();
            assert_eq!(t["i64"].to_vec::<i64>().unwrap(), want);
            assert_eq!(t["f64"].dtype(), DType::F64);
        });
    }
}

#[test]
fn quantized_tensors_match_the_gguf_packages_dequantization() {
    for device in common::devices() {
        with_default_device(&device, || {
            let (_, t) = gguf_load(fixture()).unwrap();
            for name in ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"] {
                let (got, want) = (&t[name], &t[&format!("{name}.expected")]);
                assert_eq!((got.dtype(), got.shape()), (DType::F32, want.shape()), "{name}");
                let (got, want) = (f32s(got), f32s(want));
                assert!(want.iter().any(|&w| w != 0.0), "{name}: the reference is all zeros");
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!((g - w).abs() <= 1e-6 + 1e-5 * w.abs(), "{name}[{i}] on {device}: {g} != {w}");
                }
            }
        });
    }
}

/// A GGUF file of `version` with one metadata string and `tensors` (name, ggml dims, type
/// id, data), data aligned to 32 bytes.
fn gguf(version: u32, tensors: &[(&str, &[u64], u32, Vec<u8>)]) -> Vec<u8> {
    let string = |out: &mut Vec<u8>, s: &str| {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    };
    let mut out = b"GGUF".to_vec();
    out.extend(version.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend(1u64.to_le_bytes());
    string(&mut out, "general.name");
    out.extend(8u32.to_le_bytes());
    string(&mut out, "hand-built");
    let mut offset = 0u64;
    for (name, dims, ty, data) in tensors {
        string(&mut out, name);
        out.extend((dims.len() as u32).to_le_bytes());
        dims.iter().for_each(|d| out.extend(d.to_le_bytes()));
        out.extend(ty.to_le_bytes());
        out.extend(offset.to_le_bytes());
        offset += (data.len() as u64).next_multiple_of(32);
    }
    for (_, _, _, data) in tensors {
        out.resize(out.len().next_multiple_of(32), 0);
        out.extend(data);
    }
    out
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wgrad-gguf-{}-{name}.gguf", std::process::id()))
}

fn f16(v: f32) -> [u8; 2] {
    half::f16::from_f32(v).to_le_bytes()
}

#[test]
fn q8_1_q8_k_and_version_2_read_by_hand() {
    // Q8_1: d, s (unused by dequantization), 32 int8s; Q8_K: f32 d, 256 int8s, 16 i16 sums
    let qs: Vec<u8> = (0..32).map(|i| (i as i8 - 16) as u8).collect();
    let q8_1 = [&f16(0.5)[..], &f16(99.0), &qs].concat();
    let big: Vec<u8> = (0..256).map(|i| (i as i8) as u8).collect();
    let q8_k = [&0.25f32.to_le_bytes()[..], &big, &[0; 32]].concat();
    let path = temp("q8");
    std::fs::write(&path, gguf(2, &[("a", &[32], 9, q8_1), ("b", &[256, 1], 15, q8_k)])).unwrap();
    let (kv, t) = gguf_load(&path).unwrap();
    assert_eq!(kv["general.name"], GgufValue::Str("hand-built".into()));
    assert_eq!(f32s(&t["a"]), (0..32).map(|i| (i - 16) as f32 * 0.5).collect::<Vec<_>>());
    assert_eq!(t["b"].shape(), [1, 256]);
    assert_eq!(f32s(&t["b"]), (0..256).map(|i| (i as u8 as i8) as f32 * 0.25).collect::<Vec<_>>());
    std::fs::remove_file(&path).unwrap();
}

/// The GGUF error of loading `bytes`, after checking that it names the file.
fn gguf_error(bytes: &[u8]) -> GgufError {
    let path = temp("bad");
    std::fs::write(&path, bytes).unwrap();
    let result = gguf_load(&path);
    std::fs::remove_file(&path).unwrap();
    match result {
        Err(TensorError::Gguf { path: p, source }) if p == Path::new(&path) => source,
        other => panic!("{other:?}"),
    }
}

#[test]
fn damaged_files_are_typed_errors() {
    let data = vec![0u8; 16];
    let good = gguf(3, &[("w", &[4], 0, data.clone())]);
    assert!(matches!(gguf_error(b"GGML\x03\0\0\0"), GgufError::Magic));
    assert!(matches!(gguf_error(&gguf(1, &[])), GgufError::Version(1)));
    // a big-endian file's version reads as 3 << 24
    assert!(matches!(gguf_error(&gguf(3 << 24, &[])), GgufError::Version(0x0300_0000)));
    for cut in [6, 30, good.len() - 40, good.len() - 1] {
        let err = gguf_error(&good[..cut]);
        assert!(matches!(err, GgufError::Truncated { .. } | GgufError::Tensor { .. }), "cut at {cut}: {err}");
    }
    let err = gguf_error(&gguf(3, &[("iq", &[256], 16, vec![0; 66])]));
    assert!(matches!(&err, GgufError::TensorType { name, type_id: 16 } if name == "iq"), "{err}");
    let err = gguf_error(&gguf(3, &[("q", &[48], 8, vec![0; 34])]));
    assert!(err.to_string().contains("not whole Q8_0 blocks"), "{err}");
    let err = gguf_error(&gguf(3, &[("w", &[4], 0, data.clone()), ("w", &[4], 0, data.clone())]));
    assert!(err.to_string().contains("appears twice"), "{err}");
    let err = gguf_error(&gguf(3, &[("w", &[1, 1, 1, 1, 1], 0, data)]));
    assert!(err.to_string().contains("5 dims"), "{err}");
    let mut bad_value = good.clone();
    bad_value[44..48].copy_from_slice(&13u32.to_le_bytes());
    assert!(matches!(gguf_error(&bad_value), GgufError::Header { .. }));
    let missing = std::env::temp_dir().join("wgrad-no-such-file.gguf");
    assert!(matches!(gguf_load(&missing), Err(TensorError::File { .. })));
}
