//! An inotify descriptor on the store's directory: it wakes its owner only when the database
//! file or its WAL is written, and says when the watch ended or the database was replaced.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Why a directory could not be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The database's path could not be resolved, or its directory created.
    #[error("cannot resolve or create `{}`: {source}", path.display())]
    Path {
        /// The path given.
        path: PathBuf,
        /// What resolving or creating it said.
        source: std::io::Error,
    },
    /// No inotify instance could be had, or the directory could not be watched.
    #[error("cannot watch the directory: {source}{hint}")]
    Watch {
        /// What the OS said.
        source: std::io::Error,
        /// What to raise when a per-user limit was reached (empty otherwise).
        hint: &'static str,
    },
    /// This platform has no inotify.
    #[error("this platform has no inotify")]
    Unsupported,
}

/// What to raise when `inotify_init` finds no instance left (`EMFILE`).
const INSTANCES_HINT: &str =
    "; too many watches: raise the per-user limit with `sysctl fs.inotify.max_user_instances=1024`";
/// What to raise when `inotify_add_watch` finds no watch left (`ENOSPC`).
const WATCHES_HINT: &str =
    "; too many watches: raise the per-user limit with `sysctl fs.inotify.max_user_watches=65536`";

impl WatchError {
    /// [`WatchError::Watch`] for `errno`, with `hint` when it is the `limit` reached.
    fn watch(errno: rustix::io::Errno, limit: rustix::io::Errno, hint: &'static str) -> Self {
        WatchError::Watch {
            source: errno.into(),
            hint: if errno == limit { hint } else { "" },
        }
    }
}

/// What one [`DirWatch::drain`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drained {
    /// The database or its WAL was written, or the queue overflowed (which may hide a write).
    pub written: bool,
    /// A file was renamed onto the database: whoever holds it open reads the old file.
    pub replaced: bool,
    /// The watch ended (the directory was removed or its file system unmounted): no event
    /// will come from this descriptor again.
    pub ended: bool,
}

/// An inotify descriptor (non-blocking, close-on-exec: no child inherits it) on the
/// directory of a database file, for writes to the file and its WAL.
#[derive(Debug)]
pub struct DirWatch {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fd: std::os::fd::OwnedFd,
    /// The database file, resolved.
    path: PathBuf,
    /// The database's file name and its WAL's.
    names: [OsString; 2],
}

impl DirWatch {
    /// The database file watched, resolved: symbolic links followed to the file SQLite
    /// writes beside (its WAL lives in the real file's directory).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `db` resolved: the file itself when it exists, else its directory (created first when
/// `create_dir`) joined with its name.
fn resolve(db: &Path, create_dir: bool) -> Result<(PathBuf, [OsString; 2]), WatchError> {
    let failed = |source| WatchError::Path {
        path: db.to_path_buf(),
        source,
    };
    let name = db
        .file_name()
        .ok_or_else(|| failed(std::io::Error::other("the path names no file")))?;
    let path = match std::fs::canonicalize(db) {
        Ok(path) => path,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = match db.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            if create_dir {
                std::fs::create_dir_all(dir).map_err(failed)?;
            }
            std::fs::canonicalize(dir).map_err(failed)?.join(name)
        }
        Err(e) => return Err(failed(e)),
    };
    // Resolved, the path is absolute and names its file.
    let name = path.file_name().unwrap_or(name).to_owned();
    let mut wal = name.clone();
    wal.push("-wal");
    Ok((path, [name, wal]))
}

#[cfg(any(target_os = "linux", target_os = "android"))]
impl DirWatch {
    /// Watches the directory of the database file `db` for writes to the database and its
    /// WAL, and for a file renamed onto the database. The database need not exist yet; its
    /// directory is created when `create_dir` and it is missing.
    ///
    /// # Errors
    /// [`WatchError`]: the path cannot be resolved (or its directory created), or no watch
    /// can be had.
    pub fn open(db: &Path, create_dir: bool) -> Result<DirWatch, WatchError> {
        use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
        let (path, names) = resolve(db, create_dir)?;
        let dir = path.parent().unwrap_or(Path::new("/"));
        use rustix::io::Errno;
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
            .map_err(|e| WatchError::watch(e, Errno::MFILE, INSTANCES_HINT))?;
        inotify::add_watch(&fd, dir, WatchFlags::MODIFY | WatchFlags::MOVED_TO)
            .map_err(|e| WatchError::watch(e, Errno::NOSPC, WATCHES_HINT))?;
        Ok(DirWatch { fd, path, names })
    }

