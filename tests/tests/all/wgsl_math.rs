//! Rendered WGSL kernels run on wgpu (Mesa lavapipe in CI) and compared with the CPU
//! interpreter running the same `Program` (so with `exec_alu` and `ConstValue::cast`):
//! integers and bools bit for bit, floats within a few ULP of the dtype. The precise
//! `log2`/`sin` helpers and the builtin `exp2` the renderer emits are also measured against f64
//! (and, for the record, the device's own builtins); the measured errors are printed to stderr.
//!
//! Without an adapter the tests print why and return, except under `CI=true`, where they fail.

use wgrad_codegen::{Opt, OptMode, OptOps, Program, Target, compile};
use wgrad_conformance::wgpu_device;
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Ops, UOp};
use wgrad_renderer_wgsl::{WgslCaps, buffer_bytes, render, validate};
use wgrad_runtime_cpu::{CpuBuffer, run};
use wgrad_runtime_wgpu::Device;
use wgrad_shape::{ShapeTracker, Sint, Variable};

// ---- harness ----

/// What the device offers, optionally without f16 or int64.
fn caps(device: &Device, f16: bool, int64: bool) -> WgslCaps {
    WgslCaps {
        f16: f16 && device.features().f16,
        int64: int64 && device.features().int64,
        cooperative_matrix: device.features().cooperative_matrix,
        subgroups: device.features().subgroups,
        subgroup_barrier: device.features().subgroup_barrier,
        f16_rounding: device.f16_rounding(),
        max_workgroups_per_dim: device.limits().max_workgroups_per_dimension,
    }
}

fn contiguous(shape: &[i64]) -> ShapeTracker {
    let shape: Vec<Sint> = shape.iter().map(|&d| Sint::int(d)).collect();
    ShapeTracker::from_shape(&shape).unwrap()
}

/// A load of `dtype` from buffer `slot`, `n` contiguous elements.
fn input(dtype: DType, slot: i64, n: i64) -> UOp {
    UOp::load(dtype, [UOp::define_global(dtype, slot), UOp::view(contiguous(&[n]))])
}

/// The kernel storing `value` (over `n` elements) into buffer 0.
fn store(n: i64, value: UOp) -> UOp {
    UOp::sink([UOp::store([UOp::define_global(value.dtype(), 0), UOp::view(contiguous(&[n])), value])])
}

fn compiled(ast: &UOp, mode: OptMode) -> Program {
    compile(ast, &Target::generic_gpu(), &mode, "k").expect("compiles").1
}

/// Runs `program` on the GPU; `buffers[slot]` holds the inputs (and sizes every output).
fn run_gpu(
    device: &Device,
    program: &Program,
    caps: &WgslCaps,
    buffers: &[CpuBuffer],
    vars: &[i32],
) -> Vec<CpuBuffer> {
    let wgsl = render(program, caps).unwrap_or_else(|e| panic!("render: {e}\n{program}"));
    if let Err(e) = validate(&wgsl.source, caps) {
        panic!("{e}\n{}", wgsl.source);
    }
    let mut bound = Vec::new();
    for b in &wgsl.bindings {
        let host = &buffers[b.slot];
        let mut bytes = host.to_bytes();
        bytes.resize(buffer_bytes(host.dtype(), host.len()), 0);
        let buf = device.alloc(bytes.len() as u64).unwrap();
        device.write(&buf, 0, &bytes).unwrap();
        bound.push(buf);
    }
    if wgsl.vars_binding.is_some() {
        bound.push(device.upload(vars).unwrap());
    }
    let pipeline = device
        .pipeline(&wgsl.source, &wgsl.entry)
        .unwrap_or_else(|e| panic!("pipeline: {e}\n{}", wgsl.source));
    let mut batch = device.batch();
    let refs: Vec<_> = bound.iter().collect();
    batch.dispatch(&pipeline, &refs, wgsl.workgroups).unwrap();
    device.submit(batch).unwrap();
    wgsl.bindings
        .iter()
        .map(|b| {
            let host = &buffers[b.slot];
            let bytes = device.read(&bound[b.binding as usize]).unwrap();
            CpuBuffer::from_bytes(host.dtype(), &bytes[..host.len() * host.dtype().itemsize()])
        })
        .collect()
}

