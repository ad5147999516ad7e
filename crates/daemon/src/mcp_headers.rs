//! The standard request headers of the 2026-07-28 revision (`Mcp-Method`, `Mcp-Name`,
//! `MCP-Protocol-Version`) on a Streamable HTTP POST, as the daemon adjusts or checks them
//! before rmcp validates them, and the JSON-RPC errors it gives where rmcp answers plain text
//! (a body that is not one message, a repeated or unserved `MCP-Protocol-Version`).
//!
//! The specification requires `Mcp-Method` on every request ("Required For: All requests")
//! and leaves notifications open: "header requirements for notification POSTs are not defined
//! by this revision" (basic/transports/streamable-http). rmcp checks notifications like
//! requests and answers one without the header with `-32020` (HeaderMismatch), which a
//! client that sends `notifications/cancelled` without it (the TypeScript client 2.x does)
//! then reports as an error. So a notification POST that names a 2026-07-28 (or later)
//! `MCP-Protocol-Version` and carries no `Mcp-Method` gets the header from its own body; a
//! request without it is left alone, and rmcp refuses it as the specification asks. Only such
//! POSTs have their body read here: every other request passes untouched.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use protocol_lite::handshake::SUPPORTED_VERSIONS;
use serde_json::Value;

/// The header a 2026-07-28 request names its method in.
const MCP_METHOD: &str = "mcp-method";
/// The header a legacy session's requests name it in.
const MCP_SESSION_ID: &str = "mcp-session-id";
/// The header every Streamable HTTP POST names its protocol revision in.
const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The first revision with standard request headers (rmcp checks them from this one on).
const STANDARD_HEADERS_FROM: &str = "2026-07-28";
/// The JSON-RPC code of a standard header that disagrees with the request (HeaderMismatch).
const HEADER_MISMATCH: i64 = -32020;

