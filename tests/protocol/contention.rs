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
