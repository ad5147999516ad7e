//! Three daemons on one PostgreSQL store behind HAProxy, with the configuration the deployment
//! docs ship (`packaging/fleet/haproxy.cfg`), through a rolling restart under load: 2026-07-28
//! `tools/call` publishes, a legacy session's publishes, HTTP hook events and a signed-in
//! console page, while each daemon in turn gets SIGTERM (with the shipped shutdown delay) and
//! is started again on its port. No request may fail, every acknowledged publish is stored
//! exactly once, and the console session is still signed in afterwards.
//!
//! HAProxy must be installed (`.ci/run` installs it): without it the test fails, saying so.
//! PostgreSQL: the server `HOOKS_MCP_TEST_DATABASE_URL` names, else a private throwaway one;
//! skipped with a note when there is neither.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::haproxy::{self, Haproxy};
use test_support::http::{plain, try_http};
use test_support::pg::{self, Database};

use crate::support::{self, Daemon, MCP_POST, TOKEN, call};

/// The shutdown delay the deployment docs set (longer than HAProxy's checks take to see a
/// daemon draining).
const SHUTDOWN_DELAY: &str = "3";
/// A request loop never runs longer than this, whatever happens.
const MOST: Duration = Duration::from_secs(120);

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A 2026-07-28 `tools/call` of `channel_publish`: headers and body.
fn modern_publish(id: u64, message: &str) -> (Vec<(&'static str, String)>, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "channel_publish",
            "arguments": { "channel": "lb", "message": message },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string();
    let headers = vec![
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", "tools/call".to_owned()),
        ("Mcp-Name", "channel_publish".to_owned()),
        ("Authorization", format!("Bearer {TOKEN}")),
    ];
    (headers, body)
}

/// The JSON-RPC response in a reply body (JSON or SSE).
fn response_of(body: &str) -> Option<Value> {
    serde_json::from_str::<Value>(body).ok().or_else(|| {
        test_support::http::sse_messages(body)
            .into_iter()
            .find(|m| m.get("id").is_some())
    })
}

/// What the load saw.
#[derive(Default)]
struct Tally {
    requests: AtomicU64,
    failures: Mutex<Vec<String>>,
    /// Bodies of the publishes acknowledged with a result.
    acknowledged: Mutex<Vec<String>>,
}

impl Tally {
    fn failed(&self, what: String) {
        self.failures.lock().unwrap().push(what);
    }
}

/// One publish through `lb`; records the outcome.
fn publish(lb: SocketAddr, tally: &Tally, headers: &[(&str, String)], body: &str, message: &str) {
    tally.requests.fetch_add(1, Ordering::Relaxed);
    let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let Some(reply) = try_http(lb, "POST", "/mcp", &refs, body) else {
        tally.failed(format!("{message}: no HTTP response"));
        return;
    };
    let result = response_of(&reply.body).map(|m| m["result"].clone());
    match result {
        Some(r) if reply.status == 200 && r["isError"] == false => {
            tally.acknowledged.lock().unwrap().push(message.to_owned());
        }
        _ => tally.failed(format!("{message}: {} {}", reply.status, reply.body)),
    }
}

#[test]
fn a_rolling_restart_behind_haproxy_fails_no_request() {
    let test = "balancer::a_rolling_restart_behind_haproxy_fails_no_request";
    support::child_entry();
    assert!(haproxy::program().is_some(), "{}", haproxy::MISSING);
    let Some(db) = Database::shared("balancer") else {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            pg::no_server_note("the HAProxy rolling restart test was").as_bytes(),
        );
        return;
    };
    let url = db.url();
    let env = [
        ("HOOKS_MCP_DATABASE_URL", url.as_str()),
        ("HOOKS_MCP_TOKEN", TOKEN),
        ("HOOKS_MCP_SHUTDOWN_DELAY_SECS", SHUTDOWN_DELAY),
        ("HOOKS_MCP_DB_POOL_SIZE", "3"),
    ];
    let homes: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut daemons: Vec<Daemon> = homes
        .iter()
        .map(|home| Daemon::start(test, home.path(), &env))
        .collect();
    for d in &daemons {
        d.wait_ready();
    }
    let names: Vec<String> = (1..=3).map(|i| format!("daemon{i}")).collect();
    let servers: Vec<(String, SocketAddr)> = names
        .iter()
        .cloned()
        .zip(daemons.iter().map(|d| d.addr))
        .collect();
    let lb = Haproxy::start(&workspace(), &servers);
    for name in &names {
        lb.wait_server(name, true);
    }
    let lb_addr = lb.addr();

    // A console session, signed in through the balancer.
    let login = plain(
        lb_addr,
        "POST",
        "/console/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &format!("token={TOKEN}&next=%2Fconsole%2Fchannels"),
    );
    assert_eq!(login.status, 303, "{}", login.body);
    let cookie = login
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();

    let tally = Tally::default();
    let stop = AtomicBool::new(false);
    let hook_payload =
        std::fs::read_to_string(workspace().join("tests/fixtures/hooks/user_prompt_submit.json"))
            .unwrap();
    let restarted = std::thread::scope(|scope| {
        let (tally, stop, cookie, hook_payload) = (&tally, &stop, &cookie, &hook_payload);
        let until = Instant::now() + MOST;
        let running = move || !stop.load(Ordering::Relaxed) && Instant::now() < until;
        for worker in 0..3 {
            scope.spawn(move || {
                let mut n = 0u64;
                while running() {
                    n += 1;
                    let message = format!("modern-{worker}-{n}");
                    let (headers, body) = modern_publish(n, &message);
                    publish(lb_addr, tally, &headers, &body, &message);
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
        }
        // A legacy session: opened once, then used throughout (stuck to its daemon while
        // that one is up, resumed elsewhere while it restarts).
        scope.spawn(move || {
            let auth = format!("Bearer {TOKEN}");
            let mut headers = MCP_POST.to_vec();
            headers.push(("Authorization", auth.as_str()));
            let session = test_support::mcp::mcp_session(lb_addr, &headers[1..]);
            let mut n = 0u64;
            while running() {
                n += 1;
                let message = format!("legacy-{n}");
                let body = call(
                    n,
                    "channel_publish",
                    json!({"channel": "lb", "message": message}),
                );
                let headers = vec![
                    ("Accept", "application/json, text/event-stream".to_owned()),
                    ("Authorization", auth.clone()),
                    ("Mcp-Session-Id", session.clone()),
                ];
                publish(lb_addr, tally, &headers, &body, &message);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        scope.spawn(move || {
            let auth = format!("Bearer {TOKEN}");
            while running() {
                tally.requests.fetch_add(1, Ordering::Relaxed);
                let headers = [("Authorization", auth.as_str())];
                match try_http(
                    lb_addr,
                    "POST",
                    "/hooks/UserPromptSubmit",
                    &headers,
                    hook_payload,
                ) {
                    // 204: answered, with nothing to add to the prompt.
                    Some(r) if r.status == 200 || r.status == 204 => {}
                    Some(r) => tally.failed(format!("hook: {} {}", r.status, r.body)),
                    None => tally.failed("hook: no HTTP response".into()),
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        scope.spawn(move || {
            while running() {
                tally.requests.fetch_add(1, Ordering::Relaxed);
                let headers = [("Cookie", cookie.as_str())];
                match try_http(lb_addr, "GET", "/console/channels", &headers, "") {
                    Some(r) if r.status == 200 => {}
                    Some(r) => tally.failed(format!("console: {} {}", r.status, r.head)),
                    None => tally.failed("console: no HTTP response".into()),
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });

        // The rolling restart, one daemon at a time, each back up in HAProxy before the next.
        std::thread::sleep(Duration::from_secs(1));
        let mut restarted = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let port = daemons[i].port().to_string();
            daemons[i].signal("TERM");
            lb.wait_server(name, false);
            let status = daemons[i].wait_exit();
            assert!(status.success(), "{status:?}\n{}", daemons[i].text());
            let mut with_port = env.to_vec();
            with_port.push(("MCP_PORT", port.as_str()));
            let fresh = Daemon::start(test, homes[i].path(), &with_port);
            fresh.wait_ready();
            lb.wait_server(name, true);
            restarted.push(std::mem::replace(&mut daemons[i], fresh));
        }
        std::thread::sleep(Duration::from_secs(1));
        stop.store(true, Ordering::Relaxed);
        restarted
    });
    for old in &restarted {
        assert!(
            old.text().contains("not ready; serving for 3 s"),
            "{}",
            old.text()
        );
    }

    let failures = tally.failures.lock().unwrap().clone();
    let requests = tally.requests.load(Ordering::Relaxed);
    assert!(
        failures.is_empty(),
        "{} of {requests} requests failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let acknowledged = tally.acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.iter().any(|m| m.starts_with("legacy-"))
            && acknowledged.iter().any(|m| m.starts_with("modern-")),
        "{acknowledged:?}"
    );
    // Every acknowledged publish is stored exactly once, and nothing else is.
    let mut stored: HashMap<String, i64> = HashMap::new();
    for row in db
        .schema_client()
        .query("SELECT body FROM messages WHERE channel = 'lb'", &[])
        .unwrap()
    {
        *stored.entry(row.get(0)).or_default() += 1;
    }
    for message in &acknowledged {
        assert_eq!(stored.get(message), Some(&1), "{message}");
    }
    assert_eq!(
        stored.len(),
        acknowledged.len(),
        "no publish stored unacknowledged"
    );
    // Still signed in, on whichever daemon answers.
    for _ in 0..3 {
        let page = test_support::http::http(
            lb_addr,
            "GET",
            "/console/channels",
            &[("Cookie", cookie.as_str())],
            "",
        );
        assert_eq!(page.status, 200, "signed out: {}", page.head);
    }
    let servers = lb.servers();
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "note: {requests} requests through HAProxy, {} publishes acknowledged, 0 failed; \
             servers: {servers:?}\n",
            acknowledged.len()
        )
        .as_bytes(),
    );
}
