//! A small JSON record beside the store (in its directory), rewritten whole under an exclusive
//! lock on the file, so that concurrent hooks lose no update. Never creates the store: only the
//! directory and the file. Shared by [`super::unplaced`] and [`super::quiet`].

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// `file_name` in the store's directory (`HOOKS_MCP_HOME`, else the XDG state directory);
/// `None` when no directory can be told.
pub(super) fn path(file_name: &str) -> Option<PathBuf> {
    store::StoreLocation::from_env().map(|location| location.dir().join(file_name))
}

/// Replaces the record at `path` by what `next` makes of the current one (`None`: none yet,
/// or unreadable), under an exclusive lock held until the file is closed.
pub(super) fn update(
    path: &Path,
    next: impl FnOnce(Option<Value>) -> Value,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    let record = next(read_from(&mut file));
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{record}\n").as_bytes())
}

/// The record at `path`, `None` when there is none or it cannot be read as JSON.
pub(super) fn read(path: &Path) -> Option<Value> {
    read_from(&mut File::open(path).ok()?)
}

fn read_from(file: &mut File) -> Option<Value> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}
