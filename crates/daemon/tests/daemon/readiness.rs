//! Readiness and liveness for load balancers: `/health/ready` (and plain `/health`) answer 503
//! while the daemon starts and from SIGTERM on, `/health/live` answers 200 throughout; both are
//! plain probes (HTTP/1.0 without `Host`, or `Host` set to an address). On SIGTERM with a
//! shutdown delay the daemon keeps serving every request while not ready, and a second
//! SIGTERM ends the delay early.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{self, Daemon, call, http, mcp_request, mcp_session, raw};

/// The JSON body of a raw answer.
fn body_json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn readiness_follows_start_up_and_the_shutdown_delay_while_liveness_stays_up() {
    let test =
        "readiness::readiness_follows_start_up_and_the_shutdown_delay_while_liveness_stays_up";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        test,
        home.path(),
        &[
            ("HOOKS_MCP_TEST_PHASE_DELAY_MS", "1500"),
            // Far longer than the test: the second SIGTERM below must end it.
            ("HOOKS_MCP_SHUTDOWN_DELAY_SECS", "600"),
        ],
    );
    let addr = daemon.addr;

    // Start-up: live, not ready; the probes need no Host (HAProxy) or take an address
    // (Kubernetes).
    let haproxy_ready = "GET /health/ready HTTP/1.0\r\n\r\n";
    let kube_live = "GET /health/live HTTP/1.1\r\nHost: 10.1.2.3:8080\r\nConnection: close\r\n\r\n";
    let mut starting = 0;
    let deadline = Instant::now() + support::PATIENCE;
    loop {
        // Liveness first: phases only move forward, so a readiness answer of 503 after it
        // means the liveness answer came during start-up too.
        let (live_status, live_body) = raw(addr, kube_live);
        let (ready_status, ready_body) = raw(addr, haproxy_ready);
        assert_eq!(live_status, 200, "{live_body}");
        if ready_status == 200 {
            assert_eq!(body_json(&ready_body)["status"], "ok", "{ready_body}");
            break;
        }
        assert_eq!(ready_status, 503, "{ready_body}");
        assert_eq!(body_json(&ready_body)["status"], "starting", "{ready_body}");
        let live = body_json(&live_body);
        assert_eq!(live["status"], "alive", "{live}");
        assert_eq!(live["ready"], false, "{live}");
        assert_ne!(live["phase"], "serving", "{live}");
        starting += 1;
        assert!(Instant::now() < deadline, "never ready:\n{}", daemon.text());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(starting > 0, "the probes never saw start-up");
    let live = body_json(&raw(addr, kube_live).1);
    assert_eq!(
        (live["phase"].clone(), live["ready"].clone()),
        (json!("serving"), json!(true))
    );
    // HEAD works for both, and the other levels keep the Host check.
    assert_eq!(raw(addr, "HEAD /health/ready HTTP/1.0\r\n\r\n").0, 200);
    assert_eq!(raw(addr, "HEAD /health/live HTTP/1.0\r\n\r\n").0, 200);
    assert_eq!(raw(addr, "GET /health?level=db HTTP/1.0\r\n\r\n").0, 400);

    // SIGTERM: not ready at once, yet everything is still served, on new connections too.
    let session = mcp_session(addr, &[]);
    daemon.signal("TERM");
    assert!(
        daemon
            .log
            .wait_for("not ready; serving for 600 s")
            .is_some(),
        "{}",
        daemon.text()
    );
    let (status, body) = raw(addr, haproxy_ready);
    assert_eq!(status, 503, "{body}");
    let draining = body_json(&body);
    assert_eq!(
        (draining["status"].clone(), draining["phase"].clone()),
        (json!("stopping"), json!("draining")),
        "{draining}"
    );
    assert_eq!(raw(addr, "GET /health HTTP/1.0\r\n\r\n").0, 503);
    // The read API's overview says the same (it said `ok` through the drain).
    let overview = format!("GET /api/v1/overview HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    let (status, body) = raw(addr, &overview);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body_json(&body)["status"], "stopping", "{body}");
    let (status, body) = raw(addr, kube_live);
    assert_eq!(status, 200, "{body}");
    let live = body_json(&body);
    assert_eq!(
        (live["phase"].clone(), live["ready"].clone()),
        (json!("draining"), json!(false)),
        "{live}"
    );
    let published = mcp_request(
        addr,
        &session,
        &[],
        &call(
            3,
            "channel_publish",
            json!({ "channel": "drain", "message": "during the delay" }),
        ),
    );
    assert_eq!(published["result"]["isError"], false, "{published}");
    let session_during = mcp_session(addr, &[]);
    assert!(!session_during.is_empty());
    assert_eq!(http(addr, "GET", "/api/v1/channels", &[], "").status, 200);

    // A second SIGTERM ends the delay: the daemon stops accepting, drains and exits 0.
    daemon.signal("TERM");
    let status = daemon.wait_exit();
    assert!(status.success(), "{status:?}\n{}", daemon.text());
    let log = daemon.text();
    assert!(log.contains("ending the shutdown delay early"), "{log}");
    assert!(log.contains("in-flight calls finished"), "{log}");
    let conn = rusqlite::Connection::open(home.path().join("state.db")).unwrap();
    let kept: i64 = conn
        .query_row(
            "SELECT count(*) FROM messages WHERE channel = 'drain'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, 1, "the call served during the delay was committed");
}
