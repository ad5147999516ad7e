//! A small HTTP/1.1 client over [`std::net::TcpStream`]: one request per connection
//! (`Connection: close`), read to its end ([`http`], [`plain`]), or left streaming after its
//! head ([`open`]).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

use crate::PATIENCE;

/// `127.0.0.1:port`.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// An HTTP response read to its end.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// The head as received: the status line and the header lines.
    pub head: String,
    /// Header lines, lower-cased names.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: String,
}

impl Response {
    /// The first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    ///
    /// # Panics
    /// When it is not JSON (with the body).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The JSON-RPC messages of an SSE body (`data:` lines that hold JSON).
    pub fn messages(&self) -> Vec<Value> {
        sse_messages(&self.body)
    }
}

/// The JSON values in the `data:` fields of an SSE text.
pub fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// How a request's head is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// `Content-Type: application/json` and `Content-Length` when there is a body or the
    /// method is POST.
    Json,
    /// `Content-Length` always; no header the caller did not give.
    Plain,
}

fn request_bytes(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    version: &str,
    style: Style,
) -> Vec<u8> {
    let mut req = format!("{method} {path} {version}\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    match style {
        Style::Json if !body.is_empty() || method == "POST" => {
            req.push_str("Content-Type: application/json\r\n");
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        Style::Json => {}
        Style::Plain => req.push_str(&format!("Content-Length: {}\r\n", body.len())),
    }
    if version == "HTTP/1.1" {
        req.push_str("Connection: close\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    req.into_bytes()
}

/// One request on a fresh connection (`Connection: close`), read to the end. A body (or any
/// POST) is sent as `application/json`.
///
/// # Panics
/// When no response arrives.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    try_http(addr, method, path, headers, body)
        .unwrap_or_else(|| panic!("{method} {path}: no HTTP response from {addr}"))
}

/// [`http`], or `None` when the connection fails.
pub fn try_http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<Response> {
    send(addr, method, path, headers, body, Style::Json)
}

/// One request on a fresh connection (`Connection: close`), read to the end, with exactly the
/// headers given (plus `Host`, `Content-Length` and `Connection`): no content type is added.
///
/// # Panics
/// When no response arrives.
pub fn plain(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    send(addr, method, path, headers, body, Style::Plain)
        .unwrap_or_else(|| panic!("{method} {path}: no HTTP response from {addr}"))
}

fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    style: Style,
) -> Option<Response> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    stream.set_read_timeout(Some(PATIENCE)).ok()?;
    stream
        .write_all(&request_bytes(
            addr, method, path, headers, body, "HTTP/1.1", style,
        ))
        .ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    parse_response(&raw)
}

/// Parses a whole response: head, headers and (de-chunked) body.
pub fn parse_response(raw: &[u8]) -> Option<Response> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.lines();
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Some(Response {
        status,
        head,
        headers,
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

/// A request whose response head has arrived while its body may still stream: the open
/// connection, the status, and what the body held so far.
#[derive(Debug)]
pub struct Open {
    /// The connection (drop it to disconnect).
    pub stream: TcpStream,
    /// The status code.
    pub status: u16,
    /// The head and the body bytes read so far.
    pub seen: String,
}

impl Open {
    /// Reads until the received text contains `needle`; `false` when the connection ends (or
    /// times out) first.
    pub fn read_until(&mut self, needle: &str) -> bool {
        let mut buf = [0u8; 4096];
        while !self.seen.contains(needle) {
            match self.stream.read(&mut buf) {
                Ok(0) | Err(_) => return false,
                Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        true
    }
}

/// Sends a request and returns once the response head arrived, leaving the body streaming.
/// It speaks HTTP/1.0, so a streamed body arrives as plain bytes (no chunk framing) and ends
/// with the connection. A body (or any POST) is sent as `application/json`.
///
/// # Panics
/// When the connection fails or no response head arrives.
pub fn open(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Open {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{method} {path}: cannot connect to {addr}: {e}"));
    stream
        .set_read_timeout(Some(PATIENCE))
        .unwrap_or_else(|e| panic!("read timeout: {e}"));
    stream
        .write_all(&request_bytes(
            addr,
            method,
            path,
            headers,
            body,
            "HTTP/1.0",
            Style::Json,
        ))
        .unwrap_or_else(|e| panic!("{method} {path}: cannot send: {e}"));
    let mut open = Open {
        stream,
        status: 0,
        seen: String::new(),
    };
    assert!(
        open.read_until("\r\n\r\n"),
        "no response head for {method} {path}"
    );
    open.status = open
        .seen
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {}", open.seen));
    open
}
