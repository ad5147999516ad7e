//! A lean client for the local network daemon, for short-lived processes (the hook command)
//! that would otherwise pay a database connection of their own.
//!
//! One HTTP/1.1 `POST` per call over a fresh `std::net::TcpStream` to the loopback address that
//! `MCP_HOST` and `MCP_PORT` name, with the daemon's bearer token, short connect and answer
//! limits, and `Connection: close`: no async runtime, no HTTP crate. Every failure is a
//! [`LocalDaemonError`] the caller answers by doing the work itself.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::setting::Setting;

/// The host name or address the daemon listens on (the daemon's own setting).
pub const HOST_ENV: &str = "MCP_HOST";
/// The port the daemon listens on (the daemon's own setting).
pub const PORT_ENV: &str = "MCP_PORT";
/// The daemon's bearer token (the daemon's own setting).
pub const TOKEN_ENV: &str = "HOOKS_MCP_TOKEN";
/// A file holding the daemon's bearer token (the daemon's own setting).
pub const TOKEN_FILE_ENV: &str = "HOOKS_MCP_TOKEN_FILE";
/// The daemon's default port.
pub const DEFAULT_PORT: u16 = 8642;
/// Whether the hook command hands events to a running local daemon.
pub const HOOK_FORWARD_ENV: &str = "HOOKS_MCP_HOOK_FORWARD";

/// How long connecting to one address may take: a local daemon accepts at once, and a port
/// nobody listens on refuses at once.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);
/// How long the whole answer may take once connected.
pub const ANSWER_TIMEOUT: Duration = Duration::from_millis(500);
/// The largest answer read.
const ANSWER_CAP: usize = 8 << 20;

/// The settings of this client, for the generated configuration reference (the address and
/// token settings are the daemon's, documented with it).
pub const HOOK_FORWARD_SETTINGS: &[Setting] = &[Setting {
    env: HOOK_FORWARD_ENV,
    flag: "",
    default: "auto",
    effect: "`auto`: with `HOOKS_MCP_DATABASE_URL` set, the hook command first hands each \
             event to the daemon listening on the loopback address of `MCP_HOST`/`MCP_PORT` \
             (with `HOOKS_MCP_TOKEN` or `HOOKS_MCP_TOKEN_FILE`), which answers from its pooled \
             connections; when none answers within 200 ms to connect and 500 ms to answer, or \
             it refuses, the hook opens the store itself. `off`: always open the store \
             (see docs/hooks.md).",
}];

/// Whether forwarding is enabled, from [`HOOK_FORWARD_ENV`].
///
/// # Errors
/// A message naming the setting when its value is neither `auto` nor `off` (forwarding is then
/// off).
pub fn forwarding_from_env() -> Result<bool, String> {
    forwarding(&std::env::var(HOOK_FORWARD_ENV).unwrap_or_default())
}

/// Parses a value of [`HOOK_FORWARD_ENV`]: `auto` (or unset, blank) is `true`, `off` `false`.
///
/// # Errors
/// A message naming the setting for any other value.
pub fn forwarding(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(true),
        "off" => Ok(false),
        other => Err(format!(
            "{HOOK_FORWARD_ENV}=`{other}` is neither `auto` nor `off`; the hook opens the store \
             itself"
        )),
    }
}

/// Why a call to the daemon got no usable answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalDaemonError {
    /// No daemon accepted the connection on any address.
    #[error("no daemon answers on {addrs}: {cause}")]
    Unreachable {
        /// The addresses tried.
        addrs: String,
        /// The last connection error.
        cause: io::Error,
    },
    /// The request could not be sent or the answer not read in time.
    #[error("the daemon at {addr} did not answer: {cause}")]
    Io {
        /// The daemon's address.
        addr: SocketAddr,
        /// What went wrong.
        cause: io::Error,
    },
    /// The daemon answered with a status other than 200.
    #[error("the daemon at {addr} answered {status}")]
    Status {
        /// The daemon's address.
        addr: SocketAddr,
        /// The HTTP status.
        status: u16,
    },
    /// The answer is not an HTTP response this client understands.
    #[error("the daemon at {addr} sent an answer that is not a plain HTTP response: {problem}")]
    Malformed {
        /// The daemon's address.
        addr: SocketAddr,
        /// What is wrong.
        problem: &'static str,
    },
}

