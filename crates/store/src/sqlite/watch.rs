//! The SQLite store's change feed on Linux: an inotify descriptor on the database's directory
//! wakes the waiting thread only when the database file or its WAL is written, and the data
//! version of a read-only connection of the feed's own says whether a commit happened (the
//! checkpoints SQLite runs by itself copy pages into the file without changing its contents).
//! A writer appends its commit to the WAL before it publishes it in the WAL index (shared
//! memory, whose writes raise no event), so a write whose commit is not visible yet is looked
//! at again, 2 ms after it and then at doubling gaps for two seconds; and each wait that runs
//! out looks once more, so even a commit published later than that is heard by the next one.
//! Nothing else runs between writes: a process that holds a feed costs no wake-ups while the
//! store is quiet beyond its own wait's timeout.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use store_files::{DirWatch, WatchError};

use crate::{Change, ChangeFeed, StoreError, StoreResult};

/// A feed of the commits any connection makes to one SQLite database.
pub(crate) struct FileFeed {
    /// The database file, resolved.
    path: PathBuf,
    watch: DirWatch,
    conn: Connection,
    /// The data version last reported.
    seen: u64,
    /// After a write that showed no commit yet: the next look, its gap, and until when.
    settle: Option<Settle>,
}

/// The looks again after a write that showed no commit yet.
#[derive(Debug, Clone, Copy)]
struct Settle {
    next: Instant,
    gap: Duration,
    until: Instant,
}

/// The first look again after a write that showed no commit; the gap then doubles.
const FIRST_LOOK: Duration = Duration::from_millis(2);
/// How long a write is looked at again for its commit.
const SETTLE: Duration = Duration::from_secs(2);
/// How long the feed's connection waits for a lock (a writer recovering the WAL).
const BUSY_WAIT: Duration = Duration::from_millis(250);

impl FileFeed {
    /// Watches the database at `path` (its directory must exist; a symbolic link is followed
    /// to the file SQLite writes beside).
    ///
    /// # Errors
    /// [`StoreError::NoWatch`] when no watch can be had (the caller may poll instead);
    /// [`StoreError::Io`] when the path cannot be resolved, and what SQLite says when its
    /// connection cannot be opened or read (the caller may retry).
    pub(crate) fn open(path: &Path) -> StoreResult<FileFeed> {
        let no_watch = |source, hint| StoreError::NoWatch {
            path: path.to_path_buf(),
            source,
            hint,
        };
        let watch = DirWatch::open(path, false).map_err(|e| match e {
            WatchError::Path { path, source } => io_error("resolving", &path, source),
            WatchError::Watch { source, hint } => no_watch(source, hint),
            WatchError::Unsupported => no_watch(std::io::ErrorKind::Unsupported.into(), ""),
        })?;
        let path = watch.path().to_path_buf();
        let conn =
            super::open_read_only(&path, BUSY_WAIT).map_err(|e| super::map_err(&path, e, None))?;
        let mut feed = FileFeed {
            path,
            watch,
            conn,
            seen: 0,
            settle: None,
        };
        feed.seen = feed.data_version()?;
        Ok(feed)
    }

    fn data_version(&self) -> StoreResult<u64> {
        super::data_version_of(&self.conn).map_err(|e| super::map_err(&self.path, e, None))
    }

    /// Reads every queued event: whether one was a write to the database or its WAL (or the
    /// queue overflowed, which may have hidden one).
    ///
    /// # Errors
    /// [`StoreError::Io`] when the watch ended (its file system unmounted) or the database was
    /// replaced by a rename (this feed's connection reads the old file): the caller reopens
    /// the feed.
    fn drain(&self) -> StoreResult<bool> {
        let drained = self
            .watch
            .drain()
            .map_err(|e| io_error("reading file events of", &self.path, e))?;
        if drained.replaced || drained.ended {
            let why = if drained.replaced {
                "the database file was replaced"
            } else {
                "the watch on its directory ended"
            };
            let ended = std::io::Error::other(why);
            return Err(io_error("watching", &self.path, ended));
        }
        Ok(drained.written)
    }
}

impl ChangeFeed for FileFeed {
    /// Sleeps on the descriptor until the database or its WAL is written and the data version
    /// moved ([`Change::Written`]), or `timeout` passes (then looks once).
    fn wait(&mut self, timeout: Duration) -> StoreResult<Option<Change>> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        // `None`: a timeout too long to be a moment (it never runs out).
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let now = Instant::now();
            if self.settle.is_some_and(|s| now >= s.until) {
                self.settle = None;
            }
            let timed_out = deadline.is_some_and(|d| now >= d);
            let look_due = self.settle.is_some_and(|s| now >= s.next);
            if !timed_out && !look_due {
                let mut left = deadline.map_or(Duration::MAX, |d| d - now);
                if let Some(settle) = self.settle {
                    left = left.min(settle.next - now);
                }
                let left = Timespec::try_from(left).unwrap_or(Timespec {
                    tv_sec: i64::MAX,
                    tv_nsec: 0,
                });
                let fd = self.watch.fd();
                let mut fds = [PollFd::new(&fd, PollFlags::IN)];
                match poll(&mut fds, Some(&left)) {
                    Ok(0) => continue,
                    Ok(_) => {}
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => {
                        return Err(io_error("waiting for file events of", &self.path, e.into()));
                    }
                }
                if !self.drain()? {
                    // Another file of the directory: the looks keep their own pace.
                    continue;
                }
                let now = Instant::now();
                let looking = self.settle.map(|s| s.next);
                self.settle = Some(Settle {
                    next: looking.map_or(now + FIRST_LOOK, |next| next.min(now + FIRST_LOOK)),
                    gap: FIRST_LOOK,
                    until: now + SETTLE,
                });
                if looking.is_some() {
                    // A write among looks already scheduled (a long transaction writes the WAL
                    // many times): the next look comes soon, not one per write.
                    continue;
                }
            } else if look_due && let Some(settle) = &mut self.settle {
                settle.gap = settle.gap.saturating_mul(2);
                settle.next = now + settle.gap;
            }
            let version = self.data_version()?;
            if version != self.seen {
                self.seen = version;
                self.settle = None;
                return Ok(Some(Change::Written));
            }
            if timed_out {
                return Ok(None);
            }
        }
    }
}

/// A failure of the feed on the database at `path`.
fn io_error(action: &'static str, path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}
