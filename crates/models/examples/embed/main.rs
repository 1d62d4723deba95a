//! `cargo run --release --example embed -- [--model DIR] [--f16] "sentence" ...`: sentence
//! embeddings with all-MiniLM-L6-v2 (or another BERT sentence-transformers directory).
//!
//! Modes:
//! - `embed [--json] SENTENCE...`: each embedding's first values and the cosine similarities of
//!   the sentences; with `--json`, only the full embeddings as a JSON array of arrays on stdout.
//! - `embed search FILE [--top K] [QUERY...]`: embeds FILE's non-empty lines once, then prints
//!   the K lines closest to each query (queries from the arguments, else one per stdin line).
//! - `embed --bench [--iters N] [--batch N] [--tokens N]`: sentences/s for a batch of 128 x 128
//!   tokens in float32 and float16, and the latency of one 16-token sentence from text (see
//!   `bench.rs`).
//!
//! The model directory defaults to where `cargo xtask setup --models` puts it.
#![allow(clippy::print_stdout)] // an example's job is to print

mod bench;

use std::error::Error;
use std::io::BufRead;
use std::path::PathBuf;

use wgrad_models::{SentenceEmbedder, cosine_similarity, default_model_dir};
use wgrad_tensor::DType;

const USAGE: &str = "usage: embed [--model DIR] [--f16] [--json] SENTENCE...
       embed [--model DIR] [--f16] search FILE [--top K] [QUERY...]
       embed [--model DIR] --bench [--iters N] [--batch N] [--tokens N]";

/// Texts embedded per batch.
const BATCH: usize = 32;

/// The command line.
struct Args {
    model: Option<PathBuf>,
    dtype: DType,
    json: bool,
    bench: bool,
    iters: usize,
    /// The bench's batch shape.
    batch: usize,
    tokens: usize,
    top: usize,
    /// `search`'s file of lines.
    search: Option<PathBuf>,
    /// Sentences to embed, or search queries.
    texts: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        model: None,
        dtype: DType::F32,
        json: false,
        bench: false,
        iters: 20,
        batch: 128,
        tokens: 128,
        top: 5,
        search: None,
        texts: vec![],
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        let number = |v: String| v.parse::<usize>().map_err(|_| format!("{arg}: not a number: {v}\n{USAGE}"));
        match arg.as_str() {
            "--model" => args.model = Some(PathBuf::from(value()?)),
            "--f16" => args.dtype = DType::F16,
            "--json" => args.json = true,
            "--bench" => args.bench = true,
            "--iters" => args.iters = number(value()?)?.max(1),
            "--batch" => args.batch = number(value()?)?.max(1),
            "--tokens" => args.tokens = number(value()?)?,
            "--top" => args.top = number(value()?)?,
            "search" if args.search.is_none() && args.texts.is_empty() => {
                args.search = Some(PathBuf::from(value()?))
            }
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}\n{USAGE}")),
            _ => args.texts.push(arg),
        }
    }
    if !args.bench && args.search.is_none() && args.texts.is_empty() {
        return Err(format!("no sentences given\n{USAGE}"));
    }
    Ok(args)
}

/// The model directory: `--model`, else the default, which must exist.
fn model_dir(args: &Args) -> Result<PathBuf, String> {
    if let Some(dir) = &args.model {
        return Ok(dir.clone());
    }
    let dir = default_model_dir().ok_or("no home directory to find the model in; pass --model DIR")?;
    match dir.is_dir() {
        true => Ok(dir),
        false => Err(format!(
            "{} does not exist: run `cargo xtask setup --models`, or pass --model DIR",
            dir.display()
        )),
    }
}

/// Each embedding's first values and the matrix of cosine similarities.
fn print_embeddings(texts: &[String], vectors: &[Vec<f32>]) {
    for (i, (text, v)) in texts.iter().zip(vectors).enumerate() {
        let head: Vec<String> = v.iter().take(6).map(|x| format!("{x:+.4}")).collect();
        println!("[{i}] {text:?}\n    ({} values) {} ...", v.len(), head.join(" "));
    }
    if texts.len() > 1 {
        println!("cosine similarities:");
        for (i, a) in vectors.iter().enumerate() {
            let row: Vec<String> =
                vectors.iter().map(|b| format!("{:6.3}", cosine_similarity(a, b))).collect();
            println!("[{i}] {}", row.join(" "));
        }
    }
}

/// Embeds the lines of `file` once, then answers each query with the `top` closest lines.
fn search(
    model: &SentenceEmbedder,
    file: &PathBuf,
    top: usize,
    queries: &[String],
) -> Result<(), Box<dyn Error>> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let corpus = model.embed_all(&lines, BATCH)?;
    eprintln!("embedded {} lines of {}", lines.len(), file.display());
    let answer = |query: &str| -> Result<(), Box<dyn Error>> {
        let q = model.embed_all(&[query], 1)?.remove(0);
        let mut scored: Vec<(f32, &str)> =
            corpus.iter().map(|v| cosine_similarity(&q, v)).zip(lines.iter().copied()).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        println!("query: {query:?}");
        scored.iter().take(top).for_each(|(score, line)| println!("  {score:.4}  {line}"));
        Ok(())
    };
    match queries.is_empty() {
        false => queries.iter().try_for_each(|q| answer(q)),
        true => std::io::stdin().lock().lines().try_for_each(|q| match q?.trim() {
            "" => Ok(()),
            q => answer(q),
        }),
    }
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let dir = model_dir(&args)?;
    if args.bench {
        return bench::run(&dir, args.batch, args.tokens, args.iters);
    }
    let model = SentenceEmbedder::load(&dir, args.dtype)?;
    if let Some(file) = &args.search {
        return search(&model, file, args.top, &args.texts);
    }
    let texts: Vec<&str> = args.texts.iter().map(String::as_str).collect();
    let vectors = model.embed_all(&texts, BATCH)?;
    match args.json {
        true => println!("{}", serde_json::to_string(&vectors)?),
        false => print_embeddings(&args.texts, &vectors),
    }
    Ok(())
}
