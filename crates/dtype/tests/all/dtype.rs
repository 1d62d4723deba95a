//! DType construction, properties, names and printing.

use wgrad_dtype::{AddrSpace, DType, DTypeError, ScalarType};

#[test]
fn itemsizes_and_kinds() {
    let cases = [
        (DType::BOOL, 1, false, false, false),
        (DType::I8, 1, true, false, false),
        (DType::U8, 1, true, true, false),
        (DType::I16, 2, true, false, false),
        (DType::U16, 2, true, true, false),
        (DType::I32, 4, true, false, false),
        (DType::U32, 4, true, true, false),
        (DType::I64, 8, true, false, false),
        (DType::U64, 8, true, true, false),
        (DType::F16, 2, false, false, true),
        (DType::BF16, 2, false, false, true),
        (DType::F32, 4, false, false, true),
        (DType::F64, 8, false, false, true),
    ];
    for (d, size, int, unsigned, float) in cases {
        assert_eq!(d.itemsize(), size, "{d}");
        assert_eq!(d.is_int(), int, "{d}");
        assert_eq!(d.is_unsigned(), unsigned, "{d}");
        assert_eq!(d.is_float(), float, "{d}");
    }
    assert!(DType::BOOL.is_bool());
    assert_eq!(DType::VOID.itemsize(), 0);
}

#[test]
fn vectors_and_pointers() {
    let v = DType::F32.vec(4);
    assert_eq!(v.count(), 4);
    assert_eq!(v.itemsize(), 16);
    assert!(v.is_vector());
    assert_eq!(v.scalar_dtype(), DType::F32);
    assert_eq!(v.vec(1), DType::F32);
    let p = DType::F16.ptr(AddrSpace::Global);
    assert!(p.is_ptr());
    assert_eq!(p.itemsize(), 8);
    assert_eq!(p.base(), DType::F16);
    assert_eq!(p.addr_space(), Some(AddrSpace::Global));
    assert_eq!(p.ptr_size(), None);
    let l = DType::F32.vec(2).ptr_sized(AddrSpace::Local, 256);
    assert_eq!(l.ptr_size(), Some(256));
    assert_eq!(l.base(), DType::F32.vec(2));
    assert_eq!(l.scalar_dtype(), DType::F32);
    assert_ne!(l, DType::F32.vec(2).ptr(AddrSpace::Local));
    assert_eq!(DType::F32.addr_space(), None);
}

#[test]
fn printing_follows_tinygrad() {
    assert_eq!(DType::F32.to_string(), "dtypes.float");
    assert_eq!(DType::U8.to_string(), "dtypes.uchar");
    assert_eq!(DType::F32.vec(4).to_string(), "dtypes.float.vec(4)");
    assert_eq!(DType::F16.ptr(AddrSpace::Global).to_string(), "dtypes.half.ptr()");
    assert_eq!(DType::F32.ptr_sized(AddrSpace::Local, 16).to_string(), "dtypes.float.ptr(16, local)");
    assert_eq!(DType::I32.ptr(AddrSpace::Reg).to_string(), "dtypes.int.ptr(, reg)");
}

#[test]
fn names_parse() {
    for s in ScalarType::ALL {
        let d = DType::new(s);
        assert_eq!(s.long_name().parse::<DType>(), Ok(d));
        assert_eq!(s.name().parse::<DType>(), Ok(d));
    }
    assert_eq!("half".parse::<DType>(), Ok(DType::F16));
    assert_eq!("complex64".parse::<DType>(), Err(DTypeError::UnknownName("complex64".into())));
    assert_eq!("complex64".parse::<DType>().unwrap_err().to_string(), "unknown dtype name `complex64`");
}

#[test]
fn defaults_and_priority_order() {
    assert_eq!(DType::default_float(), DType::F32);
    assert_eq!(DType::default_int(), DType::I32);
    assert!(ScalarType::ALL.windows(2).all(|w| w[0] < w[1]));
    assert!(DType::I8 < DType::U8 && DType::U64 < DType::F16 && DType::F16 < DType::BF16);
}
