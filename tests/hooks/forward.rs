//! The hook's fast path on PostgreSQL: with a daemon (`hooks-mcp-full serve`, streamable HTTP
//! on 127.0.0.1, an ephemeral port) on the same database, `hooks-mcp-hook` hands each event to
//! it and prints the same answer it computes when it opens the store itself; without a usable
//! daemon (stopped, wrong token, another store) it opens the store itself.
//!
//! Runs in a fresh schema on a PostgreSQL server of its own when the server programs are
//! installed (`initdb`, `pg_ctl`), else on `HOOKS_MCP_TEST_DATABASE_URL`
//! (`test_support::pg::Database`); with neither it is skipped with a note (locally:
//! `source .ci/postgres`).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::pg;

use crate::support::{Env, HookRun, bash_call, fixture_for, full_bin};

pub(crate) const TOKEN: &str = "hook-forward-token-0123456789";
const PATIENCE: Duration = test_support::PATIENCE;

fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "note: {text}");
}

/// A PostgreSQL database for one test: a fresh schema on a server of its own, or on the server
/// `HOOKS_MCP_TEST_DATABASE_URL` names. `None` (after a note) when neither is available.
pub(crate) struct Database {
    pub(crate) url: String,
    _db: pg::Database,
}

impl Database {
    pub(crate) fn new(test: &str) -> Option<Database> {
        let Some(db) = pg::Database::new("hook_forward") else {
            note(&format!(
                "neither PostgreSQL's server programs nor {} are available: {test} was \
                 skipped; locally `source .ci/postgres`",
                pg::TEST_DATABASE_URL_ENV
            ));
            return None;
        };
        Some(Database {
            url: db.url(),
            _db: db,
        })
    }
}

/// A `hooks-mcp-full serve` daemon (streamable HTTP on 127.0.0.1, ephemeral port).
pub(crate) struct Daemon {
    inner: test_support::daemon::Daemon,
    pub(crate) port: u16,
}

impl Daemon {
    /// Starts a daemon on `env`'s store: PostgreSQL at `url`, or SQLite without one.
    pub(crate) fn start(env: &Env, url: Option<&str>) -> Daemon {
        Daemon::start_with(env, url, Some(TOKEN))
    }

