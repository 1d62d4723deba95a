//! `WGRAD_WGSL_DIR`: each generated kernel's WGSL in a folder, to read and to edit. The first
//! time a kernel compiles, its source goes to `<dir>/<kernel>_<hash>.wgsl` (the hash is of the
//! generated source); where that file exists already, its contents compile instead. So a run
//! writes the kernels, an edited file takes the place of its kernel in the next runs, and a
//! kernel whose generated source changes gets a new file rather than a stale edit. A debugging
//! and tuning aid: an edited kernel must keep its bindings and entry point, and its results
//! are the editor's responsibility.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use crate::RuntimeError;

/// Environment variable naming the folder of kernels' WGSL (created if missing).
pub const WGSL_DIR_ENV: &str = "WGRAD_WGSL_DIR";

/// The folder of [`WGSL_DIR_ENV`], when set and not empty.
pub(crate) fn from_env() -> Option<PathBuf> {
    std::env::var_os(WGSL_DIR_ENV).filter(|d| !d.is_empty()).map(PathBuf::from)
}

/// The file of `kernel`'s generated `source` in `dir`.
fn file_of(dir: &Path, kernel: &str, source: &str) -> PathBuf {
    let mut hasher = DefaultHasher::new();
    source.hash(&mut hasher);
    dir.join(format!("{kernel}_{:016x}.wgsl", hasher.finish()))
}

/// The source to compile for `kernel`: the file's contents where it exists, else `source`
/// after writing it there.
pub(crate) fn exchange(dir: &Path, kernel: &str, source: &str) -> Result<String, RuntimeError> {
    let file = file_of(dir, kernel, source);
    let io = |e: std::io::Error| RuntimeError::WgslDir { path: file.clone(), message: e.to_string() };
    match std::fs::read_to_string(&file) {
        Ok(edited) => Ok(edited),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(io)?;
            std::fs::write(&file, source).map_err(io)?;
            Ok(source.to_string())
        }
        Err(e) => Err(io(e)),
    }
}
