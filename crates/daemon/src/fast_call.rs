//! The fast path for the commonest stateless request: a 2026-07-28 `tools/call` POSTed to
//! `/mcp` without a session, which needs no reply stream (no progress token, no log level) and
//! whose standard headers agree with its body, is answered here through
//! [`HooksServer::call_without_stream`] instead of by rmcp, which builds a service, a peer,
//! channels and a task for every such request and parses the body twice.
//!
//! The reply is rmcp's: the same JSON-RPC message (a result or an error), in an SSE response
//! with the same headers and the one `data:` event rmcp would send (it answers a stateless
//! request so when its JSON responses are off, as the daemon's are), or a JSON body with the
//! same status when rmcp would refuse with one. The body travels whole, with its length.
//!
//! Everything else goes to rmcp unchanged: a request whose head does not fit is passed on
//! without its body being read; one whose body does not fit (anything unusual: another
//! method, a field this module does not know, a Base64 `Mcp-Name`, `Mcp-Param-*` headers, a
//! body that cannot be read) is rebuilt from the bytes read and passed on as it came. The
//! gate's checks (`Host` and `Origin`, the token, readiness, the session cap) and the
//! in-flight count apply before this runs, as for rmcp's path; the call's metrics and its
//! session (`dev.hooks-mcp/session` in `_meta`) are recorded by the server as rmcp's path
//! records them. `HOOKS_MCP_FAST_CALLS=off` sends every request to rmcp.

use std::borrow::Cow;
use std::pin::Pin;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header::{
    ACCEPT, AsHeaderName, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HeaderName,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::body::Body as _;
use rmcp::model::{
    CallToolResponse, CallToolResult, ErrorCode, ErrorData, JsonObject, JsonRpcVersion2_0,
    ProtocolVersion, RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use server_full::HooksServer;

/// Environment variable: `off` sends every stateless `tools/call` to rmcp.
pub const FAST_CALLS_ENV: &str = "HOOKS_MCP_FAST_CALLS";

/// The only revision this path serves.
const VERSION: &str = "2026-07-28";
/// The only method it serves.
const TOOLS_CALL: &str = "tools/call";
const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
const MCP_METHOD: &str = "mcp-method";
const MCP_NAME: &str = "mcp-name";
const MCP_SESSION_ID: &str = "mcp-session-id";
const MCP_PARAM_PREFIX: &str = "mcp-param-";
/// How a Base64 header value begins (`=?base64?...?=`): rmcp decodes it, this path leaves it.
const ENCODED_PREFIX: &str = "=?";
/// `_meta` keys that ask for a reply stream: progress messages and log messages.
const PROGRESS_TOKEN: &str = "progressToken";
const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// Reads `HOOKS_MCP_FAST_CALLS`: on (the default) or off.
///
/// # Errors
/// A message naming the setting for any other value.
pub(crate) fn parse_switch(raw: Option<&str>) -> Result<bool, String> {
    match raw.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("" | "on" | "true" | "1") => Ok(true),
        Some("off" | "false" | "0") => Ok(false),
        Some(other) => Err(format!(
            "{FAST_CALLS_ENV}: `{other}` is neither `on` nor `off`; unset it to answer \
             stateless tool calls directly"
        )),
    }
}

/// The fast path: the server the calls run on and the body limit.
#[derive(Debug, Clone)]
pub(crate) struct FastCalls {
    server: HooksServer,
    max_body: usize,
}

/// What [`FastCalls::answer`] did with a request.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Answered here.
    Answered(Response),
    /// Not for this path: the request as it came (its body rebuilt from the bytes read), for
    /// rmcp.
    Declined(Request),
}

impl FastCalls {
    /// The fast path over `server` (which must record its calls as Streamable HTTP ones),
    /// reading bodies of at most `max_body` bytes.
    pub(crate) fn new(server: HooksServer, max_body: usize) -> FastCalls {
        FastCalls { server, max_body }
    }

    /// Answers `request` when it is a stateless `tools/call` this path serves; otherwise
    /// gives it back as it came.
    pub(crate) async fn answer(&self, request: Request) -> Outcome {
        if !head_fits(&request, self.max_body) {
            return Outcome::Declined(request);
        }
        let (parts, body) = request.into_parts();
        let bytes = match read_whole(body, self.max_body).await {
            Ok(bytes) => bytes,
            Err(body) => return Outcome::Declined(Request::from_parts(parts, body)),
        };
        let Some(call) = Call::parse(&bytes, &parts.headers) else {
            return Outcome::Declined(Request::from_parts(parts, Body::from(bytes)));
        };
        let Call {
            id,
            name,
            arguments,
            meta,
        } = call;
        let result = self
            .server
            .call_without_stream(&name, arguments, &meta)
            .await;
        tracing::trace!(tool = %name, "tools/call answered on the fast path");
        reply(id, result)
    }
}