    /// Starts a daemon with `token` (`None`: none, loopback only).
    pub(crate) fn start_with(env: &Env, url: Option<&str>, token: Option<&str>) -> Daemon {
        let mut command = Command::new(full_bin());
        command.env_clear();
        if let Some(url) = url {
            command.env("HOOKS_MCP_DATABASE_URL", url);
        }
        if let Some(token) = token {
            command.env("HOOKS_MCP_TOKEN", token);
        }
        command
            .arg("serve")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", env.home())
            .env("HOOKS_MCP_HOME", env.store_dir())
            .env("MCP_TRANSPORT", "streamable-http")
            .env("MCP_HOST", "127.0.0.1")
            .env("MCP_PORT", "0")
            .env("HOOKS_MCP_LOG", "info,rmcp=warn,daemon::hook_route=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let inner = test_support::daemon::Daemon::spawn(command);
        let daemon = Daemon {
            port: inner.port(),
            inner,
        };
        let deadline = Instant::now() + PATIENCE;
        while daemon.health().is_none() {
            assert!(Instant::now() < deadline, "never ready:\n{}", daemon.text());
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    pub(crate) fn text(&self) -> String {
        self.inner.text()
    }

    /// `/health?level=full` through `hooks-mcp-full health`, once the daemon serves.
    pub(crate) fn health(&self) -> Option<Value> {
        let out = Command::new(full_bin())
            .args(["health", "--level", "full"])
            .env("MCP_HOST", "127.0.0.1")
            .env("MCP_PORT", self.port.to_string())
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).unwrap())
    }

    /// The forwarded hook events answered and refused so far.
    fn hooks(&self) -> (u64, u64) {
        let h = self
            .health()
            .unwrap_or_else(|| panic!("unhealthy:\n{}", self.text()));
        assert_eq!(h["hooks"]["enabled"], json!(true), "{h}");
        (
            h["hooks"]["answered"].as_u64().unwrap(),
            h["hooks"]["refused"].as_u64().unwrap(),
        )
    }

    fn stop(&mut self) {
        self.inner.stop();
    }
}

/// The answer with the session's id replaced, to compare two sessions' answers.
fn normalized(run: &HookRun, session: &str) -> String {
    run.answer
        .as_ref()
        .map(|a| a.to_string().replace(session, "<session>"))
        .unwrap_or_default()
}

/// The same sequence of events for two fresh sessions on one store state, one through the
/// daemon and one opening the store itself: the answers (broadcasts of each severity, the
/// reminders' counting, the gate, a rewriting `pre` condition and a flagging `post` condition,
/// whose scripts see the hook's own environment and working directory) are identical, and
/// only the first session's events reached the daemon.
#[test]
fn answers_through_the_daemon_equal_direct_answers() {
    let Some(db) = Database::new("forward::answers_through_the_daemon_equal_direct_answers") else {
        return;
    };
    let mut env = Env::new();
    env.vars
        .push(("HOOKS_MCP_DATABASE_URL".into(), db.url.clone()));
    for (channel, text, severity) in [
        ("global", "all hands at noon", "info"),
        ("deploys", "db is down", "alert"),
        ("ci", "main is red", "critical"),
        ("ops", "not subscribed", "critical"),
    ] {
        env.cli(&["channel", "publish", channel, text, "--severity", severity]);
    }
    env.cli(&["enforcement", "set", "every second call", "--cadence", "2"]);
    env.set_condition(json!({
        "name": "rewrite_and_ask",
        "step": "pre",
        "matcher": "Bash",
        "script": "printf '{\"additionalContext\":\"cwd %s mark %s\",\"updatedInput\":{\"timeout\":5},\"decision\":\"ask\"}' \"$PWD\" \"$HOOK_TEST_MARK\"",
    }));
    env.set_condition(json!({
        "name": "flag_after",
        "step": "post",
        "matcher": "any",
        "script": "echo flagged >&2; exit 2",
    }));
    let daemon = Daemon::start(&env, Some(&db.url));
    let cwd = env.home();
    let hook_env = [
        ("HOOKS_MCP_CHANNELS", "deploys,ci"),
        ("HOOKS_MCP_TOKEN", TOKEN),
        ("MCP_HOST", "127.0.0.1"),
        ("HOOK_TEST_MARK", "from-the-hook"),
    ];
    let port = daemon.port.to_string();
    let run = |session: &str, forward: &str, event: &str, mut payload: Value| {
        payload["session_id"] = session.into();
        payload["cwd"] = cwd.display().to_string().into();
        let mut vars = hook_env.to_vec();
        vars.push(("MCP_PORT", &port));
        vars.push(("HOOKS_MCP_HOOK_FORWARD", forward));
        env.hook_with(event, &payload.to_string(), &vars)
    };
    let mut prompt = fixture_for("user_prompt_submit", "x");
    prompt["prompt"] = "please set a condition that blocks force pushes".into();
    let events = [
        ("SessionStart", fixture_for("session_start", "x")),
        ("UserPromptSubmit", prompt),
        ("PreToolUse", bash_call("x", "ls")),
        ("PreToolUse", bash_call("x", "git status")),
        ("PostToolUse", fixture_for("post_tool_use_mcp", "x")),
        ("UserPromptSubmit", fixture_for("user_prompt_submit", "x")),
    ];
    let (before, refused_before) = daemon.hooks();
    for (event, payload) in &events {
        let via = run("session-via-daemon", "auto", event, payload.clone());
        let direct = run("session-direct", "off", event, payload.clone());
        assert_eq!(via.stderr, direct.stderr, "{event}: stderr");
        assert_eq!(
            normalized(&via, "session-via-daemon"),
            normalized(&direct, "session-direct"),
            "{event}: the daemon's answer differs from the direct one"
        );
        assert!(via.answer.is_some(), "{event}: no answer");
    }
    let (after, refused_after) = daemon.hooks();
    assert_eq!(
        after - before,
        events.len() as u64,
        "every `auto` event (and no `off` one) was answered by the daemon:\n{}",
        daemon.text()
    );
    assert_eq!(refused_after, refused_before);
    assert!(
        daemon.text().contains("hook event answered"),
        "{}",
        daemon.text()
    );

    // What the sequence delivered, so that equal answers are not equally empty.
    let pre = run("session-check", "auto", "PreToolUse", bash_call("x", "ls"));
    let context = pre.context();
    assert!(context.contains("main is red"), "{context}");
    assert!(!context.contains("not subscribed"), "{context}");
    assert!(
        context.contains(&format!("cwd {} mark from-the-hook", cwd.display())),
        "the condition ran in the hook's environment and directory: {context}"
    );
    assert_eq!(pre.specific("permissionDecision"), Some(&json!("ask")));
    assert_eq!(pre.specific("updatedInput").unwrap()["timeout"], json!(5));
}

/// A hook whose daemon cannot serve it opens the store itself and answers the same: with the
/// wrong token (401), for another store (refused), and with the daemon stopped.
#[test]
fn without_a_usable_daemon_the_hook_opens_the_store_itself() {
    let Some(db) =
        Database::new("forward::without_a_usable_daemon_the_hook_opens_the_store_itself")
    else {
        return;
    };
    let mut env = Env::new();
    env.vars
        .push(("HOOKS_MCP_DATABASE_URL".into(), db.url.clone()));
    env.cli(&[
        "channel",
        "publish",
        "ci",
        "main is red",
        "--severity",
        "critical",
    ]);
    let mut daemon = Daemon::start(&env, Some(&db.url));
    let port = daemon.port.to_string();
    let pre = |vars: &[(&str, &str)]| {
        let mut all = vec![("MCP_HOST", "127.0.0.1"), ("MCP_PORT", port.as_str())];
        all.extend_from_slice(vars);
        let run = env.hook_with("PreToolUse", &bash_call("s", "ls").to_string(), &all);
        assert_eq!(run.stderr, "");
        assert!(run.context().contains("main is red"), "{:?}", run.answer);
    };
    let (answered, refused) = daemon.hooks();

    pre(&[("HOOKS_MCP_TOKEN", "not-the-daemons-token-0000")]);
    pre(&[]);
    assert_eq!(
        daemon.hooks(),
        (answered, refused),
        "a request without the right token never reaches the hook logic"
    );

    // The same database and schema under another spelling is another store for the daemon.
    let other = if db.url.contains("options=") {
        db.url
            .replacen("options=", "options=-c%20work_mem%3D8MB%20", 1)
    } else {
        let sep = if db.url.contains('?') { '&' } else { '?' };
        format!("{}{sep}options=-c%20work_mem%3D8MB", db.url)
    };
    pre(&[
        ("HOOKS_MCP_TOKEN", TOKEN),
        ("HOOKS_MCP_DATABASE_URL", &other),
    ]);
    assert_eq!(daemon.hooks(), (answered, refused + 1));

    pre(&[("HOOKS_MCP_TOKEN", TOKEN)]);
    assert_eq!(daemon.hooks(), (answered + 1, refused + 1));

    daemon.stop();
    let started = Instant::now();
    pre(&[("HOOKS_MCP_TOKEN", TOKEN)]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a stopped daemon costs no wait: {:?}",
        started.elapsed()
    );
}
