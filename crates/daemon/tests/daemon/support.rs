//! Daemon child processes, a raw HTTP/1.1 client, MCP helpers and a legacy SSE client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Set in a daemon child: the test function runs the daemon instead of testing.
const CHILD_ENV: &str = "HOOKS_MCP_TEST_DAEMON_CHILD";

/// The token the security tests use.
pub(crate) const TOKEN: &str = "test-token-0123456789abcdef";

/// How long anything is waited for before a test gives up.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// In a daemon child: runs the daemon as `hooks-mcp-full serve` would and exits with its
/// status. In the test process: returns at once. Every test that spawns a daemon calls it
/// first (through [`Daemon::start`] or [`run_to_exit`], or directly when it prepares anything
/// before its first daemon).
pub(crate) fn child_entry() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    // Leave when the test process goes away (its end of our stdin closes), so no daemon
    // outlives a crashed test run.
    std::thread::spawn(|| {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        std::process::exit(0);
    });
    let filter = std::env::var("HOOKS_MCP_LOG").unwrap_or_else(|_| "info,rmcp=warn".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(|| protocol_lite::diag::QuietStderr)
        .log_internal_errors(false)
        .with_ansi(false)
        .try_init();
    // A thread of its own: the test function may run inside a tokio runtime, and the daemon
    // builds its own.
    let daemon = std::thread::spawn(daemon::serve_from_env);
    let code = match daemon.join() {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("hooks-mcp: error: {e}");
            1
        }
        Err(_) => 101,
    };
    std::process::exit(code);
}

/// The daemon's stderr, line by line, as it arrives.
#[derive(Debug, Default)]
pub(crate) struct Log {
    lines: Mutex<Vec<String>>,
    grew: Condvar,
}

impl Log {
    /// Everything so far.
    pub(crate) fn text(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits for a line containing `needle`.
    pub(crate) fn wait_for(&self, needle: &str) -> Option<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut lines = self.lines.lock().unwrap();
        loop {
            if let Some(line) = lines.iter().find(|l| l.contains(needle)) {
                return Some(line.clone());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            lines = self.grew.wait_timeout(lines, left).unwrap().0;
        }
    }
}

/// A daemon child process.
#[derive(Debug)]
pub(crate) struct Daemon {
    child: Mutex<Child>,
    /// Its first listening address.
    pub(crate) addr: SocketAddr,
    /// Its stderr.
    pub(crate) log: Arc<Log>,
}

fn command(test: &str, home: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env(CHILD_ENV, "1")
        .env("HOOKS_MCP_HOME", home)
        .env("MCP_TRANSPORT", "streamable-http")
        .env("MCP_HOST", "127.0.0.1")
        .env("MCP_PORT", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn collect(child: &mut Child) -> (Arc<Log>, std::thread::JoinHandle<()>) {
    let log = Arc::new(Log::default());
    let stderr = child.stderr.take().unwrap();
    let sink = log.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            sink.lines.lock().unwrap().push(line);
            sink.grew.notify_all();
        }
    });
    (log, reader)
}

impl Daemon {
    /// Starts a daemon for the test named `test` (its full path, e.g. `lifecycle::name`) with
    /// its store in `home`, and waits until it listens. In the child, runs the daemon instead.
    pub(crate) fn start(test: &str, home: &Path, env: &[(&str, &str)]) -> Daemon {
        child_entry();
        let mut child = command(test, home, env).spawn().unwrap();
        let (log, _) = collect(&mut child);
        let Some(line) = log.wait_for("listening on http://") else {
            let _ = child.kill();
            panic!("the daemon did not start listening:\n{}", log.text());
        };
        let addr = line
            .rsplit("http://")
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        Daemon {
            child: Mutex::new(child),
            addr,
            log,
        }
    }