/// Runs `program` on the interpreter.
fn run_cpu(program: &Program, buffers: &[CpuBuffer], vars: &[(Variable, i64)]) -> Vec<CpuBuffer> {
    let mut copies: Vec<CpuBuffer> =
        buffers.iter().map(|b| CpuBuffer::from_bytes(b.dtype(), &b.to_bytes())).collect();
    run(program, &mut copies, vars).unwrap_or_else(|e| panic!("interpreter: {e}\n{program}"));
    copies
}

/// How close a float result must be to the interpreter's.
#[derive(Clone, Copy, Debug)]
enum Tol {
    /// Within this many units in the last place of the dtype (0: bit for bit).
    Ulps(f64),
    /// tinygrad's forward tolerance (atol 1e-6, rtol 1e-3), for sums whose rounding order
    /// differs (devices contract `a * b + c` into fma).
    Sum,
}

/// Whether `got` matches the interpreter's `want` for `dtype`: exact for integers and bools;
/// for floats the same NaN-ness, and within `tol`.
fn close(dtype: DType, got: ConstValue, want: ConstValue, tol: Tol) -> bool {
    let ulps = match tol {
        _ if !dtype.is_float() => return got == want,
        Tol::Sum => return wgrad_conformance::close(got, want),
        Tol::Ulps(n) => n,
    };
    let (g, w) = (got.to_f64(), want.to_f64());
    if g.is_nan() || w.is_nan() {
        return g.is_nan() && w.is_nan();
    }
    if g == w {
        return true;
    }
    let mantissa = match dtype {
        DType::F16 => 10,
        DType::BF16 => 7,
        _ => 23,
    };
    // the ulp at w's magnitude, no smaller than the dtype's smallest normal's
    let min_exp = if dtype == DType::BF16 || dtype == DType::F32 { -126 } else { -14 };
    let exp =
        if w == 0.0 || w.is_infinite() { min_exp } else { (w.abs().log2().floor() as i32).max(min_exp) };
    (g - w).abs() <= ulps * 2f64.powi(exp - mantissa)
}

/// Whether `v` of `dtype` is subnormal where the device computes it (f32 registers, or native
/// f16): WGSL lets devices flush those to zero, so results involving them are not compared.
fn flushable(dtype: DType, v: ConstValue, caps: &WgslCaps) -> bool {
    let smallest_normal = match dtype {
        DType::F32 | DType::BF16 => 2f64.powi(-126),
        DType::F16 if caps.f16 => 2f64.powi(-14),
        _ => return false,
    };
    v.to_f64() != 0.0 && v.to_f64().abs() < smallest_normal
}

/// Runs `program` on both and compares every writable buffer, describing the first mismatches.
fn check(device: &Device, program: &Program, caps: &WgslCaps, buffers: &[CpuBuffer], tol: Tol, what: &str) {
    let gpu = run_gpu(device, program, caps, buffers, &[]);
    let cpu = run_cpu(program, buffers, &[]);
    let inputs: Vec<(DType, Vec<ConstValue>)> =
        buffers[1..].iter().map(|b| (b.dtype(), b.to_values())).collect();
    for b in program.buffers.iter().filter(|b| b.writable) {
        let (g, c) = (gpu[b.slot].to_values(), cpu[b.slot].to_values());
        let subnormal = |i: usize| {
            flushable(b.dtype, c[i], caps)
                || inputs.iter().any(|(dt, v)| v.get(i).is_some_and(|&x| flushable(*dt, x, caps)))
        };
        let bad: Vec<String> = (0..c.len())
            .filter(|&i| !subnormal(i) && !close(b.dtype, g[i], c[i], tol))
            .take(8)
            .map(|i| {
                let args: Vec<String> =
                    inputs.iter().filter_map(|(_, v)| v.get(i).map(|x| x.to_string())).collect();
                format!("[{i}] inputs {args:?}: gpu {} cpu {}", g[i], c[i])
            })
            .collect();
        assert!(bad.is_empty(), "{what} ({caps:?}): {}\n{program}", bad.join("\n"));
    }
}

