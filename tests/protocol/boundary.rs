//! The light/full boundary, observed from outside the process.

use std::time::Duration;

use serde_json::json;

use crate::support::*;

#[test]
fn discovery_runs_on_one_thread_without_the_store_and_a_call_hands_off() {
    let mut s = Server::start();
    s.handshake();
    s.ask(&request(2, "tools/list", json!({})));
    s.ask(&request(3, "prompts/list", json!({})));
    // The catalogue child has been reaped and its reader thread joined.
    assert_eq!(s.threads(), 1, "the light path must run on one thread");
    assert!(
        !s.open_files().iter().any(|p| is_store(p)),
        "the light path opened the store: {:?}",
        s.open_files()
    );
    assert!(
        !s.store_path().exists(),
        "the light path must not create the store"
    );
    let exe = std::fs::read_link(format!("/proc/{}/exe", s.pid())).unwrap();
    assert!(exe.ends_with("hooks-mcp"), "{exe:?}");

    let r = s.ask(&call(4, "channel_list", json!({})));
    assert_eq!(r["result"]["isError"], false);
    let exe = std::fs::read_link(format!("/proc/{}/exe", s.pid())).unwrap();
    assert!(
        exe.ends_with("hooks-mcp-stdio"),
        "the same pid now runs the full server: {exe:?}"
    );
    // SQLite keeps the database open once the full server has served a call.
    let mut opened = false;
    for _ in 0..100 {
        if s.open_files().iter().any(|p| is_store(p)) {
            opened = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(opened, "the full server should hold the store open");
}
