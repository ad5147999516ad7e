//! Target `http_sessions`: Streamable HTTP requests routed through the daemon's session layer
//! (the `daemon` crate's `http_sessions.rs` under rmcp's `StreamableHttpService`), in memory with
//! `tower::ServiceExt::oneshot`.
//!
//! Input: requests separated by lines `~~~`. Each is `METHOD PATH` on its first line, then
//! `Name: value` header lines, a blank line and the body; `{session}` in a header value stands
//! for the session id the last response handed out. Invariants: never a panic; every response
//! head arrives within [`LIMIT`]; no 5xx status; a JSON body parses; a reply stream to a POSTed
//! request ends within [`LIMIT`] and carries exactly one response (result or error) with that
//! request's id; a session id handed out is accepted by the next request until it is deleted.

use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, Response, StatusCode};
use catalogue::SessionPolicy;
use daemon::fuzzing::{McpRouterOptions, mcp_router};
use futures_util::StreamExt;
use serde_json::Value;
use server_full::HooksServer;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::runtime::{self, TempStore};

/// How long a response head, or a reply stream, may take.
pub const LIMIT: Duration = Duration::from_secs(10);
/// How long a stream that is not a request's reply (a GET stream) is read.
const PEEK: Duration = Duration::from_millis(50);
/// Requests read from one input.
const MAX_REQUESTS: usize = 24;

/// One request of the input.
#[derive(Debug)]
struct Call {
    method: Vec<u8>,
    path: Vec<u8>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
}

fn parse(data: &[u8]) -> Vec<Call> {
    let text = data;
    let mut calls = Vec::new();
    let mut rest = text;
    while !rest.is_empty() && calls.len() < MAX_REQUESTS {
        let (block, next) = match find(rest, b"\n~~~\n") {
            Some(at) => (&rest[..at], &rest[at + 5..]),
            None => (rest, &b""[..]),
        };
        rest = next;
        let (head, body) = match find(block, b"\n\n") {
            Some(at) => (&block[..at], &block[at + 2..]),
            None => (block, &b""[..]),
        };
        let mut lines = head.split(|b| *b == b'\n');
        let first = lines.next().unwrap_or_default();
        let (method, path) = match first.iter().position(|b| *b == b' ') {
            Some(at) => (&first[..at], &first[at + 1..]),
            None => (first, &b"/mcp"[..]),
        };
        let headers = lines
            .filter_map(|l| {
                let at = l.iter().position(|b| *b == b':')?;
                Some((l[..at].to_vec(), l[at + 1..].trim_ascii().to_vec()))
            })
            .collect();
        calls.push(Call {
            method: method.to_vec(),
            path: path.to_vec(),
            headers,
            body: body.to_vec(),
        });
    }
    calls
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The server every input's router forks its sessions from (a daemon-style session policy).
fn prototype() -> &'static (HooksServer, TempStore) {
    static SERVER: OnceLock<(HooksServer, TempStore)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let store = TempStore::new();
        let server = runtime::server(&store, SessionPolicy::ExplicitOnly);
        (server, store)
    })
}

/// Builds the request, or `None` when the input's parts are not a valid HTTP request.
fn request(call: &Call, session: Option<&str>) -> Option<Request<Body>> {
    let method = Method::from_bytes(&call.method).ok()?;
    let path = std::str::from_utf8(&call.path).ok()?;
    let mut builder = Request::builder().method(method).uri(path);
    for (name, value) in &call.headers {
        let value = match session {
            Some(id) => {
                let text = String::from_utf8_lossy(value).replace("{session}", id);
                text.into_bytes()
            }
            None => value.clone(),
        };
        builder = builder.header(name.as_slice(), value.as_slice());
    }
    builder.body(Body::from(call.body.clone())).ok()
}

/// The JSON-RPC id of a POSTed request body, if it is one request.
fn posted_request_id(call: &Call) -> Option<Value> {
    let value: Value = serde_json::from_slice(&call.body).ok()?;
    let obj = value.as_object()?;
    obj.get("method")?.as_str()?;
    obj.get("id").cloned()
}

