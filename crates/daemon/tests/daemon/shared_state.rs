//! What the daemons of one store share beyond the domain: the console's signing keys (a
//! session signed in on one daemon is signed in on another, and after a restart) and the
//! Streamable HTTP sessions of the 2025 revisions (resumed on another daemon and after a
//! restart, ended for all by a DELETE).
//!
//! On PostgreSQL: the server `HOOKS_MCP_TEST_DATABASE_URL` names, else a private throwaway one;
//! skipped with a note when there is neither.

use std::io::Write;

use serde_json::json;
use test_support::http::plain;
use test_support::pg::{self, Database};

use crate::support::{self, Daemon, MCP_POST, TOKEN, call, http, mcp_request, mcp_session};

/// The `name=value` of a `Set-Cookie` header.
fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().trim().to_owned()
}

/// The CSRF token a console page holds.
fn csrf_of(page: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let at = page
        .find(marker)
        .unwrap_or_else(|| panic!("no CSRF field: {page}"))
        + marker.len();
    page[at..].split('"').next().unwrap().to_owned()
}

fn database(what: &str) -> Option<Database> {
    let db = Database::shared("shared_state");
    if db.is_none() {
        let _ = std::io::stderr().write_all(pg::no_server_note(what).as_bytes());
    }
    db
}

#[test]
fn a_console_session_holds_on_every_daemon_of_the_store_and_across_restarts() {
    let test =
        "shared_state::a_console_session_holds_on_every_daemon_of_the_store_and_across_restarts";
    support::child_entry();
    let Some(db) = database("the shared console session test was") else {
        return;
    };
    let url = db.url();
    let env = [
        ("HOOKS_MCP_DATABASE_URL", url.as_str()),
        ("HOOKS_MCP_TOKEN", TOKEN),
        ("HOOKS_MCP_DB_POOL_SIZE", "2"),
    ];
    let homes: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let a = Daemon::start(test, homes[0].path(), &env);
    let b = Daemon::start(test, homes[1].path(), &env);
    a.wait_ready();
    b.wait_ready();

    // Signed in on A with the token.
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let login = plain(
        a.addr,
        "POST",
        "/console/login",
        &form,
        &format!("token={TOKEN}&next=%2Fconsole%2Fchannels"),
    );
    assert_eq!(login.status, 303, "{}", login.body);
    let cookie = cookie_pair(login.header("set-cookie").unwrap());
    let with_cookie = [("Cookie", cookie.as_str())];

    // B accepts it: the page, and a form with the CSRF token A's page carried.
    let page_a = http(a.addr, "GET", "/console/channels", &with_cookie, "");
    assert_eq!(page_a.status, 200, "{}", page_a.head);
    let csrf = csrf_of(&page_a.body);
    let page_b = http(b.addr, "GET", "/console/channels", &with_cookie, "");
    assert_eq!(
        page_b.status, 200,
        "B sent the session to sign in: {}",
        page_b.head
    );
    assert_eq!(csrf_of(&page_b.body), csrf, "one session, one CSRF token");
    let post = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let published = plain(
        b.addr,
        "POST",
        "/console/publish",
        &post,
        &format!("channel=ops&message=from-b&csrf={csrf}&back=%2Fconsole%2Fchannels"),
    );
    assert_eq!(published.status, 303, "{}", published.body);
    assert!(
        published
            .header("location")
            .unwrap()
            .contains("notice=Published"),
        "{}",
        published.head
    );
    // A forged key id or tag is no session on either daemon.
    let mut parts: Vec<String> = cookie.split('.').map(str::to_owned).collect();
    parts[0] = format!("{}=999999", parts[0].split('=').next().unwrap());
    let forged = parts.join(".");
    for daemon in [&a, &b] {
        let page = http(daemon.addr, "GET", "/console/", &[("Cookie", &forged)], "");
        assert_eq!(page.status, 303, "{}", page.head);
    }

    // A restart of A signs no one out.
    a.signal("TERM");
    assert!(a.wait_exit().success(), "{}", a.text());
    drop(a);
    let a = Daemon::start(test, homes[0].path(), &env);
    a.wait_ready();
    let after = http(a.addr, "GET", "/console/channels", &with_cookie, "");
    assert_eq!(after.status, 200, "signed out by a restart: {}", after.head);
    assert!(after.body.contains("from-b"), "{}", after.body);
    let keys: i64 = db
        .schema_client()
        .query_one("SELECT count(*) FROM signing_keys", &[])
        .unwrap()
        .get(0);
    assert_eq!(keys, 1, "one key for the fleet");
}

#[test]
fn a_legacy_session_is_resumed_by_another_daemon_and_after_a_restart() {
    let test = "shared_state::a_legacy_session_is_resumed_by_another_daemon_and_after_a_restart";
    support::child_entry();
    let Some(db) = database("the legacy session resumption test was") else {
        return;
    };
    let url = db.url();
    let env = [
        ("HOOKS_MCP_DATABASE_URL", url.as_str()),
        ("HOOKS_MCP_DB_POOL_SIZE", "2"),
    ];
    let homes: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let a = Daemon::start(test, homes[0].path(), &env);
    let b = Daemon::start(test, homes[1].path(), &env);
    a.wait_ready();
    b.wait_ready();

    let session = mcp_session(a.addr, &[]);
    let publish = |addr, id: u64, message: &str| {
        let reply = mcp_request(
            addr,
            &session,
            &[],
            &call(
                id,
                "channel_publish",
                json!({ "channel": "resumed", "message": message }),
            ),
        );
        assert_eq!(reply["result"]["isError"], false, "{reply}");
    };
    publish(a.addr, 2, "on a");
    // B never saw the session: it resumes it from the store, with no initialize.
    publish(b.addr, 3, "on b");
    let listed = mcp_request(
        b.addr,
        &session,
        &[],
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#,
    );
    assert!(
        listed["result"]["tools"].as_array().unwrap().len() > 5,
        "{listed}"
    );
    // A restarted A resumes it too.
    a.signal("TERM");
    assert!(a.wait_exit().success(), "{}", a.text());
    drop(a);
    let a = Daemon::start(test, homes[0].path(), &env);
    a.wait_ready();
    publish(a.addr, 5, "after the restart");
    let messages: i64 = db
        .schema_client()
        .query_one(
            "SELECT count(*) FROM messages WHERE channel = 'resumed'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(messages, 3);

    // DELETE on B ends it: B answers 404 from then on, and no daemon can resume it (a daemon
    // that holds it in memory, as A does now, serves it until it idles out there).
    let headers = [MCP_POST[0], ("Mcp-Session-Id", session.as_str())];
    let deleted = http(b.addr, "DELETE", "/mcp", &headers, "");
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let refused = http(
        b.addr,
        "POST",
        "/mcp",
        &headers,
        &call(6, "channel_list", json!({})),
    );
    assert_eq!(refused.status, 404, "{}", refused.body);
    let kept: i64 = db
        .schema_client()
        .query_one("SELECT count(*) FROM http_sessions", &[])
        .unwrap()
        .get(0);
    assert_eq!(kept, 0, "the store forgot the session");
    // A session id the store never had is not resumed.
    let unknown = [MCP_POST[0], ("Mcp-Session-Id", "never-issued")];
    let refused = http(
        b.addr,
        "POST",
        "/mcp",
        &unknown,
        &call(7, "channel_list", json!({})),
    );
    assert_eq!(refused.status, 404, "{}", refused.body);
}
