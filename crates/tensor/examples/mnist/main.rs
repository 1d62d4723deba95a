//! `cargo run --release --example mnist`: trains tinygrad's beautiful_mnist CNN on the shipped
//! 10,000-digit MNIST sample (or full MNIST with `--data DIR`) and reports test accuracy on
//! the held-out digits.
//!
//! Flags: `--steps N` (default 180), `--batch N` (64), `--lr F` (Adam's first learning rate,
//! falling linearly to zero over the run; 2e-3), `--data DIR`,
//! `--seed N` (0).
//! The training digits are uploaded once; each step's batch is sampled on the host (seeded),
//! only its indices are uploaded, and the step picks the digits on the device (as tinygrad's
//! beautiful_mnist does); a step is one backward pass and one Adam update, jitted (`JIT=0`
//! runs every step eagerly). It prints the device, a progress bar with the loss and the time left
//! (on stderr), and, when the kernels run on the CPU (lavapipe or the interpreter), how long
//! the run will take once the third step (the first replay) has shown the pace. The last line
//! gives the pace from the third step on too: the first two compile the kernels (and a cold
//! driver cache makes that vary from run to run), so jitted and eager runs compare there.
#![allow(clippy::print_stdout)] // an example's job is to print

mod model;

use std::cell::RefCell;
use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use wgrad_tensor::datasets::mnist::{Digits, Mnist};
use wgrad_tensor::optim::Optimizer;
use wgrad_tensor::{DeviceName, Tensor};

use model::{Model, jit_picking_train_step, optimizer};

/// The command line.
struct Args {
    steps: usize,
    batch: usize,
    data: Option<PathBuf>,
    seed: u64,
    lr: f64,
}

const USAGE: &str = "usage: mnist [--steps N] [--batch N] [--lr F] [--data DIR] [--seed N]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args { steps: 180, batch: 64, data: None, seed: 0, lr: 2e-3 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        let number = |v: String| v.parse::<u64>().map_err(|_| format!("{flag}: not a number: {v}\n{USAGE}"));
        match flag.as_str() {
            "--steps" => args.steps = number(value()?)? as usize,
            "--batch" => args.batch = number(value()?)? as usize,
            "--seed" => args.seed = number(value()?)?,
            "--lr" => {
                let v = value()?;
                args.lr = v.parse().map_err(|_| format!("--lr: not a number: {v}\n{USAGE}"))?;
            }
            "--data" => args.data = Some(PathBuf::from(value()?)),
            _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
        }
    }
    if args.batch < 2 {
        return Err(format!("--batch must be at least 2 (batch norm needs two values)\n{USAGE}"));
    }
    Ok(args)
}

/// SplitMix64: a seeded stream of training digits to sample.
struct Sampler(u64);

impl Sampler {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// Percent of `digits` the model labels right, `batch` digits at a time.
fn accuracy(model: &Model, digits: &Digits, batch: usize) -> Result<f64, Box<dyn Error>> {
    let mut right = 0;
    for start in (0..digits.len()).step_by(batch) {
        let picks: Vec<usize> = (start..(start + batch).min(digits.len())).collect();
        let (x, y) = digits.batch(&picks)?;
        right += model.correct(&x, &y)?;
    }
    Ok(100.0 * right as f64 / digits.len().max(1) as f64)
}

/// The device's name, and whether it runs kernels on the host's CPU (the interpreter, or a
/// software Vulkan driver such as lavapipe: a device that wants few threads in flight).
fn describe(device: &DeviceName) -> Result<(String, bool), Box<dyn Error>> {
    let backend = wgrad_engine::device::open_device(device)?;
    Ok((backend.name(), backend.target().parallelism <= CPU_PARALLELISM))
}

/// A device wanting at most this many threads in flight is a CPU (lavapipe wants 256).
const CPU_PARALLELISM: usize = 1 << 10;

/// `secs` as `1 min 20 s` or `42 s`.
fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 60 { format!("{} min {} s", s / 60, s % 60) } else { format!("{s} s") }
}