// ---- operand values ----

/// Values that probe edges of every dtype: zeros, ones, signs, extremes, NaN and infinities,
/// fractions, halfway cases, and a spread of ordinary numbers.
fn probes() -> Vec<ConstValue> {
    let mut v: Vec<ConstValue> = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.0,
        -2.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.0,
        7.0,
        -7.0,
        100.0,
        -100.0,
        127.0,
        128.0,
        -128.0,
        255.0,
        256.0,
        32767.0,
        -32768.0,
        65504.0,
        65520.0,
        1e-3,
        1e-7,
        6e-8,
        1e10,
        -1e10,
        3e9,
        -3e9,
        4294967296.0,
        9.3e18,
        -9.3e18,
        2e19,
        1e30,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ]
    .into_iter()
    .map(ConstValue::Float)
    .collect();
    v.extend(
        [
            i64::MIN,
            i64::MAX,
            i64::from(i32::MIN),
            i64::from(i32::MAX),
            i64::from(u32::MAX),
            -3,
            5,
            31,
            33,
            63,
            64,
            130,
        ]
        .map(ConstValue::Int),
    );
    v.push(ConstValue::UInt(u64::MAX));
    v.push(ConstValue::Float(f64::from(f32::from_bits(0x0000_0400)))); // an f32 subnormal
    v.push(ConstValue::Float(f64::from(half::f16::from_bits(0x0003).to_f32()))); // an f16 subnormal
    v
}

/// `n` deterministic pseudo-random values in `[lo, hi)`.
fn spread(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

const DTYPES: [DType; 12] = [
    DType::BOOL,
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::F16,
    DType::BF16,
    DType::F32,
];

/// Every combination of capabilities the device can render `dtype` with.
fn caps_for(device: &Device, dtype: DType) -> Vec<WgslCaps> {
    let mut all = vec![caps(device, true, true)];
    if dtype == DType::F16 && device.features().f16 {
        all.push(caps(device, false, true));
    }
    if dtype == DType::I64 || dtype == DType::U64 {
        all.retain(|c| c.int64);
    }
    all
}

// ---- tests ----

#[test]
fn unary_ops_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    for op in [Ops::Exp2, Ops::Log2, Ops::Sin, Ops::Sqrt, Ops::Recip, Ops::Neg, Ops::Trunc] {
        for dtype in DTYPES {
            // exec_alu takes 64-bit integers through f64: log2 and sqrt of values from 2^48 on
            // round there, where the renderer computes the exact integer floor(log2), floor(sqrt)
            let mut values = probes();
            if matches!(op, Ops::Log2 | Ops::Sqrt) && dtype.itemsize() == 8 {
                values.retain(|v| v.cast(dtype).to_f64().abs() < 2f64.powi(48));
            }
            let n = values.len() as i64;
            let x = input(dtype, 1, n);
            let program = compiled(&store(n, x.alu(op, &[])), OptMode::Heuristic);
            let buffers =
                [CpuBuffer::zeros(dtype, n as usize), CpuBuffer::from_values(dtype, values.clone())];
            for c in caps_for(&device, dtype) {
                check(&device, &program, &c, &buffers, Tol::Ulps(4.0), &format!("{op:?} {dtype}"));
            }
        }
    }
}

