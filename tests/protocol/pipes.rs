//! Pipes a client leaves full or hands over non-blocking: a stderr pipe nobody reads never
//! stalls the server (what it cannot take is dropped), and a non-blocking stdout read slowly
//! still gets every reply whole and in order.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
use serde_json::{Value, json};

use crate::support::{
    INIT, INITIALIZED, LINE_TIMEOUT, call, exits_within, front_command, pump, request,
};

/// `hooks-mcp` with a store of its own in `home`, stdin piped and stdout and stderr as given.
fn front(home: &std::path::Path, stdout: Stdio, stderr: Stdio) -> Command {
    front_command(home, Stdio::piped(), stdout, stderr)
}

#[test]
fn a_stderr_pipe_nobody_reads_never_stalls_the_server() {
    let home = tempfile::tempdir().unwrap();
    // The read end stays open and is never read: once the pipe is full, every write blocks.
    let (_unread, stderr) = std::io::pipe().unwrap();
    let mut child = front(home.path(), Stdio::piped(), Stdio::from(stderr))
        .env("HOOKS_MCP_LOG", "debug")
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let rx = pump(stdout);
    // Light requests first, then tool calls the full server answers, logging each at debug:
    // far more than a pipe holds.
    let mut lines = vec![INIT.to_owned(), INITIALIZED.to_owned()];
    lines.extend((2..52).map(|id| request(id, "ping", json!({}))));
    lines.extend((52..302).map(|id| call(id, "channel_list", json!({}))));
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let mut answered = BTreeSet::new();
    while answered.len() < 301 {
        let Ok(line) = rx.recv_timeout(LINE_TIMEOUT) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("stalled after {} of 301 replies", answered.len());
        };
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert!(reply.get("result").is_some(), "{reply}");
        answered.insert(reply["id"].as_u64().unwrap());
    }
    assert_eq!(answered, (1..302).collect::<BTreeSet<u64>>());
    drop(stdin);
    let status = exits_within(&mut child, LINE_TIMEOUT);
    assert!(status.success(), "exit {status}");
}

#[test]
fn the_light_path_writes_every_reply_whole_to_a_non_blocking_stdout_read_slowly() {
    let home = tempfile::tempdir().unwrap();
    let (mut replies, stdout) = std::io::pipe().unwrap();
    // As a parent whose pipes were made non-blocking hands them over.
    fcntl_setfl(&stdout, fcntl_getfl(&stdout).unwrap() | OFlags::NONBLOCK).unwrap();
    let mut child = front(home.path(), Stdio::from(stdout), Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Everything the light path answers at once, far more than the pipe holds.
    let mut lines = vec![INIT.to_owned(), INITIALIZED.to_owned()];
    let ids: Vec<u64> = (2..202).collect();
    for &id in &ids {
        if id % 2 == 0 {
            lines.push(request(id, "tools/list", json!({})));
        } else {
            lines.push(request(id, "ping", json!({})));
        }
    }
    stdin.write_all(lines.join("\n").as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    drop(stdin);
    // The server fills the pipe and finds it full; then it is read in small pieces.
    std::thread::sleep(Duration::from_millis(300));
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut chunk = [0u8; 2048];
        loop {
            match replies.read(&mut chunk).unwrap() {
                0 => return got,
                n => got.extend_from_slice(&chunk[..n]),
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    });
    let status = exits_within(&mut child, Duration::from_secs(60));
    let got = reader.join().unwrap();
    assert!(status.success(), "exit {status}");
    let text = String::from_utf8(got).unwrap();
    assert!(text.ends_with('\n'), "the last reply was cut short");
    let replies: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect();
    assert_eq!(replies.len(), 1 + ids.len());
    assert!(replies[0]["result"]["serverInfo"].is_object());
    let first_list = &replies[1]["result"];
    assert!(
        first_list["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    for (reply, &id) in replies[1..].iter().zip(&ids) {
        assert_eq!(reply["id"], json!(id), "in order");
        if id % 2 == 0 {
            assert_eq!(&reply["result"], first_list, "every list whole");
        } else {
            assert_eq!(reply["result"], json!({}));
        }
    }
}
