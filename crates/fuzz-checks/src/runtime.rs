//! Shared set-up for the targets that need a store or an async runtime: built once per
//! process, because a fuzzer calls a target millions of times.

use std::sync::{Arc, Mutex, OnceLock};

use catalogue::{Extensions, Filter, SessionPolicy, StartMode};
use server_full::{HooksServer, Settings};
use store::{SqliteStore, StoreHandle};
use tempfile::TempDir;

/// The process's multi-threaded tokio runtime (two workers, like a small daemon).
pub fn tokio() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// A temporary SQLite store, removed when dropped.
#[derive(Debug)]
pub struct TempStore {
    /// The store.
    pub handle: StoreHandle,
    /// The services a tool handler gets (the store and the tools crates' settings).
    pub extensions: Arc<Extensions>,
    _dir: TempDir,
}

impl TempStore {
    /// A new, empty store in a new temporary directory.
    pub fn new() -> TempStore {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = SqliteStore::create(dir.path().join("state.db")).expect("a new SQLite store");
        let handle = StoreHandle(Arc::new(store));
        let extensions = Arc::new(Settings::extensions(handle.clone()));
        TempStore {
            handle,
            extensions,
            _dir: dir,
        }
    }
}

impl Default for TempStore {
    fn default() -> Self {
        TempStore::new()
    }
}

/// Calls made on the shared store before it is replaced by an empty one, so that a long run
/// does not grow one database without bound.
const CALLS_PER_STORE: u32 = 5_000;

/// A store shared by the inputs of one process, replaced by an empty one every few thousand
/// uses.
pub fn shared_store() -> Arc<TempStore> {
    static STORE: OnceLock<Mutex<(Arc<TempStore>, u32)>> = OnceLock::new();
    let cell = STORE.get_or_init(|| Mutex::new((Arc::new(TempStore::new()), 0)));
    let mut guard = cell.lock().unwrap_or_else(|p| p.into_inner());
    guard.1 += 1;
    if guard.1 > CALLS_PER_STORE {
        *guard = (Arc::new(TempStore::new()), 1);
    }
    guard.0.clone()
}

/// A full server over `store`, as a stdio session builds it (every tool, eager start).
pub fn server(store: &TempStore, session: SessionPolicy) -> HooksServer {
    let settings = Settings {
        filter: Filter::default(),
        session,
        mode: StartMode::default(),
        extensions: store.extensions.clone(),
    };
    let (server, _warnings) = HooksServer::new(settings).expect("the registered tools are valid");
    server
}

/// Lines of `data`, as a line reader sees them: split on `\n`, without the newline and one
/// trailing `\r`. The last piece counts when it is not empty.
pub fn lines(data: &[u8]) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    if out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out.into_iter()
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect()
}
