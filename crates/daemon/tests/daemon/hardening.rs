//! What a hostile or careless client cannot do: end sessions it does not hold (DELETE answers
//! as the specification says), or keep sockets open by stalling mid-request.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Daemon, MCP_POST, call, http, mcp_request, mcp_session, try_http};

#[test]
fn delete_ends_a_live_session_with_200_and_answers_404_for_ended_or_unknown_ones() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "hardening::delete_ends_a_live_session_with_200_and_answers_404_for_ended_or_unknown_ones",
        home.path(),
        &[],
    );
    daemon.wait_ready();
    let addr = daemon.addr;
    let session = mcp_session(addr, &[]);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    let reply = mcp_request(addr, &session, &[], &list);
    assert!(reply["result"]["tools"].is_array(), "{reply}");

    let with_id = [("Mcp-Session-Id", session.as_str())];
    let first = http(addr, "DELETE", "/mcp", &with_id, "");
    assert_eq!(first.status, 200, "a live session: {}", first.body);

    let second = http(addr, "DELETE", "/mcp", &with_id, "");
    assert_eq!(second.status, 404, "an ended session: {}", second.body);
    assert!(
        second.body.contains("initialize a new session"),
        "{}",
        second.body
    );

    let unknown = [("Mcp-Session-Id", "never-existed-0000")];
    let never = http(addr, "DELETE", "/mcp", &unknown, "");
    assert_eq!(never.status, 404, "an unknown id: {}", never.body);

    // Any other request carrying the ended id gets 404 too.
    let headers = [MCP_POST[0], ("Mcp-Session-Id", session.as_str())];
    let after = http(addr, "POST", "/mcp", &headers, &list);
    assert_eq!(
        after.status, 404,
        "a request in an ended session: {}",
        after.body
    );

    // Without an id there is nothing to end: a client error, not a success.
    let bare = http(addr, "DELETE", "/mcp", &[], "");
    assert_eq!(bare.status, 400, "{}", bare.body);
}

/// Opens a connection and sends part of a request, then stalls.
fn stall(addr: SocketAddr, part: &str) -> (TcpStream, Instant) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    stream.write_all(part.as_bytes()).unwrap();
    (stream, Instant::now())
}

/// Whether the server closes `stream` by `deadline` (reading and discarding any response).
fn closed_by(stream: &mut TcpStream, deadline: Instant) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                return true;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(e) => panic!("unexpected read error: {e}"),
        }
    }
}

#[test]
fn stalled_heads_and_bodies_are_closed_within_their_timeouts_while_others_are_served() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "hardening::stalled_heads_and_bodies_are_closed_within_their_timeouts_while_others_are_served",
        home.path(),
        &[
            ("HOOKS_MCP_HEADER_TIMEOUT_SECS", "2"),
            ("HOOKS_MCP_BODY_TIMEOUT_SECS", "2"),
            ("HOOKS_MCP_MAX_CONNECTIONS", "128"),
        ],
    );
    daemon.wait_ready();
    let addr = daemon.addr;
    let half_head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Ty");
    let mut heads: Vec<_> = (0..50).map(|_| stall(addr, &half_head)).collect();
    let half_body = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: 400\r\n\r\n{{\"jsonrpc\":"
    );
    let mut bodies: Vec<_> = (0..5).map(|_| stall(addr, &half_body)).collect();
    // A body that trickles in, a byte every 400 ms, is never silent for the timeout: it is
    // cut off all the same once the timeout has passed since its head.
    let (mut trickled, trickle_sent) = stall(addr, &half_body);
    let mut writer = trickled.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..25 {
            std::thread::sleep(Duration::from_millis(400));
            if writer.write_all(b" ").is_err() {
                return;
            }
        }
    });

    // Everyone else is served meanwhile.
    let session = mcp_session(addr, &[]);
    let reply = mcp_request(
        addr,
        &session,
        &[],
        &call(
            2,
            "channel_publish",
            json!({ "channel": "c", "message": "m" }),
        ),
    );
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    assert_eq!(http(addr, "GET", "/health", &[], "").status, 200);

    let limit = Duration::from_secs(2) + Duration::from_secs(1);
    for (i, (stream, sent)) in heads.iter_mut().enumerate() {
        assert!(
            closed_by(stream, *sent + limit),
            "stalled head #{i} still open after {limit:?}"
        );
    }
    for (i, (stream, sent)) in bodies.iter_mut().enumerate() {
        assert!(
            closed_by(stream, *sent + limit),
            "stalled body #{i} still open after {limit:?}"
        );
    }
    assert!(
        closed_by(&mut trickled, trickle_sent + limit),
        "a trickling body still open after {limit:?}"
    );
    trickle.join().unwrap();
    assert_eq!(http(addr, "GET", "/health", &[], "").status, 200);
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn open_connections_are_capped_so_stalled_clients_cannot_exhaust_descriptors() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "hardening::open_connections_are_capped_so_stalled_clients_cannot_exhaust_descriptors",
        home.path(),
        &[
            ("HOOKS_MCP_HEADER_TIMEOUT_SECS", "60"),
            ("HOOKS_MCP_MAX_CONNECTIONS", "8"),
        ],
    );
    daemon.wait_ready();
    let addr = daemon.addr;
    // The baseline once the readiness probe's connection is closed: the daemon may still hold
    // it for a moment after answering, which would count one connection too many here.
    let mut before = open_fds(daemon.pid());
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(50));
        before = before.min(open_fds(daemon.pid()));
    }
    let half_head = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nAcc");
    let stalled: Vec<_> = (0..50).map(|_| stall(addr, &half_head)).collect();
    // Give the daemon time to accept all it will (a loaded machine may take a while), then a
    // moment more: it must stop at the cap.
    let mut most = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while most < before + 8 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        most = most.max(open_fds(daemon.pid()));
    }
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(50));
        most = most.max(open_fds(daemon.pid()));
    }
    assert!(
        most >= before + 8,
        "the daemon should hold the 8 connections the cap allows: {before} -> {most}"
    );
    assert!(
        most <= before + 8 + 2,
        "the daemon holds more connections than its cap of 8: {before} fds before, {most} with \
         50 stalled clients"
    );
    // Clients that give up free their places: the daemon serves again.
    drop(stalled);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if try_http(addr, "GET", "/health", &[], "").is_some_and(|r| r.status == 200) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never served again after the stalled clients left"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
