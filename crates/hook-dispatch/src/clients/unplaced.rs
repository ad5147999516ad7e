//! Payloads the hook could not place: counted, with the last one kept, beside the store
//! (`unplaced-hooks.json` in its directory), for `hooks-mcp status` to show.
//!
//! A hook that cannot place a payload answers nothing (the client goes ahead as without the
//! hook) and says why on stderr, which many clients do not show; the record makes it visible.
//! It is written under an exclusive lock on the file, so concurrent hooks count every payload.
//! It never creates the store: only the directory and this file.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::record_file;

/// The record's file name, in the store's directory.
pub const FILE_NAME: &str = "unplaced-hooks.json";

/// The payloads not placed so far, and the last of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaced {
    /// How many there were.
    pub count: u64,
    /// The last one's client (`claude`, `codex`, ... or `unknown`).
    pub client: String,
    /// The event it was sent for, as the hook was registered.
    pub event: String,
    /// Why it could not be placed.
    pub reason: String,
    /// When, in Unix milliseconds.
    pub at: i64,
}

/// The record's path: [`FILE_NAME`] in the store's directory (`HOOKS_MCP_HOME`, else the
/// XDG state directory); `None` when no directory can be told.
pub fn path() -> Option<PathBuf> {
    record_file::path(FILE_NAME)
}

/// Counts one payload that could not be placed and keeps it as the last. Best effort: a
/// record that cannot be written changes nothing else (the stderr line stays).
pub fn record(client: &str, event: &str, reason: &str, at: i64) {
    let Some(path) = path() else { return };
    let _ = write_record(&path, client, event, reason, at);
}

fn write_record(
    path: &Path,
    client: &str,
    event: &str,
    reason: &str,
    at: i64,
) -> std::io::Result<()> {
    record_file::update(path, |old| {
        let count = old.and_then(parse).map(|u| u.count).unwrap_or(0);
        json!({
            "count": count.saturating_add(1),
            "client": client,
            "event": event,
            "reason": reason,
            "at": at,
        })
    })
}

fn parse(value: Value) -> Option<Unplaced> {
    let field = |k: &str| {
        value
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    Some(Unplaced {
        count: value.get("count").and_then(Value::as_u64)?,
        client: field("client"),
        event: field("event"),
        reason: field("reason"),
        at: value.get("at").and_then(Value::as_i64).unwrap_or(0),
    })
}

/// The record, `None` when no payload went unplaced (or it cannot be read).
pub fn read() -> Option<Unplaced> {
    parse(record_file::read(&path()?)?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn each_payload_counts_and_the_last_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join(FILE_NAME);
        write_record(&path, "gemini", "BeforeTool", "no session id", 5).unwrap();
        write_record(&path, "unknown", "PreToolUse", "not JSON", 7).unwrap();
        assert_eq!(
            parse(record_file::read(&path).unwrap()),
            Some(Unplaced {
                count: 2,
                client: "unknown".into(),
                event: "PreToolUse".into(),
                reason: "not JSON".into(),
                at: 7,
            })
        );
        // A record without its count is not one.
        assert_eq!(parse(json!({"client": "x"})), None);
    }
}
