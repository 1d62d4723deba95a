//! Property: random kernel ASTs over every dtype (every ALU op the IR allows on it, casts and
//! bitcasts between dtypes, broadcasts, pads, flips, reductions) under random opts render to
//! WGSL that naga accepts, for an adapter with and without f16/int64 and one that makes most
//! grids flatten; the only refusals are
//! typed `Unsupported` errors naming a dtype the adapter cannot hold.

mod common;

use common::*;
use wgrad_codegen::{Opt, OptMode, OptOps, Program, Target, compile};
use wgrad_dtype::{ConstValue, DType};
use wgrad_ops::{Ops, UOp};
use wgrad_renderer_wgsl::{RenderError, WgslCaps, render};

/// splitmix64: the same seed gives the same cases everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const DTYPES: [DType; 13] = [
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
    DType::F64,
];

/// Constants that stress literals: extremes, signs, NaN and infinities.
const CONSTS: [f64; 10] = [0.0, 1.0, -1.0, 3.0, 0.5, -7.25, 1e30, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];

/// Builds random values over the kernel's full shape.
struct Gen<'a> {
    r: &'a mut Rng,
    full: Vec<i64>,
    /// Next free buffer slot.
    slot: i64,
}

impl Gen<'_> {
    /// A load of `dtype` through a random view of the full shape (plain, broadcast, padded, flipped).
    fn load(&mut self, dtype: DType) -> UOp {
        let full = self.full.clone();
        let mut strides: Vec<i64> = vec![0; full.len()];
        let mut step = 1;
        for i in (0..full.len()).rev() {
            if !self.r.chance(25) {
                strides[i] = step;
                step *= full[i];
            }
        }
        let mut view = strided(&full, &strides, 0);
        if self.r.chance(25) {
            let inner: Vec<i64> = full.iter().map(|&d| (d - 1).max(1)).collect();
            let pads: Vec<(i64, i64)> = full.iter().zip(&inner).map(|(&d, &i)| (d - i, 0)).collect();
            view = padded(st(&inner), &pads);
        }
        if self.r.chance(20) {
            let flips: Vec<bool> = full.iter().map(|_| self.r.chance(50)).collect();
            view = view.flip(&flips).unwrap();
        }
        self.slot += 1;
        load_dt(dtype, self.slot, view)
    }

    /// A random value of `dtype`, at most `depth` ops deep.
    fn value(&mut self, dtype: DType, depth: usize) -> UOp {
        if depth == 0 || self.r.chance(20) {
            return self.load(dtype);
        }
        let choice = self.r.below(10);
        if choice == 0 {
            // a cast or bitcast from another dtype
            let from = self.r.pick(&DTYPES);
            let x = self.value(from, depth - 1);
            return if from.itemsize() == dtype.itemsize() && self.r.chance(50) {
                x.bitcast(dtype)
            } else {
                x.cast(dtype)
            };
        }
        let a = self.value(dtype, depth - 1);
        let c = ConstValue::Float(self.r.pick(&CONSTS)).cast(dtype);
        // wgrad-ops' symbolic rules loop on `x % MIN` (mod_flip_sign negates MIN to itself)
        let b = if self.r.chance(25) && !(dtype.is_int() && c == dtype.min_value()) {
            UOp::constant(dtype, c)
        } else {
            self.value(dtype, depth - 1)
        };
        let unary = [Ops::Exp2, Ops::Log2, Ops::Sin, Ops::Sqrt, Ops::Recip, Ops::Neg, Ops::Trunc];
        let mut binary =
            vec![Ops::Add, Ops::Sub, Ops::Mul, Ops::Idiv, Ops::Mod, Ops::Max, Ops::Fdiv, Ops::Pow];
        if !dtype.is_float() {
            binary.extend([Ops::And, Ops::Or, Ops::Xor]);
        }
        match choice {
            1..=2 => a.alu(self.r.pick(&unary), &[]),
            3..=5 => a.alu(self.r.pick(&binary), &[&b]),
            6 if dtype.is_int() => {
                let amount_dtype = self.r.pick(&[DType::I32, DType::U8, DType::I64]);
                let amount = self.value(amount_dtype, depth - 1);
                a.alu(self.r.pick(&[Ops::Shl, Ops::Shr]), &[&amount])
            }
            6 if dtype == DType::U64 => a.threefry(&b),
            7 => a.alu(Ops::MulAcc, &[&b, &self.value(dtype, depth - 1)]),
            8 => {
                let cond = a.alu(self.r.pick(&[Ops::CmpLt, Ops::CmpNe]), &[&b]);
                if dtype.is_bool() { cond } else { cond.where_(&a, &b) }
            }
            _ => &a + &b,
        }
    }
}

/// A random kernel AST of `dtype` (maybe reduced) with random opts, compiled; `None` when the
/// opts or the launch do not fit the target.
fn random_program(r: &mut Rng, dtype: DType) -> Option<Program> {
    let full: Vec<i64> = (0..1 + r.below(3)).map(|_| r.pick(&[1, 2, 3, 4, 5, 8, 16, 33])).collect();
    let mut g = Gen { r, full: full.clone(), slot: 0 };
    let mut value = g.value(dtype, 3);
    let reduce: Vec<usize> = (0..full.len()).filter(|_| g.r.chance(30)).collect();
    let mut out = full.clone();
    if !reduce.is_empty() {
        value = value.reduce_axis(g.r.pick(&[Ops::Add, Ops::Mul, Ops::Max]), &reduce);
        reduce.iter().for_each(|&a| out[a] = 1);
    }
    let ast = store_ast(st(&out), value);
    let mode = match r.below(3) {
        0 => OptMode::NoOpt,
        1 => OptMode::Heuristic,
        _ => {
            let ops = [OptOps::Upcast, OptOps::Unroll, OptOps::Local, OptOps::Group, OptOps::Grouptop];
            let opts: Vec<Opt> =
                (0..r.below(4)).map(|_| Opt::new(r.pick(&ops), r.below(2), r.pick(&[0, 2, 4]))).collect();
            OptMode::Given(opts)
        }
    };
    match compile(&ast, &Target::generic_gpu(), &mode, "random") {
        Ok((_, program)) => Some(program),
        Err(e) if matches!(e, wgrad_codegen::CodegenError::Spec(_)) => {
            panic!("the generator built a bad AST: {e}")
        }
        Err(_) => None,
    }
}