/// Where the local daemon listens and how to authenticate to it.
#[derive(Clone)]
pub struct LocalDaemon {
    addrs: Vec<SocketAddr>,
    token: Option<String>,
}

impl fmt::Debug for LocalDaemon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalDaemon")
            .field("addrs", &self.addrs)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl LocalDaemon {
    /// The daemon the environment names, or `None` when it is not on this machine: `MCP_HOST`
    /// (default `localhost`) must be `localhost` or a loopback or wildcard address (a wildcard
    /// is reached on loopback); other names are never resolved, so this costs no DNS lookup.
    /// An invalid `MCP_PORT` also gives `None`.
    pub fn from_env() -> Option<LocalDaemon> {
        LocalDaemon::from_vars(|k| std::env::var(k).ok())
    }

    /// [`LocalDaemon::from_env`] through `var` (tests pass a map).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<LocalDaemon> {
        let get = |k: &str| {
            var(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let port = match get(PORT_ENV) {
            None => DEFAULT_PORT,
            Some(text) => text.parse::<u16>().ok().filter(|p| *p > 0)?,
        };
        let host = get(HOST_ENV).unwrap_or_else(|| "localhost".into());
        let addrs = loopback_addrs(&host, port)?;
        let token = match (get(TOKEN_ENV), get(TOKEN_FILE_ENV)) {
            (Some(token), _) => Some(token),
            (None, Some(path)) => std::fs::read_to_string(path)
                .ok()
                .map(|t| t.trim().to_owned()),
            (None, None) => None,
        }
        // A token a header cannot carry is never sent (it would break the request).
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()));
        Some(LocalDaemon { addrs, token })
    }

    /// The addresses tried, in order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// POSTs `body` (JSON) to `path` and returns the body of a 200 answer. Each address is
    /// tried in turn until one accepts the connection within [`CONNECT_TIMEOUT`]; the answer
    /// must then arrive within [`ANSWER_TIMEOUT`].
    ///
    /// # Errors
    /// [`LocalDaemonError`] when no daemon accepts, the answer is late or garbled, or its
    /// status is not 200.
    pub fn post(&self, path: &str, body: &[u8]) -> Result<Vec<u8>, LocalDaemonError> {
        let mut last = None;
        for &addr in &self.addrs {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(stream) => return self.exchange(stream, addr, path, body),
                Err(e) => last = Some(e),
            }
        }
        Err(LocalDaemonError::Unreachable {
            addrs: self
                .addrs
                .iter()
                .map(SocketAddr::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            cause: last.unwrap_or_else(|| io::Error::other("no address to try")),
        })
    }

    fn exchange(
        &self,
        mut stream: TcpStream,
        addr: SocketAddr,
        path: &str,
        body: &[u8],
    ) -> Result<Vec<u8>, LocalDaemonError> {
        let io_err = |cause| LocalDaemonError::Io { addr, cause };
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        // The request goes out in one write; nothing waits for an acknowledgement.
        let _ = stream.set_nodelay(true);
        stream
            .set_write_timeout(Some(ANSWER_TIMEOUT))
            .map_err(io_err)?;
        let mut request = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        if let Some(token) = &self.token {
            request.push_str("Authorization: Bearer ");
            request.push_str(token);
            request.push_str("\r\n");
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body);
        stream.write_all(&bytes).map_err(io_err)?;
        let raw = read_until_closed(&mut stream, deadline).map_err(io_err)?;
        parse_response(&raw).map_err(|problem| match problem {
            Parsed::Status(status) => LocalDaemonError::Status { addr, status },
            Parsed::Malformed(problem) => LocalDaemonError::Malformed { addr, problem },
        })
    }
}

