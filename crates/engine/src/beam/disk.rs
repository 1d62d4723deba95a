//! BEAM's persistent cache: the opts a search chose for each kernel, in an SQLite file that
//! outlives the process (tinygrad's `diskcache` of `beam_search`).
//!
//! Invariants:
//! - The file is `WGRAD_CACHE_DB`, else `wgrad/cache.db` in the user's cache directory
//!   (`$XDG_CACHE_HOME`, else `~/Library/Caches` on macOS and `~/.cache` elsewhere);
//!   `CACHELEVEL=0` turns it off.
//! - A key ([`cache_key`]) names everything the choice depends on: wgrad's version, the
//!   search's revision ([`SEARCH_REVISION`]), the beam width, the device and driver
//!   ([`Backend::fingerprint`]), the codegen target and the kernel AST printed in full (a
//!   stable text, never a Rust `Hash`). Rows are found by a 64-bit FNV-1a hash of the key and
//!   checked against the whole key, so a collision is a miss, never a wrong hit.
//! - Several processes may share the file: SQLite locks it (WAL journal, writers wait up to
//!   [`BUSY_TIMEOUT`]); a row is written whole or not at all.
//! - A file that is not an SQLite database, or that another program (or another schema
//!   version) owns, is never written: [`BeamCache::open`] refuses it, and the engine warns
//!   once and searches as if there were no cache.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use wgrad_codegen::Opt;
use wgrad_ops::UOp;

use crate::{Backend, EngineError, flags};

/// The environment variable naming the cache file.
pub const CACHE_DB_ENV: &str = "WGRAD_CACHE_DB";

/// How long a process waits for another one's write to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// `PRAGMA application_id` of a wgrad cache: "wgrd".
const APPLICATION_ID: i32 = 0x7767_7264;

/// `PRAGMA user_version`: the layout of the tables below.
const SCHEMA_VERSION: i32 = 1;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS beam (
    hash INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    opts TEXT NOT NULL
)";

/// The revision of the search itself: raised when a search of the same kernel may choose
/// better opts than before (2: the refinement of `refine.rs`), so older rows are not hits.
pub const SEARCH_REVISION: u32 = 2;

/// The key of `ast`'s BEAM result on `backend` with `width`: wgrad's version and the search's
/// revision, the width, the device's fingerprint, the target and the AST's listing, one per line.
pub fn cache_key(ast: &UOp, backend: &dyn Backend, width: usize) -> String {
    format!(
        "wgrad {} search {SEARCH_REVISION} BEAM={width}\n{}\n{:?}\n{}",
        env!("CARGO_PKG_VERSION"),
        backend.fingerprint(),
        backend.target(),
        ast.listing()
    )
}

/// 64-bit FNV-1a of `bytes`: a hash fixed by its definition, the same in every build.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// An open cache file.
pub struct BeamCache {
    path: PathBuf,
    conn: Mutex<Connection>,
}

fn refused(path: &Path, reason: impl ToString) -> EngineError {
    EngineError::Cache { path: path.to_owned(), reason: reason.to_string() }
}

impl BeamCache {
    /// Opens (creating it when missing, with its directory) the cache at `path`; refuses a
    /// file that is not an SQLite database or that belongs to another program or schema.
    pub fn open(path: &Path) -> Result<BeamCache, EngineError> {
        let err = |e: rusqlite::Error| refused(path, e);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| refused(path, e))?;
        }
        let mut conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        let owner = |conn: &Connection| -> rusqlite::Result<(i32, i32, i64)> {
            let id = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
            let version = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
            let tables = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
            Ok((id, version, tables))
        };
        let (id, _, tables) = owner(&conn).map_err(err)?;
        if id == 0 && tables == 0 {
            // a new file: claim it (unless another process did in the meantime)
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(err)?;
            if owner(&tx).map_err(err)? == (0, 0, 0) {
                tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(err)?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(err)?;
                tx.execute_batch(SCHEMA).map_err(err)?;
            }
            tx.commit().map_err(err)?;
        }
        match owner(&conn).map_err(err)? {
            (APPLICATION_ID, SCHEMA_VERSION, _) => {}
            (APPLICATION_ID, v, _) => {
                return Err(refused(path, format!("schema version {v}; this wgrad reads {SCHEMA_VERSION}")));
            }
            (id, _, _) => return Err(refused(path, format!("another program's database (id {id:#x})"))),
        }
        // WAL lets readers go on while one process writes; a file system without shared
        // memory keeps the rollback journal, which is just as safe
        let _ = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0));
        Ok(BeamCache { path: path.to_owned(), conn: Mutex::new(conn) })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The opts stored under `key`, if any; an unreadable row is an error.
    pub fn get(&self, key: &str) -> Result<Option<Vec<Opt>>, EngineError> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let err = |e: rusqlite::Error| refused(&self.path, e);
        let mut stmt = conn.prepare_cached("SELECT key, opts FROM beam WHERE hash = ?1").map_err(err)?;
        let row: Option<(String, String)> = stmt
            .query_row(params![fnv1a(key.as_bytes()) as i64], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(err)?;
        let Some((_, opts)) = row.filter(|(stored, _)| stored == key) else { return Ok(None) };
        let parsed: Result<Vec<Opt>, _> = opts.lines().map(str::parse).collect();
        parsed.map(Some).map_err(|e| refused(&self.path, format!("an unreadable entry: {e}")))
    }

    /// Stores `opts` under `key`, replacing what was there.
    pub fn put(&self, key: &str, opts: &[Opt]) -> Result<(), EngineError> {
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let text: Vec<String> = opts.iter().map(ToString::to_string).collect();
        conn.prepare_cached("INSERT OR REPLACE INTO beam (hash, key, opts) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![fnv1a(key.as_bytes()) as i64, key, text.join("\n")]))
            .map_err(|e| refused(&self.path, e))?;
        Ok(())
    }
}

/// Where the cache lives unless told otherwise: `WGRAD_CACHE_DB`, else the user's cache
/// directory; `None` when neither is known.
pub fn default_cache_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(CACHE_DB_ENV) {
        return Some(PathBuf::from(path));
    }
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            if cfg!(target_os = "macos") { home.join("Library/Caches") } else { home.join(".cache") }
        }
    };
    Some(base.join("wgrad").join("cache.db"))
}

/// The process's cache: `None` until first used, then the file opened (or `None` when it is
/// off or refused).
static SHARED: Mutex<Option<Option<Arc<BeamCache>>>> = Mutex::new(None);

/// Points the process's cache at `path`, opened now (with a warning, and no cache, when it
/// is refused); `None` goes back to [`default_cache_path`], opened on the next search.
pub fn set_cache_path(path: Option<PathBuf>) {
    let opened = path.map(|p| open_or_warn(&p));
    *SHARED.lock().unwrap_or_else(PoisonError::into_inner) = opened;
}

/// `path` opened, or `None` after a one-line warning.
fn open_or_warn(path: &Path) -> Option<Arc<BeamCache>> {
    match BeamCache::open(path) {
        Ok(cache) => Some(Arc::new(cache)),
        Err(e) => {
            eprintln!("wgrad: {e}; BEAM searches without it");
            None
        }
    }
}

/// The cache searches use: `None` when `CACHELEVEL=0`, when there is no cache directory,
/// or when the file was refused (warned once).
pub fn shared_cache() -> Option<Arc<BeamCache>> {
    if flags::cachelevel() == 0 {
        return None;
    }
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    shared.get_or_insert_with(|| default_cache_path().and_then(|p| open_or_warn(&p))).clone()
}