/// The progress bar of `steps` training steps on stderr (hidden when stderr is not a
/// terminal; the caller then prints a line now and then).
fn progress(steps: usize) -> ProgressBar {
    let bar = ProgressBar::new(steps as u64);
    let style =
        ProgressStyle::with_template("{bar:30.cyan/blue} step {pos}/{len}  {msg}  {elapsed} (ETA {eta})")
            .expect("a valid template")
            .progress_chars("=> ");
    bar.set_style(style);
    bar
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let start = Instant::now();
    let data = match &args.data {
        Some(dir) => Mnist::load(dir)?,
        None => Mnist::sample()?,
    };
    let device = Tensor::default_device()?;
    let (name, on_cpu) = describe(&device)?;
    println!("device: {name}");
    if device == DeviceName::Cpu && std::env::var_os("WGRAD_DEVICE").is_none() {
        println!(
            "note: no GPU adapter, so this runs on the CPU interpreter and takes hours; \
             `cargo xtask setup` installs the lavapipe software Vulkan driver (minutes)"
        );
    }
    println!(
        "{} training and {} test digits; {} steps of {}, Adam, learning rate {} falling to 0",
        data.train.len(),
        data.test.len(),
        args.steps,
        args.batch,
        args.lr
    );
    let model = Model::new(args.seed)?;
    let opt = RefCell::new(optimizer(&model, args.lr)?);
    let (images, labels) = data.train.tensors()?;
    Tensor::realize_all(&[&images, &labels])?;
    let mut train_step = jit_picking_train_step(&model, &opt, &images, &labels);
    let mut sampler = Sampler(args.seed);
    let bar = progress(args.steps);
    let every = (args.steps / 10).max(1);
    let train_start = Instant::now();
    // the first step compiles the kernels and the second captures them: the pace after them
    let mut steady_start = None;
    for step in 1..=args.steps {
        let step_start = Instant::now();
        if step == 3 {
            steady_start = Some(step_start);
        }
        // the learning rate falls linearly to zero over the run
        opt.borrow().set_lr(args.lr * (1.0 - (step - 1) as f64 / args.steps as f64))?;
        let picks: Vec<i32> = (0..args.batch).map(|_| sampler.below(data.train.len()) as i32).collect();
        let picks = Tensor::from_vec(picks, &[args.batch])?;
        let loss = train_step.call(&[&picks])?[0].item::<f32>()?;
        let per_s = (step * args.batch) as f64 / train_start.elapsed().as_secs_f64();
        bar.set_message(format!("loss {loss:.3}  {per_s:.0} digits/s"));
        bar.inc(1);
        // the first step compiles the kernels, the second captures them; the third shows the pace
        if on_cpu && step == 3 && args.steps > 3 {
            let secs = step_start.elapsed().as_secs_f64();
            let evaluation = secs * data.test.len() as f64 / (3 * args.batch) as f64;
            let note = format!(
                "no GPU: {name} runs the kernels on this machine's CPU; at {secs:.2} s a step, \
                 about {} more to train and {} to evaluate",
                duration(secs * (args.steps - 3) as f64),
                duration(evaluation)
            );
            // a hidden bar (stderr not a terminal) prints nothing, not even its println
            if bar.is_hidden() { println!("{note}") } else { bar.println(note) }
        }
        if bar.is_hidden() && (step % every == 0 || step == args.steps) {
            println!("step {step}/{}  loss {loss:.3}  {per_s:.0} digits/s", args.steps);
        }
    }
    bar.finish_and_clear();
    let train_s = train_start.elapsed().as_secs_f64();
    let steady = steady_start.map_or(String::new(), |s| {
        let ms = 1e3 * s.elapsed().as_secs_f64() / (args.steps - 2) as f64;
        format!(", {ms:.2} ms a step from the third")
    });
    let acc = accuracy(&model, &data.test, 500)?;
    println!(
        "test accuracy {acc:.2}% on {} digits; {:.1} s in all ({:.1} s training, {:.0} ms a step{steady})",
        data.test.len(),
        start.elapsed().as_secs_f64(),
        train_s,
        1e3 * train_s / args.steps.max(1) as f64
    );
    Ok(())
}
