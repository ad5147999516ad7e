//! A small HTTP/1.1 client for the daemon: one keep-alive connection, optionally in an MCP
//! session (`Mcp-Session-Id`) and with a bearer token; replies de-chunked.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

/// A `tools/call` request body.
pub(crate) fn tool_call(id: usize, tool: &str, arguments: serde_json::Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": { "name": tool, "arguments": arguments }
    })
    .to_string()
}

/// A keep-alive HTTP/1.1 connection (to `/mcp` unless a path is given), in one session.
pub(crate) struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    addr: SocketAddr,
    /// The `Mcp-Session-Id` sent with each request (none while empty).
    pub(crate) session: String,
    /// The bearer token sent with each request, if any.
    token: Option<String>,
    /// Further header lines sent with each request (`Name: value\r\n` each).
    headers: String,
}

/// A response: status, session header and body (de-chunked).
pub(crate) struct Reply {
    /// The HTTP status code.
    pub(crate) status: u16,
    /// The `Mcp-Session-Id` header, if any.
    pub(crate) session: Option<String>,
    /// The body, de-chunked.
    pub(crate) body: String,
    /// The `app` duration of a `Server-Timing` header, in milliseconds, if any.
    pub(crate) server_ms: Option<f64>,
}

/// The server closed the connection before answering a request (an idle keep-alive
/// connection it had already given up): the request was not read, so it can be sent again on a
/// new connection.
#[derive(Debug)]
pub(crate) struct ClosedBeforeReply;

impl std::fmt::Display for ClosedBeforeReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the server closed the connection before answering")
    }
}

impl std::error::Error for ClosedBeforeReply {}

impl Conn {
    /// A new connection without a session.
    pub(crate) fn connect(addr: SocketAddr) -> anyhow::Result<Conn> {
        let stream = TcpStream::connect(addr)
            .with_context(|| format!("connecting to the daemon on {addr}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            addr,
            session: String::new(),
            token: None,
            headers: String::new(),
        })
    }

    /// Sends `headers` with every request from now on (after the ones this client sets).
    pub(crate) fn with_headers(mut self, headers: &[(&str, &str)]) -> Conn {
        for (name, value) in headers {
            self.headers.push_str(&format!("{name}: {value}\r\n"));
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request from now on.
    pub(crate) fn with_token(mut self, token: &str) -> Conn {
        self.token = Some(token.to_owned());
        self
    }

    /// Connects and opens a session (initialize, initialized).
    pub(crate) fn session(addr: SocketAddr) -> anyhow::Result<Conn> {
        let mut conn = Conn::connect(addr)?;
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "xtask", "version": "1" }
            }
        });
        let reply = conn.request("POST", &init.to_string())?;
        anyhow::ensure!(
            reply.status == 200,
            "initialize: {} {}",
            reply.status,
            reply.body
        );
        conn.session = reply.session.context("initialize: no Mcp-Session-Id")?;
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let reply = conn.request("POST", &initialized.to_string())?;
        anyhow::ensure!(reply.status == 202, "initialized: {}", reply.status);
        Ok(conn)
    }

    /// Opens the session's standalone GET stream on this connection and keeps it.
    pub(crate) fn open_get(mut self) -> anyhow::Result<TcpStream> {
        let head = format!(
            "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {}\r\n\r\n",
            self.addr, self.session
        );
        self.writer.write_all(head.as_bytes())?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        anyhow::ensure!(line.contains(" 200 "), "GET /mcp: {line}");
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            if line.trim_end().is_empty() {
                break;
            }
        }
        Ok(self.writer)
    }

    /// One `tools/call`; fails on anything but a successful result.
    pub(crate) fn call(&mut self, body: &str) -> anyhow::Result<()> {
        let reply = self.request("POST", body)?;
        anyhow::ensure!(
            reply.status == 200
                && reply.body.contains("\"result\"")
                && !reply.body.contains("\"isError\":true"),
            "tools/call failed: {} {}",
            reply.status,
            reply.body
        );
        Ok(())
    }

    /// Replaces the connection with a new one to the same address, in the same session.
    pub(crate) fn reconnect(&mut self) -> anyhow::Result<()> {
        let session = std::mem::take(&mut self.session);
        let token = self.token.take();
        let headers = std::mem::take(&mut self.headers);
        *self = Conn::connect(self.addr)?;
        self.session = session;
        self.token = token;
        self.headers = headers;
        Ok(())
    }

    /// Sends a request to `/mcp` and reads its reply.
    pub(crate) fn request(&mut self, method: &str, body: &str) -> anyhow::Result<Reply> {
        self.request_at(method, "/mcp", body)
    }

    /// Sends a request to `path` and reads its reply.
    ///
    /// # Errors
    /// [`ClosedBeforeReply`] when the connection was closed (or reset) before any byte of the
    /// reply; any other I/O or HTTP framing error.
    pub(crate) fn request_at(
        &mut self,
        method: &str,
        path: &str,
        body: &str,
    ) -> anyhow::Result<Reply> {
        self.send_at(method, path, body)?;
        self.read_reply()
    }

    /// Writes a request to `path` without reading its reply.
    pub(crate) fn send_at(&mut self, method: &str, path: &str, body: &str) -> anyhow::Result<()> {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n",
            self.addr
        );
        if !self.session.is_empty() {
            head.push_str(&format!("Mcp-Session-Id: {}\r\n", self.session));
        }
        if let Some(token) = &self.token {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        head.push_str(&self.headers);
        if method == "POST" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        head.push_str(body);
        match self.writer.write_all(head.as_bytes()) {
            Err(e) if closed(&e) => Err(ClosedBeforeReply.into()),
            other => Ok(other?),
        }
    }

    /// Reads one reply.
    pub(crate) fn read_reply(&mut self) -> anyhow::Result<Reply> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => return Err(ClosedBeforeReply.into()),
            Err(e) if closed(&e) => return Err(ClosedBeforeReply.into()),
            other => other?,
        };
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("not an HTTP status line: {line:?}"))?;
        let head = self.read_head()?;
        let body = if head.chunked {
            self.read_chunked()?
        } else {
            let mut body = vec![0; head.length.unwrap_or(0)];
            self.reader.read_exact(&mut body)?;
            body
        };
        Ok(Reply {
            status,
            session: head.session,
            body: String::from_utf8_lossy(&body).into_owned(),
            server_ms: head.server_ms,
        })
    }

    /// The headers after the status line, up to the blank line.
    fn read_head(&mut self) -> anyhow::Result<Head> {
        let mut head = Head::default();
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                return Ok(head);
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => head.length = value.parse::<usize>().ok(),
                "transfer-encoding" => head.chunked = value.contains("chunked"),
                "mcp-session-id" => head.session = Some(value.to_owned()),
                "server-timing" => {
                    head.server_ms = value
                        .split_once("dur=")
                        .and_then(|(_, d)| d.split([',', ';']).next()?.trim().parse().ok());
                }
                _ => {}
            }
        }
    }

    /// A chunked body, up to its last chunk.
    fn read_chunked(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut body = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .with_context(|| format!("bad chunk size {line:?}"))?;
            if size == 0 {
                line.clear();
                self.reader.read_line(&mut line)?;
                return Ok(body);
            }
            let start = body.len();
            body.resize(start + size, 0);
            self.reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            self.reader.read_exact(&mut crlf)?;
        }
    }
}

/// The headers a reply is read with.
#[derive(Default)]
struct Head {
    length: Option<usize>,
    chunked: bool,
    session: Option<String>,
    server_ms: Option<f64>,
}

/// Whether an I/O error means the peer closed or reset the connection.
fn closed(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
    )
}
