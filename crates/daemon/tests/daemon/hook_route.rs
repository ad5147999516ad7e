//! `POST /hook/{event}` (forwarded events) and `POST /hooks/{Event}` (Claude Code's HTTP
//! hooks): behind the token, the `Host` check, the readiness gate and the body limit like
//! `/mcp`; answered by the hook dispatcher over the daemon's store; counted in
//! `/health?level=full`.

use crate::support::{Daemon, TOKEN, call, http, mcp_request, mcp_session, wait_health};

const BEARER: &str = "Bearer test-token-0123456789abcdef";

#[test]
fn hook_routes_are_gated_like_mcp_and_answered_by_the_dispatcher() {
    let test = "hook_route::hook_routes_are_gated_like_mcp_and_answered_by_the_dispatcher";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        test,
        home.path(),
        &[
            ("HOOKS_MCP_TOKEN", TOKEN),
            ("HOOKS_MCP_MAX_BODY_BYTES", "1024"),
            ("HOOKS_MCP_TEST_PHASE_DELAY_MS", "1500"),
        ],
    );
    let addr = daemon.addr;
    let auth = [("Authorization", BEARER)];
    let post =
        |headers: &[(&str, &str)], path: &str, body: &str| http(addr, "POST", path, headers, body);
    let start = r#"{"session_id":"s-1","hook_event_name":"SessionStart","source":"startup"}"#;

    // Start-up: 503, like the MCP endpoints (the delay holds the last phase).
    for path in ["/hook/PreToolUse", "/hooks/SessionStart"] {
        let early = post(&auth, path, start);
        assert_eq!(early.status, 503, "{path}: {}", early.body);
    }
    daemon.wait_ready();

    for path in ["/hook/PreToolUse", "/hooks/SessionStart"] {
        assert_eq!(post(&[], path, start).status, 401, "{path}");
        let wrong = [("Authorization", "Bearer test-token-0123456789abcdeX")];
        assert_eq!(post(&wrong, path, start).status, 401, "{path}");
        let evil = [auth[0], ("Host", "evil.example.com")];
        assert_eq!(post(&evil, path, start).status, 403, "{path}");
        assert_eq!(http(addr, "GET", path, &auth, "").status, 405, "{path}");
        let large = format!("{{\"x\":\"{}\"}}", "a".repeat(2000));
        assert_eq!(post(&auth, path, &large).status, 413, "{path}");
    }

    // An HTTP hook gets the command hook's answer: the banner, with the subscriptions the
    // header names.
    let channels = [auth[0], ("X-Hooks-Mcp-Channels", "ci, deploys")];
    let answered = post(&channels, "/hooks/SessionStart", start);
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(answered.header("content-type"), Some("application/json"));
    let body = answered.json();
    assert_eq!(body["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let context = body["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("`s-1`"), "{context}");
    assert!(context.contains("global, ci, deploys"), "{context}");
    // What a command hook would print on its stderr goes to the daemon's log as a warning.
    let odd = [auth[0], ("X-Hooks-Mcp-Channels", "ci, not a channel!")];
    let answered = post(&odd, "/hooks/SessionStart", start);
    assert_eq!(answered.status, 200, "{}", answered.body);
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    let warned = loop {
        let log = daemon.text();
        if let Some(line) = log.lines().find(|l| l.contains("not a channel")) {
            break line.to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no note: {log}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(warned.contains(" WARN "), "{warned}");
    // Nothing to say: an empty 2xx. A payload it cannot take: 400 with one line.
    let nothing = post(
        &auth,
        "/hooks/PostToolUse",
        r#"{"session_id":"s","tool_name":"Bash"}"#,
    );
    assert_eq!(nothing.status, 204, "{}", nothing.body);
    assert_eq!(nothing.body, "");
    let other = post(&auth, "/hooks/Stop", r#"{"session_id":"s"}"#);
    assert_eq!(other.status, 204, "{}", other.body);
    let bad = post(&auth, "/hooks/PreToolUse", r#"{"session_id":"s"}"#);
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("tool_name"), "{}", bad.body);
    assert_eq!(bad.body.trim_end().lines().count(), 1, "{}", bad.body);
    // Another Claude Code event: nothing to say. A name that is no event (a mistyped or
    // mangled hook URL): 404 naming the events, so the client shows an error, not success.
    let quiet = post(&auth, "/hooks/Notification", r#"{"session_id":"s"}"#);
    assert_eq!(quiet.status, 204, "{}", quiet.body);
    for path in [
        "/hooks/NoSuchEvent",
        "/hooks/UserPromptSubmit/extra",
        "/hooks/User%50romptSubmit",
        "/hooks/",
    ] {
        let wrong = post(&auth, path, r#"{"session_id":"s","prompt":"hi"}"#);
        assert_eq!(wrong.status, 404, "{path}: {}", wrong.body);
        assert!(
            wrong.body.contains("UserPromptSubmit, "),
            "{path}: {}",
            wrong.body
        );
    }

    // A forwarded event over SQLite is refused: hooks open an SQLite store themselves.
    let forwarded = post(
        &auth,
        "/hook/PreToolUse",
        r#"{"v":1,"store":"x","channels":null,"gate":true,"payload":{}}"#,
    );
    assert_eq!(forwarded.status, 422, "{}", forwarded.body);
    assert!(forwarded.body.contains("SQLite"), "{}", forwarded.body);

    let health = wait_health(addr, "hook counters", |h| h["hooks"].is_object());
    assert_eq!(health["hooks"]["answered"], 0, "{health}");
    assert_eq!(health["hooks"]["refused"], 1, "{health}");
    assert_eq!(health["hooks"]["http"]["answered"], 5, "{health}");
    assert_eq!(health["hooks"]["http"]["quiet"], 1, "{health}");
    assert_eq!(health["hooks"]["http"]["refused"], 5, "{health}");
    assert!(
        !daemon.log.text().contains(TOKEN),
        "the token leaked into the log"
    );
}

/// An HTTP hook whose condition's script runs long holds only its own request: the daemon's
/// store reads, probes and tool calls are answered while the script runs (the script waits
/// for a file this test writes only once they were).
#[test]
fn a_long_condition_script_holds_only_its_own_hook() {
    let test = "hook_route::a_long_condition_script_holds_only_its_own_hook";
    let home = tempfile::tempdir().unwrap();
    let daemon = slow_condition_daemon(test, home.path(), &[]);
    let addr = daemon.addr;
    let started = home.path().join("script-started");
    let go = home.path().join("go");
    let script = format!(
        "touch '{}'; i=0; while [ ! -e '{}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; exit 0",
        started.display(),
        go.display()
    );
    let session = mcp_session(addr, &[]);
    set_bash_condition(addr, &session, "slow", &script);

    let payload = bash_pre_tool_use("toolu_slow");
    let (done, hook) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(http(addr, "POST", "/hooks/PreToolUse", &[], &payload).status);
    });
    wait_until("the script never started", || started.exists());
    // While the script runs: a store probe, a read of the API and a tool that writes.
    let probe = http(addr, "GET", "/health?level=db", &[], "");
    assert_eq!(probe.status, 200, "{}", probe.body);
    let overview = http(addr, "GET", "/api/v1/overview", &[], "");
    assert_eq!(overview.status, 200, "{}", overview.body);
    let published = mcp_request(
        addr,
        &session,
        &[],
        &call(
            3,
            "channel_publish",
            serde_json::json!({"channel": "ops", "message": "while a script runs"}),
        ),
    );
    assert_eq!(published["result"]["isError"], false, "{published}");
    assert!(
        hook.try_recv().is_err(),
        "the hook was answered before its script could end"
    );
    std::fs::write(&go, "").unwrap();
    let status = hook.recv_timeout(crate::support::PATIENCE).unwrap();
    assert!(status == 200 || status == 204, "{status}");
}

/// A ready daemon whose condition scripts may run for two minutes, with `extra` variables.
fn slow_condition_daemon(test: &str, home: &std::path::Path, extra: &[(&str, &str)]) -> Daemon {
    let mut vars = vec![
        ("HOOKS_MCP_CONDITIONS_GATE", "off"),
        ("HOOKS_MCP_CONDITION_TIMEOUT_MS", "120000"),
    ];
    vars.extend_from_slice(extra);
    let daemon = Daemon::start(test, home, &vars);
    daemon.wait_ready();
    daemon
}

/// Sets condition `name`: `script` before every `Bash` call.
fn set_bash_condition(addr: std::net::SocketAddr, session: &str, name: &str, script: &str) {
    let set = mcp_request(
        addr,
        session,
        &[],
        &call(
            2,
            "condition_set",
            serde_json::json!({"name": name, "step": "pre", "matcher": "bash",
                               "script": script, "session_id": "operator"}),
        ),
    );
    assert_eq!(set["result"]["isError"], false, "{set}");
}

/// A `PreToolUse` payload of a `Bash` call with id `tool_use_id`.
fn bash_pre_tool_use(tool_use_id: &str) -> String {
    serde_json::json!({"session_id": "h-1", "transcript_path": "/t", "cwd": "/tmp",
                       "hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": tool_use_id})
    .to_string()
}

/// Waits (at most [`crate::support::PATIENCE`]) until `done`; panics with `failure` after that.
fn wait_until(failure: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{failure}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether process `pid` still runs (it is neither gone nor a zombie).
fn running(pid: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    !matches!(state, None | Some('Z' | 'X'))
}

#[test]
fn a_script_waited_for_at_the_drain_deadline_ends_with_the_daemon() {
    let test = "hook_route::a_script_waited_for_at_the_drain_deadline_ends_with_the_daemon";
    let home = tempfile::tempdir().unwrap();
    let daemon = slow_condition_daemon(test, home.path(), &[("HOOKS_MCP_DRAIN_SECS", "1")]);
    let addr = daemon.addr;
    let (script_pid, child_pid) = (home.path().join("pid"), home.path().join("child"));
    // The script and a child of its own, both far longer than the drain.
    let script = format!(
        "sleep 60 & echo $! > '{}.tmp'; mv '{0}.tmp' '{0}'; echo $$ > '{}.tmp'; mv '{1}.tmp' '{1}'; wait",
        child_pid.display(),
        script_pid.display()
    );
    set_bash_condition(addr, &mcp_session(addr, &[]), "long", &script);
    let payload = bash_pre_tool_use("toolu_long");
    std::thread::spawn(move || {
        let _ = crate::support::try_http(addr, "POST", "/hooks/PreToolUse", &[], &payload);
    });
    wait_until("the script never started", || script_pid.exists());
    let pids = [
        std::fs::read_to_string(&script_pid)
            .unwrap()
            .trim()
            .to_owned(),
        std::fs::read_to_string(&child_pid)
            .unwrap()
            .trim()
            .to_owned(),
    ];
    assert!(pids.iter().all(|p| running(p)), "{pids:?}");

    daemon.signal("TERM");
    let status = daemon.wait_exit();
    assert!(status.success(), "{status:?}\n{}", daemon.log.text());
    wait_until("the script's processes outlived the daemon", || {
        !pids.iter().any(|p| running(p))
    });
    let log = daemon.log.text();
    assert!(log.contains("the drain deadline (1 s"), "{log}");
    assert!(
        log.contains("ended 1 condition script(s) that a hook was still waiting for"),
        "{log}"
    );
}
