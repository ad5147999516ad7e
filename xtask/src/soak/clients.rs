//! The soak's clients: Streamable HTTP and legacy SSE sessions making a mix of requests and
//! ending in one of several ways, hook events posted to both hook routes, and the client that
//! creates the interval schedules.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use super::exchange::{
    Failure, INITIALIZED, Stats, Step, check, initialize, mcp_request, response_in, send,
};
use crate::util::http::{Conn, tool_call};

/// A request of the mix: its body and what it is (for error kinds).
fn pick_request(rng: &mut fastrand::Rng, id: u64, worker: usize) -> (String, String) {
    let call = |tool: &str, args: Value| {
        (
            tool_call(id as usize, tool, args),
            format!("tools/call {tool}"),
        )
    };
    match rng.u32(0..100) {
        0..30 => call(
            "channel_publish",
            json!({
                "channel": format!("soak{}", rng.u32(0..8)),
                "message": format!("soak message {id} from client {worker}"),
                "ttl_seconds": 30,
            }),
        ),
        30..45 => call("channel_read", json!({ "limit": 20 })),
        45..50 => call(
            "channel_read",
            json!({ "channel": format!("soak{}", rng.u32(0..8)), "session_id": format!("soak-{worker}") }),
        ),
        50..62 => call("channel_list", json!({})),
        62..70 => call("schedule_list", json!({})),
        70..76 => call("condition_list", json!({})),
        76..82 => call("enforcement_list", json!({})),
        82..91 => (
            json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }).to_string(),
            "tools/list".into(),
        ),
        _ => (
            json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }).to_string(),
            "ping".into(),
        ),
    }
}

/// How a client's session ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    /// It stops making requests and closes its connections (no DELETE).
    Abandon,
    /// It closes the connection during a call and abandons the session.
    DropMidCall,
    /// It closes the connection during a call, then goes on in the same session on a new one.
    DropAndResume,
    /// It sends half a request body, closes, then goes on on a new connection.
    HalfBodyAndResume,
}

fn ending(rng: &mut fastrand::Rng) -> Ending {
    match rng.u32(0..8) {
        0 => Ending::DropMidCall,
        1 => Ending::DropAndResume,
        2 => Ending::HalfBodyAndResume,
        _ => Ending::Abandon,
    }
}

