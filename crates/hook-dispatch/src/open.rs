//! Opening the store from the environment, and the clock, for the command hook (and the
//! binary's operator subcommands); handing a PostgreSQL store over to the full binary.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use crate::payload::Event;

/// Opens the store the environment selects for one command and its exit
/// (`store::open_from_env_once`: a PostgreSQL server that refuses is reported at once).
/// Without `create`, a missing store is [`store::StoreError::Missing`] (the hook treats that
/// as "nothing to deliver").
pub fn store_from_env(
    create: bool,
) -> Result<(store::StoreHandle, store::Opened), store::StoreError> {
    store::open_from_env_once(create)
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Overrides where the full binary is (default: `hooks-mcp-full` beside this executable), as
/// for the stdio front end.
pub use protocol_lite::setting::FULL_BIN_ENV;

/// Set (to `1`) by a hook that hands its event over to the full binary: the full binary's
/// hook then neither asks the local daemon again nor repeats the setting warnings the first
/// process printed (internal; condition scripts never see it).
pub const HANDED_OVER_ENV: &str = "HOOKS_MCP_HOOK_HANDED_OVER";

/// Why the command hook could not open the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The store refused (or is missing: [`store::StoreError::Missing`]).
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The store is PostgreSQL and the full binary, which opens it, could not be started.
    #[error(
        "the store is PostgreSQL, which this binary hands over to `{}`, and that failed ({source}); \
         install hooks-mcp-full beside it, or set {FULL_BIN_ENV} to its path",
        path.display()
    )]
    HandOver {
        /// The full binary tried.
        path: PathBuf,
        /// Why it could not be started.
        source: std::io::Error,
    },
}

/// How a command hook opens the store itself (when no local daemon answered for it): given
/// the event and the payload's text as read on stdin. Each binary passes its own function, so
/// an optimised build links only the backends that function reaches.
pub type Opener = fn(Event, &str) -> Result<store::StoreHandle, OpenError>;

/// Opens either backend in this process, never creating the store: the full binary's hook.
/// A PostgreSQL server that refuses is reported at once ([`store::open_from_env_once`]):
/// the agent waits on the hook, and the hook gives way (it answers nothing and exits 0).
///
/// # Errors
/// [`OpenError::Store`], as [`store::open_from_env_once`].
pub fn any_backend(_event: Event, _payload: &str) -> Result<store::StoreHandle, OpenError> {
    Ok(store::open_from_env_once(false)?.0)
}

/// Opens an SQLite store in this process; a PostgreSQL store is handed over to the full
/// binary ([`hand_over`]), so this binary links no PostgreSQL client and starts faster: the
/// hook binary `init` registers.
///
/// # Errors
/// [`OpenError::Store`] as [`store::open_sqlite_from_env`]; [`OpenError::HandOver`] when the
/// full binary cannot be started (on success this process has become it).
pub fn sqlite_or_hand_over(event: Event, payload: &str) -> Result<store::StoreHandle, OpenError> {
    match store::open_sqlite_from_env(false)? {
        Some((store, _)) => Ok(store),
        None => Err(hand_over(event, payload)),
    }
}

/// Replaces this process with the full binary's hook (`hooks-mcp-full hook <Event>`, same pid,
/// same stdout and stderr) with `payload` on its stdin and [`HANDED_OVER_ENV`] set. Returns
/// only when that fails, with why.
pub fn hand_over(event: Event, payload: &str) -> OpenError {
    let path = full_binary();
    let stdin = match crate::stdin_file::payload_file(payload) {
        Ok(file) => file,
        Err(source) => return OpenError::HandOver { path, source },
    };
    let source = Command::new(&path)
        .args(["hook", event.name()])
        .env(HANDED_OVER_ENV, "1")
        .stdin(stdin)
        .exec();
    OpenError::HandOver { path, source }
}

/// Whether this process is the full binary's hook that another hook handed its event to.
pub fn handed_over() -> bool {
    std::env::var_os(HANDED_OVER_ENV).is_some_and(|v| !v.is_empty())
}

/// [`FULL_BIN_ENV`], else `hooks-mcp-full` beside this executable.
fn full_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(FULL_BIN_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    std::env::current_exe()
        .map(|exe| exe.with_file_name("hooks-mcp-full"))
        .unwrap_or_else(|_| PathBuf::from(OsString::from("hooks-mcp-full")))
}
