//! The SQLite store's change feed on Linux: an inotify descriptor on the database's directory
//! wakes the waiting thread only when the database file or its WAL is written, and the data
//! version of a read-only connection of the feed's own says whether a commit happened (the
//! checkpoints SQLite runs by itself copy pages into the file without changing its contents).
//! A writer appends its commit to the WAL before it publishes it in the WAL index (shared
//! memory, whose writes raise no event), so a write whose commit is not visible yet is looked
//! at again a few times, 2 ms after it and then at doubling gaps for a quarter of a second.
//! Nothing runs between writes: a process that holds a feed costs no wake-ups while the store
//! is quiet.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::{Change, ChangeFeed, StoreError, StoreResult};

/// A feed of the commits any connection makes to one SQLite database.
pub(crate) struct FileFeed {
    path: PathBuf,
    fd: OwnedFd,
    /// The database's file name and its WAL's.
    names: [OsString; 2],
    conn: Connection,
    /// The data version last reported.
    seen: u64,
    /// After a write that showed no commit yet: when to look again, and until when.
    settle: Option<(Duration, Instant)>,
}

/// The first second look after a write that showed no commit; the gap then doubles.
const FIRST_LOOK: Duration = Duration::from_millis(2);
/// How long a write is looked at again for its commit.
const SETTLE: Duration = Duration::from_millis(250);

impl FileFeed {
    /// Watches the database at `path` (its directory must exist).
    pub(crate) fn open(path: &Path) -> StoreResult<FileFeed> {
        use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
        let fail = |action, e: std::io::Error| io_error(action, path, e);
        let name = path
            .file_name()
            .ok_or_else(|| {
                fail(
                    "watching for changes",
                    std::io::Error::other("the path names no file"),
                )
            })?
            .to_owned();
        let mut wal = name.clone();
        wal.push("-wal");
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
            .map_err(|e| fail("creating a watch (inotify) for", e.into()))?;
        inotify::add_watch(&fd, dir, WatchFlags::MODIFY | WatchFlags::MOVED_TO)
            .map_err(|e| fail("watching the directory of", e.into()))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| fail("opening a change feed on", std::io::Error::other(e)))?;
        let mut feed = FileFeed {
            path: path.to_path_buf(),
            fd,
            names: [name, wal],
            conn,
            seen: 0,
            settle: None,
        };
        feed.seen = feed.data_version()?;
        Ok(feed)
    }

    fn data_version(&self) -> StoreResult<u64> {
        self.conn
            .query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
            .map(|v| v.max(0) as u64)
            .map_err(|e| {
                io_error(
                    "reading the data version of",
                    &self.path,
                    std::io::Error::other(e),
                )
            })
    }

    /// Reads every queued event: whether one was a write to the database or its WAL (or the
    /// queue overflowed, which may have hidden one).
    fn drain(&self) -> StoreResult<bool> {
        use std::ffi::OsStr;
        use std::mem::MaybeUninit;
        use std::os::unix::ffi::OsStrExt;

        use rustix::fs::inotify::{ReadFlags, Reader};
        let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = Reader::new(&self.fd, &mut buf);
        let mut relevant = false;
        loop {
            match reader.next() {
                Ok(event) => {
                    let named = event.file_name().map(|n| OsStr::from_bytes(n.to_bytes()));
                    relevant |= event.events().contains(ReadFlags::QUEUE_OVERFLOW)
                        || named.is_some_and(|n| self.names.iter().any(|w| w == n));
                }
                Err(rustix::io::Errno::AGAIN) => return Ok(relevant),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(io_error("reading file events of", &self.path, e.into())),
            }
        }
    }
}

impl ChangeFeed for FileFeed {
    /// Sleeps on the descriptor until the database or its WAL is written and the data version
    /// moved ([`Change::Written`]), or `timeout` passes.
    fn wait(&mut self, timeout: Duration) -> StoreResult<Option<Change>> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let deadline = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let mut left = deadline - now;
            if let Some((gap, until)) = self.settle {
                if now >= until {
                    self.settle = None;
                } else {
                    left = left.min(gap);
                }
            }
            let left = Timespec::try_from(left).unwrap_or(Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0,
            });
            let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
            let ready = match poll(&mut fds, Some(&left)) {
                Ok(n) => n > 0,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    return Err(io_error("waiting for file events of", &self.path, e.into()));
                }
            };
            let written = ready && self.drain()?;
            if !written && self.settle.is_none() {
                continue;
            }
            let version = self.data_version()?;
            if version != self.seen {
                self.seen = version;
                self.settle = None;
                return Ok(Some(Change::Written));
            }
            self.settle = match self.settle {
                _ if written => Some((FIRST_LOOK, Instant::now() + SETTLE)),
                Some((gap, until)) => Some((gap * 2, until)),
                None => None,
            };
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