/// One Streamable HTTP client: a session of a few hundred requests, ended as [`ending`] says.
pub(super) fn http_client(
    addr: SocketAddr,
    stats: &Stats,
    rng: &mut fastrand::Rng,
    deadline: Instant,
    worker: usize,
) {
    if let Err(f) = http_session(addr, stats, rng, deadline, worker) {
        stats.error(f.kind, f.detail);
        // Never spin on a daemon that keeps failing.
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn http_session(
    addr: SocketAddr,
    stats: &Stats,
    rng: &mut fastrand::Rng,
    deadline: Instant,
    worker: usize,
) -> Step<()> {
    let mut conn = Conn::connect(addr).map_err(|e| Failure::io("connect", e))?;
    let reply = conn
        .request("POST", &initialize(0, "2025-06-18"))
        .map_err(|e| Failure::io("initialize", e))?;
    if reply.status != 200 {
        return Err(Failure::new(
            format!("HTTP {} (initialize)", reply.status),
            reply.body,
        ));
    }
    let message = response_in(&reply.body, 0)
        .ok_or_else(|| Failure::new("no response (initialize)", &reply.body))?;
    check(&message, "initialize")?;
    conn.session = reply
        .session
        .ok_or_else(|| Failure::new("no Mcp-Session-Id (initialize)", ""))?;
    stats.answered(false);
    stats.sessions.fetch_add(1, Ordering::Relaxed);
    let reply = send(&mut conn, stats, "/mcp", INITIALIZED, "initialized")?;
    if reply.status != 202 {
        return Err(Failure::new(
            format!("HTTP {} (initialized)", reply.status),
            reply.body,
        ));
    }
    stats.answered(false);

    // A quarter of the sessions keep their standalone GET stream open while they work.
    let _get_stream = if rng.u32(0..4) == 0 {
        let mut get = Conn::connect(addr).map_err(|e| Failure::io("connect", e))?;
        get.session = conn.session.clone();
        Some(get.open_get().map_err(|e| Failure::io("GET /mcp", e))?)
    } else {
        None
    };

    let requests = rng.u64(20..400);
    let end = ending(rng);
    let drop_at = rng.u64(0..requests);
    for id in 1..=requests {
        if Instant::now() >= deadline {
            return Ok(());
        }
        let (body, what) = pick_request(rng, id, worker);
        if id == drop_at && end != Ending::Abandon {
            let session = conn.session.clone();
            match end {
                Ending::HalfBodyAndResume => {
                    half_body(addr, &session, &body).map_err(|e| Failure::io("half body", e))?;
                }
                _ => {
                    // The call is sent, and its connection closed before the answer.
                    conn.send_at("POST", "/mcp", &body)
                        .map_err(|e| Failure::io("drop mid-call", e))?;
                    stats.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            if end == Ending::DropMidCall {
                return Ok(());
            }
            conn = Conn::connect(addr).map_err(|e| Failure::io("connect", e))?;
            conn.session = session;
            continue;
        }
        mcp_request(&mut conn, stats, &body, id, &what)?;
    }
    Ok(())
}

/// Sends a request with half its body on a new connection, and closes it.
fn half_body(addr: SocketAddr, session: &str, body: &str) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(addr)?;
    let half = &body.as_bytes()[..body.len() / 2];
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    stream.write_all(half)?;
    stream.flush()
}

/// One legacy SSE client: a session of a few hundred requests on its stream.
pub(super) fn sse_client(
    addr: SocketAddr,
    stats: &Stats,
    rng: &mut fastrand::Rng,
    deadline: Instant,
) {
    if let Err(f) = sse_session(addr, stats, rng, deadline) {
        stats.error(f.kind, f.detail);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A legacy SSE stream: its events, read line by line.
struct SseStream {
    events: BufReader<TcpStream>,
}

impl SseStream {
    fn open(addr: SocketAddr) -> std::io::Result<SseStream> {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            stream,
            "GET /sse HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
        )?;
        Ok(SseStream {
            events: BufReader::new(stream),
        })
    }

    /// The status line and headers.
    fn head(&mut self) -> Step<()> {
        let mut line = String::new();
        self.events
            .read_line(&mut line)
            .map_err(|e| Failure::io("GET /sse", e))?;
        if !line.contains(" 200 ") {
            return Err(Failure::new("HTTP status (GET /sse)", line.trim_end()));
        }
        loop {
            line.clear();
            let n = self
                .events
                .read_line(&mut line)
                .map_err(|e| Failure::io("GET /sse", e))?;
            if n == 0 || line.trim_end().is_empty() {
                return Ok(());
            }
        }
    }

    /// The next event: its type and data.
    fn next(&mut self) -> Step<(String, String)> {
        let (mut event, mut data) = (String::from("message"), String::new());
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .events
                .read_line(&mut line)
                .map_err(|e| Failure::io("SSE stream", e))?;
            if n == 0 {
                return Err(Failure::new("SSE stream closed", "mid-session"));
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return Ok((event, data));
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim());
            }
        }
    }

    /// The response with `id`, skipping other messages.
    fn response(&mut self, id: u64, what: &str) -> Step<()> {
        for _ in 0..100 {
            let (event, data) = self.next()?;
            if event != "message" {
                continue;
            }
            let message: Value = serde_json::from_str(&data)
                .map_err(|e| Failure::new(format!("bad SSE message ({what})"), e))?;
            if message["id"] == json!(id) {
                return check(&message, what);
            }
        }
        Err(Failure::new(
            format!("no response ({what})"),
            "100 other events",
        ))
    }
}

fn sse_session(
    addr: SocketAddr,
    stats: &Stats,
    rng: &mut fastrand::Rng,
    deadline: Instant,
) -> Step<()> {
    let mut stream = SseStream::open(addr).map_err(|e| Failure::io("connect", e))?;
    stream.head()?;
    let (event, endpoint) = stream.next()?;
    if event != "endpoint" {
        return Err(Failure::new("no endpoint event (GET /sse)", event));
    }
    let mut post = Conn::connect(addr).map_err(|e| Failure::io("connect", e))?;
    let exchange = |post: &mut Conn, body: &str, what: &str| -> Step<()> {
        let reply = send(post, stats, &endpoint, body, what)?;
        if reply.status != 202 {
            return Err(Failure::new(
                format!("HTTP {} (POST /messages {what})", reply.status),
                reply.body,
            ));
        }
        Ok(())
    };
    exchange(&mut post, &initialize(0, "2024-11-05"), "initialize")?;
    stream.response(0, "initialize")?;
    stats.answered(false);
    stats.sessions.fetch_add(1, Ordering::Relaxed);
    exchange(&mut post, INITIALIZED, "initialized")?;
    stats.answered(false);

    let requests = rng.u64(20..400);
    let drop_at = (rng.u32(0..4) == 0).then(|| rng.u64(1..=requests));
    for id in 1..=requests {
        if Instant::now() >= deadline {
            return Ok(());
        }
        let (body, what) = pick_request(rng, id, 1000);
        exchange(&mut post, &body, &what)?;
        if drop_at == Some(id) {
            // The stream (the session) closes before the answer arrives.
            stats.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        stream.response(id, &what)?;
        stats.answered(what.starts_with("tools/call"));
    }
    Ok(())
}

/// Which route a hook event is posted to, as a real client posts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HookRoute {
    /// `POST /hooks/{Event}` with the payload as the body: Claude Code's HTTP hook, for every
    /// event. Answered with 200 (JSON) or 204 (nothing to say), on either store.
    Http,
    /// `POST /hook/{event}` with the payload wrapped as a command hook forwards it: only the
    /// events a command hook forwards. On SQLite the daemon refuses them with 422 by design
    /// (hooks open that store themselves); on PostgreSQL it answers 200.
    Forward,
}

/// A hook request: the event, its route and path, and the request body.
#[derive(Debug)]
pub(super) struct HookEvent {
    /// The event's name (`hook_event_name`).
    pub(super) event: String,
    route: HookRoute,
    /// The path posted to.
    pub(super) path: String,
    body: String,
}

/// The daemon's store seen from the hook events: SQLite unless `HOOKS_MCP_DATABASE_URL` names
/// a PostgreSQL database (the daemon inherits it).
pub(super) fn store_identity() -> anyhow::Result<Option<String>> {
    store::identity_from_env().context("HOOKS_MCP_DATABASE_URL")
}

/// The recorded hook payloads in `dir`, each as Claude Code's HTTP hook posts it and, for the
/// events a command hook forwards, also as that hook forwards it to the daemon.
pub(super) fn hook_events(dir: &Path) -> anyhow::Result<Vec<HookEvent>> {
    let store = store_identity()?.unwrap_or_else(|| "sqlite".into());
    let mut events = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let payload: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let event = payload["hook_event_name"]
            .as_str()
            .with_context(|| format!("no hook_event_name in {}", path.display()))?
            .to_owned();
        if hook_dispatch::Event::parse(&event).is_some() {
            let body = json!({
                "v": 1, "store": store, "channels": null, "gate": true, "payload": payload
            });
            events.push(HookEvent {
                path: format!("/hook/{event}"),
                event: event.clone(),
                route: HookRoute::Forward,
                body: body.to_string(),
            });
        }
        events.push(HookEvent {
            path: format!("/hooks/{event}"),
            event,
            route: HookRoute::Http,
            body: text,
        });
    }
    anyhow::ensure!(!events.is_empty(), "no hook fixtures in {}", dir.display());
    events.sort_by(|a, b| (&a.event, &a.path).cmp(&(&b.event, &b.path)));
    Ok(events)
}

/// The answer the daemon gives every forwarded event on SQLite: hooks open that store
/// themselves.
const SQLITE_REFUSAL: &str = "serves an SQLite store";

/// Posts hook events (up to `limit`) on a keep-alive connection until the deadline; `sqlite`
/// when the daemon serves SQLite (forwarded events are then refused by design).
pub(super) fn hook_client(
    addr: SocketAddr,
    stats: &Stats,
    events: &[HookEvent],
    sqlite: bool,
    deadline: Instant,
    limit: u64,
) {
    let mut conn = None;
    let mut n = 0u64;
    while Instant::now() < deadline && n < limit {
        let event = &events[n as usize % events.len()];
        n += 1;
        let result = (|| -> Step<()> {
            let conn = match &mut conn {
                Some(c) => c,
                None => conn.insert(Conn::connect(addr).map_err(|e| Failure::io("connect", e))?),
            };
            post_hook(conn, stats, event, sqlite)
        })();
        match result {
            Ok(()) => stats.answered(true),
            Err(f) => {
                stats.error(f.kind, f.detail);
                conn = None;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Posts one hook event and checks the answer its route must give.
fn post_hook(conn: &mut Conn, stats: &Stats, event: &HookEvent, sqlite: bool) -> Step<()> {
    let what = format!("POST {}", event.path);
    let reply = send(conn, stats, &event.path, &event.body, &what)?;
    let expected = match (event.route, reply.status) {
        (HookRoute::Http, 200 | 204) | (HookRoute::Forward, 200) => true,
        (HookRoute::Forward, 422) => sqlite && reply.body.contains(SQLITE_REFUSAL),
        _ => false,
    };
    if expected {
        Ok(())
    } else {
        Err(Failure::new(
            format!("HTTP {} ({what})", reply.status),
            reply.body,
        ))
    }
}

/// Creates `count` interval schedules spread over the warm-up, recording when each was made.
pub(super) fn schedule_client(
    addr: SocketAddr,
    stats: &Stats,
    created: &Mutex<Vec<Instant>>,
    count: usize,
    warmup: Duration,
    deadline: Instant,
) {
    if count == 0 {
        return;
    }
    let spacing = warmup.div_f64(count as f64);
    let start = Instant::now();
    let mut conn = match Conn::session(addr) {
        Ok(c) => c,
        Err(e) => return stats.error("i/o schedule session", format!("{e:#}")),
    };
    for i in 0..count {
        let at = start + spacing.mul_f64(i as f64);
        if at >= deadline {
            return;
        }
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let body = tool_call(
            i + 1,
            "schedule_create",
            json!({
                "channel": "soak-schedules",
                "message": format!("soak schedule {i}"),
                "every_seconds": 60,
                "ttl_seconds": 30,
                "name": format!("soak{i}"),
            }),
        );
        match mcp_request(
            &mut conn,
            stats,
            &body,
            i as u64 + 1,
            "tools/call schedule_create",
        ) {
            Ok(()) => {
                if let Ok(mut created) = created.lock() {
                    created.push(Instant::now());
                }
            }
            Err(f) => stats.error(f.kind, f.detail),
        }
    }
}