/// Whether the request's head (method, path, headers) is that of a stateless 2026-07-28
/// `tools/call` this path may answer; nothing of the body is read.
fn head_fits(request: &Request, max_body: usize) -> bool {
    let headers = request.headers();
    request.method() == Method::POST
        && request.uri().path() == "/mcp"
        && !headers.contains_key(MCP_SESSION_ID)
        && !headers.contains_key(CONTENT_ENCODING)
        && sole(headers, MCP_PROTOCOL_VERSION).is_some_and(|v| v == VERSION)
        && sole(headers, MCP_METHOD).is_some_and(|v| v == TOOLS_CALL)
        && sole(headers, MCP_NAME).is_some_and(|v| !v.starts_with(ENCODED_PREFIX))
        && sole(headers, CONTENT_LENGTH)
            .and_then(|v| v.parse::<usize>().ok())
            .is_some_and(|n| n <= max_body)
        && sole(headers, CONTENT_TYPE).is_some_and(is_json)
        && accepts_the_reply(headers)
        && !headers
            .keys()
            .any(|k| k.as_str().starts_with(MCP_PARAM_PREFIX))
}

/// The one value of header `name`, when it is present once and visible ASCII.
fn sole(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

/// Whether a `Content-Type` names JSON (parameters such as `charset` allowed), as rmcp asks.
fn is_json(value: &str) -> bool {
    let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
    essence.trim().eq_ignore_ascii_case("application/json")
}

/// Whether `Accept` plainly names both JSON and SSE, as rmcp requires of a POST. Anything
/// less plain (weights, parameters, quotes, several headers) is left to rmcp's own reading.
fn accepts_the_reply(headers: &HeaderMap) -> bool {
    let Some(accept) = sole(headers, ACCEPT) else {
        return false;
    };
    // What the SDKs send, spelled as the specification spells it.
    if accept == "application/json, text/event-stream" {
        return true;
    }
    if accept.contains([';', '"']) {
        return false;
    }
    let (mut json, mut sse) = (false, false);
    for range in accept.split(',').map(str::trim) {
        json |= range.eq_ignore_ascii_case("application/json");
        sse |= range.eq_ignore_ascii_case("text/event-stream");
    }
    json && sse
}

/// The whole body (at most `max` bytes), or, when it cannot be had, a body that gives rmcp
/// exactly what this one would have: the bytes read, then the rest or the error.
async fn read_whole(mut body: Body, max: usize) -> Result<Bytes, Body> {
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    let taken = |first: &Option<Bytes>, joined: &Vec<u8>| -> Bytes {
        match first {
            Some(bytes) if joined.is_empty() => bytes.clone(),
            _ => Bytes::from(joined.clone()),
        }
    };
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => break,
            Some(Ok(frame)) => {
                // Trailers carry nothing rmcp reads.
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                let had = first.as_ref().map_or(0, Bytes::len).max(joined.len());
                if data.len() > max.saturating_sub(had) {
                    // rmcp refuses it (413); it must see every byte to say so.
                    let read = taken(&first, &joined);
                    let rest =
                        futures_util::stream::iter([Ok::<Bytes, axum::Error>(read), Ok(data)]);
                    let rest = futures_util::StreamExt::chain(rest, body.into_data_stream());
                    return Err(Body::from_stream(rest));
                }
                match first.take() {
                    None if joined.is_empty() => first = Some(data),
                    None => joined.extend_from_slice(&data),
                    Some(earlier) => {
                        joined.reserve(earlier.len() + data.len());
                        joined.extend_from_slice(&earlier);
                        joined.extend_from_slice(&data);
                    }
                }
            }
            Some(Err(error)) => {
                let read = taken(&first, &joined);
                return Err(Body::from_stream(futures_util::stream::iter([
                    Ok(read),
                    Err(error),
                ])));
            }
        }
    }
    Ok(match first {
        Some(bytes) => bytes,
        None => Bytes::from(joined),
    })
}

/// A stateless `tools/call` request as this path reads it. Unknown members make the parse
/// fail (the request goes to rmcp), so that nothing a request asks for is ignored here.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[allow(dead_code, reason = "checked by its type: only \"2.0\" parses")]
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta")]
    meta: RequestMetaObject,
}

