//! `floor-http`: the floor `cargo xtask bench http` measures the daemon's stateless calls
//! against.
//!
//! A standard-library-only HTTP/1.1 server on 127.0.0.1 that answers every request of a
//! keep-alive connection with the same canned bytes: a whole response, the daemon's own reply
//! to the benchmark's call, captured by the benchmark. It reads each request's head and its
//! `Content-Length` body and parses nothing else, so a call here costs what any server's does
//! on this machine: the loopback's trip both ways and the two wake-ups of a round trip. It is
//! a measuring stick, not a server.
//!
//! Usage: `floor-http REPLY_FILE`. It prints `listening on 127.0.0.1:PORT` on stdout once it
//! accepts connections (an ephemeral port), serves each connection on a thread of its own, and
//! exits when its stdin closes, so that it never outlives the benchmark that started it.

#![allow(clippy::disallowed_macros)]

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::Arc;

/// The largest request head read before the connection is dropped.
const MAX_HEAD: usize = 64 * 1024;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("floor-http: usage: floor-http REPLY_FILE (a whole HTTP response)");
        return ExitCode::FAILURE;
    };
    let reply = match std::fs::read(&path) {
        Ok(bytes) if !bytes.is_empty() => Arc::new(bytes),
        Ok(_) => {
            eprintln!("floor-http: {} is empty", path.to_string_lossy());
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("floor-http: cannot read {}: {e}", path.to_string_lossy());
            return ExitCode::FAILURE;
        }
    };
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("floor-http: cannot listen on 127.0.0.1: {e}");
            return ExitCode::FAILURE;
        }
    };
    let port = match listener.local_addr() {
        Ok(addr) => addr.port(),
        Err(e) => {
            eprintln!("floor-http: no local address: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The benchmark holds stdin open while it needs this server.
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        while matches!(io::stdin().read(&mut sink), Ok(1..)) {}
        std::process::exit(0);
    });
    let mut out = io::stdout();
    if writeln!(out, "listening on 127.0.0.1:{port}")
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            continue;
        };
        let reply = reply.clone();
        std::thread::spawn(move || serve(stream, &reply));
    }
    ExitCode::SUCCESS
}

/// Answers each request on `stream` with `reply` until the client closes it or sends
/// something that is not a request with a readable length.
fn serve(mut stream: TcpStream, reply: &[u8]) {
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let mut pending: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        let request_end = loop {
            if let Some(end) = request_end(&pending) {
                break end;
            }
            if pending.len() > MAX_HEAD {
                return;
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&chunk[..n]),
            }
        };
        let Some(request_end) = request_end else {
            return;
        };
        pending.drain(..request_end);
        if stream.write_all(reply).is_err() {
            return;
        }
    }
}

/// Where the first request in `bytes` ends: `None` while its head or body is incomplete,
/// `Some(None)` when its head has no readable `Content-Length` where one is needed.
fn request_end(bytes: &[u8]) -> Option<Option<usize>> {
    let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map(|value| value.trim().parse::<usize>());
    let length = match length {
        None if head.starts_with("get ") || head.starts_with("delete ") => 0,
        Some(Ok(n)) => n,
        None | Some(Err(_)) => return Some(None),
    };
    let end = head_end + length;
    (bytes.len() >= end).then_some(Some(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_ends_after_its_body() {
        let post = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(request_end(post), Some(Some(post.len())));
        // A second request already read stays for the next turn.
        let two = [&post[..], &post[..]].concat();
        assert_eq!(request_end(&two), Some(Some(post.len())));
        // The header's name in any case.
        let upper = b"POST / HTTP/1.1\r\nCONTENT-LENGTH: 0\r\n\r\n";
        assert_eq!(request_end(upper), Some(Some(upper.len())));
        let get = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(request_end(get), Some(Some(get.len())));
    }

    #[test]
    fn an_incomplete_request_waits_and_an_unreadable_one_ends_the_connection() {
        assert_eq!(
            request_end(b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n"),
            None
        );
        assert_eq!(
            request_end(b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{"),
            None
        );
        assert_eq!(request_end(b"POST /mcp HTTP/1.1\r\n\r\n"), Some(None));
        assert_eq!(
            request_end(b"POST /mcp HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
            Some(None)
        );
    }

    #[test]
    fn serves_the_canned_reply_to_every_request_of_a_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            serve(stream, &reply);
        });
        let mut client = TcpStream::connect(addr).unwrap();
        client
            .set_read_timeout(Some(std::time::Duration::from_millis(300)))
            .unwrap();
        let one = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let request = b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
        // Two requests in one write, then a third without its body's last byte: two replies,
        // and nothing more until that byte comes.
        client
            .write_all(&[&request[..], &request[..]].concat())
            .unwrap();
        client.write_all(&request[..request.len() - 1]).unwrap();
        let mut answered = Vec::new();
        let mut chunk = [0u8; 256];
        loop {
            match client.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => answered.extend_from_slice(&chunk[..n]),
                // The timeout: nothing more is coming yet.
                Err(_) => break,
            }
        }
        assert_eq!(answered, [&one[..], &one[..]].concat());
        client.write_all(&request[request.len() - 1..]).unwrap();
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).unwrap();
        server.join().unwrap();
        assert_eq!(rest, one);
    }
}
