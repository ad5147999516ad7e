//! What the soak's clients count (answers, sessions, errors by kind), and the exchanges they
//! share: sending a request with one retry on a connection the daemon had closed, and checking
//! a JSON-RPC answer.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::util::http::{ClosedBeforeReply, Conn, Reply};

/// What the clients counted.
#[derive(Debug, Default)]
pub(super) struct Stats {
    /// `tools/call` requests and hook events answered.
    pub(super) calls: AtomicU64,
    /// Every request answered (calls, `initialize`, `tools/list`, `ping`, notifications).
    pub(super) requests: AtomicU64,
    /// Sessions opened (both transports).
    pub(super) sessions: AtomicU64,
    /// Calls whose connection the client closed before the answer.
    pub(super) dropped: AtomicU64,
    /// Idle keep-alive connections the daemon closed, reopened by the client.
    pub(super) reconnects: AtomicU64,
    /// Errors by kind: count and the first one's details.
    pub(super) errors: Mutex<BTreeMap<String, (u64, String)>>,
}

impl Stats {
    pub(super) fn error(&self, kind: impl Into<String>, detail: impl std::fmt::Display) {
        if let Ok(mut errors) = self.errors.lock() {
            let entry = errors
                .entry(kind.into())
                .or_insert_with(|| (0, truncate(&detail.to_string(), 300)));
            entry.0 += 1;
        }
    }

    pub(super) fn error_count(&self) -> u64 {
        self.errors
            .lock()
            .map(|e| e.values().map(|(n, _)| n).sum())
            .unwrap_or(0)
    }

    /// One line per kind, or `None` without errors.
    pub(super) fn error_summary(&self) -> Option<String> {
        let errors = self.errors.lock().ok()?;
        if errors.is_empty() {
            return None;
        }
        Some(
            errors
                .iter()
                .map(|(kind, (n, first))| format!("- {kind}: {n} (first: {first})"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }

    pub(super) fn answered(&self, call: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if call {
            self.calls.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// A failed step: its kind (what is counted) and details (the first is printed).
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) kind: String,
    pub(super) detail: String,
}

impl Failure {
    pub(super) fn new(kind: impl Into<String>, detail: impl std::fmt::Display) -> Failure {
        Failure {
            kind: kind.into(),
            detail: detail.to_string(),
        }
    }

    pub(super) fn io(what: &str, e: impl std::fmt::Display) -> Failure {
        Failure::new(format!("i/o {what}"), format!("{e:#}"))
    }
}

pub(super) type Step<T> = Result<T, Failure>;

/// Sends a request; when the daemon had closed the (idle keep-alive) connection before reading
/// it, sends it again once on a new connection.
pub(super) fn send(
    conn: &mut Conn,
    stats: &Stats,
    path: &str,
    body: &str,
    what: &str,
) -> Step<Reply> {
    match conn.request_at("POST", path, body) {
        Ok(reply) => Ok(reply),
        Err(e) if e.is::<ClosedBeforeReply>() => {
            stats.reconnects.fetch_add(1, Ordering::Relaxed);
            conn.reconnect().map_err(|e| Failure::io("connect", e))?;
            conn.request_at("POST", path, body)
                .map_err(|e| Failure::io(what, e))
        }
        Err(e) => Err(Failure::io(what, e)),
    }
}

/// The JSON-RPC response with `id` in a reply body (JSON, or SSE `data:` lines).
pub(super) fn response_in(body: &str, id: u64) -> Option<Value> {
    let trimmed = body.trim_start();
    let candidates: Vec<Value> = if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).ok().into_iter().collect()
    } else {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    candidates.into_iter().find(|m| m["id"] == json!(id))
}

/// Checks a response: no JSON-RPC error, no tool error.
pub(super) fn check(message: &Value, what: &str) -> Step<()> {
    if let Some(error) = message.get("error") {
        return Err(Failure::new(
            format!("JSON-RPC error {} ({what})", error["code"]),
            error,
        ));
    }
    if message["result"]["isError"] == json!(true) {
        return Err(Failure::new(
            format!("tool error ({what})"),
            &message["result"]["content"],
        ));
    }
    if message.get("result").is_none() {
        return Err(Failure::new(format!("no result ({what})"), message));
    }
    Ok(())
}

/// One `/mcp` request expecting a response with `id`.
pub(super) fn mcp_request(
    conn: &mut Conn,
    stats: &Stats,
    body: &str,
    id: u64,
    what: &str,
) -> Step<()> {
    let reply = send(conn, stats, "/mcp", body, what)?;
    if reply.status != 200 {
        return Err(Failure::new(
            format!("HTTP {} ({what})", reply.status),
            reply.body,
        ));
    }
    let message = response_in(&reply.body, id)
        .ok_or_else(|| Failure::new(format!("no response ({what})"), &reply.body))?;
    check(&message, what)?;
    stats.answered(what.starts_with("tools/call"));
    Ok(())
}

pub(super) fn initialize(id: u64, version: &str) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "soak", "version": "1" }
        }
    })
    .to_string()
}

pub(super) const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