    /// The daemon's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.child.lock().unwrap().id()
    }

    /// `http://ADDR{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends `signal` (e.g. `TERM`) to the daemon.
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the daemon to exit.
    pub(crate) fn wait_exit(&self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.lock().unwrap().try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not exit:\n{}",
                self.log.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `/health` answers 200 (the daemon is ready).
    pub(crate) fn wait_ready(&self) {
        let deadline = Instant::now() + PATIENCE;
        while http(self.addr, "GET", "/health", &[], "").status != 200 {
            assert!(
                Instant::now() < deadline,
                "never ready:\n{}",
                self.log.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Runs a daemon for the test named `test` that is expected to stop by itself; returns its
/// exit status and stderr, and the `/health` answers seen while it ran.
pub(crate) fn run_to_exit(
    test: &str,
    home: &Path,
    env: &[(&str, &str)],
) -> (ExitStatus, String, Vec<u16>) {
    child_entry();
    let mut child = command(test, home, env).spawn().unwrap();
    let (log, reader) = collect(&mut child);
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the daemon did not exit:\n{}",
            log.text()
        );
        let text = log.text();
        let addr = text
            .lines()
            .find_map(|l| l.split("listening on http://").nth(1))
            .and_then(|a| a.trim().parse::<SocketAddr>().ok());
        if let Some(reply) = addr.and_then(|a| try_http(a, "GET", "/health", &[], "")) {
            seen.push(reply.status);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The reader ends at the end of the process's stderr: then the log is complete.
    reader.join().unwrap();
    (status, log.text(), seen)
}

/// An HTTP response read to its end.
#[derive(Debug)]
pub(crate) struct Response {
    /// Status code.
    pub(crate) status: u16,
    /// Header lines, lower-cased names.
    pub(crate) headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub(crate) body: String,
}

impl Response {
    /// The first header called `name` (lower case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The JSON-RPC messages of an SSE body (`data:` lines that hold JSON).
    pub(crate) fn messages(&self) -> Vec<Value> {
        sse_messages(&self.body)
    }
}

/// The JSON values in the `data:` fields of an SSE text.
pub(crate) fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

fn request_bytes(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    version: &str,
) -> Vec<u8> {
    let mut req = format!("{method} {path} {version}\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        req.push_str("Content-Type: application/json\r\n");
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    if version == "HTTP/1.1" {
        req.push_str("Connection: close\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    req.into_bytes()
}

/// One request on a fresh connection (`Connection: close`), read to the end.
pub(crate) fn http(
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
pub(crate) fn try_http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Option<Response> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    stream.set_read_timeout(Some(PATIENCE)).ok()?;
    stream
        .write_all(&request_bytes(
            addr, method, path, headers, body, "HTTP/1.1",
        ))
        .ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> Option<Response> {
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
pub(crate) struct Open {
    /// The connection (drop it to disconnect).
    pub(crate) stream: TcpStream,
    /// The status code.
    pub(crate) status: u16,
    /// The head and the body bytes read so far.
    pub(crate) seen: String,
}

impl Open {
    /// Reads until the received text contains `needle`.
    pub(crate) fn read_until(&mut self, needle: &str) -> bool {
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
/// with the connection.
pub(crate) fn open(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Open {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
        .write_all(&request_bytes(
            addr, method, path, headers, body, "HTTP/1.0",
        ))
        .unwrap();
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
        .unwrap();
    open
}

/// The headers a Streamable HTTP POST carries.
pub(crate) const MCP_POST: [(&str, &str); 1] = [("Accept", "application/json, text/event-stream")];

/// An `initialize` request body.
pub(crate) fn initialize(id: u64) -> String {
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

/// A `tools/call` request body.
pub(crate) fn call(id: u64, tool: &str, arguments: Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": { "name": tool, "arguments": arguments }
    })
    .to_string()
}

/// Opens a Streamable HTTP session (initialize, then initialized); returns its id.
pub(crate) fn mcp_session(addr: SocketAddr, auth: &[(&str, &str)]) -> String {
    let mut headers = MCP_POST.to_vec();
    headers.extend_from_slice(auth);
    let reply = http(addr, "POST", "/mcp", &headers, &initialize(1));
    assert_eq!(reply.status, 200, "initialize: {}", reply.body);
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    headers.push(("Mcp-Session-Id", &session));
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let ack = http(addr, "POST", "/mcp", &headers, &initialized.to_string());
    assert_eq!(ack.status, 202, "initialized: {}", ack.body);
    session
}

/// Sends one request in `session` and returns its response message.
pub(crate) fn mcp_request(
    addr: SocketAddr,
    session: &str,
    auth: &[(&str, &str)],
    body: &str,
) -> Value {
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
pub(crate) struct SseSession {
    /// The `/sse` stream.
    pub(crate) stream: Open,
    /// `/messages?sessionId=...`.
    pub(crate) endpoint: String,
    consumed: usize,
}

impl SseSession {
    /// Opens `/sse` and reads the `endpoint` event.
    pub(crate) fn connect(addr: SocketAddr, auth: &[(&str, &str)]) -> SseSession {
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
            .unwrap()
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
    pub(crate) fn post(&self, addr: SocketAddr, auth: &[(&str, &str)], body: &str) -> u16 {
        http(addr, "POST", &self.endpoint, auth, body).status
    }

    /// The next `message` event's JSON.
    pub(crate) fn next_message(&mut self) -> Value {
        loop {
            let pending = &self.stream.seen[self.consumed..];
            if let Some(end) = pending.find("\n\n") {
                let block = pending[..end].to_owned();
                self.consumed += end + 2;
                if block.lines().any(|l| l == "event: message") {
                    return sse_messages(&block).into_iter().next().unwrap();
                }
                continue;
            }
            let mut buf = [0u8; 4096];
            let n = self.stream.stream.read(&mut buf).unwrap();
            assert!(n > 0, "the SSE stream ended after:\n{}", self.stream.seen);
            self.stream
                .seen
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }

    /// The handshake: initialize (answered on the stream), then initialized.
    pub(crate) fn handshake(&mut self, addr: SocketAddr, auth: &[(&str, &str)]) {
        assert_eq!(self.post(addr, auth, &initialize(1)), 202);
        let reply = self.next_message();
        assert_eq!(reply["id"], 1, "{reply}");
        assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(self.post(addr, auth, &initialized.to_string()), 202);
    }
}

/// Polls `/health?level=full` until `check` accepts it.
pub(crate) fn wait_health(addr: SocketAddr, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let body = http(addr, "GET", "/health?level=full", &[], "").json();
        if check(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "{what}: last health {body}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Holds SQLite's write lock on the daemon's store until dropped, so a writing tool call
/// stays in flight.
pub(crate) struct WriteLock(rusqlite::Connection);

impl WriteLock {
    /// Takes the lock.
    pub(crate) fn take(home: &Path) -> WriteLock {
        let conn = rusqlite::Connection::open(home.join("state.db")).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        WriteLock(conn)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("COMMIT");
    }
}
