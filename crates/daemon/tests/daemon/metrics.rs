//! `GET /metrics`: gated like `/mcp` (token, `Host`, 503 during start-up), parseable Prometheus
//! text (and OpenMetrics on request), counters that move with tool calls, hook events and
//! scheduler firings, the store's fleet-wide gauges reported by one daemon of a PostgreSQL
//! store at a time, and `HOOKS_MCP_METRICS=off`.

use std::net::SocketAddr;
use std::time::Instant;

use serde_json::json;

use test_support::pg::{self, Database};

use crate::support::{
    Daemon, PATIENCE, Response, TOKEN, call, child_entry, http, mcp_request, mcp_session,
    run_to_exit,
};

const BEARER: &str = "Bearer test-token-0123456789abcdef";

/// One sample line of an exposition.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// Parses a Prometheus text (0.0.4) or OpenMetrics exposition, failing the test on any line
/// that is neither a comment it knows nor a well-formed sample, and on samples whose family
/// has no `# TYPE` line before them.
fn parse(text: &str) -> Vec<Sample> {
    let mut typed: Vec<String> = Vec::new();
    let mut samples = Vec::new();
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            let mut words = comment.splitn(3, ' ');
            match (words.next(), words.next()) {
                (Some("TYPE"), Some(name)) => {
                    let kind = words.next().unwrap_or_default();
                    assert!(
                        matches!(
                            kind,
                            "counter" | "gauge" | "histogram" | "summary" | "info" | "unknown"
                        ),
                        "bad TYPE line: {line}"
                    );
                    assert!(name_ok(name), "bad metric name: {line}");
                    typed.push(name.to_owned());
                }
                (Some("HELP" | "UNIT"), Some(name)) => assert!(name_ok(name), "{line}"),
                (Some("EOF"), None) => {}
                _ => panic!("unknown comment line: {line}"),
            }
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value: {line}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|e| panic!("{e}: {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, Vec::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("unclosed labels: {line}"));
                (name, parse_labels(body, line))
            }
        };
        assert!(name_ok(name), "bad sample name: {line}");
        let family = typed.iter().any(|t| {
            name == t
                || ["_total", "_bucket", "_sum", "_count", "_info", "_created"]
                    .iter()
                    .any(|suffix| name.strip_suffix(suffix) == Some(t.as_str()))
        });
        assert!(family, "a sample before its TYPE line: {line}");
        samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    assert!(!samples.is_empty(), "no samples in:\n{text}");
    samples
}

/// `k="v",k2="v2"` with the text format's escapes.
fn parse_labels(body: &str, line: &str) -> Vec<(String, String)> {
    let mut labels = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once("=\"")
            .unwrap_or_else(|| panic!("bad label in: {line}"));
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c @ ('"' | '\\'))) => value.push(c),
                    _ => panic!("bad escape in: {line}"),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => panic!("unterminated label value in: {line}"),
            }
        };
        labels.push((key.to_owned(), value));
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    labels
}

/// The value of the sample `name` with exactly `labels` (any order), if there is one.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && s.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(sk, sv)| sk == k && sv == v))
        })
        .map(|s| s.value)
}

fn scrape(addr: SocketAddr, headers: &[(&str, &str)]) -> (Response, Vec<Sample>) {
    let reply = http(addr, "GET", "/metrics", headers, "");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let samples = parse(&reply.body);
    (reply, samples)
}

