//! The hook binary links no PostgreSQL client: on a PostgreSQL store that no local daemon
//! answers for, `hooks-mcp-hook` replaces itself with `hooks-mcp-full hook <Event>` (same
//! process), the payload replayed on its stdin. These tests need no database: an unreachable
//! URL is enough to see who answers. With a database, `forward.rs` checks that the handed-over
//! answers equal the daemon's.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{Env, bash_call, full_bin, hook_bin};

/// A URL no server answers on (port 1 on loopback refuses at once).
const UNREACHABLE: &str = "postgres://hooks@127.0.0.1:1/hooks";

/// Variables for an event on the unreachable PostgreSQL store, with no daemon to forward to.
fn on_postgres() -> Vec<(&'static str, String)> {
    // A port nothing listens on: the local daemon is absent.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    vec![
        ("HOOKS_MCP_DATABASE_URL", UNREACHABLE.to_owned()),
        ("HOOKS_MCP_DB_CONNECT_TIMEOUT_MS", "300".to_owned()),
        ("MCP_HOST", "127.0.0.1".to_owned()),
        ("MCP_PORT", free.to_string()),
    ]
}

/// Runs `bin hook <event>` with `stdin` and `vars`, in `env` (the variables every command of
/// the suite clears or sets, then `vars`), in `cwd` when given; returns its pid, stdout and stderr.
fn run(
    env: &Env,
    bin: &str,
    event: &str,
    stdin: &str,
    vars: &[(&str, String)],
    cwd: Option<&Path>,
) -> (u32, String, String) {
    let template = env.command(&["hook", event]);
    let mut command = Command::new(bin);
    command.args(["hook", event]);
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => command.env(k, v),
            None => command.env_remove(k),
        };
    }
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let pid = child.id();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "a hook always exits 0");
    (
        pid,
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn on_postgres_the_hook_binary_becomes_the_full_binarys_hook() {
    let env = Env::new();
    // A stand-in for the full binary: `/bin/sh`, which the hand-over starts as
    // `/bin/sh hook PreToolUse` in the hook's directory, so it runs the script `./hook` there
    // (a script that is read, never executed itself, so no file is executed while written).
    let dir = env.dir.path().join("stand-in");
    std::fs::create_dir(&dir).unwrap();
    let record = dir.join("record");
    std::fs::write(
        dir.join("hook"),
        "printf '%s\\n' \"$$\" \"$0 $*\" \"$HOOKS_MCP_HOOK_HANDED_OVER\" > record\n\
         cat > record.stdin\nprintf '{\"from\":\"the full binary\"}'\n",
    )
    .unwrap();
    // The payload exactly as the client sends it, odd spacing and a trailing newline included.
    let payload = format!("  {}\n", bash_call("s1", "ls -la"));
    let mut vars = on_postgres();
    vars.push(("HOOKS_MCP_FULL_BIN", "/bin/sh".to_owned()));
    let (pid, stdout, stderr) = run(&env, hook_bin(), "PreToolUse", &payload, &vars, Some(&dir));
    assert_eq!(stdout, r#"{"from":"the full binary"}"#, "stderr: {stderr}");
    assert_eq!(stderr, "", "nothing was said before the hand-over");
    let recorded = std::fs::read_to_string(&record).unwrap();
    let lines: Vec<&str> = recorded.lines().collect();
    assert_eq!(
        lines,
        [pid.to_string().as_str(), "hook PreToolUse", "1"],
        "same process (exec), the hook command line, the hand-over flag"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("record.stdin")).unwrap(),
        payload,
        "the payload is replayed byte for byte"
    );
}

#[test]
fn a_handed_over_event_is_answered_and_reported_exactly_as_by_the_full_binary() {
    let env = Env::new();
    let payload = bash_call("s1", "cargo test").to_string();
    let mut vars = on_postgres();
    // An invalid channel name: the warning is printed once, by whichever process reads it.
    vars.push(("HOOKS_MCP_CHANNELS", "ci,bad name".to_owned()));
    let (_, lean_out, lean_err) = run(&env, hook_bin(), "PreToolUse", &payload, &vars, None);
    let (_, full_out, full_err) = run(&env, full_bin(), "PreToolUse", &payload, &vars, None);
    assert_eq!(lean_out, full_out);
    assert_eq!(lean_err, full_err);
    assert_eq!(
        lean_err.matches("`bad name`").count(),
        1,
        "the warning once: {lean_err}"
    );
    // The PostgreSQL backend itself reported the unreachable server: the full binary ran.
    assert!(
        lean_err.contains("cannot open the store")
            && lean_err.contains("postgres://hooks@127.0.0.1:1/hooks"),
        "{lean_err}"
    );
    assert!(!lean_err.contains("hands over"), "{lean_err}");
}

#[test]
fn without_the_full_binary_the_hook_says_where_it_looked_and_answers_nothing() {
    let env = Env::new();
    let missing = env.dir.path().join("no-such-binary");
    let mut vars = on_postgres();
    vars.push(("HOOKS_MCP_FULL_BIN", missing.display().to_string()));
    let payload = bash_call("s1", "ls").to_string();
    let (_, stdout, stderr) = run(&env, hook_bin(), "PreToolUse", &payload, &vars, None);
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("cannot open the store")
            && stderr.contains(&missing.display().to_string())
            && stderr.contains("HOOKS_MCP_FULL_BIN"),
        "{stderr}"
    );
}

#[test]
fn a_refusing_postgres_server_costs_the_hook_one_attempt_not_the_connect_timeout() {
    let env = Env::new();
    let payload = bash_call("s1", "cargo test").to_string();
    let mut vars = on_postgres();
    // Two minutes to connect: a hook that retried until then would hold the agent's tool call
    // that long on every event while the server is down.
    vars.retain(|(k, _)| *k != "HOOKS_MCP_DB_CONNECT_TIMEOUT_MS");
    vars.push(("HOOKS_MCP_DB_CONNECT_TIMEOUT_MS", "120000".to_owned()));
    for bin in [hook_bin(), full_bin()] {
        let began = std::time::Instant::now();
        let (_, stdout, stderr) = run(&env, bin, "PreToolUse", &payload, &vars, None);
        let took = began.elapsed();
        assert_eq!(stdout, "", "the hook gives way: {stderr}");
        // The cause, not only the client's "error connecting to server".
        assert!(
            stderr.contains("cannot open the store") && stderr.contains("refused"),
            "{stderr}"
        );
        assert!(!stderr.contains("no connection within"), "{stderr}");
        assert!(took < std::time::Duration::from_secs(60), "{bin}: {took:?}");
    }
}