#[test]
fn binary_ops_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    let values = probes();
    let k = values.len();
    let a: Vec<ConstValue> = (0..k * k).map(|i| values[i / k]).collect();
    let b: Vec<ConstValue> = (0..k * k).map(|i| values[i % k]).collect();
    let n = (k * k) as i64;
    let ops = [
        Ops::Add,
        Ops::Sub,
        Ops::Mul,
        Ops::Idiv,
        Ops::Mod,
        Ops::Max,
        Ops::CmpLt,
        Ops::CmpNe,
        Ops::Fdiv,
        Ops::Pow,
        Ops::And,
        Ops::Or,
        Ops::Xor,
        Ops::Shl,
        Ops::Shr,
    ];
    for op in ops {
        for dtype in DTYPES {
            let bitwise = matches!(op, Ops::And | Ops::Or | Ops::Xor | Ops::Shl | Ops::Shr);
            let shift = matches!(op, Ops::Shl | Ops::Shr);
            if (bitwise && dtype.is_float())
                || (shift && dtype.is_bool())
                || (op == Ops::Fdiv && !dtype.is_float())
            {
                continue;
            }
            let (x, y) = (input(dtype, 1, n), input(dtype, 2, n));
            let program = compiled(&store(n, x.alu(op, &[&y])), OptMode::Heuristic);
            let buffers = [
                CpuBuffer::zeros(
                    if op == Ops::CmpLt || op == Ops::CmpNe { DType::BOOL } else { dtype },
                    k * k,
                ),
                CpuBuffer::from_values(dtype, a.clone()),
                CpuBuffer::from_values(dtype, b.clone()),
            ];
            // pow goes through exp2(y * log2(x)): the error grows with |y * log2(x)| (measured up
            // to ~100 ulp at |y log2 x| ~ 80 on an NVIDIA H200)
            let tol = Tol::Ulps(if op == Ops::Pow { 256.0 } else { 4.0 });
            for c in caps_for(&device, dtype) {
                check(&device, &program, &c, &buffers, tol, &format!("{op:?} {dtype}"));
            }
        }
    }
}

#[test]
fn casts_and_bitcasts_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    let values = probes();
    let n = values.len() as i64;
    for from in DTYPES {
        for to in DTYPES {
            let x = input(from, 1, n);
            let buffers = [CpuBuffer::zeros(to, n as usize), CpuBuffer::from_values(from, values.clone())];
            let mut programs = vec![("cast", compiled(&store(n, x.cast(to)), OptMode::Heuristic))];
            if from.itemsize() == to.itemsize() && from != to {
                programs.push(("bitcast", compiled(&store(n, x.bitcast(to)), OptMode::Heuristic)));
            }
            for (what, program) in &programs {
                for c in caps_for(&device, from).into_iter().filter(|c| caps_for(&device, to).contains(c)) {
                    check(&device, program, &c, &buffers, Tol::Ulps(0.0), &format!("{what} {from} -> {to}"));
                }
            }
        }
    }
}

#[test]
fn ternary_ops_and_threefry_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    let values = probes();
    let n = values.len() as i64;
    let shifted: Vec<ConstValue> = values.iter().cycle().skip(7).take(values.len()).copied().collect();
    for dtype in DTYPES {
        let (x, y, z) = (input(dtype, 1, n), input(dtype, 2, n), input(dtype, 3, n));
        let buffers = [
            CpuBuffer::zeros(dtype, n as usize),
            CpuBuffer::from_values(dtype, values.clone()),
            CpuBuffer::from_values(dtype, shifted.clone()),
            CpuBuffer::from_values(dtype, values.iter().rev().copied().collect::<Vec<_>>()),
        ];
        let mulacc = compiled(&store(n, x.alu(Ops::MulAcc, &[&y, &z])), OptMode::Heuristic);
        let select = compiled(&store(n, x.cmp_lt(&y).where_(&y, &z)), OptMode::Heuristic);
        for c in caps_for(&device, dtype) {
            check(&device, &mulacc, &c, &buffers, Tol::Ulps(4.0), &format!("MulAcc {dtype}"));
            check(&device, &select, &c, &buffers, Tol::Ulps(0.0), &format!("Where {dtype}"));
        }
    }
    if device.features().int64 {
        let (x, key) = (input(DType::U64, 1, n), input(DType::U64, 2, n));
        let program = compiled(&store(n, x.threefry(&key)), OptMode::Heuristic);
        let buffers = [
            CpuBuffer::zeros(DType::U64, n as usize),
            CpuBuffer::from_values(DType::U64, values.clone()),
            CpuBuffer::from_values(DType::U64, shifted),
        ];
        check(&device, &program, &caps(&device, true, true), &buffers, Tol::Ulps(0.0), "Threefry");
    }
}