/// Middleware on `/mcp`: fills `Mcp-Method` of a 2026-07-28 notification POST that lacks it
/// (see the module docs). `max_body` is the transport's body limit, enforced here as rmcp
/// would (413) for the bodies this reads.
pub(crate) async fn fill_notification_method(
    State(max_body): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    if !needs_a_look(&request) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match collect(body, max_body).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    if let Some(method) = notification_method(&bytes)
        && let Ok(value) = HeaderValue::from_str(&method)
    {
        tracing::debug!(%method, "a notification without Mcp-Method: taken from its body");
        parts.headers.insert(MCP_METHOD, value);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Middleware on `/mcp`: the refusals a JSON POST's body decides, worded as stdio words them.
/// A POST whose JSON body rmcp cannot take as one JSON-RPC message
/// (not JSON, a batch, an id that is neither a string nor an integer, another `jsonrpc`) gets
/// a JSON-RPC error as 400, as the transport page asks ("the HTTP status code SHOULD be 400
/// ... with a JSON-RPC error response"), instead of rmcp's plain-text 415, which a client cannot
/// read as an answer: `-32700` for a body that is not JSON, `-32600` for JSON that is not one
/// message, with the request's `id` whenever it can be read. The body is kept (shared, not
/// copied) while rmcp answers, and looked at only when rmcp refused it, or, before that, when
/// it names a log level (one not recognized is refused, see [`log_level_refusal`]) or a list's
/// cursor (one that is not a string is refused, see [`cursor_refusal`]).
pub(crate) async fn json_body_refusals(
    State(max_body): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    let json = request.method() == Method::POST
        && request
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if !json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match collect(body, max_body).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    if let Some(refused) = log_level_refusal(&bytes) {
        return json_rpc_error(StatusCode::BAD_REQUEST, &refused);
    }
    let in_session = parts.headers.contains_key(MCP_SESSION_ID);
    if accepts_a_stream(&parts.headers)
        && let Some(refused) = cursor_refusal(&bytes, in_session)
    {
        return in_band_error(&refused);
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    json_rpc_error(StatusCode::BAD_REQUEST, &malformed(&bytes))
}

/// The `-32602` refusal of a request whose `_meta` names a log level that is not one of the
/// eight (the logging page: the server SHOULD reject it; rmcp serves it), as stdio refuses it
/// ([`protocol_lite::modern::log_level_refusal`]). Only a body that holds the key is parsed.
fn log_level_refusal(body: &[u8]) -> Option<protocol_lite::jsonrpc::ErrorReply> {
    memchr::memmem::find(body, protocol_lite::modern::LOG_LEVEL_KEY.as_bytes())?;
    match protocol_lite::jsonrpc::parse_line(body) {
        Ok((_, protocol_lite::jsonrpc::Incoming::Request { id, params, .. })) => {
            protocol_lite::modern::log_level_refusal(&id, params.as_ref())
        }
        _ => None,
    }
}

/// The `-32602` refusal of a list request whose cursor is neither a string nor `null`, in the
/// words every cursor is refused in ([`protocol_lite::modern::cursor_refusal`], as on stdio).
/// rmcp reads a list's params leniently: params that do not parse (a numeric or object
/// cursor) are dropped, and the request would be served its page as if it named no cursor.
/// A string cursor is left to rmcp, which refuses it in the request's own stream; this one is
/// answered the same way ([`in_band_error`]). What `_meta` says is refused first, as rmcp
/// and stdio refuse it (`protocol_lite::modern::meta_refusal`; `in_session`: the request names
/// a legacy session, whose requests carry no `_meta`), so this is left to rmcp then. Only a
/// body that holds the key is parsed.
fn cursor_refusal(body: &[u8], in_session: bool) -> Option<protocol_lite::jsonrpc::ErrorReply> {
    memchr::memmem::find(body, b"\"cursor\"")?;
    let Ok((_, protocol_lite::jsonrpc::Incoming::Request { id, method, params })) =
        protocol_lite::jsonrpc::parse_line(body)
    else {
        return None;
    };
    let listed = protocol_lite::modern::LISTS.contains(&method.as_str());
    let odd = params
        .as_ref()
        .and_then(|p| p.get("cursor"))
        .is_some_and(|c| !c.is_string() && !c.is_null());
    let meta_passes =
        || protocol_lite::modern::meta_refusal(&id, &method, params.as_ref(), in_session).is_none();
    (listed && odd && meta_passes())
        .then(|| protocol_lite::modern::cursor_refusal(&id, params.as_ref()))
        .flatten()
}

/// The JSON-RPC error for a POST body rmcp refused as no JSON-RPC message: the front end's own
/// reading of it (the same codes, ids and reasons as on stdio), in the words of HTTP.
fn malformed(body: &[u8]) -> protocol_lite::jsonrpc::ErrorReply {
    match protocol_lite::jsonrpc::parse_line(body) {
        Err(mut reply) => {
            reply.message = reply
                .message
                .replace(
                    "one JSON-RPC 2.0 object per line",
                    "one JSON-RPC 2.0 message per POST",
                )
                .replace("on its own line", "in its own POST");
            reply
        }
        // Read as a message here but not by rmcp: say what a message must be.
        Ok((_, incoming)) => protocol_lite::jsonrpc::ErrorReply {
            id: match incoming {
                protocol_lite::jsonrpc::Incoming::Request { id, .. } => id,
                _ => Value::Null,
            },
            code: protocol_lite::jsonrpc::INVALID_REQUEST,
            message: "Invalid request: the body is not one JSON-RPC 2.0 message (JSON text, an \
                      object with `jsonrpc` \"2.0\", a string or integer `id`, no batch); send \
                      one message per POST"
                .into(),
        },
    }
}

/// Middleware on `/mcp`: a POST's `MCP-Protocol-Version` must be one header naming a revision
/// this server serves. Twice is refused with `-32020` (HeaderMismatch), as rmcp refuses a
/// repeated `Mcp-Method` or `Mcp-Name`: rmcp would read the first value, and an intermediary
/// that reads the last would route the request by another revision than the one it is served
/// by. A revision not served is refused with `-32022` and the served ones in `data`, as the
/// transport page asks ("an UnsupportedProtocolVersionError listing its supported versions"),
/// whether or not the body names one in `_meta` (rmcp answers plain text when it does not).
/// The body is read only to give a refusal the request's `id`.
pub(crate) async fn protocol_version_header(
    State(max_body): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let refusal = {
        let mut values = request.headers().get_all(MCP_PROTOCOL_VERSION).iter();
        match (values.next(), values.next()) {
            (None, _) => None,
            (Some(_), Some(_)) => Some(VersionRefusal::Repeated),
            (Some(value), None) => {
                let value = String::from_utf8_lossy(value.as_bytes());
                (!SUPPORTED_VERSIONS.contains(&value.as_ref()))
                    .then(|| VersionRefusal::Unsupported(value.into_owned()))
            }
        }
    };
    let Some(refusal) = refusal else {
        return next.run(request).await;
    };
    let id = match collect(request.into_body(), max_body).await {
        Ok(bytes) => request_id(&bytes),
        Err(too_large) => return too_large,
    };
    match refusal {
        VersionRefusal::Repeated => {
            let reply = protocol_lite::jsonrpc::ErrorReply {
                id,
                code: HEADER_MISMATCH,
                message: "Header mismatch: MCP-Protocol-Version is sent more than once; send it \
                          once, naming the revision in the request's \
                          `_meta.io.modelcontextprotocol/protocolVersion` (or the session's)"
                    .into(),
            };
            json_rpc_error(StatusCode::BAD_REQUEST, &reply)
        }
        VersionRefusal::Unsupported(requested) => (
            StatusCode::BAD_REQUEST,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            protocol_lite::modern::unsupported_version_line(&id, &requested),
        )
            .into_response(),
    }
}

/// What is wrong with a POST's `MCP-Protocol-Version`.
enum VersionRefusal {
    /// The header is there more than once.
    Repeated,
    /// It names this revision, which this server does not serve.
    Unsupported(String),
}

/// The id of the JSON-RPC request in `body`, or `null` when there is none to read (as
/// `protocol_lite::jsonrpc::parse_line` reads it).
fn request_id(body: &[u8]) -> Value {
    match protocol_lite::jsonrpc::parse_line(body) {
        Ok((_, protocol_lite::jsonrpc::Incoming::Request { id, .. })) => id,
        Ok(_) => Value::Null,
        Err(refused) => refused.id,
    }
}

/// Whether the request's `Accept` names `text/event-stream` (rmcp refuses one that does not
/// before it reads the body, and is left to).
fn accepts_a_stream(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

/// A JSON-RPC error answered as rmcp answers a request it refuses in band: 200, and a
/// one-event stream whose `data` is the error, with rmcp's stream headers (the fast path's
/// reply carries the same).
fn in_band_error(reply: &protocol_lite::jsonrpc::ErrorReply) -> Response {
    let mut body = b"data: ".to_vec();
    let line = reply.to_line();
    body.extend_from_slice(line.strip_suffix(b"\n").unwrap_or(&line));
    body.extend_from_slice(b"\n\n");
    (
        StatusCode::OK,
        [
            (axum::http::header::CONTENT_TYPE, "text/event-stream"),
            (axum::http::header::CACHE_CONTROL, "no-cache"),
            (
                axum::http::HeaderName::from_static("x-accel-buffering"),
                "no",
            ),
        ],
        body,
    )
        .into_response()
}

/// A JSON-RPC error answer with `status`.
pub(crate) fn json_rpc_error(
    status: StatusCode,
    reply: &protocol_lite::jsonrpc::ErrorReply,
) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        reply.to_line(),
    )
        .into_response()
}

/// Middleware on `/mcp`: a 2026-07-28 POST naming a method that revision removed
/// (`protocol_lite::modern::REMOVED_METHODS`: `ping`, `logging/setLevel`,
/// `resources/subscribe`, `resources/unsubscribe`) is answered 404 with `-32601` and what
/// replaces it, in the words of every other path. rmcp's own answer is the bare method name,
/// and for the subscriptions it first demands an `Mcp-Name` header (`-32020`), sending the
/// client to add a header only to be told then that the method does not exist. Reads the body
/// (for the request's id) of those requests alone.
pub(crate) async fn removed_methods(
    State(max_body): State<usize>,
    request: Request,
    next: Next,
) -> Response {
    let removed = request.method() == Method::POST
        && is_standard(&request)
        && request
            .headers()
            .get(MCP_METHOD)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|m| {
                protocol_lite::modern::REMOVED_METHODS
                    .iter()
                    .any(|(removed, _)| *removed == m.trim())
            });
    if !removed {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match collect(body, max_body).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let removed = match protocol_lite::jsonrpc::parse_line(&bytes) {
        Ok((_, protocol_lite::jsonrpc::Incoming::Request { id, method, .. })) => {
            protocol_lite::modern::removed_method(&id, &method)
        }
        _ => None,
    };
    match removed {
        Some(reply) => json_rpc_error(StatusCode::NOT_FOUND, &reply),
        // Not such a request (not one message, or a body that disagrees with the header):
        // rmcp's checks say what is wrong with it.
        None => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

/// Whether `request` names a revision with standard headers in `MCP-Protocol-Version`.
fn is_standard(request: &Request) -> bool {
    request
        .headers()
        .get(MCP_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() >= STANDARD_HEADERS_FROM)
}

/// Whether `request` is a POST naming a revision with standard headers but no `Mcp-Method`.
fn needs_a_look(request: &Request) -> bool {
    let headers = request.headers();
    request.method() == Method::POST && !headers.contains_key(MCP_METHOD) && is_standard(request)
}

/// The whole body, at most `max` bytes (a body sent in one piece, as most are, is not copied).
async fn collect(body: Body, max: usize) -> Result<Bytes, Response> {
    let mut stream = body.into_data_stream();
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut len = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            (
                StatusCode::BAD_REQUEST,
                format!("Bad Request: cannot read the request body: {e}\n"),
            )
                .into_response()
        })?;
        if chunk.len() > max.saturating_sub(len) {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {max} bytes\n"),
            )
                .into_response());
        }
        len += chunk.len();
        chunks.push(chunk);
    }
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.swap_remove(0),
        _ => Bytes::from(chunks.concat()),
    })
}

