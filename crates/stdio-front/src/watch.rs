//! Watching the store for a held `resourcesListChanged` subscription, at no cost while idle:
//! where the SQLite store lives (the store crate's rule, replicated: this crate must not link
//! it), an inotify descriptor on its directory that wakes the loop only when the database file
//! or its WAL is written, and the pacing of the listing child that those wakes start.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The store crate's variable naming the directory that holds `state.db`.
pub const HOME_ENV: &str = "HOOKS_MCP_HOME";
/// The store crate's variable selecting PostgreSQL (when set and not blank).
pub const DATABASE_URL_ENV: &str = "HOOKS_MCP_DATABASE_URL";

/// The SQLite database file the store would open, found as the store crate finds it:
/// `$HOOKS_MCP_HOME/state.db`, else `$XDG_STATE_HOME/hooks-mcp/state.db`, else
/// `$HOME/.local/state/hooks-mcp/state.db`, empty variables counting as unset. `None` when
/// [`DATABASE_URL_ENV`] selects PostgreSQL (any value but white space), or when no variable
/// names a place. `var` looks a variable up (`std::env::var_os`, or a test's table).
pub fn sqlite_store_file(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let url = var(DATABASE_URL_ENV);
    if url.is_some_and(|u| !u.to_string_lossy().trim().is_empty()) {
        return None;
    }
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(home) = set(HOME_ENV) {
        return Some(home.join("state.db"));
    }
    if let Some(state) = set("XDG_STATE_HOME") {
        return Some(state.join("hooks-mcp").join("state.db"));
    }
    set("HOME").map(|home| home.join(".local/state/hooks-mcp/state.db"))
}

/// Whether this platform can watch a directory (inotify).
pub(crate) const CAN_WATCH: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// The file names whose writes mean the store changed: the database and its WAL.
fn watched_names(db: &Path) -> Option<[OsString; 2]> {
    let name = db.file_name()?.to_owned();
    let mut wal = name.clone();
    wal.push("-wal");
    Some([name, wal])
}

/// An inotify descriptor on the store's directory (close-on-exec: neither the listing child
/// nor the full server inherits it).
#[derive(Debug)]
pub(crate) struct StoreWatch {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fd: std::os::fd::OwnedFd,
    names: [OsString; 2],
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl StoreWatch {
    /// Watches the directory of the database file `db` (created if missing) for writes to the
    /// database and its WAL, and for a file renamed onto the database.
    ///
    /// # Errors
    /// What creating the directory or the watch said.
    pub(crate) fn open(db: &Path) -> std::io::Result<StoreWatch> {
        use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
        let names = watched_names(db).ok_or_else(|| std::io::Error::other("no file name"))?;
        let dir = db.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        inotify::add_watch(&fd, dir, WatchFlags::MODIFY | WatchFlags::MOVED_TO)?;
        Ok(StoreWatch { fd, names })
    }

    /// The descriptor to poll.
    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.fd)
    }

    /// Reads every queued event: whether one was a write to the database or its WAL (or the
    /// queue overflowed, which may have hidden one).
    ///
    /// # Errors
    /// What reading the descriptor said.
    pub(crate) fn drain(&self) -> std::io::Result<bool> {
        use std::mem::MaybeUninit;
        use std::os::unix::ffi::OsStrExt;

        use rustix::fs::inotify::{ReadFlags, Reader};
        let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = Reader::new(&self.fd, &mut buf);
        let mut relevant = false;
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::AGAIN) => return Ok(relevant),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            };
            if event.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                relevant = true;
                continue;
            }
            let named = event.file_name().map(|n| OsStr::from_bytes(n.to_bytes()));
            relevant |= named.is_some_and(|n| self.names.iter().any(|w| w == n));
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
impl StoreWatch {
    /// No inotify here: the front end hands `resourcesListChanged` to the full server.
    pub(crate) fn open(db: &Path) -> std::io::Result<StoreWatch> {
        let _ = watched_names(db);
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "this platform has no inotify",
        ))
    }
}

/// The shortest gap between two runs of the listing child: later wakes are coalesced.
pub(crate) const MIN_GAP: Duration = Duration::from_millis(250);
/// The longest: each run that found the list unchanged doubles the gap up to this, so a store
/// written all the time (every hook writes it) costs an idle session one child per few seconds.
pub(crate) const MAX_GAP: Duration = Duration::from_secs(4);

/// When to run the listing child: after a wake, no sooner than the gap since the last run.
///
/// Events that arrive while the child runs may be its own (a child that folds a long WAL back
/// into the database writes it): they start one follow-up run, and a follow-up that finds
/// the list unchanged starts none, so the child can never keep waking itself.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    /// The gap after a run that found something, and the shortest.
    min_gap: Duration,
    /// The longest gap, reached by doubling while runs find nothing.
    max_gap: Duration,
    gap: Duration,
    last: Option<Instant>,
    pending: bool,
    follow_up: bool,
}

impl Default for Pacer {
    /// The listing's pacing: [`MIN_GAP`] to [`MAX_GAP`].
    fn default() -> Self {
        Pacer::new(MIN_GAP, MAX_GAP)
    }
}

impl Pacer {
    /// A pacer whose gap runs from `min_gap` (after a run that found something) to `max_gap`.
    pub(crate) fn new(min_gap: Duration, max_gap: Duration) -> Pacer {
        Pacer {
            min_gap,
            max_gap,
            gap: min_gap,
            last: None,
            pending: false,
            follow_up: false,
        }
    }

    /// The store was written while no child ran.
    pub(crate) fn woken(&mut self) {
        self.pending = true;
        self.follow_up = false;
    }

    /// How long until the child should run: `None` when nothing is pending.
    pub(crate) fn wait(&self, now: Instant) -> Option<Duration> {
        if !self.pending {
            return None;
        }
        Some(self.last.map_or(Duration::ZERO, |last| {
            (last + self.gap).saturating_duration_since(now)
        }))
    }

    /// A run starts now: whether it is a follow-up (see [`Pacer`]).
    pub(crate) fn start(&mut self) -> bool {
        self.pending = false;
        std::mem::take(&mut self.follow_up)
    }

    /// The first listing (the subscription's baseline) ended at `now`; `events`: the store
    /// was written while it ran.
    pub(crate) fn baseline(&mut self, now: Instant, events: bool) {
        self.last = Some(now);
        self.gap = self.min_gap;
        if events {
            self.pending = true;
            self.follow_up = true;
        }
    }

    /// A run (a follow-up or not) ended at `now`; `changed`: it found the list changed;
    /// `events`: the store was written while it ran. Only a run a wake started backs off: a
    /// follow-up leaves the gap as it was.
    pub(crate) fn ran(&mut self, now: Instant, follow_up: bool, changed: bool, events: bool) {
        self.last = Some(now);
        if changed {
            self.gap = self.min_gap;
        } else if !follow_up {
            self.gap = (self.gap * 2).min(self.max_gap);
        }
        // A follow-up that found nothing new saw only its own echo.
        if events && (changed || !follow_up) {
            self.pending = true;
            self.follow_up = true;
        }
    }
}

#[cfg(test)]
mod tests;