/// The loopback addresses to try for `host`, or `None` when `host` is not this machine.
fn loopback_addrs(host: &str, port: u16) -> Option<Vec<SocketAddr>> {
    if host.eq_ignore_ascii_case("localhost") {
        return Some(vec![
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port),
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), port),
        ]);
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = bare.parse().ok()?;
    let ip = match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(v6) if v6.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        ip if ip.is_loopback() => ip,
        _ => return None,
    };
    Some(vec![SocketAddr::new(ip, port)])
}

/// Reads until the peer closes the connection (the request asked for that), or fails at
/// `deadline`.
fn read_until_closed(stream: &mut TcpStream, deadline: Instant) -> io::Result<Vec<u8>> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no complete answer in time",
            ));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf) {
            Ok(0) => return Ok(raw),
            Ok(n) => {
                if raw.len() + n > ANSWER_CAP {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the answer is too large",
                    ));
                }
                raw.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Why a response was not a usable 200.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    Status(u16),
    Malformed(&'static str),
}

/// The body of a complete 200 response (`Content-Length` or chunked framing, or delimited by
/// the end of the connection).
fn parse_response(raw: &[u8]) -> Result<Vec<u8>, Parsed> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or(Parsed::Malformed("no end of the header"))?;
    let head =
        std::str::from_utf8(&raw[..split]).map_err(|_| Parsed::Malformed("a binary header"))?;
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut words = status_line.split(' ');
    if !words.next().is_some_and(|v| v.starts_with("HTTP/1.")) {
        return Err(Parsed::Malformed("no HTTP/1.x status line"));
    }
    let status: u16 = words
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or(Parsed::Malformed("no status code"))?;
    if status != 200 {
        return Err(Parsed::Status(status));
    }
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| Parsed::Malformed("a bad Content-Length"))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    if chunked {
        return dechunk(body);
    }
    match length {
        Some(n) if body.len() >= n => Ok(body[..n].to_vec()),
        Some(_) => Err(Parsed::Malformed("the body is shorter than announced")),
        None => Ok(body.to_vec()),
    }
}

fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>, Parsed> {
    let bad = Parsed::Malformed("bad chunked framing");
    let mut out = Vec::new();
    loop {
        let end = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or(Parsed::Malformed("bad chunked framing"))?;
        let size = std::str::from_utf8(&raw[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok())
            .ok_or(Parsed::Malformed("bad chunked framing"))?;
        if size == 0 {
            return Ok(out);
        }
        let data = &raw[end + 2..];
        if data.len() < size + 2 {
            return Err(bad);
        }
        out.extend_from_slice(&data[..size]);
        raw = &data[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::collections::HashMap;
    use std::net::TcpListener;

    fn daemon(vars: &[(&str, &str)]) -> Option<LocalDaemon> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LocalDaemon::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn only_loopback_daemons_are_reached() {
        let d = daemon(&[]).unwrap();
        assert_eq!(d.addrs()[0], "127.0.0.1:8642".parse().unwrap());
        assert_eq!(d.addrs()[1], "[::1]:8642".parse().unwrap());
        let wild = daemon(&[(HOST_ENV, "0.0.0.0"), (PORT_ENV, "9000")]).unwrap();
        assert_eq!(wild.addrs(), &["127.0.0.1:9000".parse().unwrap()]);
        let v6 = daemon(&[(HOST_ENV, "[::]")]).unwrap();
        assert_eq!(v6.addrs(), &["[::1]:8642".parse().unwrap()]);
        assert!(daemon(&[(HOST_ENV, "10.0.0.5")]).is_none());
        assert!(daemon(&[(HOST_ENV, "mcp.example.com")]).is_none());
        assert!(daemon(&[(PORT_ENV, "http")]).is_none());
        assert!(daemon(&[(PORT_ENV, "0")]).is_none());
    }

    #[test]
    fn tokens_come_from_the_variable_or_the_file_and_must_fit_a_header() {
        assert_eq!(
            daemon(&[(TOKEN_ENV, " abc ")]).unwrap().token.as_deref(),
            Some("abc")
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "from-file\n").unwrap();
        let d = daemon(&[(TOKEN_FILE_ENV, file.to_str().unwrap())]).unwrap();
        assert_eq!(d.token.as_deref(), Some("from-file"));
        assert!(format!("{d:?}").contains("<redacted>"));
        assert!(!format!("{d:?}").contains("from-file"));
        let injected = daemon(&[(TOKEN_ENV, "a\r\nX-Evil: 1")]).unwrap();
        assert_eq!(injected.token, None);
    }

    #[test]
    fn responses_parse_with_each_framing() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(parse_response(ok).unwrap(), b"{}");
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), b"{}");
        let closed = b"HTTP/1.1 200 OK\r\n\r\n[1]";
        assert_eq!(parse_response(closed).unwrap(), b"[1]");
        let refused = b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(parse_response(refused), Err(Parsed::Status(401)));
        assert!(matches!(
            parse_response(b"SSH-2.0-OpenSSH\r\n"),
            Err(Parsed::Malformed(_))
        ));
        let short = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n{}";
        assert!(matches!(parse_response(short), Err(Parsed::Malformed(_))));
    }

    #[test]
    fn a_post_reaches_the_listener_with_the_token_and_a_silent_one_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !seen.ends_with(b"{\"a\":1}") {
                let n = conn.read(&mut buf).unwrap();
                assert!(n > 0);
                seen.extend_from_slice(&buf[..n]);
            }
            conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\ntrue")
                .unwrap();
            drop(conn);
            // The second connection is accepted and never answered.
            let (silent, _) = listener.accept().unwrap();
            std::thread::sleep(ANSWER_TIMEOUT * 2);
            drop(silent);
            String::from_utf8(seen).unwrap()
        });
        let d = daemon(&[
            (HOST_ENV, "127.0.0.1"),
            (PORT_ENV, &port),
            (TOKEN_ENV, "secret-token"),
        ])
        .unwrap();
        assert_eq!(d.post("/hook/PreToolUse", b"{\"a\":1}").unwrap(), b"true");
        let started = Instant::now();
        let late = d.post("/hook/PreToolUse", b"{}").unwrap_err();
        assert!(matches!(late, LocalDaemonError::Io { .. }), "{late}");
        assert!(
            started.elapsed() < ANSWER_TIMEOUT * 2,
            "{:?}",
            started.elapsed()
        );
        let request = server.join().unwrap();
        assert!(
            request.starts_with("POST /hook/PreToolUse HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            request.contains("\r\nAuthorization: Bearer secret-token\r\n"),
            "{request}"
        );
        assert!(request.contains("\r\nContent-Length: 7\r\n"), "{request}");
    }

    #[test]
    fn nobody_listening_is_unreachable_at_once() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .to_string();
        let d = daemon(&[(HOST_ENV, "127.0.0.1"), (PORT_ENV, &port)]).unwrap();
        let started = Instant::now();
        let e = d.post("/hook/PreToolUse", b"{}").unwrap_err();
        assert!(matches!(e, LocalDaemonError::Unreachable { .. }), "{e}");
        assert!(
            started.elapsed() < CONNECT_TIMEOUT,
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn the_switch_is_auto_or_off() {
        assert_eq!(forwarding(""), Ok(true));
        assert_eq!(forwarding(" Auto "), Ok(true));
        assert_eq!(forwarding("off"), Ok(false));
        assert!(forwarding("yes").unwrap_err().starts_with(HOOK_FORWARD_ENV));
        assert_eq!(HOOK_FORWARD_SETTINGS[0].default, "auto");
    }
}