#[test]
fn comparisons_and_reciprocals_without_their_checks_match_the_interpreter() {
    // a comparison keeps its NaN checks only in a min or a max, and a reciprocal of a value that
    // cannot be zero keeps only its infinity check: NaN, infinities and signed zeros still go
    // through each as the interpreter says
    let Some(device) = wgpu_device() else { return };
    let values = probes();
    let k = values.len();
    let n = (k * k) as i64;
    let a: Vec<ConstValue> = (0..k * k).map(|i| values[i / k]).collect();
    let b: Vec<ConstValue> = (0..k * k).map(|i| values[i % k]).collect();
    for dtype in DTYPES.into_iter().filter(|d| d.is_float()) {
        let (x, y) = (input(dtype, 1, n), input(dtype, 2, n));
        let abs = x.cmp_lt(x.const_like(0.0)).where_(&-&x, &x);
        let kernels = [
            ("min", x.cmp_lt(&y).where_(&x, &y)),
            ("max", x.cmp_lt(&y).where_(&y, &x)),
            ("abs", abs.clone()),
            ("1 / (1 + exp2(x))", (&x.alu(Ops::Exp2, &[]) + &x.const_like(1.0)).alu(Ops::Recip, &[])),
            ("1 / (1 + |x| / 3)", (&(&abs * &x.const_like(0.3)) + &x.const_like(1.0)).alu(Ops::Recip, &[])),
        ];
        let buffers = [
            CpuBuffer::zeros(dtype, k * k),
            CpuBuffer::from_values(dtype, a.clone()),
            CpuBuffer::from_values(dtype, b.clone()),
        ];
        for (what, value) in kernels {
            let program = compiled(&store(n, value), OptMode::Heuristic);
            for c in caps_for(&device, dtype) {
                check(&device, &program, &c, &buffers, Tol::Ulps(4.0), &format!("{what} {dtype}"));
            }
        }
    }
}

#[test]
fn packed_loads_and_stores_of_neighbours_do_not_race() {
    let Some(device) = wgpu_device() else { return };
    // odd lengths and one thread per element: neighbours in a word are written concurrently
    let n = 1001i64;
    for dtype in [DType::BOOL, DType::I8, DType::U8, DType::I16, DType::U16, DType::BF16, DType::F16] {
        let values: Vec<f64> = spread(n as usize, -300.0, 300.0, 7).into_iter().map(f64::round).collect();
        let x = input(dtype, 1, n);
        let one = UOp::constant(dtype, 1);
        for mode in [OptMode::NoOpt, OptMode::Given(vec![Opt::new(OptOps::Local, 0, 7)]), OptMode::Heuristic]
        {
            let program = compiled(&store(n, x.alu(Ops::Add, &[&one])), mode);
            let buffers =
                [CpuBuffer::zeros(dtype, n as usize), CpuBuffer::from_values(dtype, values.clone())];
            for c in caps_for(&device, dtype) {
                check(&device, &program, &c, &buffers, Tol::Ulps(0.0), &format!("{dtype} + 1"));
            }
        }
    }
}

