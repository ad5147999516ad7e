//! Target `stdio_transport`: `server_full::stdio::serve` with arbitrary bytes as stdin.
//!
//! Invariants: never a panic, and the session ends within [`LIMIT`] once stdin ends; every
//! line written is one JSON-RPC 2.0 object; a line that is not a valid message gets exactly
//! the error reply `protocol_lite::jsonrpc` words for it, in input order (until the first
//! message reaches the server, whatever it is; for the whole input when that first message is
//! an `initialize` the server answered); a request that cannot be read as an MCP message gets
//! `-32602` with its id; no id is answered more often than it was sent, and nothing that was
//! not sent with an id (a notification) is answered.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use catalogue::SessionPolicy;
use protocol_lite::jsonrpc::{self, INVALID_PARAMS, Incoming};
use rmcp::model::ClientJsonRpcMessage;
use serde_json::Value;
use tokio::io::AsyncWrite;

use crate::runtime::{self, lines};

/// How long a session may run after its input ended before it counts as hung.
pub const LIMIT: Duration = Duration::from_secs(20);

/// An in-memory stdout the check reads after the session.
#[derive(Debug, Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for SharedBuf {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// What the transport does with one input line, as its documentation says.
#[derive(Debug)]
enum LineFate {
    /// Skipped: blank, a notification before the first request, a malformed notification.
    Skipped,
    /// Answered by the transport itself with this line.
    Answered(Vec<u8>),
    /// Handed to the server; `true` for an `initialize` request.
    Delivered { initialize: bool },
}

fn fate(line: &[u8], seen_request: &mut bool) -> LineFate {
    if jsonrpc::is_blank(line) {
        return LineFate::Skipped;
    }
    let (value, incoming) = match jsonrpc::parse_line(line) {
        Ok(parsed) => parsed,
        Err(reply) => return LineFate::Answered(reply.to_line()),
    };
    let (id, method) = match incoming {
        Incoming::Notification { .. } if !*seen_request => return LineFate::Skipped,
        Incoming::Request { id, method, .. } => (Some(id), method),
        Incoming::Notification { method } => (None, method),
        Incoming::Response => (None, String::new()),
    };
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(_) => {
            *seen_request |= id.is_some();
            LineFate::Delivered {
                initialize: id.is_some() && method == "initialize",
            }
        }
        Err(_) => match id {
            None => LineFate::Skipped,
            Some(id) => {
                let reply = jsonrpc::ErrorReply {
                    id,
                    code: INVALID_PARAMS,
                    message: String::new(),
                };
                LineFate::Answered(reply.to_line())
            }
        },
    }
}

/// The id a line carries, when it is a JSON object with a string or integer id.
fn line_id(line: &[u8]) -> Option<Value> {
    let value: Value = serde_json::from_slice(line).ok()?;
    let id = value.as_object()?.get("id")?;
    matches!(id, Value::String(_) | Value::Number(_)).then(|| id.clone())
}

/// Whether an expected reply (written with an empty message where the text is rmcp's) matches
/// a written line: same id and code, and the same message unless the expected one is empty.
fn same_reply(expected: &Value, written: &Value) -> bool {
    expected["id"] == written["id"]
        && expected["error"]["code"] == written["error"]["code"]
        && (expected["error"]["message"] == ""
            || expected["error"]["message"] == written["error"]["message"])
}

/// Serves one session over `data` and checks what was written.
pub fn check(data: &[u8]) {
    run(data);
}

/// [`check`], returning the lines written (tests use them to show the check is not vacuous).
pub fn run(data: &[u8]) -> Vec<Value> {
    let store = runtime::shared_store();
    let server = runtime::server(&store, SessionPolicy::Fallback(Some("fuzz-session".into())));
    let out = SharedBuf::default();
    let input = io::Cursor::new(data.to_vec());
    let writer = out.clone();
    let served = runtime::tokio().block_on(async move {
        tokio::time::timeout(
            LIMIT,
            server_full::stdio::serve(server, input, writer, Default::default()),
        )
        .await
    });
    assert!(
        served.is_ok(),
        "the stdio session did not end within {LIMIT:?} of its input"
    );
    let written = std::mem::take(&mut *out.0.lock().unwrap_or_else(|p| p.into_inner()));
    assert!(
        written.is_empty() || written.ends_with(b"\n"),
        "output ends inside a line"
    );
    let outputs: Vec<Value> = lines(&written)
        .into_iter()
        .map(|l| {
            let v: Value = serde_json::from_slice(l).unwrap_or_else(|e| {
                panic!(
                    "wrote a line that is not JSON ({e}): {}",
                    String::from_utf8_lossy(l)
                )
            });
            assert!(v.is_object(), "wrote a non-object: {v}");
            assert_eq!(
                v["jsonrpc"], "2.0",
                "wrote a line that is not JSON-RPC 2.0: {v}"
            );
            v
        })
        .collect();

    // Which replies the transport itself must have written, in order.
    let mut seen_request = false;
    let mut first_delivered: Option<(bool, Option<Value>)> = None;
    let mut must: Vec<Value> = Vec::new();
    let mut sent_ids: HashMap<String, usize> = HashMap::new();
    for line in lines(data) {
        if let Some(id) = line_id(line) {
            *sent_ids.entry(id.to_string()).or_default() += 1;
        }
        match fate(line, &mut seen_request) {
            LineFate::Skipped => {}
            LineFate::Answered(reply) => {
                let reply: Value = serde_json::from_slice(&reply).expect("replies are JSON");
                let all_read = first_delivered.as_ref().is_none_or(|(init, id)| {
                    *init
                        && id
                            .as_ref()
                            .is_some_and(|id| answered_with_result(&outputs, id))
                });
                if all_read {
                    must.push(reply);
                }
            }
            LineFate::Delivered { initialize } => {
                if first_delivered.is_none() {
                    first_delivered = Some((initialize, line_id(line)));
                }
            }
        }
    }
    let mut pending = must.iter().peekable();
    for written in &outputs {
        if pending.peek().is_some_and(|want| same_reply(want, written)) {
            pending.next();
        }
    }
    if let Some(missing) = pending.next() {
        panic!("the transport did not answer a bad line with {missing}; wrote {outputs:?}");
    }

    // Nothing is answered more often than it was sent, and only what carried an id.
    let mut answered: HashMap<String, usize> = HashMap::new();
    for v in &outputs {
        let is_answer = v.get("result").is_some() || v.get("error").is_some();
        if !is_answer || v["id"].is_null() {
            continue;
        }
        let key = v["id"].to_string();
        let count = answered.entry(key.clone()).or_default();
        *count += 1;
        assert!(
            *count <= sent_ids.get(&key).copied().unwrap_or(0),
            "id {key} was answered {count} time(s) but sent fewer times: {v}"
        );
    }
    outputs
}

/// Whether `outputs` hold a result (not an error) for request `id`.
fn answered_with_result(outputs: &[Value], id: &Value) -> bool {
    outputs
        .iter()
        .any(|v| v["id"] == *id && v.get("result").is_some())
}
