//! The fleet's load, all through the balancer: 2026-07-28 `tools/call` publishes, legacy
//! sessions publishing in their session, HTTP hook events, and a signed-in console page; each
//! request timed and its outcome kept.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The token the fleet's daemons take.
pub(super) const TOKEN: &str = "fleet-token-0123456789abcdef";

/// One request's record: when it started (since the load began), how long it took, and
/// whether it failed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample {
    pub(super) at: Duration,
    pub(super) took: Duration,
    pub(super) ok: bool,
}

/// What the load saw.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) samples: Mutex<Vec<Sample>>,
    pub(super) failures: Mutex<Vec<String>>,
    /// Bodies of the publishes acknowledged with a result.
    pub(super) acknowledged: Mutex<Vec<String>>,
}

/// A reply: status, head and (de-chunked) body.
pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) head: String,
    pub(super) body: String,
}

/// One request on a fresh connection (`Connection: close`), read to its end.
pub(super) fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Reply, String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    head.push_str(body);
    stream
        .write_all(head.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no response head")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    let mut body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    Ok(Reply {
        status,
        head,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok());
        let Some(size) = size.filter(|&s| s > 0) else {
            break;
        };
        let data = &raw[end + 2..];
        if data.len() < size {
            out.extend_from_slice(data);
            break;
        }
        out.extend_from_slice(&data[..size]);
        raw = data[size..].strip_prefix(b"\r\n").unwrap_or(&data[size..]);
    }
    out
}

/// The JSON-RPC response in a body (JSON or SSE).
fn response_of(body: &str) -> Option<Value> {
    serde_json::from_str::<Value>(body).ok().or_else(|| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
    })
}

impl Tally {
    fn record(&self, started: Instant, origin: Instant, ok: bool) {
        let sample = Sample {
            at: started.duration_since(origin),
            took: started.elapsed(),
            ok,
        };
        if let Ok(mut samples) = self.samples.lock() {
            samples.push(sample);
        }
    }

    fn fail(&self, what: String) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.push(what);
        }
    }

    /// A `channel_publish` of `message` (the body and headers given); recorded.
    fn publish(
        &self,
        lb: SocketAddr,
        origin: Instant,
        headers: &[(&str, &str)],
        body: &str,
        message: &str,
    ) {
        let started = Instant::now();
        let outcome = request(lb, "POST", "/mcp", headers, body);
        let ok = match &outcome {
            Ok(reply) => {
                let result = response_of(&reply.body).map(|m| m["result"].clone());
                reply.status == 200 && result.is_some_and(|r| r["isError"] == false)
            }
            Err(_) => false,
        };
        self.record(started, origin, ok);
        if ok {
            if let Ok(mut acknowledged) = self.acknowledged.lock() {
                acknowledged.push(message.to_owned());
            }
        } else {
            self.fail(match outcome {
                Ok(r) => format!(
                    "{message}: {} {}",
                    r.status,
                    r.body.chars().take(300).collect::<String>()
                ),
                Err(e) => format!("{message}: {e}"),
            });
        }
    }
}

/// Waits until the next paced send (every `period`, or not at all for a zero period).
fn pace(next: &mut Instant, period: Duration) {
    if period.is_zero() {
        return;
    }
    *next += period;
    std::thread::sleep(next.saturating_duration_since(Instant::now()));
}

/// A 2026-07-28 client: `channel_publish` calls without a session until `until`.
pub(super) fn modern_client(
    lb: SocketAddr,
    tally: &Tally,
    origin: Instant,
    worker: usize,
    period: Duration,
    until: &dyn Fn() -> bool,
) {
    let auth = format!("Bearer {TOKEN}");
    let headers = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "channel_publish"),
        ("Authorization", auth.as_str()),
    ];
    let mut next = Instant::now();
    let mut n = 0u64;
    while !until() {
        n += 1;
        let message = format!("modern-{worker}-{n}");
        let body = json!({
            "jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {
                "name": "channel_publish",
                "arguments": { "channel": "fleet", "message": message, "ttl_seconds": 3600 },
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        })
        .to_string();
        tally.publish(lb, origin, &headers, &body, &message);
        pace(&mut next, period);
    }
}

/// A legacy (2025-06-18) session: opened once, then `channel_publish` calls in it.
pub(super) fn legacy_client(
    lb: SocketAddr,
    tally: &Tally,
    origin: Instant,
    worker: usize,
    period: Duration,
    until: &dyn Fn() -> bool,
) {
    let auth = format!("Bearer {TOKEN}");
    let base = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("Authorization", auth.as_str()),
    ];
    let init = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "xtask-fleet", "version": "1"}},
    })
    .to_string();
    let session = match request(lb, "POST", "/mcp", &base, &init) {
        Ok(r) if r.status == 200 => r
            .head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| v.trim().to_owned())
            })
            .unwrap_or_default(),
        Ok(r) => {
            tally.fail(format!("legacy initialize: {} {}", r.status, r.body));
            return;
        }
        Err(e) => {
            tally.fail(format!("legacy initialize: {e}"));
            return;
        }
    };
    let mut headers = base.to_vec();
    headers.push(("Mcp-Session-Id", session.as_str()));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    if !matches!(request(lb, "POST", "/mcp", &headers, &initialized), Ok(r) if r.status == 202) {
        tally.fail("legacy initialized: not accepted".into());
        return;
    }
    let mut next = Instant::now();
    let mut n = 0u64;
    while !until() {
        n += 1;
        let message = format!("legacy-{worker}-{n}");
        let body = json!({
            "jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "channel_publish",
                       "arguments": {"channel": "fleet", "message": message, "ttl_seconds": 3600}},
        })
        .to_string();
        tally.publish(lb, origin, &headers, &body, &message);
        pace(&mut next, period);
    }
}

/// Claude Code's HTTP hook events (`UserPromptSubmit`, from the recorded payload).
pub(super) fn hook_client(
    lb: SocketAddr,
    tally: &Tally,
    origin: Instant,
    payload: &str,
    period: Duration,
    until: &dyn Fn() -> bool,
) {
    let auth = format!("Bearer {TOKEN}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Authorization", auth.as_str()),
    ];
    let mut next = Instant::now();
    while !until() {
        let started = Instant::now();
        let outcome = request(lb, "POST", "/hooks/UserPromptSubmit", &headers, payload);
        let ok = matches!(&outcome, Ok(r) if r.status == 200 || r.status == 204);
        tally.record(started, origin, ok);
        if !ok {
            tally.fail(match outcome {
                Ok(r) => format!("hook: {} {}", r.status, r.body),
                Err(e) => format!("hook: {e}"),
            });
        }
        pace(&mut next, period);
    }
}

/// A console page open in a browser: its live region re-read every second with the cookie.
pub(super) fn console_client(
    lb: SocketAddr,
    tally: &Tally,
    origin: Instant,
    cookie: &str,
    until: &dyn Fn() -> bool,
) {
    let headers = [("Cookie", cookie), ("HX-Request", "true")];
    while !until() {
        let started = Instant::now();
        let outcome = request(lb, "GET", "/console/channels", &headers, "");
        let ok = matches!(&outcome, Ok(r) if r.status == 200);
        tally.record(started, origin, ok);
        if !ok {
            tally.fail(match outcome {
                Ok(r) => format!("console: {} {}", r.status, r.head),
                Err(e) => format!("console: {e}"),
            });
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
