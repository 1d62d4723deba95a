//! `torch_load` on checkpoints written here byte for byte as `torch.save` writes them (zip
//! and legacy formats, pickle protocols 2 and 4), on the real `.pt` files of
//! `tests/fixtures/torch` when `make_torch_fixtures.py` has made them, and on damaged or
//! hostile files, which must be typed errors naming the file and the problem.

use crate::common;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use wgrad_tensor::nn::state::{TorchError, TorchValue, torch_load, torch_load_object};
use wgrad_tensor::nn::{Linear, Module};
use wgrad_tensor::{DType, Tensor, TensorError, with_default_device};

/// A Python object for the pickler.
#[derive(Clone)]
enum P {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Global(&'static str, &'static str),
    Tuple(Vec<P>),
    List(Vec<P>),
    Dict(Vec<(P, P)>),
    /// An `OrderedDict` with its items and, as a state dict has, a `_metadata` attribute.
    OrderedDict(Vec<(P, P)>, bool),
    /// `func(*args)`.
    Reduce(Box<P>, Box<P>),
    /// A persistent id (a storage).
    PersId(Box<P>),
    /// An object remembered under a label for [`P::Ref`].
    Named(&'static str, Box<P>),
    /// The object remembered under the label: the same object again (BINGET).
    Ref(&'static str),
}

fn s(text: &str) -> P {
    P::Str(text.to_string())
}

/// CPython's pickler as `torch.save` drives it: protocol 2 (or 4: frames, short strings,
/// MEMOIZE and STACK_GLOBAL), every string, global and container memoized and referenced
/// again by BINGET.
struct Pickler {
    out: Vec<u8>,
    protocol4: bool,
    memo: HashMap<String, u32>,
    next: u32,
}

impl Pickler {
    fn dump(p: &P, protocol4: bool) -> Vec<u8> {
        let mut w = Pickler { out: vec![], protocol4, memo: HashMap::new(), next: 0 };
        w.save(p);
        w.out.push(b'.');
        let mut out = vec![0x80, if protocol4 { 4 } else { 2 }];
        if protocol4 {
            out.push(0x95);
            out.extend((w.out.len() as u64).to_le_bytes());
        }
        out.extend(w.out);
        out
    }

    fn memoize(&mut self, key: Option<String>) {
        if self.protocol4 {
            self.out.push(0x94);
        } else if self.next < 256 {
            self.out.extend([b'q', self.next as u8]);
        } else {
            self.out.push(b'r');
            self.out.extend(self.next.to_le_bytes());
        }
        if let Some(key) = key {
            self.memo.insert(key, self.next);
        }
        self.next += 1;
    }

    /// BINGET of `key` if it was memoized.
    fn recall(&mut self, key: &str) -> bool {
        let Some(&n) = self.memo.get(key) else { return false };
        match n < 256 {
            true => self.out.extend([b'h', n as u8]),
            false => {
                self.out.push(b'j');
                self.out.extend(n.to_le_bytes());
            }
        }
        true
    }

    fn save(&mut self, p: &P) {
        match p {
            P::None => self.out.push(b'N'),
            P::Bool(b) => self.out.push(if *b { 0x88 } else { 0x89 }),
            &P::Int(v) => match v {
                0..=0xff => self.out.extend([b'K', v as u8]),
                0x100..=0xffff => {
                    self.out.push(b'M');
                    self.out.extend((v as u16).to_le_bytes());
                }
                _ if i32::try_from(v).is_ok() => {
                    self.out.push(b'J');
                    self.out.extend((v as i32).to_le_bytes());
                }
                _ => {
                    self.out.extend([0x8a, 8]);
                    self.out.extend(v.to_le_bytes());
                }
            },
            P::Float(f) => {
                self.out.push(b'G');
                self.out.extend(f.to_be_bytes());
            }
            P::Str(text) => {
                let key = format!("str:{text}");
                if self.recall(&key) {
                    return;
                }
                match self.protocol4 && text.len() < 256 {
                    true => self.out.extend([0x8c, text.len() as u8]),
                    false => {
                        self.out.push(b'X');
                        self.out.extend((text.len() as u32).to_le_bytes());
                    }
                }
                self.out.extend(text.as_bytes());
                self.memoize(Some(key));
            }
            P::Global(module, name) => {
                let key = format!("global:{module}.{name}");
                if self.recall(&key) {
                    return;
                }
                match self.protocol4 {
                    true => {
                        self.save(&s(module));
                        self.save(&s(name));
                        self.out.push(0x93);
                    }
                    false => self.out.extend(format!("c{module}\n{name}\n").as_bytes()),
                }
                self.memoize(Some(key));
            }
            P::Tuple(items) if items.is_empty() => self.out.push(b')'),
            P::Tuple(items) => {
                if items.len() > 3 {
                    self.out.push(b'(');
                }
                items.iter().for_each(|i| self.save(i));
                self.out.push(match items.len() {
                    1 => 0x85,
                    2 => 0x86,
                    3 => 0x87,
                    _ => b't',
                });
                self.memoize(None);
            }
            P::List(items) => {
                self.out.push(b']');
                self.memoize(None);
                self.out.push(b'(');
                items.iter().for_each(|i| self.save(i));
                self.out.push(b'e');
            }
            P::Dict(items) => {
                self.out.push(b'}');
                self.memoize(None);
                self.set_items(items);
            }
            P::OrderedDict(items, metadata) => {
                self.save(&P::Global("collections", "OrderedDict"));
                self.out.extend([b')', b'R']);
                self.memoize(None);
                self.set_items(items);
                if *metadata {
                    let version = P::Dict(vec![(s("version"), P::Int(1))]);
                    let meta = P::OrderedDict(vec![(s(""), version)], false);
                    self.save(&P::Dict(vec![(s("_metadata"), meta)]));
                    self.out.push(b'b');
                }
            }
            P::Reduce(func, args) => {
                self.save(func);
                self.save(args);
                self.out.push(b'R');
                self.memoize(None);
            }
            P::PersId(pid) => {
                self.save(pid);
                self.out.push(b'Q');
            }
            P::Named(label, p) => {
                self.save(p);
                self.memo.insert(format!("label:{label}"), self.next - 1);
            }
            P::Ref(label) => assert!(self.recall(&format!("label:{label}")), "{label} is not named yet"),
        }
    }

    fn set_items(&mut self, items: &[(P, P)]) {
        match items.len() {
            0 => {}
            1 => {
                self.save(&items[0].0);
                self.save(&items[0].1);
                self.out.push(b's');
            }
            _ => {
                self.out.push(b'(');
                for (k, v) in items {
                    self.save(k);
                    self.save(v);
                }
                self.out.push(b'u');
            }
        }
    }
}

/// A storage: its torch class (`FloatStorage`), key and bytes.
struct Storage {
    class: &'static str,
    key: &'static str,
    bytes: Vec<u8>,
    itemsize: usize,
}

fn f32_storage(key: &'static str, values: &[f32]) -> Storage {
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Storage { class: "FloatStorage", key, bytes, itemsize: 4 }
}

/// `_rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())`; `legacy`
/// persistent ids carry a sixth item (the view metadata, None).
fn tensor(st: &Storage, offset: i64, size: &[i64], stride: &[i64], legacy: bool) -> P {
    let numel = (st.bytes.len() / st.itemsize) as i64;
    let mut pid = vec![s("storage"), P::Global("torch", st.class), s(st.key), s("cpu"), P::Int(numel)];
    if legacy {
        pid.push(P::None);
    }
    let ints = |v: &[i64]| P::Tuple(v.iter().map(|&i| P::Int(i)).collect());
    let hooks = P::Reduce(Box::new(P::Global("collections", "OrderedDict")), Box::new(P::Tuple(vec![])));
    let args = vec![
        P::PersId(Box::new(P::Tuple(pid))),
        P::Int(offset),
        ints(size),
        ints(stride),
        P::Bool(false),
        hooks,
    ];
    P::Reduce(Box::new(P::Global("torch._utils", "_rebuild_tensor_v2")), Box::new(P::Tuple(args)))
}

/// A zip checkpoint as `torch.save` lays it out: stored entries, 64-byte aligned.
fn zip_checkpoint(path: &Path, pickle: &[u8], storages: &[Storage]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .with_alignment(64);
    let mut entry = |name: &str, bytes: &[u8]| {
        zip.start_file(format!("archive/{name}"), opts).unwrap();
        zip.write_all(bytes).unwrap();
    };
    entry("data.pkl", pickle);
    entry("byteorder", b"little");
    for st in storages {
        entry(&format!("data/{}", st.key), &st.bytes);
    }
    entry("version", b"3\n");
    entry(".data/serialization_id", b"1234567890");
    zip.finish().unwrap();
}

/// A legacy (pre-1.6) checkpoint: magic, protocol and system-info pickles, the object, the
/// sorted storage keys, then each storage as its element count and bytes.
fn legacy_checkpoint(path: &Path, object: &P, storages: &[Storage]) {
    let mut out = vec![0x80, 2, 0x8a, 10, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, b'.'];
    out.extend(Pickler::dump(&P::Int(1001), false));
    let sizes = P::Dict(vec![(s("short"), P::Int(2)), (s("int"), P::Int(4)), (s("long"), P::Int(4))]);
    let info = vec![
        (s("protocol_version"), P::Int(1001)),
        (s("little_endian"), P::Bool(true)),
        (s("type_sizes"), sizes),
    ];
    out.extend(Pickler::dump(&P::Dict(info), false));
    out.extend(Pickler::dump(object, false));
    out.extend(Pickler::dump(&P::List(storages.iter().map(|st| s(st.key)).collect()), false));
    for st in storages {
        out.extend(((st.bytes.len() / st.itemsize) as u64).to_le_bytes());
        out.extend(&st.bytes);
    }
    std::fs::write(path, out).unwrap();
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wgrad-torch-{}-{name}.pt", std::process::id()))
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// A state dict of every layout: contiguous, a transposed view and an offset row of one
/// storage, f16/bf16/i64/bool storages, a scalar and a parameter, with `_metadata`.
fn state_dict(legacy: bool) -> (P, Vec<Storage>) {
    let weights: Vec<f32> = (0..6).map(|i| i as f32 * 0.5 - 1.0).collect();
    let half: Vec<u8> =
        [1.0f32, -2.5, 0.125].iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect();
    let bf16: Vec<u8> = [3.0f32, -0.5].iter().flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect();
    let long: Vec<u8> = [5_000_000_000i64, -7].iter().flat_map(|v| v.to_le_bytes()).collect();
    let storages = vec![
        f32_storage("0", &weights),
        Storage { class: "HalfStorage", key: "1", bytes: half, itemsize: 2 },
        Storage { class: "BFloat16Storage", key: "2", bytes: bf16, itemsize: 2 },
        Storage { class: "LongStorage", key: "3", bytes: long, itemsize: 8 },
        Storage { class: "BoolStorage", key: "4", bytes: vec![1, 0, 1], itemsize: 1 },
        f32_storage("5", &[0.75]),
    ];
    let t =
        |i: usize, offset, size: &[i64], stride: &[i64]| tensor(&storages[i], offset, size, stride, legacy);
    let param = P::Reduce(
        Box::new(P::Global("torch._utils", "_rebuild_parameter")),
        Box::new(P::Tuple(vec![
            t(0, 0, &[6], &[1]),
            P::Bool(true),
            P::Reduce(Box::new(P::Global("collections", "OrderedDict")), Box::new(P::Tuple(vec![]))),
        ])),
    );
    let items = vec![
        (s("fc.weight"), t(0, 0, &[2, 3], &[3, 1])),
        (s("transposed"), t(0, 0, &[3, 2], &[1, 3])),
        (s("row"), t(0, 3, &[3], &[1])),
        (s("half"), t(1, 0, &[3], &[1])),
        (s("bf16"), t(2, 0, &[2], &[1])),
        (s("long"), t(3, 0, &[2], &[1])),
        (s("mask"), t(4, 0, &[3], &[1])),
        (s("scalar"), t(5, 0, &[], &[])),
        (s("param"), param),
    ];
    (P::OrderedDict(items, true), storages)
}

/// Checks the tensors of [`state_dict`] (under `prefix`) on the current device.
fn check_state_dict(loaded: &wgrad_tensor::nn::IndexMap<String, Tensor>, prefix: &str) {
    let get = |k: &str| &loaded[&format!("{prefix}{k}")];
    assert_eq!(get("fc.weight").shape(), [2, 3]);
    assert_eq!(f32s(get("fc.weight")), [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]);
    assert_eq!(f32s(get("transposed")), [-1.0, 0.5, -0.5, 1.0, 0.0, 1.5]);
    assert_eq!(f32s(get("row")), [0.5, 1.0, 1.5]);
    assert_eq!(get("half").dtype(), DType::F16);
    assert_eq!(f32s(&get("half").cast(DType::F32)), [1.0, -2.5, 0.125]);
    assert_eq!(get("bf16").dtype(), DType::BF16);
    assert_eq!(f32s(&get("bf16").cast(DType::F32)), [3.0, -0.5]);
    assert_eq!(get("long").dtype(), DType::I64);
    assert_eq!(get("long").to_vec::<i64>().unwrap(), [5_000_000_000, -7]);
    assert_eq!(get("mask").to_vec::<bool>().unwrap(), [true, false, true]);
    assert_eq!((get("scalar").shape(), get("scalar").item::<f32>().unwrap()), (&[][..], 0.75));
    assert_eq!(f32s(get("param")).len(), 6);
}

#[test]
fn a_zip_state_dict_loads_every_dtype_and_layout() {
    for (i, device) in common::devices().into_iter().enumerate() {
        with_default_device(&device, || {
            let path = temp(&format!("zip-{i}"));
            let (object, storages) = state_dict(false);
            zip_checkpoint(&path, &Pickler::dump(&object, false), &storages);
            let loaded = torch_load(&path).unwrap();
            let keys: Vec<&str> = loaded.keys().map(String::as_str).collect();
            assert_eq!(
                keys,
                ["fc.weight", "transposed", "row", "half", "bf16", "long", "mask", "scalar", "param"]
            );
            check_state_dict(&loaded, "");
            assert_eq!(loaded["fc.weight"].device(), &device);
            std::fs::remove_file(&path).unwrap();
        });
    }
}

#[test]
fn protocol_4_and_legacy_checkpoints_load_the_same() {
    let (object, storages) = state_dict(false);
    let path = temp("protocol4");
    zip_checkpoint(&path, &Pickler::dump(&object, true), &storages);
    check_state_dict(&torch_load(&path).unwrap(), "");
    std::fs::remove_file(&path).unwrap();
    let (object, storages) = state_dict(true);
    let path = temp("legacy");
    legacy_checkpoint(&path, &object, &storages);
    check_state_dict(&torch_load(&path).unwrap(), "");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_nested_checkpoint_gives_dotted_names_and_its_other_values() {
    let (model, storages) = state_dict(false);
    let checkpoint = P::Dict(vec![
        (s("model"), model),
        (s("epoch"), P::Int(3)),
        (s("lr"), P::Float(0.5)),
        (s("name"), s("tiny")),
        (s("betas"), P::Tuple(vec![P::Float(0.9), P::Float(0.999)])),
        (s("history"), P::List(vec![P::Int(70000), P::None, P::Bool(true)])),
        (s("optimizer"), P::Dict(vec![(P::Int(0), P::Dict(vec![(s("step"), P::Int(-2))]))])),
    ]);
    let path = temp("nested");
    zip_checkpoint(&path, &Pickler::dump(&checkpoint, false), &storages);
    check_state_dict(&torch_load(&path).unwrap(), "model.");
    let TorchValue::Dict(items) = torch_load_object(&path).unwrap() else { panic!("not a dict") };
    let get = |key: &str| &items.iter().find(|(k, _)| matches!(k, TorchValue::Str(s) if s == key)).unwrap().1;
    assert!(matches!(get("epoch"), TorchValue::Int(3)));
    assert!(matches!(get("lr"), TorchValue::Float(f) if *f == 0.5));
    assert!(matches!(get("name"), TorchValue::Str(s) if s == "tiny"));
    assert!(matches!(get("betas"), TorchValue::Tuple(b) if b.len() == 2));
    let TorchValue::List(history) = get("history") else { panic!("history") };
    assert!(matches!(history[..], [TorchValue::Int(70000), TorchValue::None, TorchValue::Bool(true)]));
    let TorchValue::Dict(opt) = get("optimizer") else { panic!("optimizer") };
    assert!(matches!(opt[0].0, TorchValue::Int(0)));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_loaded_state_dict_fills_a_model() {
    let weights: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let storages = vec![f32_storage("0", &weights), f32_storage("1", &[-1.0, 1.0])];
    let object = P::OrderedDict(
        vec![
            (s("weight"), tensor(&storages[0], 0, &[2, 3], &[3, 1], false)),
            (s("bias"), tensor(&storages[1], 0, &[2], &[1], false)),
        ],
        true,
    );
    let path = temp("model");
    zip_checkpoint(&path, &Pickler::dump(&object, false), &storages);
    let mut linear = Linear::new(3, 2, true, 0).unwrap();
    linear.load_state_dict(&torch_load(&path).unwrap()).unwrap();
    let y = linear.forward(&Tensor::from_slice(&[1.0f32, 1.0, 1.0], &[1, 3]).unwrap()).unwrap();
    assert_eq!(f32s(&y), [2.0, 13.0]);
    std::fs::remove_file(&path).unwrap();
}

/// The checkpoint error of loading `path`, after checking that it names the file.
fn torch_error(path: &Path) -> TorchError {
    match torch_load(path) {
        Err(TensorError::Torch { path: p, source }) => {
            assert_eq!(p, path);
            source
        }
        other => panic!("{} gave {other:?}", path.display()),
    }
}

#[test]
fn hostile_and_damaged_files_are_typed_errors() {
    let storages = vec![f32_storage("0", &[1.0, 2.0])];
    let path = temp("bad");
    // a pickle that would call os.system: refused by name, nothing runs
    let evil = P::Reduce(Box::new(P::Global("os", "system")), Box::new(P::Tuple(vec![s("touch /tmp/x")])));
    zip_checkpoint(&path, &Pickler::dump(&evil, false), &storages);
    let err = torch_error(&path);
    assert!(
        matches!(&err, TorchError::Global { module, name, .. } if module == "os" && name == "system"),
        "{err}"
    );
    let message = torch_load(&path).unwrap_err().to_string();
    assert!(message.contains("os.system") && message.contains(&path.display().to_string()), "{message}");
    // an opcode checkpoints never use (EMPTY_SET)
    zip_checkpoint(&path, &[0x80, 2, 0x8f, b'.'], &storages);
    assert!(matches!(torch_error(&path), TorchError::Opcode { opcode: 0x8f, offset: 2 }));
    // a pickle cut short
    let good = Pickler::dump(
        &P::OrderedDict(vec![(s("w"), tensor(&storages[0], 0, &[2], &[1], false))], true),
        false,
    );
    zip_checkpoint(&path, &good[..good.len() - 10], &storages);
    assert!(matches!(torch_error(&path), TorchError::Truncated { .. }));
    // a tensor that reads past its storage, and one whose storage is missing
    let past = P::OrderedDict(vec![(s("w"), tensor(&storages[0], 1, &[2], &[1], false))], false);
    zip_checkpoint(&path, &Pickler::dump(&past, false), &storages);
    assert!(matches!(torch_error(&path), TorchError::Tensor { name, .. } if name == "w"));
    zip_checkpoint(&path, &good, &[]);
    assert!(matches!(torch_error(&path), TorchError::MissingEntry(_)));
    // a stack underflow
    zip_checkpoint(&path, &[0x80, 2, b'a', b'.'], &storages);
    assert!(matches!(torch_error(&path), TorchError::Pickle { .. }));
    // the zip archive cut in half, and a file that is no checkpoint at all
    zip_checkpoint(&path, &good, &storages);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(torch_error(&path), TorchError::Zip(_)));
    std::fs::write(&path, b"hello, not a checkpoint").unwrap();
    assert!(matches!(torch_error(&path), TorchError::Format));
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(torch_load(&path), Err(TensorError::File { .. })));
}

/// The real checkpoints `make_torch_fixtures.py` writes with PyTorch, if they are there.
fn fixture(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torch").join(name);
    if !path.exists() {
        eprintln!(
            "{} is missing: run make_torch_fixtures.py with PyTorch to test real files",
            path.display()
        );
    }
    path.exists().then_some(path)
}

/// `arange(n) * 0.25 - 1`, the values the fixture script gives its float tensors.
fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 * 0.25 - 1.0).collect()
}

#[test]
fn pytorch_written_state_dicts_load() {
    for name in ["state_dict.pt", "legacy.pt", "protocol4.pt"] {
        let Some(path) = fixture(name) else { continue };
        for device in common::devices() {
            with_default_device(&device, || {
                let sd = torch_load(&path).unwrap();
                assert_eq!(f32s(&sd["f32"]), ramp(6), "{name}");
                assert_eq!(sd["f32"].shape(), [2, 3]);
                assert_eq!(f32s(&sd["f16"].cast(DType::F32)), ramp(4));
                assert_eq!(f32s(&sd["bf16"].cast(DType::F32)), ramp(4));
                assert_eq!(
                    sd["i64"].to_vec::<i64>().unwrap(),
                    [0, 1_000_000_007, 2_000_000_014, 3_000_000_021]
                );
                assert_eq!(sd["i32"].to_vec::<i32>().unwrap(), [-2, -1, 0, 1]);
                assert_eq!(sd["u8"].to_vec::<u8>().unwrap(), [0, 60, 120, 180]);
                assert_eq!(sd["bool"].to_vec::<bool>().unwrap(), [true, false, true]);
                assert_eq!((sd["scalar"].shape(), sd["scalar"].item::<f32>().unwrap()), (&[][..], 3.5));
                let base = ramp(12);
                assert_eq!(f32s(&sd["base"]), base);
                let transposed: Vec<f32> = (0..12).map(|i| base[i % 3 * 4 + i / 3]).collect();
                assert_eq!(sd["transposed"].shape(), [4, 3]);
                assert_eq!(f32s(&sd["transposed"]), transposed, "{name}");
                assert_eq!(f32s(&sd["sliced"]), [base[4], base[6], base[8], base[10]], "{name}");
            });
        }
    }
}

#[test]
fn a_pytorch_written_checkpoint_loads() {
    let Some(path) = fixture("checkpoint.pt") else { return };
    let sd = torch_load(&path).unwrap();
    assert_eq!(f32s(&sd["model.0.weight"]), ramp(6));
    assert_eq!(f32s(&sd["model.0.bias"]), [0.5, -0.5]);
    assert_eq!(f32s(&sd["model.1.running_var"]), [1.0, 1.0]);
    assert_eq!(sd["model.1.num_batches_tracked"].to_vec::<i64>().unwrap(), [0]);
    assert_eq!(f32s(&sd["param"]), ramp(3));
    let TorchValue::Dict(items) = torch_load_object(&path).unwrap() else { panic!("not a dict") };
    let get = |key: &str| &items.iter().find(|(k, _)| matches!(k, TorchValue::Str(s) if s == key)).unwrap().1;
    assert!(matches!(get("epoch"), TorchValue::Int(3)));
    assert!(matches!(get("name"), TorchValue::Str(s) if s == "tiny"));
    assert!(matches!(get("steps"), TorchValue::List(l) if l.len() == 2));
}

#[test]
fn pytorch_written_unsigned_tensors_load() {
    let Some(path) = fixture("uint16.pt") else { return };
    let sd = torch_load(&path).unwrap();
    assert_eq!(sd["u16"].dtype(), DType::U16);
    assert_eq!(sd["u16"].cast(DType::I32).to_vec::<i32>().unwrap(), [0, 1000, 65535]);
}

#[test]
fn python2_strings_read_as_text() {
    // {'a': 5, 'bc': 7} as Python 2 pickled str keys: SHORT_BINSTRING and BINSTRING
    let pickle = b"\x80\x02}q\x00(U\x01aK\x05T\x02\x00\x00\x00bcK\x07u.";
    let path = temp("python2");
    zip_checkpoint(&path, pickle, &[]);
    let TorchValue::Dict(items) = torch_load_object(&path).unwrap() else { panic!("not a dict") };
    let keys: Vec<String> = items.iter().map(|(k, _)| format!("{k:?}")).collect();
    assert_eq!(keys, ["Str(\"a\")", "Str(\"bc\")"]);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_tensor_pickled_once_and_referenced_twice_is_one_tensor() {
    let storages = vec![f32_storage("0", &[1.0, 2.0])];
    let t = tensor(&storages[0], 0, &[2], &[1], false);
    let object =
        P::OrderedDict(vec![(s("embed"), P::Named("t", Box::new(t))), (s("head"), P::Ref("t"))], false);
    let path = temp("tied");
    zip_checkpoint(&path, &Pickler::dump(&object, false), &storages);
    let loaded = torch_load(&path).unwrap();
    assert_eq!(loaded["embed"].uop(), loaded["head"].uop());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn self_holding_and_exponentially_shared_containers_are_errors_not_hangs() {
    let path = temp("expand");
    // a list appended to itself
    zip_checkpoint(&path, b"\x80\x02]q\x00h\x00a.", &[]);
    assert!(matches!(torch_error(&path), TorchError::Pickle { what, .. } if what.contains("nest deeper")));
    // L0 = [], L(i) = [L(i-1), L(i-1)]: 2^40 values if expanded
    let mut pickle = b"\x80\x02]q\x00".to_vec();
    for i in 1..=40u8 {
        pickle.extend([b']', b'q', i, b'(', b'h', i - 1, b'h', i - 1, b'e']);
    }
    pickle.push(b'.');
    zip_checkpoint(&path, &pickle, &[]);
    assert!(
        matches!(torch_error(&path), TorchError::Pickle { what, .. } if what.contains("too many values"))
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn empty_tensors_load() {
    for device in common::devices() {
        with_default_device(&device, || {
            let storages = vec![f32_storage("0", &[])];
            let object =
                P::OrderedDict(vec![(s("empty"), tensor(&storages[0], 0, &[0, 3], &[3, 1], false))], false);
            let path = temp("empty");
            zip_checkpoint(&path, &Pickler::dump(&object, false), &storages);
            let loaded = torch_load(&path).unwrap();
            assert_eq!(loaded["empty"].shape(), [0, 3]);
            assert_eq!(f32s(&loaded["empty"]), [] as [f32; 0]);
            std::fs::remove_file(&path).unwrap();
        });
    }
}