#[test]
fn metrics_are_gated_like_mcp_and_count_calls_and_hook_events() {
    let test = "metrics::metrics_are_gated_like_mcp_and_count_calls_and_hook_events";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        test,
        home.path(),
        &[
            ("HOOKS_MCP_TOKEN", TOKEN),
            ("HOOKS_MCP_TEST_PHASE_DELAY_MS", "1500"),
        ],
    );
    let addr = daemon.addr;
    let auth = [("Authorization", BEARER)];

    // During start-up only /health is open: /metrics answers 503 (after the token check).
    let early = http(addr, "GET", "/metrics", &auth, "");
    assert_eq!(early.status, 503, "{}", early.body);
    assert_eq!(http(addr, "GET", "/metrics", &[], "").status, 401);
    daemon.wait_ready();

    // The token and the Host check, as for /mcp.
    assert_eq!(http(addr, "GET", "/metrics", &[], "").status, 401);
    let wrong = [("Authorization", "Bearer test-token-0123456789abcdeX")];
    assert_eq!(http(addr, "GET", "/metrics", &wrong, "").status, 401);
    let evil = [auth[0], ("Host", "evil.example.com")];
    assert_eq!(http(addr, "GET", "/metrics", &evil, "").status, 403);
    assert_eq!(http(addr, "POST", "/metrics", &auth, "{}").status, 405);

    let (first, before) = scrape(addr, &auth);
    assert_eq!(
        first.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let version = before
        .iter()
        .find(|s| s.name == "hooks_mcp_build_info")
        .unwrap_or_else(|| panic!("no build info in\n{}", first.body));
    assert_eq!(version.value, 1.0);
    assert!(
        version
            .labels
            .iter()
            .any(|(k, v)| k == "version" && !v.is_empty()),
        "{version:?}"
    );
    let ok = [("tool", "channel_list"), ("outcome", "ok")];
    assert_eq!(value(&before, "hooks_mcp_tool_calls_total", &ok), Some(0.0));

    // A successful call, a tool error (invalid arguments) and a protocol error (unknown tool).
    let session = mcp_session(addr, &auth);
    let listed = mcp_request(addr, &session, &auth, &call(2, "channel_list", json!({})));
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    let bad = mcp_request(
        addr,
        &session,
        &auth,
        &call(3, "channel_publish", json!({})),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    let unknown = mcp_request(addr, &session, &auth, &call(4, "no_such_tool", json!({})));
    assert!(unknown["error"].is_object(), "{unknown}");

    // Hook events: an HTTP hook answered, one refused, a forwarded event refused (SQLite).
    let start = r#"{"session_id":"s-1","hook_event_name":"SessionStart","source":"startup"}"#;
    let answered = http(addr, "POST", "/hooks/SessionStart", &auth, start);
    assert_eq!(answered.status, 200, "{}", answered.body);
    let refused = http(
        addr,
        "POST",
        "/hooks/PreToolUse",
        &auth,
        r#"{"session_id":"s"}"#,
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    let forwarded = http(
        addr,
        "POST",
        "/hook/PreToolUse",
        &auth,
        r#"{"v":1,"store":"x","channels":null,"gate":true,"payload":{}}"#,
    );
    assert_eq!(forwarded.status, 422, "{}", forwarded.body);
    let made_up = http(
        addr,
        "POST",
        "/hooks/NoSuchEvent",
        &auth,
        r#"{"session_id":"s"}"#,
    );
    assert!(made_up.status < 500, "{}", made_up.body);

    let (reply, after) = scrape(addr, &auth);
    let moved = |name: &str, labels: &[(&str, &str)]| {
        let was = value(&before, name, labels).unwrap_or(0.0);
        let now = value(&after, name, labels)
            .unwrap_or_else(|| panic!("no {name}{labels:?} in\n{}", reply.body));
        now - was
    };
    for (name, labels) in [
        ("hooks_mcp_tool_calls_total", &ok[..]),
        (
            "hooks_mcp_tool_calls_total",
            &[("tool", "channel_publish"), ("outcome", "tool_error")],
        ),
        (
            "hooks_mcp_tool_calls_total",
            &[("tool", "(unknown)"), ("outcome", "protocol_error")],
        ),
        (
            "hooks_mcp_tool_call_duration_seconds_count",
            &[("tool", "channel_list")],
        ),
        (
            "hooks_mcp_hook_events_total",
            &[
                ("route", "http"),
                ("event", "SessionStart"),
                ("outcome", "answered"),
            ],
        ),
        (
            "hooks_mcp_hook_events_total",
            &[
                ("route", "http"),
                ("event", "PreToolUse"),
                ("outcome", "refused"),
            ],
        ),
        (
            "hooks_mcp_hook_events_total",
            &[
                ("route", "forward"),
                ("event", "PreToolUse"),
                ("outcome", "refused"),
            ],
        ),
        (
            "hooks_mcp_hook_event_duration_seconds_count",
            &[("route", "http"), ("event", "SessionStart")],
        ),
    ] {
        assert_eq!(
            moved(name, labels),
            1.0,
            "{name}{labels:?}:\n{}",
            reply.body
        );
    }
    // A made-up event name creates no series of its own.
    assert!(!reply.body.contains("NoSuchEvent"), "{}", reply.body);
    assert_eq!(
        moved(
            "hooks_mcp_tool_calls_total",
            &[("tool", "channel_list"), ("outcome", "tool_error")]
        ),
        0.0
    );
    assert_eq!(
        value(
            &after,
            "hooks_mcp_sessions",
            &[("transport", "streamable-http")]
        ),
        Some(1.0),
        "{}",
        reply.body
    );
    assert_eq!(
        value(&after, "hooks_mcp_sessions", &[("transport", "sse")]),
        Some(0.0)
    );
    assert_eq!(value(&after, "hooks_mcp_store_up", &[]), Some(1.0));
    // The only daemon of its store reports the store's gauges.
    assert_eq!(value(&after, "hooks_mcp_store_reporter", &[]), Some(1.0));
    // The answered hook event's session is live, fleet-wide.
    assert!(
        value(&after, "hooks_mcp_live_sessions", &[]).is_some_and(|n| n >= 1.0),
        "{}",
        reply.body
    );
    assert!(
        value(
            &after,
            "hooks_mcp_store_records",
            &[("kind", "active_broadcasts")]
        )
        .is_some(),
        "{}",
        reply.body
    );

    // OpenMetrics when the scraper asks for it.
    let accept = [
        auth[0],
        ("Accept", "application/openmetrics-text; version=1.0.0"),
    ];
    let (open, samples) = scrape(addr, &accept);
    assert!(
        open.header("content-type")
            .is_some_and(|t| t.starts_with("application/openmetrics-text")),
        "{:?}",
        open.headers
    );
    assert!(open.body.ends_with("# EOF\n"), "{}", open.body);
    assert!(value(&samples, "hooks_mcp_tool_calls_total", &ok).is_some());
}

#[test]
fn scheduler_firings_and_lag_are_counted() {
    let test = "metrics::scheduler_firings_and_lag_are_counted";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(test, home.path(), &[("HOOKS_MCP_SCHEDULER_TICK_MS", "50")]);
    daemon.wait_ready();
    let addr = daemon.addr;
    let session = mcp_session(addr, &[]);
    let at = store::to_rfc3339(server_full::now_ms() + 300);
    let created = mcp_request(
        addr,
        &session,
        &[],
        &call(
            2,
            "schedule_create",
            json!({ "channel": "metrics", "message": "due", "at": at }),
        ),
    );
    assert_eq!(created["result"]["isError"], false, "{created}");
    let deadline = Instant::now() + PATIENCE;
    let samples = loop {
        let (_, samples) = scrape(addr, &[]);
        if value(&samples, "hooks_mcp_scheduler_firings_total", &[]) == Some(1.0) {
            break samples;
        }
        assert!(Instant::now() < deadline, "the schedule never fired");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        value(&samples, "hooks_mcp_scheduler_lag_seconds_count", &[]),
        Some(1.0)
    );
    let ticks = value(
        &samples,
        "hooks_mcp_scheduler_ticks_total",
        &[("outcome", "ok")],
    );
    assert!(ticks.is_some_and(|t| t >= 1.0), "{ticks:?}");
    assert!(
        value(
            &samples,
            "hooks_mcp_scheduler_last_tick_timestamp_seconds",
            &[]
        )
        .is_some()
    );
}

#[test]
fn a_daemon_that_hears_its_store_ticks_every_ten_seconds_when_idle() {
    let test = "metrics::a_daemon_that_hears_its_store_ticks_every_ten_seconds_when_idle";
    let home = tempfile::tempdir().unwrap();
    // The default one-second tick: while the daemon hears the store's changes, its idle looks
    // come every 10 s instead, and the read API reports that pace.
    let daemon = Daemon::start(test, home.path(), &[]);
    daemon.wait_ready();
    let addr = daemon.addr;
    let pace = || {
        let overview = http(addr, "GET", "/api/v1/overview", &[], "");
        assert_eq!(overview.status, 200, "{}", overview.body);
        overview.json()["scheduler"]["tick_ms"].as_u64().unwrap()
    };
    // The first tick may come before the feed is open (the next then a second later).
    let deadline = Instant::now() + PATIENCE;
    while pace() != 10_000 {
        assert!(
            Instant::now() < deadline,
            "the scheduler kept its one-second pace"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let ticks = || {
        let (_, samples) = scrape(addr, &[]);
        value(
            &samples,
            "hooks_mcp_scheduler_ticks_total",
            &[("outcome", "ok")],
        )
        .unwrap_or(0.0)
    };
    let before = ticks();
    std::thread::sleep(std::time::Duration::from_secs(4));
    let after = ticks();
    // At the one-second pace, four seconds hold four ticks.
    assert!(
        after - before <= 1.0,
        "{} ticks in 4 s of idleness",
        after - before
    );
}

#[test]
fn metrics_can_be_turned_off() {
    let test = "metrics::metrics_can_be_turned_off";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(test, home.path(), &[("HOOKS_MCP_METRICS", "off")]);
    daemon.wait_ready();
    let addr = daemon.addr;
    let off = http(addr, "GET", "/metrics", &[], "");
    assert_eq!(off.status, 404, "{}", off.body);
    assert!(off.body.contains("HOOKS_MCP_METRICS=off"), "{}", off.body);
    // Everything else serves as before.
    let session = mcp_session(addr, &[]);
    let listed = mcp_request(addr, &session, &[], &call(2, "channel_list", json!({})));
    assert_eq!(listed["result"]["isError"], false, "{listed}");
}

#[test]
fn an_invalid_metrics_setting_stops_start_up() {
    let test = "metrics::an_invalid_metrics_setting_stops_start_up";
    let home = tempfile::tempdir().unwrap();
    let (status, log, _) = run_to_exit(test, home.path(), &[("HOOKS_MCP_METRICS", "maybe")]);
    assert!(!status.success(), "{log}");
    assert!(log.contains("HOOKS_MCP_METRICS: `maybe`"), "{log}");
}

/// The sum over `daemons` of the sample `name` with `labels` (absent samples add nothing), as
/// Prometheus's `sum` over the daemons' series computes it.
fn fleet_sum(daemons: &[&Daemon], name: &str, labels: &[(&str, &str)]) -> f64 {
    let auth = [("Authorization", BEARER)];
    daemons
        .iter()
        .map(|d| value(&scrape(d.addr, &auth).1, name, labels).unwrap_or(0.0))
        .sum()
}

#[test]
fn the_fleet_wide_gauges_are_reported_once_per_store() {
    let test = "metrics::the_fleet_wide_gauges_are_reported_once_per_store";
    child_entry();
    let Some(db) = Database::shared("metrics_fleet") else {
        pg::note(&pg::no_server_note("the fleet-wide gauges test was"));
        return;
    };
    let url = db.url();
    let env = [
        ("HOOKS_MCP_DATABASE_URL", url.as_str()),
        ("HOOKS_MCP_TOKEN", TOKEN),
        ("HOOKS_MCP_DB_POOL_SIZE", "2"),
    ];
    let homes: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let a = Daemon::start(test, homes[0].path(), &env);
    let b = Daemon::start(test, homes[1].path(), &env);
    a.wait_ready();
    b.wait_ready();
    let auth = [("Authorization", BEARER)];
    let session = mcp_session(b.addr, &auth);
    for id in 0..3 {
        let args = json!({"channel": "ops", "message": format!("message {id}")});
        let published = mcp_request(
            b.addr,
            &session,
            &auth,
            &call(10 + id, "channel_publish", args),
        );
        assert_eq!(published["result"]["isError"], false, "{published}");
    }
    let broadcasts = [("kind", "active_broadcasts")];

    // Each daemon reports itself; the store's gauges come from one of them, so summing over
    // the daemons gives the store's values, not twice them.
    for _ in 0..3 {
        assert_eq!(fleet_sum(&[&a, &b], "hooks_mcp_store_reporter", &[]), 1.0);
        assert_eq!(
            fleet_sum(&[&a, &b], "hooks_mcp_store_records", &broadcasts),
            3.0
        );
        assert_eq!(fleet_sum(&[&a, &b], "hooks_mcp_store_up", &[]), 2.0);
    }
    let reports =
        |d: &Daemon| value(&scrape(d.addr, &auth).1, "hooks_mcp_store_reporter", &[]) == Some(1.0);
    let (reporter, other) = if reports(&a) { (a, b) } else { (b, a) };
    assert!(!reports(&other));
    assert_eq!(
        value(
            &scrape(other.addr, &auth).1,
            "hooks_mcp_store_records",
            &broadcasts
        ),
        None,
        "the daemon that does not report leaves the store's gauges out"
    );

    // A third daemon joins: still one report.
    let c = Daemon::start(test, homes[2].path(), &env);
    c.wait_ready();
    assert_eq!(
        fleet_sum(
            &[&reporter, &other, &c],
            "hooks_mcp_store_records",
            &broadcasts
        ),
        3.0
    );
    assert!(!reports(&c));

    // The reporter stops (SIGTERM): another daemon reports from its next scrape on.
    reporter.signal("TERM");
    assert!(reporter.wait_exit().success(), "{}", reporter.text());
    drop(reporter);
    assert_eq!(
        fleet_sum(&[&other, &c], "hooks_mcp_store_reporter", &[]),
        1.0
    );
    assert_eq!(
        fleet_sum(&[&other, &c], "hooks_mcp_store_records", &broadcasts),
        3.0
    );

    // Killed without a word: its lease goes with its connection.
    let (killed, left) = if reports(&other) {
        (other, c)
    } else {
        (c, other)
    };
    killed.stop();
    let deadline = Instant::now() + PATIENCE;
    while !reports(&left) {
        assert!(Instant::now() < deadline, "the lease never came free");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        value(
            &scrape(left.addr, &auth).1,
            "hooks_mcp_store_records",
            &broadcasts
        ),
        Some(3.0)
    );
}