#[test]
fn reductions_grids_and_variables_run() {
    let Some(device) = wgpu_device() else { return };
    let full = caps(&device, true, true);
    let data = |n: usize, seed| CpuBuffer::from_values(DType::F32, spread(n, -2.0, 2.0, seed));
    // a grouped reduce (workgroup memory and a barrier) and an upcast, unrolled matmul tile
    let sum = UOp::sink([UOp::store([
        UOp::define_global(DType::F32, 0),
        UOp::view(contiguous(&[16, 1])),
        UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), UOp::view(contiguous(&[16, 256]))])
            .reduce_axis(Ops::Add, &[1]),
    ])]);
    let grouped = OptMode::Given(vec![Opt::new(OptOps::Grouptop, 0, 16)]);
    let buffers = [CpuBuffer::zeros(DType::F32, 16), data(16 * 256, 1)];
    let program = compiled(&sum, grouped);
    check(&device, &program, &full, &buffers, Tol::Sum, "grouped sum");
    let flat = WgslCaps { max_workgroups_per_dim: 4, ..full };
    check(&device, &program, &flat, &buffers, Tol::Sum, "grouped sum, flattened grid");
    let (m, k) = (64i64, 32i64);
    let strided = |shape: &[i64], strides: &[i64]| {
        let sh: Vec<Sint> = shape.iter().map(|&d| Sint::int(d)).collect();
        let st: Vec<Sint> = strides.iter().map(|&d| Sint::int(d)).collect();
        ShapeTracker::from_view(wgrad_shape::View::new(&sh, &st, Sint::int(0), None).unwrap())
    };
    let a = UOp::load(
        DType::F32,
        [UOp::define_global(DType::F32, 1), UOp::view(strided(&[m, m, k], &[k, 0, 1]))],
    );
    let b = UOp::load(
        DType::F32,
        [UOp::define_global(DType::F32, 2), UOp::view(strided(&[m, m, k], &[0, 1, m]))],
    );
    let matmul = UOp::sink([UOp::store([
        UOp::define_global(DType::F32, 0),
        UOp::view(contiguous(&[m, m, 1])),
        (a * b).reduce_axis(Ops::Add, &[2]),
    ])]);
    let tile = OptMode::Given(vec![
        Opt::new(OptOps::Local, 0, 4),
        Opt::new(OptOps::Local, 1, 4),
        Opt::new(OptOps::Upcast, 0, 4),
        Opt::new(OptOps::Upcast, 1, 4),
        Opt::new(OptOps::Unroll, 0, 4),
    ]);
    let buffers = [
        CpuBuffer::zeros(DType::F32, (m * m) as usize),
        data((m * k) as usize, 2),
        data((k * m) as usize, 3),
    ];
    let program = compiled(&matmul, tile);
    check(&device, &program, &full, &buffers, Tol::Sum, "matmul tile");
    // the same matmul with its grid flattened (as if the device allowed 2 workgroups per dim)
    let small = WgslCaps { max_workgroups_per_dim: 2, ..full };
    assert_eq!(render(&program, &small).unwrap().workgroups[1..], [1, 1]);
    check(&device, &program, &small, &buffers, Tol::Sum, "flattened matmul");
    // and with its workgroups taking the blocks last first, on a grid of its own and flattened
    let reversed = Program { reversed: true, ..program };
    check(&device, &reversed, &full, &buffers, Tol::Sum, "reversed matmul");
    check(&device, &reversed, &small, &buffers, Tol::Sum, "reversed flattened matmul");
    // a loop bound from a variable: out[i] = sum of the first n of row i
    let v = Variable::new("n", 1, 64).unwrap();
    let row = ShapeTracker::from_view(
        wgrad_shape::View::new(
            &[Sint::int(8), Sint::var(&v)],
            &[Sint::int(64), Sint::int(1)],
            Sint::int(0),
            None,
        )
        .unwrap(),
    );
    let out = contiguous(&[8, 1]);
    let partial = UOp::sink([UOp::store([
        UOp::define_global(DType::F32, 0),
        UOp::view(out),
        UOp::load(DType::F32, [UOp::define_global(DType::F32, 1), UOp::view(row)])
            .reduce_axis(Ops::Add, &[1]),
    ])]);
    let program = compiled(&partial, OptMode::Heuristic);
    let buffers = [CpuBuffer::zeros(DType::F32, 8), data(8 * 64, 4)];
    for n in [1, 17, 64] {
        let gpu = run_gpu(&device, &program, &full, &buffers, &[n]);
        let cpu = run_cpu(&program, &buffers, &[(v.clone(), i64::from(n))]);
        let (g, c) = (gpu[0].to_f64(), cpu[0].to_f64());
        assert!(
            g.iter().zip(&c).all(|(g, c)| (g - c).abs() <= 1e-5 * (1.0 + c.abs())),
            "n={n}: {g:?} vs {c:?}"
        );
    }
}

