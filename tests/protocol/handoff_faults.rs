//! A handed-over session when things go wrong: a store the full server cannot open yet, a stdio
//! server that is missing or that `exec` refuses, an `initialize` id too long for the
//! environment, a client that stops reading, and stdin or stdout left non-blocking.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rustix::fs::{FlockOperation, OFlags, fcntl_getfl, fcntl_lock, fcntl_setfl};
use serde_json::{Value, json};

use crate::support::*;

/// `hooks-mcp` on the store in `home`, stdin and stdout as given, stderr discarded.
fn front(home: &Path, stdin: Stdio, stdout: Stdio) -> Command {
    front_command(home, stdin, stdout, Stdio::null())
}

fn read_reply(stdout: &mut impl BufRead) -> Value {
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

/// The active messages of the store in `home`, counted by a session of its own.
fn messages_in(home: &Path) -> Value {
    let mut s = Server::with_env(&[("HOOKS_MCP_HOME", home.to_str().unwrap())]);
    s.handshake();
    let r = s.ask(&call(1, "channel_list", json!({})));
    r["result"]["structuredContent"]["total_active"].clone()
}

fn publish(id: u64) -> String {
    call(
        id,
        "channel_publish",
        json!({"channel": "ops", "message": format!("message {id}")}),
    )
}

/// The companions beside a `hooks-mcp-full` link in a folder of its own (the stdio server
/// linked there too when `with_stdio`), and the environment that points the front end at them.
fn companions(with_stdio: bool) -> (tempfile::TempDir, Vec<(&'static str, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("hooks-mcp-full");
    std::os::unix::fs::symlink(full_bin(), &full).unwrap();
    let real = Path::new(full_bin());
    if with_stdio {
        let stdio = real.with_file_name("hooks-mcp-stdio");
        std::os::unix::fs::symlink(stdio, dir.path().join("hooks-mcp-stdio")).unwrap();
    }
    let catalogue: PathBuf = real.with_file_name("hooks-mcp-catalogue");
    let env = vec![
        ("HOOKS_MCP_FULL_BIN", full.display().to_string()),
        ("HOOKS_MCP_CATALOGUE_BIN", catalogue.display().to_string()),
    ];
    (dir, env)
}

#[test]
fn a_store_locked_at_the_handoff_answers_every_request_and_serves_once_it_opens() {
    let home = tempfile::tempdir().unwrap();
    // Another process holds the whole file locked, as a long write does: SQLite cannot even
    // read it, and the full server's open waits the busy timeout.
    let lock = std::fs::File::create(home.path().join("state.db")).unwrap();
    fcntl_lock(&lock, FlockOperation::NonBlockingLockExclusive).unwrap();
    let mut s = Server::with(Options {
        env: vec![
            ("HOOKS_MCP_HOME", home.path().display().to_string()),
            ("HOOKS_MCP_BUSY_TIMEOUT_MS", "300".to_owned()),
        ],
        ..Options::default()
    });
    s.handshake();
    let r = s.ask(&call(2, "channel_list", json!({})));
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("cannot serve this session"), "{message}");
    let waited = message
        .split("locked for ")
        .nth(1)
        .unwrap_or_else(|| panic!("the lock is named: {message}"));
    assert!(
        !waited.starts_with('0'),
        "the real wait is named: {message}"
    );
    // Still locked: a later request is answered too, once it tried the store again.
    let r = s.ask(&request(3, "tools/list", json!({})));
    assert_eq!(r["error"]["code"], -32603, "{r}");
    // The lock ends: the next request is served, and the session goes on from there.
    drop(lock);
    let r = s.ask(&publish(4));
    assert_eq!(r["result"]["isError"], false, "{r}");
    let r = s.ask(&call(5, "channel_list", json!({})));
    assert_eq!(r["result"]["structuredContent"]["total_active"], 1, "{r}");
    assert!(s.ask(&request(6, "tools/list", json!({})))["result"]["tools"].is_array());
    let (status, rest) = s.finish();
    assert!(status.success(), "exit {status}");
    // The `initialize` the light path answered is not answered again.
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn a_missing_stdio_server_stops_startup_before_anything_is_answered() {
    let (_dir, env) = companions(false);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, stdout, stderr) = run_to_end(front_bin(), &env, format!("{INIT}\n").as_bytes());
    assert!(!status.success(), "{stdout}");
    assert!(
        stdout.is_empty(),
        "answered without a stdio server: {stdout}"
    );
    assert!(
        stderr.contains("hooks-mcp-stdio") && stderr.contains("HOOKS_MCP_FULL_BIN"),
        "names the binary and the fix: {stderr}"
    );
}

#[test]
fn a_stdio_server_exec_refuses_at_the_handoff_answers_what_was_handed_over() {
    let (dir, env) = companions(true);
    let mut s = Server::with(Options {
        env,
        ..Options::default()
    });
    s.handshake();
    std::fs::remove_file(dir.path().join("hooks-mcp-stdio")).unwrap();
    // The trigger and a request read with it.
    s.send_raw(format!("{}\n{}\n", publish(2), call(3, "channel_list", json!({}))).as_bytes());
    for id in [2, 3] {
        let r = s.recv();
        assert_eq!(r["id"], id, "{r}");
        assert_eq!(r["error"]["code"], -32603, "{r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("hooks-mcp-stdio") && message.contains("HOOKS_MCP_FULL_BIN"),
            "names the binary and the fix: {message}"
        );
    }
    let (status, rest) = s.finish();
    assert!(!status.success());
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn an_initialize_id_longer_than_the_environment_takes_survives_the_handoff() {
    // Valid JSON-RPC; Linux takes at most 128 KiB in one environment variable.
    let id = json!("x".repeat(200_000));
    let mut s = Server::start();
    let r = s.ask(&init_with_id(&id));
    assert!(r["result"]["serverInfo"].is_object(), "{r}");
    s.send(INITIALIZED);
    let r = s.ask(&call(2, "channel_list", json!({})));
    assert_eq!(r["result"]["isError"], false, "{r}");
    let (status, rest) = s.finish();
    assert!(status.success(), "exit {status}");
    assert!(rest.is_empty(), "the initialize is answered once: {rest:?}");
}

#[test]
fn a_client_that_stops_reading_ends_the_session_before_anything_more_is_changed() {
    let home = tempfile::tempdir().unwrap();
    let mut child = front(home.path(), Stdio::piped(), Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, "{INIT}").unwrap();
    assert_eq!(read_reply(&mut stdout)["id"], 1);
    writeln!(stdin, "{INITIALIZED}\n{}", publish(2)).unwrap();
    assert_eq!(read_reply(&mut stdout)["result"]["isError"], false);
    // The client closes its end of stdout and goes on writing.
    drop(stdout);
    for id in 3..6 {
        // Once the server is gone, the pipe refuses.
        let _ = writeln!(stdin, "{}", publish(id));
        std::thread::sleep(Duration::from_millis(100));
    }
    // The session ends with stdin still open, cleanly.
    let status = exits_within(&mut child, LINE_TIMEOUT);
    assert!(status.success(), "exit {status}");
    drop(stdin);
    assert_eq!(
        messages_in(home.path()),
        1,
        "only the answered call changed the store"
    );
}

#[test]
fn a_non_blocking_stdin_is_waited_on_after_the_handoff() {
    let home = tempfile::tempdir().unwrap();
    let (input, mut requests) = std::io::pipe().unwrap();
    fcntl_setfl(&input, fcntl_getfl(&input).unwrap() | OFlags::NONBLOCK).unwrap();
    let mut child = front(home.path(), Stdio::from(input), Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(requests, "{INIT}\n{INITIALIZED}").unwrap();
    assert_eq!(read_reply(&mut stdout)["id"], 1);
    writeln!(requests, "{}", call(2, "channel_list", json!({}))).unwrap();
    assert_eq!(read_reply(&mut stdout)["id"], 2);
    // Nothing to read for a while: the full server must wait, not take it for the end.
    std::thread::sleep(Duration::from_millis(500));
    writeln!(requests, "{}", request(3, "tools/list", json!({}))).unwrap();
    let r = read_reply(&mut stdout);
    assert_eq!(r["id"], 3);
    assert!(r["result"]["tools"].is_array(), "{r}");
    drop(requests);
    let status = exits_within(&mut child, LINE_TIMEOUT);
    assert!(status.success(), "exit {status}");
}

#[test]
fn a_non_blocking_stdout_read_late_gets_every_reply_after_the_handoff() {
    let home = tempfile::tempdir().unwrap();
    let (mut replies, output) = std::io::pipe().unwrap();
    fcntl_setfl(&output, fcntl_getfl(&output).unwrap() | OFlags::NONBLOCK).unwrap();
    let mut child = front(home.path(), Stdio::piped(), Stdio::from(output))
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A tool call hands off; the lists after it, far more than the pipe holds, are the full
    // server's to answer.
    let mut lines = vec![
        INIT.to_owned(),
        INITIALIZED.to_owned(),
        call(2, "channel_list", json!({})),
    ];
    let ids: Vec<u64> = (3..63).collect();
    lines.extend(ids.iter().map(|&id| request(id, "tools/list", json!({}))));
    stdin
        .write_all(format!("{}\n", lines.join("\n")).as_bytes())
        .unwrap();
    drop(stdin);
    // The client reads late: the pipe fills and the server finds it full.
    std::thread::sleep(Duration::from_secs(1));
    let mut text = String::new();
    replies.read_to_string(&mut text).unwrap();
    let status = exits_within(&mut child, LINE_TIMEOUT);
    assert!(status.success(), "exit {status}");
    let got: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect();
    let mut answered: Vec<u64> = got.iter().map(|r| r["id"].as_u64().unwrap()).collect();
    // rmcp runs each request in a task of its own: their answers may cross.
    answered.sort_unstable();
    let expected: Vec<u64> = [1, 2].into_iter().chain(ids).collect();
    assert_eq!(answered, expected, "every reply, once");
    let lists = got.iter().filter(|r| r["id"].as_u64() >= Some(3));
    assert!(lists.into_iter().all(|r| r["result"]["tools"].is_array()));
}

/// The bytes the front end hands over may end inside a request it read ahead: the full server
/// that cannot open its store reads that request whole (with the rest of it from stdin) and
/// answers it by its id, instead of two halves answered as unparsable lines.
#[test]
fn a_request_cut_at_the_handoff_is_answered_whole_while_the_store_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the store's directory should be: the store cannot open.
    let home = dir.path().join("home");
    std::fs::write(&home, "").unwrap();
    let mut child = front(&home, Stdio::piped(), Stdio::piped())
        .spawn()
        .unwrap();
    let big = call(
        5,
        "channel_publish",
        json!({"channel": "ops", "message": "x".repeat(9_000)}),
    );
    let input = [
        request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        call(3, "channel_list", json!({})),
        big,
        call(6, "channel_list", json!({})),
    ]
    .join("\n");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{input}\n").as_bytes()).unwrap();
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    exits_within(&mut child, Duration::from_secs(30));
    let replies: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(3), &json!(5), &json!(6)], "{out}");
    for r in &replies[1..] {
        assert_eq!(r["error"]["code"], -32603, "{r}");
    }
}