/// A call this path answers.
struct Call<'a> {
    id: RequestId,
    name: Cow<'a, str>,
    arguments: Option<JsonObject>,
    meta: RequestMetaObject,
}

impl<'a> Call<'a> {
    /// The call in `body`, when it is one this path answers given `headers` (already known to
    /// name 2026-07-28 and `tools/call`): its `_meta` complete for the revision, naming it,
    /// asking for no reply stream, and its tool the one `Mcp-Name` names.
    fn parse(body: &'a [u8], headers: &HeaderMap) -> Option<Call<'a>> {
        let envelope: Envelope<'a> = serde_json::from_slice(body).ok()?;
        let params = envelope.params;
        let meta = params.meta;
        let fits = envelope.method == TOOLS_CALL
            && sole(headers, MCP_NAME) == Some(params.name.as_ref())
            && meta
                .protocol_version()
                .is_some_and(|v| v.as_str() == ProtocolVersion::V_2026_07_28.as_str())
            && meta
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
            && !meta.contains_key(PROGRESS_TOKEN)
            && !meta.contains_key(LOG_LEVEL);
        fits.then_some(Call {
            id: envelope.id,
            name: params.name,
            arguments: params.arguments,
            meta,
        })
    }
}

/// rmcp's reply to a stateless request answered by `result`.
fn reply(id: RequestId, result: Result<CallToolResult, ErrorData>) -> Outcome {
    let message = match result {
        Ok(result) => {
            let mut result = ServerResult::from(CallToolResponse::from(result));
            result.fill_missing_cache_hints();
            ServerJsonRpcMessage::response(result, id)
        }
        Err(mut error) => {
            // rmcp's handler gives 2026-07-28 peers the standard code for a missing resource.
            if error.code == ErrorCode::RESOURCE_NOT_FOUND {
                error.code = ErrorCode::INVALID_PARAMS;
            }
            ServerJsonRpcMessage::error(error, Some(id))
        }
    };
    let status = http_status(&message);
    let mut body = Vec::with_capacity(512);
    let framed = status == StatusCode::OK;
    if framed {
        body.extend_from_slice(b"data: ");
    }
    if let Err(e) = serde_json::to_writer(&mut body, &message) {
        tracing::error!("cannot serialize a tools/call reply: {e}");
        return Outcome::Answered(
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error: the reply could not be serialized\n",
            )
                .into_response(),
        );
    }
    let mut response = if framed {
        body.extend_from_slice(b"\n\n");
        let mut response = Response::new(Body::from(body));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert(
            HeaderName::from_static("x-accel-buffering"),
            HeaderValue::from_static("no"),
        );
        response
    } else {
        let mut response = Response::new(Body::from(body));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    };
    *response.status_mut() = status;
    Outcome::Answered(response)
}

