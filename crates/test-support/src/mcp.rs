//! MCP over HTTP for tests: JSON-RPC request bodies, a Streamable HTTP session, SSE replies and
//! a legacy SSE session.

use std::io::Read;
use std::net::SocketAddr;

use serde_json::{Value, json};

pub use crate::http::sse_messages;
use crate::http::{Open, http, open};

/// The headers a Streamable HTTP POST carries.
pub const MCP_POST: [(&str, &str); 1] = [("Accept", "application/json, text/event-stream")];

/// An `initialize` request body.
pub fn initialize(id: u64) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "daemon-tests", "version": "1" }
        }
    })
    .to_string()
}

/// The `notifications/initialized` body.
pub fn initialized() -> String {
    json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string()
}

/// A `tools/call` request body.
pub fn call(id: u64, tool: &str, arguments: Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": { "name": tool, "arguments": arguments }
    })
    .to_string()
}

/// Opens a Streamable HTTP session (initialize, then initialized); returns its id.
///
/// # Panics
/// When either step is refused.
pub fn mcp_session(addr: SocketAddr, auth: &[(&str, &str)]) -> String {
    let mut headers = MCP_POST.to_vec();
    headers.extend_from_slice(auth);
    let reply = http(addr, "POST", "/mcp", &headers, &initialize(1));
    assert_eq!(reply.status, 200, "initialize: {}", reply.body);
    let session = reply
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {}", reply.head))
        .to_owned();
    headers.push(("Mcp-Session-Id", &session));
    let ack = http(addr, "POST", "/mcp", &headers, &initialized());
    assert_eq!(ack.status, 202, "initialized: {}", ack.body);
    session
}

/// Sends one request in `session` and returns its response message.
///
/// # Panics
/// When the request is refused or its reply holds no response.
pub fn mcp_request(addr: SocketAddr, session: &str, auth: &[(&str, &str)], body: &str) -> Value {
    let mut headers = MCP_POST.to_vec();
    headers.extend_from_slice(auth);
    headers.push(("Mcp-Session-Id", session));
    let reply = http(addr, "POST", "/mcp", &headers, body);
    assert_eq!(reply.status, 200, "{body}: {}", reply.body);
    reply
        .messages()
        .into_iter()
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {}", reply.body))
}

/// A legacy SSE session: the open `/sse` stream and the endpoint it announced.
#[derive(Debug)]
pub struct SseSession {
    /// The `/sse` stream.
    pub stream: Open,
    /// `/messages?sessionId=...`.
    pub endpoint: String,
    consumed: usize,
}

impl SseSession {
    /// Opens `/sse` and reads the `endpoint` event.
    ///
    /// # Panics
    /// When the stream is refused or announces no endpoint.
    pub fn connect(addr: SocketAddr, auth: &[(&str, &str)]) -> SseSession {
        let mut headers = vec![("Accept", "text/event-stream")];
        headers.extend_from_slice(auth);
        let mut stream = open(addr, "GET", "/sse", &headers, "");
        assert_eq!(stream.status, 200, "{}", stream.seen);
        assert!(stream.read_until("event: endpoint\n"), "{}", stream.seen);
        assert!(stream.read_until("\n\n"), "{}", stream.seen);
        let endpoint = stream
            .seen
            .lines()
            .skip_while(|l| *l != "event: endpoint")
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap_or_else(|| panic!("no endpoint: {}", stream.seen))
            .trim()
            .to_owned();
        let consumed = stream.seen.len();
        SseSession {
            stream,
            endpoint,
            consumed,
        }
    }

    /// POSTs one message to the session's endpoint; returns the HTTP status.
    pub fn post(&self, addr: SocketAddr, auth: &[(&str, &str)], body: &str) -> u16 {
        http(addr, "POST", &self.endpoint, auth, body).status
    }

    /// The next `message` event's JSON.
    ///
    /// # Panics
    /// When the stream ends or fails first.
    pub fn next_message(&mut self) -> Value {
        loop {
            let pending = &self.stream.seen[self.consumed..];
            if let Some(end) = pending.find("\n\n") {
                let block = pending[..end].to_owned();
                self.consumed += end + 2;
                if block.lines().any(|l| l == "event: message") {
                    return sse_messages(&block)
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| panic!("no JSON in {block}"));
                }
                continue;
            }
            let mut buf = [0u8; 4096];
            let n = self.stream.stream.read(&mut buf).unwrap_or_else(|e| {
                panic!("the SSE stream failed ({e}) after:\n{}", self.stream.seen)
            });
            assert!(n > 0, "the SSE stream ended after:\n{}", self.stream.seen);
            self.stream
                .seen
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }

    /// The handshake: initialize (answered on the stream), then initialized.
    ///
    /// # Panics
    /// When a step fails.
    pub fn handshake(&mut self, addr: SocketAddr, auth: &[(&str, &str)]) {
        assert_eq!(self.post(addr, auth, &initialize(1)), 202);
        let reply = self.next_message();
        assert_eq!(reply["id"], 1, "{reply}");
        assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
        assert_eq!(self.post(addr, auth, &initialized()), 202);
    }
}

/// Polls `/health?level=full` until `check` accepts it.
///
/// # Panics
/// When it does not within [`crate::PATIENCE`] (with the last answer).
pub fn wait_health(addr: SocketAddr, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + crate::PATIENCE;
    loop {
        let body = http(addr, "GET", "/health?level=full", &[], "").json();
        if check(&body) {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: last health {body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
