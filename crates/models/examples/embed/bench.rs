//! `embed --bench`: the MiniLM targets, measured as a user meets them.
//!
//! - Throughput: a batch of 128 texts of 128 tokens each (token ids on the host) to 128
//!   embeddings on the host: sentences per second, float32 and float16 (`--batch`, `--tokens`
//!   change the shape, for a quick run on a slow device).
//! - Latency: one 16-token sentence from its text (tokenize, run, read back), float32 and
//!   float16.
//!
//! Each figure is the median of `iters` timed runs after two warm-up runs (which compile the
//! kernels) and the GPU's clocks brought up; beside the batch's wall time, the GPU time of its kernels (device timestamps, one
//! more run with kernel timing on, after the GPU's clocks are brought up), so the rest is host
//! work and waiting, and on a GPU the host's time before the device started on a run (until the
//! submit that found it idle; the median). The forward is jitted (`JitEmbedder`: the second run captures its
//! kernels, the timed runs replay them); `JIT=0` measures it eager. The table gives the
//! kernels of one jitted forward.
//! `crates/models/bench/minilm_torch.py` measures PyTorch the same way.

use std::error::Error;
use std::path::Path;
use std::time::Instant;

use wgrad_engine::device::open_device;
use wgrad_engine::{counters, flags, reset_counters};
use wgrad_models::{JitEmbedder, SentenceEmbedder, TokenBatch};
use wgrad_tensor::{DType, Tensor};

/// A text whose word pieces, rotated per row and repeated, fill the throughput batch.
const PARAGRAPH: &str = "The history of the printing press begins in the fifteenth century, when Johannes \
    Gutenberg combined movable metal type, oil-based inks and a wooden screw press into a system that \
    could produce books far faster than scribes. Within fifty years, presses were operating in more \
    than two hundred cities across Europe, and millions of volumes had been printed. The consequences \
    were enormous: literacy spread, scientific results could be shared and checked, and pamphlets \
    reached audiences that no preacher could address in person.";

/// A sentence of 14 word pieces: 16 tokens with `[CLS]` and `[SEP]`.
const SHORT: &str = "The quick brown fox jumps over the lazy dog near the quiet river.";

/// `batch` rows of `len` tokens: `[CLS]`, a different rotation of the paragraph's word pieces
/// per row, `[SEP]`.
fn token_batch(model: &SentenceEmbedder, batch: usize, len: usize) -> Result<TokenBatch, Box<dyn Error>> {
    let encoded = model.tokenizer().encode_batch(&[PARAGRAPH])?;
    let ids = encoded.ids_of(0);
    let (cls, body, sep) = (ids[0], &ids[1..ids.len() - 1], ids[ids.len() - 1]);
    // the word pieces repeat when a row is longer than the paragraph
    if !(2..=512).contains(&len) {
        return Err(format!("--tokens {len}: between 2 and 512 (the model's positions)").into());
    }
    let mut out = TokenBatch {
        ids: vec![],
        type_ids: vec![0; batch * len],
        mask: vec![1; batch * len],
        batch,
        seq_len: len,
    };
    for row in 0..batch {
        out.ids.push(cls);
        out.ids.extend((0..len - 2).map(|j| body[(row + j) % body.len()]));
        out.ids.push(sep);
    }
    Ok(out)
}

/// A table cell of `ms` milliseconds, empty without a figure.
fn ms_cell(ms: Option<f64>) -> String {
    ms.map_or(String::new(), |ms| format!("{ms:.3} ms"))
}

/// The median of `times`.
fn median(mut times: Vec<f64>) -> Option<f64> {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied()
}

/// The medians of `iters` timings of `f` in milliseconds, after two untimed runs and with the
/// GPU's clocks brought up (the driver lowers them while the host compiles the kernels: the
/// float16 batch, a few ms of work after seconds of loading and compiling, read 4.3 or 9-18 ms
/// of wall time on an H100 for the same 4.1 ms of kernels): the wall time, and on a GPU the
/// host's time before the device started (`Backend::take_start`; a software adapter runs its
/// work on the host's cores, so it has no such figure).
fn median_ms(
    iters: usize,
    mut f: impl FnMut() -> Result<(), Box<dyn Error>>,
) -> Result<(f64, Option<f64>), Box<dyn Error>> {
    f()?;
    f()?;
    let backend = open_device(&Tensor::default_device()?)?;
    backend.raise_clocks()?;
    let (mut times, mut before_start) = (vec![], vec![]);
    let on_gpu = !backend.runs_on_host();
    for _ in 0..iters {
        backend.take_start();
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        let started = backend.take_start().filter(|&s| on_gpu && s >= start);
        before_start.extend(started.map(|s| (s - start).as_secs_f64() * 1e3));
    }
    Ok((median(times).unwrap_or(0.0), median(before_start)))
}

/// Reads `embeddings` back to the host as float32: the end of every timed run.
fn read_back(embeddings: Tensor) -> Result<(), Box<dyn Error>> {
    embeddings.cast(DType::F32).to_vec::<f32>()?;
    Ok(())
}

/// The kernel count of a jitted forward, or `eager` without a capture (`JIT=0`).
fn kernels(jit: &JitEmbedder) -> String {
    jit.kernels_per_forward().map_or_else(|| "eager".to_string(), |n| n.to_string())
}

/// Runs the benchmark on the model in `dir` with batches of `batch` x `tokens` and prints its
/// table.
pub fn run(dir: &Path, batch: usize, tokens: usize, iters: usize) -> Result<(), Box<dyn Error>> {
    let mut rows = vec![];
    for (dtype, name) in [(DType::F32, "f32"), (DType::F16, "f16")] {
        let model = SentenceEmbedder::load(dir, dtype)?;
        let ids = token_batch(&model, batch, tokens)?;
        let mut jit = JitEmbedder::new(&model);
        let (ms, before_start) = median_ms(iters, || read_back(jit.embed_tokens(&ids)?))?;
        let per_s = batch as f64 / ms * 1e3;
        // the kernel timing runs at the clocks a busy GPU keeps (the driver lowers them while
        // the host compiles, and DEBUG=2's printing slows the runs before it)
        open_device(&Tensor::default_device()?)?.raise_clocks()?;
        flags::set_timing(true);
        reset_counters();
        read_back(jit.embed_tokens(&ids)?)?;
        let kernel_ms = counters().kernel_time.as_secs_f64() * 1e3;
        flags::set_timing(false);
        rows.push(format!(
            "| batch {batch} x {tokens} tokens, ids to embeddings | {name} | {ms:.2} ms | {kernel_ms:.2} ms | {} | {per_s:.0} sentences/s | {} |",
            ms_cell(before_start),
            kernels(&jit)
        ));
        let short = model.tokenizer().encode_batch(&[SHORT])?.seq_len;
        let mut jit = JitEmbedder::new(&model);
        let (ms, before_start) = median_ms(iters, || read_back(jit.embed(&[SHORT])?))?;
        rows.push(format!(
            "| one {short}-token sentence, text to embedding | {name} | {ms:.3} ms | | {} | {:.0} sentences/s | {} |",
            ms_cell(before_start),
            1e3 / ms,
            kernels(&jit)
        ));
        eprintln!("{name} done");
    }
    println!("MiniLM-L6 (all-MiniLM-L6-v2) on {}, median of {iters} runs", Tensor::default_device()?);
    println!(
        "| workload | dtype | time | kernel time | host before the device starts | throughput | kernels per forward |\n| --- | --- | --- | --- | --- | --- | --- |"
    );
    rows.iter().for_each(|r| println!("{r}"));
    Ok(())
}