/// The HTTP status rmcp gives a stateless request's first message: 400 for a refusal of the
/// request's revision, capabilities or headers, 404 for an unknown method, else 200 (the
/// request's `_meta` is complete here, so invalid parameters are an in-band error).
fn http_status(message: &ServerJsonRpcMessage) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn head(extra: &[(&str, &str)], without: &[&str]) -> Request {
        let mut builder = axum::http::Request::builder()
            .method(Method::POST)
            .uri("/mcp");
        let defaults = [
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("content-length", "100"),
            (MCP_PROTOCOL_VERSION, VERSION),
            (MCP_METHOD, TOOLS_CALL),
            (MCP_NAME, "channel_list"),
        ];
        for (k, v) in defaults {
            if !without.contains(&k) && !extra.iter().any(|(e, _)| *e == k) {
                builder = builder.header(k, v);
            }
        }
        for (k, v) in extra {
            builder = builder.header(*k, *v);
        }
        builder.body(Body::empty()).unwrap()
    }

    #[test]
    fn only_a_plain_stateless_tools_call_head_fits() {
        assert!(head_fits(&head(&[], &[]), 1000));
        let declined = [
            head(&[("mcp-session-id", "s")], &[]),
            head(&[(MCP_METHOD, "tools/list")], &[]),
            head(&[(MCP_PROTOCOL_VERSION, "2025-11-25")], &[]),
            head(&[(MCP_NAME, "=?base64?Y2hhbm5lbF9saXN0?=")], &[]),
            head(&[("mcp-param-channel", "x")], &[]),
            head(&[("accept", "application/json")], &[]),
            head(
                &[("accept", "application/json;q=1, text/event-stream")],
                &[],
            ),
            head(&[("content-type", "text/plain")], &[]),
            head(&[("content-encoding", "gzip")], &[]),
            head(&[("content-length", "1001")], &[]),
            head(&[], &["content-length"]),
            head(&[], &[MCP_NAME]),
        ];
        for request in &declined {
            assert!(!head_fits(request, 1000), "{:?}", request.headers());
        }
        let charset = head(&[("content-type", "Application/JSON; charset=utf-8")], &[]);
        assert!(head_fits(&charset, 1000));
        let reordered = head(&[("accept", "text/event-stream,application/json")], &[]);
        assert!(head_fits(&reordered, 1000));
    }

    fn body(params: serde_json::Value) -> String {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).to_string()
    }

    fn meta() -> serde_json::Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        })
    }

    #[test]
    fn only_a_complete_call_without_a_stream_parses() {
        let headers = head(&[], &[]).headers().clone();
        let parsed = |text: &str| Call::parse(text.as_bytes(), &headers).is_some();
        let plain = body(json!({"name": "channel_list", "arguments": {}, "_meta": meta()}));
        assert!(parsed(&plain));
        let mut session = meta();
        session["dev.hooks-mcp/session"] = json!("s-1");
        assert!(parsed(&body(
            json!({"name": "channel_list", "_meta": session})
        )));

        let mut progress = meta();
        progress["progressToken"] = json!(1);
        let mut logging = meta();
        logging["io.modelcontextprotocol/logLevel"] = json!("debug");
        let mut older = meta();
        older["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
        let mut capabilities = meta();
        capabilities["io.modelcontextprotocol/clientCapabilities"] = json!("none");
        let declined = [
            body(json!({"name": "channel_list", "_meta": progress})),
            body(json!({"name": "channel_list", "_meta": logging})),
            body(json!({"name": "channel_list", "_meta": older})),
            body(json!({"name": "channel_list", "_meta": capabilities})),
            body(json!({"name": "channel_list"})),
            body(json!({"name": "channel_read", "_meta": meta()})),
            body(json!({"name": "channel_list", "_meta": meta(), "requestState": "x"})),
            json!({"jsonrpc": "2.0", "id": null, "method": "tools/call",
                   "params": {"name": "channel_list", "_meta": meta()}})
            .to_string(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "extra": 1,
                   "params": {"name": "channel_list", "_meta": meta()}})
            .to_string(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                   "params": {"name": "channel_list", "_meta": meta()}})
            .to_string(),
            json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call",
                   "params": {"name": "channel_list", "_meta": meta()}})
            .to_string(),
            format!("[{plain}]"),
            "not json".into(),
        ];
        for text in &declined {
            assert!(!parsed(text), "{text}");
        }
    }

    #[tokio::test]
    async fn a_body_not_taken_is_given_back_whole() {
        let read = read_whole(Body::from("0123"), 4).await.unwrap();
        assert_eq!(&read[..], b"0123");
        let chunks = futures_util::stream::iter([
            Ok::<_, std::io::Error>(Bytes::from_static(b"01")),
            Ok(Bytes::from_static(b"23")),
        ]);
        let read = read_whole(Body::from_stream(chunks), 4).await.unwrap();
        assert_eq!(&read[..], b"0123");
        let chunks = futures_util::stream::iter([
            Ok::<_, std::io::Error>(Bytes::from_static(b"012")),
            Ok(Bytes::from_static(b"345")),
            Ok(Bytes::from_static(b"6")),
        ]);
        let back = read_whole(Body::from_stream(chunks), 4).await.unwrap_err();
        let bytes = axum::body::to_bytes(back, 100).await.unwrap();
        assert_eq!(&bytes[..], b"0123456");
    }

    #[test]
    fn refusals_keep_rmcps_statuses() {
        let error = |code: ErrorCode| {
            ServerJsonRpcMessage::error(ErrorData::new(code, "x", None), Some(RequestId::Number(1)))
        };
        assert_eq!(
            http_status(&error(ErrorCode::INVALID_PARAMS)),
            StatusCode::OK
        );
        assert_eq!(
            http_status(&error(ErrorCode::INTERNAL_ERROR)),
            StatusCode::OK
        );
        assert_eq!(
            http_status(&error(ErrorCode::METHOD_NOT_FOUND)),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            http_status(&error(ErrorCode::HEADER_MISMATCH)),
            StatusCode::BAD_REQUEST
        );
    }
}