/// The dtypes a program computes with (its values and buffers).
fn dtypes_in(program: &Program) -> Vec<DType> {
    program.uops.iter().map(|u| u.dtype().scalar_dtype()).collect()
}

#[test]
fn random_kernels_render_and_validate_or_refuse_with_a_type() {
    let mut r = Rng(0x5eed);
    let (mut rendered, mut refused) = (0, 0);
    for case in 0..1000 {
        let dtype = DTYPES[case % DTYPES.len()];
        let Some(program) = random_program(&mut r, dtype) else { continue };
        let present = dtypes_in(&program);
        // a device allowing 3 workgroups per dim flattens most grids (barriers after the early return)
        for caps in [FULL, BARE, WgslCaps { max_workgroups_per_dim: 3, ..FULL }] {
            let holdable =
                |d: &DType| *d != DType::F64 && (caps.int64 || (*d != DType::I64 && *d != DType::U64));
            match render(&program, &caps) {
                Ok(_) => {
                    assert!(present.iter().all(holdable), "rendered a dtype {caps:?} cannot hold\n{program}");
                    render_valid(&program, &caps);
                    rendered += 1;
                }
                Err(RenderError::Unsupported { dtype, .. }) => {
                    assert!(!holdable(&dtype) && present.contains(&dtype), "refused {dtype}\n{program}");
                    refused += 1;
                }
                Err(e) => panic!("{e}\n{program}"),
            }
        }
    }
    assert!(rendered > 300 && refused > 50, "rendered {rendered}, refused {refused}");
}

#[test]
fn f64_is_refused_with_its_name() {
    let ast = store_ast(st(&[4]), load_dt(DType::F64, 1, st(&[4])));
    let err = render(&program(&ast, OptMode::NoOpt), &FULL).unwrap_err();
    assert!(matches!(err, RenderError::Unsupported { dtype: DType::F64, .. }), "{err}");
    assert!(err.to_string().contains("float64"), "{err}");
}

#[test]
fn int64_without_caps_is_refused_with_its_name() {
    for dtype in [DType::I64, DType::U64] {
        let ast = store_ast(st(&[4]), load_dt(dtype, 1, st(&[4])) + 1i64);
        let program = program(&ast, OptMode::NoOpt);
        let err = render(&program, &BARE).unwrap_err();
        assert!(matches!(err, RenderError::Unsupported { dtype: d, .. } if d == dtype), "{err}");
        assert!(
            err.to_string().contains(dtype.scalar().long_name()) && err.to_string().contains("int64"),
            "{err}"
        );
        render_valid(&program, &FULL);
    }
    // a cast through i64 inside an f32 kernel needs int64 too
    let ast = store_ast(st(&[4]), load(1, st(&[4])).cast(DType::I64).cast(DType::F32));
    assert!(matches!(render(&program(&ast, OptMode::NoOpt), &BARE), Err(RenderError::Unsupported { .. })));
}

#[test]
fn every_buffer_is_bound_in_slot_order_and_variables_after() {
    // buffer 2 is loaded but multiplied by zero away: it stays bound (and used, for the layout)
    let ast = store_ast(st(&[8]), load(1, st(&[8])) + load(3, st(&[8])) * 0.0f32);
    let program = program(&ast, OptMode::NoOpt);
    let wgsl = render_valid(&program, &FULL);
    let slots: Vec<(usize, u32, bool)> =
        wgsl.bindings.iter().map(|b| (b.slot, b.binding, b.writable)).collect();
    assert_eq!(
        slots,
        program.buffers.iter().zip(0..).map(|(b, i)| (b.slot, i, b.writable)).collect::<Vec<_>>()
    );
    assert_eq!(wgsl.vars_binding, None);
    assert_eq!(wgsl.workgroup_size, program.local_size.map(|s| s as u32));
}

#[test]
fn names_from_outside_stay_legal() {
    // a kernel and a variable named like keywords, builtins and helpers
    let n = wgrad_shape::Variable::new("sin", 1, 8).unwrap();
    let view = wgrad_shape::View::new(
        &[wgrad_shape::Sint::int(2), wgrad_shape::Sint::var(&n)],
        &sints(&[8, 1]),
        wgrad_shape::Sint::int(0),
        None,
    )
    .unwrap();
    let ast = store_ast(
        st(&[2, 1]),
        load(1, wgrad_shape::ShapeTracker::from_view(view)).sin().reduce_axis(Ops::Add, &[1]),
    );
    for name in ["loop", "precise_sin", "9 lives", "__x"] {
        let program = compile(&ast, &Target::generic_gpu(), &OptMode::NoOpt, name).unwrap().1;
        let wgsl = render_valid(&program, &FULL);
        assert_ne!(wgsl.entry, name);
        assert_eq!(wgsl.vars_binding, Some(program.buffers.len() as u32));
    }
}

#[test]
fn rendering_is_deterministic() {
    let ast = matmul_ast(16, 16, 16);
    let a = render_valid(&program(&ast, OptMode::Heuristic), &BARE).source;
    let b = render_valid(&program(&ast, OptMode::Heuristic), &BARE).source;
    assert_eq!(a, b);
}
