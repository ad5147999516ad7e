//! `floor-hook-store`: the second floor `cargo xtask bench hook` measures the hook command
//! against: `floor-hook` plus the least a hook that uses the store can do.
//!
//! It reads the payload on stdin and scans it for `session_id` and `hook_event_name`, as
//! `floor-hook` does, then opens the store's SQLite file (`$HOOKS_MCP_HOME/state.db`, the same
//! bundled SQLite the store links) and runs one indexed read and one small write in one
//! immediate transaction: it reads a per-session counter by its primary key and upserts it
//! (its own row, `floor:<session_id>`, so the hook's counts are left alone). It opens the file
//! as the store does (read-write, no mutex, the file's WAL mode, `synchronous = NORMAL`, no
//! checkpoint on close, and a WAL past 64 pages truncated on close, so the WAL it leaves stays
//! as short as the store's own). No schema check, no other query, no answer: what any hook
//! that touches the store costs. It is a measuring stick, not a hook.

#![allow(clippy::disallowed_macros)]

#[path = "../scan.rs"]
mod scan;

use std::io::{self, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use scan::string_member;

/// The WAL size past which closing truncates it (the store's own threshold).
const WAL_TRUNCATE_BYTES: u64 = 64 * 4120;

fn main() -> ExitCode {
    let mut payload = String::new();
    if let Err(e) = io::stdin().read_to_string(&mut payload) {
        eprintln!("floor-hook-store: cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    let trimmed = payload.trim();
    if !(trimmed.starts_with('{') && trimmed.ends_with('}')) {
        eprintln!("floor-hook-store: the payload is not a JSON object");
        return ExitCode::FAILURE;
    }
    let (Some(session), Some(_)) = (
        string_member(trimmed, "session_id"),
        string_member(trimmed, "hook_event_name"),
    ) else {
        eprintln!("floor-hook-store: the payload lacks session_id or hook_event_name");
        return ExitCode::FAILURE;
    };
    let Some(home) = std::env::var_os("HOOKS_MCP_HOME").filter(|v| !v.is_empty()) else {
        eprintln!("floor-hook-store: HOOKS_MCP_HOME is not set");
        return ExitCode::FAILURE;
    };
    let path = PathBuf::from(home).join("state.db");
    match touch(&path, session) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floor-hook-store: {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}

/// One indexed read and one small write in one immediate transaction.
fn touch(path: &std::path::Path, session: &str) -> rusqlite::Result<()> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.execute_batch("PRAGMA synchronous = NORMAL")?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    let key = format!("floor:{session}");
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let calls: Option<i64> = tx
        .query_row(
            "SELECT tool_calls FROM session_counters WHERE session_id = ?1",
            [&key],
            |r| r.get(0),
        )
        .optional()?;
    tx.execute(
        "INSERT INTO session_counters (session_id, tool_calls, updated_at) VALUES (?1, ?2, 0)
         ON CONFLICT (session_id) DO UPDATE SET tool_calls = excluded.tool_calls",
        params![key, calls.unwrap_or(0) + 1],
    )?;
    tx.commit()?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() >= WAL_TRUNCATE_BYTES) {
        conn.busy_timeout(Duration::ZERO)?;
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
    Ok(())
}