// ---- precision of the math helpers against f64 ----

/// Max absolute error, max relative error (where the reference is at least 1e-30 in size) and
/// max error in f32 ULPs of `got` against `want`, over finite references that are not f32
/// subnormals (which WGSL lets devices flush to zero; NVIDIA's does).
fn errors(got: &[f32], want: &[f64]) -> (f64, f64, f64) {
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        if !w.is_finite() || (w != 0.0 && w.abs() < f64::from(f32::MIN_POSITIVE)) {
            continue;
        }
        let err = (f64::from(g) - w).abs();
        let ulp = (w as f32).abs().max(f32::MIN_POSITIVE);
        let ulp = f64::from(f32::from_bits(ulp.to_bits() + 1) - ulp);
        worst.0 = worst.0.max(err);
        if w.abs() >= 1e-30 {
            worst.1 = worst.1.max(err / w.abs());
        }
        worst.2 = worst.2.max(err / ulp);
    }
    worst
}

/// `op` over `xs` through the renderer (the precise helper) on the GPU.
fn rendered(device: &Device, op: Ops, xs: &[f32]) -> Vec<f32> {
    let n = xs.len() as i64;
    let program = compiled(&store(n, input(DType::F32, 1, n).alu(op, &[])), OptMode::Heuristic);
    let buffers = [CpuBuffer::zeros(DType::F32, xs.len()), CpuBuffer::from_values(DType::F32, xs.to_vec())];
    let out = run_gpu(device, &program, &caps(device, true, true), &buffers, &[]);
    out[0].to_f64().into_iter().map(|v| v as f32).collect()
}

/// The device's own builtin `name` over `xs`.
fn builtin(device: &Device, name: &str, xs: &[f32]) -> Vec<f32> {
    let src = format!(
        "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\
         @group(0) @binding(1) var<storage, read> x: array<f32>;\n\
         @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) {{\n\
           if (id.x < arrayLength(&x)) {{ y[id.x] = {name}(x[id.x]); }}\n\
         }}"
    );
    let x = device.upload(xs).unwrap();
    let y = device.alloc(x.size()).unwrap();
    let mut batch = device.batch();
    batch
        .dispatch(&device.pipeline(&src, "main").unwrap(), &[&y, &x], [(xs.len() as u32).div_ceil(64), 1, 1])
        .unwrap();
    device.submit(batch).unwrap();
    device.read_as::<f32>(&y).unwrap()
}

/// Measures `op` (exp2, log2 or sin) over `xs` against f64, prints the errors of what the
/// renderer emits (the precise helper; for exp2 the builtin) and of the device builtin, and checks
/// the rendered one stays within `max_ulps`.
fn measure(device: &Device, op: Ops, range: &str, xs: &[f32], max_ulps: f64) {
    let (name, reference): (&str, fn(f64) -> f64) = match op {
        Ops::Exp2 => ("exp2", f64::exp2),
        Ops::Log2 => ("log2", f64::log2),
        _ => ("sin", f64::sin),
    };
    let want: Vec<f64> = xs.iter().map(|&x| reference(f64::from(x))).collect();
    let (abs, rel, ulps) = errors(&rendered(device, op, xs), &want);
    let (babs, brel, bulps) = errors(&builtin(device, name, xs), &want);
    eprintln!(
        "{name} on {range} ({}): rendered max abs {abs:.3e} rel {rel:.3e} ({ulps:.2} ulp); \
         device builtin max abs {babs:.3e} rel {brel:.3e} ({bulps:.2} ulp)",
        device.adapter().name
    );
    assert!(ulps <= max_ulps, "{name} on {range}: {ulps} ulp");
}

