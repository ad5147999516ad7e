//! A stdio session's tool calls while another process holds the store's write lock: the
//! session's sighting (a write of its own, recording the call) never holds up the answer.

use std::time::Duration;

use serde_json::json;

use crate::support::{Server, call};

#[test]
fn a_read_is_answered_while_another_process_holds_the_write_lock() {
    let mut s = Server::with_env(&[
        ("HOOKS_MCP_SESSION_ID", "sess-1"),
        ("HOOKS_MCP_BUSY_TIMEOUT_MS", "60000"),
    ]);
    s.handshake();
    let first = s.ask(&call(2, "channel_list", json!({})));
    assert_eq!(first["result"]["isError"], false, "{first}");

    let holder = rusqlite::Connection::open(s.store_path()).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    s.send(&call(3, "channel_list", json!({})));
    // Well within the busy timeout: the reply comes while the lock is still held.
    let answer = s.recv_within(Duration::from_secs(15));
    holder.execute_batch("COMMIT").unwrap();
    let answer = answer.expect("no answer while another process held the write lock");
    assert_eq!(answer["id"], 3, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let (status, rest) = s.finish();
    assert!(status.success(), "{status:?} {rest:?}");
}

/// The sighting of a session's last tool call, queued after its answer, is recorded before the
/// process ends, even when it has to wait for another process's lock first.
#[test]
fn the_last_calls_sighting_is_recorded_before_the_session_ends() {
    let home = tempfile::tempdir().unwrap();
    let home_dir = home.path().to_str().unwrap().to_owned();
    let created = std::process::Command::new(crate::support::full_bin())
        .args(["channel", "list"])
        .env("HOOKS_MCP_HOME", &home_dir)
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");

    let holder = rusqlite::Connection::open(home.path().join("state.db")).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let mut s = Server::with_env(&[
        ("HOOKS_MCP_HOME", home_dir.as_str()),
        ("HOOKS_MCP_SESSION_ID", "sess-last"),
        ("HOOKS_MCP_BUSY_TIMEOUT_MS", "60000"),
    ]);
    s.handshake();
    s.send(&call(2, "channel_list", json!({})));
    let answer = s.recv_within(Duration::from_secs(15));
    assert!(answer.is_some(), "answered while the lock was held");
    // The client leaves while the sighting still waits for the lock; the lock goes soon after.
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        holder.execute_batch("COMMIT").unwrap();
    });
    let (status, rest) = s.finish();
    release.join().unwrap();
    assert!(status.success(), "{status:?} {rest:?}");

    let listed = std::process::Command::new(crate::support::full_bin())
        .args(["sessions", "--all", "--json"])
        .env("HOOKS_MCP_HOME", &home_dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("\"sess-last\""), "{text}");
}
