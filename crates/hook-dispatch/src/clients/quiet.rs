//! Claude Code events the hook answered with nothing because it has nothing to do on them
//! ([`crate::QUIET_EVENTS`]): counted per event beside the store (`quiet-hooks.json` in its
//! directory), for `hooks-mcp status` to show, so that an operator who registered them sees
//! them arrive.
//!
//! Written as [`super::unplaced`] is (one shared read-update-write): under an exclusive lock
//! on the file, best effort, never creating the store.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::record_file;

/// The record's file name, in the store's directory.
pub const FILE_NAME: &str = "quiet-hooks.json";

/// The quiet events answered so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quiet {
    /// How many of each event, by name.
    pub counts: BTreeMap<String, u64>,
    /// The last one's event.
    pub last: String,
    /// When, in Unix milliseconds.
    pub at: i64,
}

impl Quiet {
    /// Every event counted.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// The record's path: [`FILE_NAME`] in the store's directory; `None` when no directory can be
/// told.
pub fn path() -> Option<PathBuf> {
    record_file::path(FILE_NAME)
}

/// Counts one quiet `event` answered at `at`. Best effort: a record that cannot be written
/// changes nothing else.
pub fn record(event: &str, at: i64) {
    let Some(path) = path() else { return };
    let _ = write_record(&path, event, at);
}

fn write_record(path: &Path, event: &str, at: i64) -> std::io::Result<()> {
    record_file::update(path, |old| {
        let mut counts = old.and_then(parse).unwrap_or_default().counts;
        let n = counts.entry(event.to_owned()).or_insert(0);
        *n = n.saturating_add(1);
        json!({ "counts": counts, "last": event, "at": at })
    })
}

fn parse(value: Value) -> Option<Quiet> {
    let counts = value
        .get("counts")?
        .as_object()?
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
        .collect();
    Some(Quiet {
        counts,
        last: value
            .get("last")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        at: value.get("at").and_then(Value::as_i64).unwrap_or(0),
    })
}

/// The record, `None` when no quiet event arrived (or it cannot be read).
pub fn read() -> Option<Quiet> {
    parse(record_file::read(&path()?)?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn each_event_is_counted_and_the_last_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join(FILE_NAME);
        write_record(&path, "Notification", 5).unwrap();
        write_record(&path, "PreCompact", 6).unwrap();
        write_record(&path, "Notification", 7).unwrap();
        let quiet = parse(record_file::read(&path).unwrap()).unwrap();
        assert_eq!(quiet.counts.get("Notification"), Some(&2));
        assert_eq!(quiet.counts.get("PreCompact"), Some(&1));
        assert_eq!(quiet.total(), 3);
        assert_eq!((quiet.last.as_str(), quiet.at), ("Notification", 7));
        std::fs::write(&path, "garbage").unwrap();
        assert_eq!(record_file::read(&path), None);
        // An unreadable record starts the count again rather than failing the hook.
        write_record(&path, "Notification", 8).unwrap();
        assert_eq!(parse(record_file::read(&path).unwrap()).unwrap().total(), 1);
    }
}
