//! The promotion lattice, pairwise, against a table computed by running tinygrad v0.10's
//! `least_upper_dtype` (a script simulating `promo_lattice` and `_get_recursive_parents`).

use wgrad_dtype::{DType, least_upper_dtype, least_upper_float, sum_acc_dtype};

const ORDER: [&str; 13] = [
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
    "float32", "float64",
];

#[rustfmt::skip]
const TABLE: [[&str; 13]; 13] = [
    ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"], // bool
    ["int8", "int8", "int16", "int16", "int32", "int32", "int64", "int64", "float16", "float16", "bfloat16", "float32", "float64"], // int8
    ["uint8", "int16", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"], // uint8
    ["int16", "int16", "int16", "int16", "int32", "int32", "int64", "int64", "float16", "float16", "bfloat16", "float32", "float64"], // int16
    ["uint16", "int32", "uint16", "int32", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"], // uint16
    ["int32", "int32", "int32", "int32", "int32", "int32", "int64", "int64", "float16", "float16", "bfloat16", "float32", "float64"], // int32
    ["uint32", "int64", "uint32", "int64", "uint32", "int64", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"], // uint32
    ["int64", "int64", "int64", "int64", "int64", "int64", "int64", "int64", "float16", "float16", "bfloat16", "float32", "float64"], // int64
    ["uint64", "float16", "uint64", "float16", "uint64", "float16", "uint64", "float16", "uint64", "float16", "bfloat16", "float32", "float64"], // uint64
    ["float16", "float16", "float16", "float16", "float16", "float16", "float16", "float16", "float16", "float16", "float32", "float32", "float64"], // float16
    ["bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "float32", "bfloat16", "float32", "float64"], // bfloat16
    ["float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float64"], // float32
    ["float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64"], // float64
];

fn dt(name: &str) -> DType {
    name.parse().unwrap()
}

#[test]
fn pairwise_table_matches_tinygrad() {
    for (i, a) in ORDER.iter().enumerate() {
        for (j, b) in ORDER.iter().enumerate() {
            let got = least_upper_dtype(&[dt(a), dt(b)]);
            assert_eq!(got, dt(TABLE[i][j]), "{a} + {b}");
        }
    }
}

#[test]
fn named_cases() {
    assert_eq!(least_upper_dtype(&[DType::I8, DType::U8]), DType::I16);
    assert_eq!(least_upper_dtype(&[DType::I64, DType::F16]), DType::F16);
    assert_eq!(least_upper_dtype(&[DType::U64, DType::I64]), DType::F16);
    assert_eq!(least_upper_dtype(&[DType::F16, DType::BF16]), DType::F32);
    assert_eq!(least_upper_dtype(&[DType::U32, DType::I32]), DType::I64);
    for d in ORDER {
        assert_eq!(least_upper_dtype(&[DType::BOOL, dt(d)]), dt(d), "bool + {d}");
        assert_eq!(least_upper_dtype(&[dt(d)]), dt(d));
    }
}

#[test]
fn many_and_edge_sets() {
    assert_eq!(least_upper_dtype(&[DType::I8, DType::U8, DType::BOOL, DType::I16]), DType::I16);
    assert_eq!(least_upper_dtype(&[DType::U8, DType::I8, DType::F16]), DType::F16);
    assert_eq!(least_upper_dtype(&[]), DType::BOOL);
    assert_eq!(least_upper_dtype(&[DType::VOID, DType::F32]), DType::VOID);
    assert_eq!(least_upper_dtype(&[DType::F32.vec(4), DType::I32]), DType::F32);
}

#[test]
fn least_upper_float_cases() {
    assert_eq!(least_upper_float(DType::I32), DType::F32);
    assert_eq!(least_upper_float(DType::BOOL), DType::F32);
    assert_eq!(least_upper_float(DType::F16), DType::F16);
    assert_eq!(least_upper_float(DType::BF16), DType::BF16);
    assert_eq!(least_upper_float(DType::F64), DType::F64);
}

#[test]
fn sum_accumulates_wide_enough() {
    let cases = [
        (DType::BOOL, DType::I32),
        (DType::I8, DType::I32),
        (DType::I16, DType::I32),
        (DType::I32, DType::I32),
        (DType::I64, DType::I64),
        (DType::U8, DType::U32),
        (DType::U16, DType::U32),
        (DType::U32, DType::U32),
        (DType::U64, DType::U64),
        (DType::F16, DType::F32),
        (DType::BF16, DType::F32),
        (DType::F32, DType::F32),
        (DType::F64, DType::F64),
    ];
    for (d, acc) in cases {
        assert_eq!(sum_acc_dtype(d), acc, "sum of {d}");
    }
}
