//! Watching the store for a held `resourcesListChanged` subscription or a push, at no cost
//! while idle: where the SQLite store lives (the rule of the `store-files` crate, which the
//! store follows too), a watch on its directory ([`DirWatch`]) that wakes the loop only when
//! the database file or its WAL is written, and the pacing of the child that those wakes start.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use store_files::{DirWatch, StoreLocation, WatchError};

pub use store_files::HOME_ENV;

/// The store crate's variable selecting PostgreSQL (when set and not blank).
pub const DATABASE_URL_ENV: &str = "HOOKS_MCP_DATABASE_URL";

/// The SQLite database file the store would open ([`StoreLocation`]'s rule, empty variables
/// counting as unset). `None` when [`DATABASE_URL_ENV`] selects PostgreSQL (any value but
/// white space), or when no variable names a place. `var` looks a variable up
/// (`std::env::var_os`, or a test's table).
pub fn sqlite_store_file(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let url = var(DATABASE_URL_ENV);
    if url.is_some_and(|u| !u.to_string_lossy().trim().is_empty()) {
        return None;
    }
    StoreLocation::resolve(|name| var(name).filter(|v| !v.is_empty()).map(PathBuf::from))
        .map(|location| location.path)
}

/// Whether this platform can watch a directory (inotify).
pub(crate) const CAN_WATCH: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// The light loop's watch on the store: a [`DirWatch`] on its directory (created when
/// missing), opened again when it ends (the directory removed, then made again by the next
/// program that opens the store), so a session goes on hearing the store.
#[derive(Debug)]
pub(crate) struct StoreWatch {
    db: PathBuf,
    watch: DirWatch,
}

impl StoreWatch {
    /// Watches the directory of the database file `db` (created if missing) for writes to the
    /// database and its WAL, and for a file renamed onto the database.
    ///
    /// # Errors
    /// What resolving, creating or watching the directory said.
    pub(crate) fn open(db: &Path) -> Result<StoreWatch, WatchError> {
        Ok(StoreWatch {
            db: db.to_path_buf(),
            watch: DirWatch::open(db, true)?,
        })
    }

    /// The descriptor to poll.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.watch.fd()
    }

    /// Reads every queued event: whether the store may have changed (the database or its WAL
    /// was written, a file renamed onto it, the queue overflowed, or the watch ended and was
    /// opened again, missing what happened meanwhile). A read error, or an ended watch that
    /// cannot be opened again (the session then hears the store no more: the old descriptor
    /// stays, never readable), is said on stderr and counts as no change.
    pub(crate) fn drain(&mut self) -> bool {
        match self.try_drain() {
            Ok(changed) => changed,
            Err(e) => {
                protocol_lite::diag!("hooks-mcp: cannot read the store watch: {e}");
                false
            }
        }
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn try_drain(&mut self) -> std::io::Result<bool> {
        let drained = self.watch.drain()?;
        if drained.ended {
            self.watch = DirWatch::open(&self.db, true).map_err(|e| {
                std::io::Error::other(format!(
                    "the watch on the store's directory ended and cannot be opened again: {e}"
                ))
            })?;
        }
        Ok(drained.written || drained.replaced || drained.ended)
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn try_drain(&mut self) -> std::io::Result<bool> {
        let _ = &self.db;
        Ok(false)
    }
}

/// The shortest gap between two runs of the listing child: later wakes are coalesced.
pub(crate) const MIN_GAP: Duration = Duration::from_millis(250);
/// The longest: each run that found the list unchanged doubles the gap up to this, so a store
/// written all the time (every hook writes it) costs an idle session one child per few seconds.
pub(crate) const MAX_GAP: Duration = Duration::from_secs(4);

/// How long a wake waits before its run: a write's first event may come before its commit
/// (a writer that starts the WAL afresh writes its header and syncs it before the pages), and
/// a child that reads in between finds nothing.
pub(crate) const SETTLE: Duration = Duration::from_millis(10);

/// When to run the listing child: after a wake, [`SETTLE`] later and no sooner than the gap
/// since the last run.
///
/// Events that arrive while the child runs may be its own (a child that folds a long WAL back
/// into the database writes it): they start one follow-up run, and a follow-up that finds
/// the list unchanged starts none, so the child can never keep waking itself. The gap doubles
/// only while the store keeps being written: the first run after a quiet spell (no run for
/// longer than the longest gap) that finds nothing leaves the shortest gap.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    /// The gap after a run that found something, and the shortest.
    min_gap: Duration,
    /// The longest gap, reached by doubling while runs find nothing.
    max_gap: Duration,
    gap: Duration,
    last: Option<Instant>,
    /// The first wake since the last run started.
    woken_at: Option<Instant>,
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
            woken_at: None,
            pending: false,
            follow_up: false,
        }
    }

    /// The store was written (at `now`) while no child ran.
    pub(crate) fn woken(&mut self, now: Instant) {
        self.pending = true;
        self.follow_up = false;
        self.woken_at.get_or_insert(now);
    }

    /// How long until the child should run: `None` when nothing is pending.
    pub(crate) fn wait(&self, now: Instant) -> Option<Duration> {
        if !self.pending {
            return None;
        }
        let settled = self.woken_at.map(|at| at + SETTLE);
        let spaced = self.last.map(|last| last + self.gap);
        Some(
            settled
                .max(spaced)
                .map_or(Duration::ZERO, |due| due.saturating_duration_since(now)),
        )
    }

    /// A run starts now: whether it is a follow-up (see [`Pacer`]).
    pub(crate) fn start(&mut self) -> bool {
        self.pending = false;
        self.woken_at = None;
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
        let quiet = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) > self.max_gap);
        self.last = Some(now);
        if changed || quiet {
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