/// `n` f32 values spread evenly in `[lo, hi)`, or log-uniformly in `[10^lo, 10^hi)`.
fn sweep(n: usize, lo: f64, hi: f64, seed: u64, log: bool) -> Vec<f32> {
    spread(n, lo, hi, seed).into_iter().map(|x| if log { 10f64.powf(x) as f32 } else { x as f32 }).collect()
}

#[test]
fn precise_math_error_against_f64() {
    let Some(device) = wgpu_device() else { return };
    let d = &device;
    // exp2 is the device builtin (the polynomial made softmax compute-bound): Vulkan promises
    // 3 + 2|x| ulp; lavapipe measured 3.0 on [-1, 1]
    measure(d, Ops::Exp2, "[-1, 1]", &sweep(50000, -1.0, 1.0, 11, false), 5.0);
    measure(d, Ops::Exp2, "[-150, 128]", &sweep(50000, -150.0, 128.0, 12, false), 3.0 + 2.0 * 150.0);
    measure(d, Ops::Log2, "[0.5, 2]", &sweep(50000, 0.5, 2.0, 13, false), 2.0);
    measure(d, Ops::Log2, "[1e-37, 1e38] log-uniform", &sweep(50000, -37.0, 38.0, 14, true), 2.0);
    measure(d, Ops::Sin, "[-pi, pi]", &sweep(50000, -3.2, 3.2, 15, false), 2.0);
    measure(d, Ops::Sin, "[-1e4, 1e4]", &sweep(50000, -1e4, 1e4, 16, false), 2.0);
    measure(d, Ops::Sin, "[1, 1e30] log-uniform", &sweep(50000, 0.0, 30.0, 17, true), 2.0);
    let near_half_pi: Vec<f32> =
        (1..20000).map(|k| (f64::from(k) * std::f64::consts::FRAC_PI_2) as f32).collect();
    measure(d, Ops::Sin, "f32(k pi/2), 0 < k < 20000", &near_half_pi, 2.0);
}

#[test]
fn random_kernels_match_the_interpreter() {
    let Some(device) = wgpu_device() else { return };
    let generic = Target::generic_gpu();
    let full = caps(&device, true, true);
    for seed in 0..150u64 {
        let mut r = wgrad_conformance::Rng(seed);
        let case = wgrad_conformance::random_ast::Case::random(&mut r);
        let inputs = case.inputs(&mut r);
        let buffers: Vec<CpuBuffer> =
            case.buffers
                .iter()
                .zip(&inputs)
                .map(|(&(dt, n), v)| {
                    if v.is_empty() { CpuBuffer::zeros(dt, n) } else { CpuBuffer::from_values(dt, v.clone()) }
                })
                .collect();
        let random = case.random_opts(&mut r, &generic);
        for mode in [OptMode::NoOpt, OptMode::Heuristic, random] {
            let program = compile(&case.ast, &generic, &mode, "k").expect("compiles").1;
            let gpu = run_gpu(&device, &program, &full, &buffers, &[]);
            let cpu = run_cpu(&program, &buffers, &[]);
            for slot in 0..case.outputs {
                let (g, c) = (gpu[slot].to_values(), cpu[slot].to_values());
                let bad = g.iter().zip(&c).position(|(&g, &c)| !wgrad_conformance::close(g, c));
                assert!(
                    bad.is_none(),
                    "seed {seed} {mode:?} slot {slot} at {bad:?}: {g:?} vs {c:?}\n{program}"
                );
            }
        }
    }
}