    /// The descriptor to poll (readable when events are queued).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.fd)
    }

    /// Reads every queued event without blocking.
    ///
    /// # Errors
    /// What reading the descriptor said.
    pub fn drain(&self) -> std::io::Result<Drained> {
        use std::ffi::OsStr;
        use std::mem::MaybeUninit;
        use std::os::unix::ffi::OsStrExt;

        use rustix::fs::inotify::{ReadFlags, Reader};
        // Room for several events (one takes at most 16 bytes and a name of NAME_MAX + 1); the
        // reader reads again until none is left. Small, as the front end's idle stack keeps
        // every page it ever touched.
        let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
        let mut reader = Reader::new(&self.fd, &mut buf);
        let mut drained = Drained::default();
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::AGAIN) => return Ok(drained),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            };
            let flags = event.events();
            let named = event.file_name().map(|n| OsStr::from_bytes(n.to_bytes()));
            drained.ended |= flags.contains(ReadFlags::IGNORED);
            drained.replaced |=
                flags.contains(ReadFlags::MOVED_TO) && named.is_some_and(|n| n == self.names[0]);
            drained.written |= flags.contains(ReadFlags::QUEUE_OVERFLOW)
                || named.is_some_and(|n| self.names.iter().any(|w| w == n));
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
impl DirWatch {
    /// No inotify here: always [`WatchError::Unsupported`].
    ///
    /// # Errors
    /// [`WatchError::Unsupported`].
    pub fn open(db: &Path, create_dir: bool) -> Result<DirWatch, WatchError> {
        let _ = resolve(db, create_dir)?;
        Err(WatchError::Unsupported)
    }
}

#[cfg(test)]
#[cfg(any(target_os = "linux", target_os = "android"))]
mod tests {
    use std::io::Write;

    use super::*;

    fn append(path: &Path, bytes: &[u8]) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        file.write_all(bytes).unwrap();
    }

    #[test]
    fn writes_to_the_database_or_its_wal_count_and_other_files_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let watch = DirWatch::open(&db, false).unwrap();
        assert_eq!(watch.drain().unwrap(), Drained::default());
        append(&dir.path().join("other.txt"), b"x");
        append(&dir.path().join("state.db-shm"), b"x");
        assert_eq!(watch.drain().unwrap(), Drained::default());
        append(&dir.path().join("state.db-wal"), b"x");
        assert!(watch.drain().unwrap().written);
        append(&db, b"x");
        let drained = watch.drain().unwrap();
        assert!(drained.written && !drained.replaced && !drained.ended);
    }

    #[test]
    fn a_missing_directory_is_created_when_asked_and_refused_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("a/b/state.db");
        let refused = DirWatch::open(&db, false).unwrap_err();
        assert!(matches!(refused, WatchError::Path { .. }), "{refused}");
        assert!(refused.to_string().contains("a/b/state.db"), "{refused}");
        let watch = DirWatch::open(&db, true).unwrap();
        assert!(dir.path().join("a/b").is_dir());
        append(&db, b"x");
        assert!(watch.drain().unwrap().written);
    }

    #[test]
    fn a_database_reached_through_a_link_is_watched_where_its_wal_is_written() {
        let real = tempfile::tempdir().unwrap();
        let linked = tempfile::tempdir().unwrap();
        let file = real.path().join("store.sqlite");
        append(&file, b"");
        let link = linked.path().join("state.db");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let watch = DirWatch::open(&link, false).unwrap();
        assert_eq!(watch.path(), std::fs::canonicalize(&file).unwrap());
        // SQLite names the WAL after the file it resolved.
        append(&real.path().join("store.sqlite-wal"), b"x");
        assert!(watch.drain().unwrap().written);
        append(&linked.path().join("state.db-wal"), b"x");
        assert!(!watch.drain().unwrap().written, "not the WAL SQLite writes");
    }

    #[test]
    fn a_file_renamed_onto_the_database_and_a_removed_directory_are_told() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("home");
        std::fs::create_dir(&store).unwrap();
        let db = store.join("state.db");
        append(&db, b"x");
        let watch = DirWatch::open(&db, false).unwrap();
        let fresh = store.join("fresh.db");
        append(&fresh, b"y");
        let _ = watch.drain().unwrap();
        std::fs::rename(&fresh, &db).unwrap();
        let drained = watch.drain().unwrap();
        assert!(drained.replaced && !drained.ended, "{drained:?}");
        std::fs::remove_dir_all(&store).unwrap();
        let drained = watch.drain().unwrap();
        assert!(drained.ended, "{drained:?}");
    }

    #[test]
    fn limits_reached_say_which_setting_to_raise() {
        use rustix::io::Errno;
        let instances = WatchError::watch(Errno::MFILE, Errno::MFILE, INSTANCES_HINT);
        assert!(
            instances.to_string().contains("max_user_instances"),
            "{instances}"
        );
        let watches = WatchError::watch(Errno::NOSPC, Errno::NOSPC, WATCHES_HINT);
        assert!(
            watches.to_string().contains("max_user_watches"),
            "{watches}"
        );
        let other = WatchError::watch(Errno::ACCESS, Errno::NOSPC, WATCHES_HINT);
        assert!(
            matches!(other, WatchError::Watch { hint: "", .. }),
            "{other}"
        );
    }
}