/// The method of a JSON-RPC notification (an object with a string `method` and no `id`
/// member); `None` for a request, a response, a batch or anything that is not JSON.
pub(crate) fn notification_method(body: &[u8]) -> Option<String> {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    if message.contains_key("id") {
        return None;
    }
    match message.get("method") {
        Some(Value::String(method)) => Some(method.clone()),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_a_notification_names_its_method() {
        let method = |body: &str| notification_method(body.as_bytes());
        assert_eq!(
            method(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#)
                .as_deref(),
            Some("notifications/cancelled")
        );
        // A request keeps its refusal, even with a null id.
        assert_eq!(
            method(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            None
        );
        assert_eq!(method(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#), None);
        assert_eq!(method(r#"[{"jsonrpc":"2.0","method":"x"}]"#), None);
        assert_eq!(method(r#"{"jsonrpc":"2.0","method":7}"#), None);
        assert_eq!(method("not json"), None);
    }

    #[test]
    fn only_modern_posts_without_the_header_are_read() {
        let request = |method: Method, headers: &[(&str, &str)]| {
            let mut builder = axum::http::Request::builder().method(method).uri("/mcp");
            for (k, v) in headers {
                builder = builder.header(*k, *v);
            }
            builder.body(Body::empty()).unwrap()
        };
        let modern = (MCP_PROTOCOL_VERSION, "2026-07-28");
        assert!(needs_a_look(&request(Method::POST, &[modern])));
        assert!(!needs_a_look(&request(
            Method::POST,
            &[modern, (MCP_METHOD, "notifications/cancelled")]
        )));
        assert!(!needs_a_look(&request(
            Method::POST,
            &[(MCP_PROTOCOL_VERSION, "2025-11-25")]
        )));
        assert!(!needs_a_look(&request(Method::POST, &[])));
        assert!(!needs_a_look(&request(Method::DELETE, &[modern])));
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused() {
        let refused = collect(Body::from("0123456789"), 4).await.unwrap_err();
        assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let kept = collect(Body::from("0123"), 4).await.unwrap();
        assert_eq!(&kept[..], b"0123");
    }
}