/// Reads a body: all of it within `limit`, or what arrives while frames keep coming within
/// `idle`. Returns the bytes and whether the body ended.
async fn read_body(body: Body, limit: Duration, idle: Duration) -> (Vec<u8>, bool) {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let wait = idle.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        match tokio::time::timeout(wait, stream.next()).await {
            Ok(Some(Ok(chunk))) => bytes.extend_from_slice(&chunk),
            Ok(Some(Err(_))) | Ok(None) => return (bytes, true),
            Err(_) => return (bytes, false),
        }
    }
}

/// The JSON messages of an SSE body's `data:` fields.
fn sse_messages(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            let data = data.join("\n");
            if data.trim().is_empty() {
                return None;
            }
            Some(
                serde_json::from_str(&data)
                    .unwrap_or_else(|e| panic!("an SSE event is not JSON ({e}): {data}")),
            )
        })
        .collect()
}

fn content_type(response: &Response<Body>) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// What one input's run saw (tests use it to show the checks are not vacuous).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Responses received.
    pub responses: usize,
    /// POSTed requests whose reply carried their answer.
    pub answered: usize,
    /// Session ids handed out.
    pub sessions: usize,
}

/// Sends the input's requests, in order, to a fresh router.
pub fn check(data: &[u8]) {
    run(data);
}

/// [`check`], returning what it saw.
pub fn run(data: &[u8]) -> Seen {
    let mut seen = Seen::default();
    let calls = parse(data);
    if calls.is_empty() {
        return seen;
    }
    let (server, _) = prototype();
    let options = McpRouterOptions {
        max_sessions: 64,
        idle: Duration::from_secs(60),
        max_body_bytes: 64 * 1024,
        allowed_hosts: vec!["localhost".into(), "127.0.0.1".into()],
    };
    let cancel = CancellationToken::new();
    let router = mcp_router(server.clone(), &options, &cancel);
    runtime::tokio().block_on(async {
        let mut session: Option<String> = None;
        for call in &calls {
            let Some(request) = request(call, session.as_deref()) else {
                continue;
            };
            let is_post = request.method() == Method::POST;
            let response = tokio::time::timeout(LIMIT, router.clone().oneshot(request))
                .await
                .unwrap_or_else(|_| panic!("no response head within {LIMIT:?} for {call:?}"))
                .unwrap_or_else(|never| match never {});
            seen.responses += 1;
            let status = response.status();
            assert!(!status.is_server_error(), "{status} for {call:?}");
            if let Some(id) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            {
                if session.as_deref() != Some(id) {
                    seen.sessions += 1;
                }
                session = Some(id.to_owned());
            }
            let kind = content_type(&response);
            let reply_to = is_post
                .then(|| posted_request_id(call))
                .flatten()
                .filter(|_| status == StatusCode::OK);
            if kind.starts_with("text/event-stream") {
                let limit = if reply_to.is_some() { LIMIT } else { PEEK };
                let (body, ended) = read_body(response.into_body(), limit, limit).await;
                let messages = sse_messages(&body);
                if let Some(id) = reply_to {
                    assert!(
                        ended,
                        "the reply stream to request {id} did not end: {messages:?}"
                    );
                    let answers = messages
                        .iter()
                        .filter(|m| m.get("result").is_some() || m.get("error").is_some())
                        .collect::<Vec<_>>();
                    assert_eq!(answers.len(), 1, "request {id}: answers {answers:?}");
                    assert_eq!(answers[0]["id"], id, "request {id} got another's answer");
                    seen.answered += 1;
                }
            } else {
                let (body, ended) = read_body(response.into_body(), LIMIT, LIMIT).await;
                assert!(ended, "a {status} body did not end");
                if kind.starts_with("application/json") && !body.is_empty() {
                    let value: Result<Value, _> = serde_json::from_slice(&body);
                    assert!(value.is_ok(), "a JSON body that is not JSON: {body:?}");
                    if let (Some(id), Ok(value)) = (reply_to, value) {
                        assert_eq!(value["id"], id, "request {id} got another's answer");
                        seen.answered += 1;
                    }
                }
            }
        }
        cancel.cancel();
    });
    seen
}
