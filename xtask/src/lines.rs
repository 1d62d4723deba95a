//! `cargo xtask lines`: lines of library Rust per crate, without tests, comments or blanks.

use std::fs;
use std::path::Path;

/// Counted lines of one source file: stops at the first top-level `#[cfg(test)]`.
fn count_file(text: &str) -> usize {
    text.lines()
        .take_while(|l| !l.starts_with("#[cfg(test)]"))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

fn count_dir(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                count_dir(&path)
            } else if path.extension().is_some_and(|x| x == "rs") {
                fs::read_to_string(&path).map_or(0, |t| count_file(&t))
            } else {
                0
            }
        })
        .sum()
}

/// Prints one row per crate and the total.
pub fn run() -> bool {
    let crates = crate::workspace_root().join("crates");
    let mut names: Vec<String> = fs::read_dir(&crates)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("src").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut total = 0;
    for name in &names {
        let n = count_dir(&crates.join(name).join("src"));
        total += n;
        println!("{:<22} {n:>7}", format!("wgrad-{name}"));
    }
    println!("{:<22} {total:>7}", "total");
    true
}
