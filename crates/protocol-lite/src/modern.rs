//! The 2026-07-28 (stateless) framing as the light session meets it: the request `_meta` that
//! every request carries instead of an `initialize`, the version check, the caching hints on
//! list results, `subscriptions/listen` filters, and the lines the front end writes for them.
//!
//! A request is *modern* when its `params._meta` names `io.modelcontextprotocol/protocolVersion`.
//! Such a request must also carry the client's capabilities there; one that lacks either key
//! gets `-32602`, and one naming a version the server does not serve gets `-32022` with the
//! supported versions, in the shape rmcp answers (so a client cannot tell the light path from
//! the full server).

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::handshake::{STABLE_TTL_MS, SUPPORTED_VERSIONS};
use crate::jsonrpc::{self, ErrorReply};

/// The `_meta` key naming a request's protocol version (a string; required).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key holding the client's capabilities for a request (an object; required).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key tying a notification to the `subscriptions/listen` request it belongs to
/// (whose id it holds).
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// The error code for a request naming a protocol version the server does not serve.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A request's `params._meta`, when it is an object.
fn meta(params: Option<&Map<String, Value>>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// Whether a request is modern: its `params._meta` names a protocol version (of any type; a
/// malformed one is refused by [`missing_meta`]).
pub fn is_modern(params: Option<&Map<String, Value>>) -> bool {
    meta(params).is_some_and(|m| m.contains_key(PROTOCOL_VERSION_KEY))
}

/// The protocol version a request's `_meta` names, when it names one as a string.
pub fn requested_version(params: Option<&Map<String, Value>>) -> Option<&str> {
    meta(params)?.get(PROTOCOL_VERSION_KEY)?.as_str()
}

/// The required `_meta` keys a request lacks or has malformed (a string protocol version, an
/// object of client capabilities whose known members have their schema's shapes, see
/// [`capabilities_are_well_formed`]), in that order; empty when it has both.
pub fn missing_meta(params: Option<&Map<String, Value>>) -> Vec<&'static str> {
    let meta = meta(params);
    let mut missing = Vec::new();
    if !meta.is_some_and(|m| m.get(PROTOCOL_VERSION_KEY).is_some_and(Value::is_string)) {
        missing.push(PROTOCOL_VERSION_KEY);
    }
    if !meta.is_some_and(|m| {
        m.get(CLIENT_CAPABILITIES_KEY)
            .is_some_and(capabilities_are_well_formed)
    }) {
        missing.push(CLIENT_CAPABILITIES_KEY);
    }
    missing
}

/// Whether `capabilities` has the shape of the schema's `ClientCapabilities`, as the full
/// server (rmcp) reads it: an object whose known members, when present and not `null`, are
/// objects (`experimental` and `extensions` of objects; `roots.listChanged` and
/// `elicitation.form.schemaValidation` booleans; `sampling.tools`, `sampling.context` and
/// `elicitation.url` objects). Unknown members are left alone, as rmcp leaves them. The light
/// path refuses what the full server would, so that a request it answered (a held
/// subscription) is not refused after the hand-off.
pub fn capabilities_are_well_formed(capabilities: &Value) -> bool {
    /// `value` is absent, `null`, or an object that passes `check`.
    fn object(value: Option<&Value>, check: impl Fn(&Map<String, Value>) -> bool) -> bool {
        match value {
            None | Some(Value::Null) => true,
            Some(Value::Object(members)) => check(members),
            Some(_) => false,
        }
    }
    fn boolean(value: Option<&Value>) -> bool {
        matches!(value, None | Some(Value::Null | Value::Bool(_)))
    }
    fn plain(value: Option<&Value>) -> bool {
        object(value, |_| true)
    }
    fn of_objects(members: &Map<String, Value>) -> bool {
        members.values().all(Value::is_object)
    }
    let Value::Object(caps) = capabilities else {
        return false;
    };
    object(caps.get("experimental"), of_objects)
        && object(caps.get("extensions"), of_objects)
        && object(caps.get("roots"), |r| boolean(r.get("listChanged")))
        && object(caps.get("sampling"), |s| {
            plain(s.get("tools")) && plain(s.get("context"))
        })
        && object(caps.get("elicitation"), |e| {
            object(e.get("form"), |f| boolean(f.get("schemaValidation"))) && plain(e.get("url"))
        })
}

/// The `_meta` key a request may name its log level in (2026-07-28).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// The log levels a request may name (RFC 5424's, as the logging page lists them).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The `-32602` reply to a request whose `_meta` names a log level that is not one of
/// [`LOG_LEVELS`] (the logging page: the server SHOULD reject it); `None` otherwise.
pub fn log_level_refusal(id: &Value, params: Option<&Map<String, Value>>) -> Option<ErrorReply> {
    let level = meta(params)?.get(LOG_LEVEL_KEY)?;
    if level.as_str().is_some_and(|l| LOG_LEVELS.contains(&l)) {
        return None;
    }
    Some(ErrorReply {
        id: id.clone(),
        code: jsonrpc::INVALID_PARAMS,
        message: format!(
            "invalid `{LOG_LEVEL_KEY}` {level} in `_meta`: name one of {}",
            LOG_LEVELS.join(", ")
        ),
    })
}

/// The refusal of a request for what its `_meta` says, in one order on both sides of the
/// stdio hand-off (the light path and the full server's reader call this alone, so a client
/// cannot tell them apart): a method 2026-07-28 removed, when `_meta` names that revision
/// (`-32601`); a revision not served (`-32022`); missing or malformed required fields
/// (`-32602`); a log level not recognized (`-32602`). `initialized` says an `initialize` opened
/// the session: then only a request whose `_meta` names 2026-07-28 or a revision not served is
/// checked, and one without `_meta` is the legacy session's own. A `ping` is the caller's
/// ([`ping_reply_line`]). `None` when nothing is refused.
pub fn meta_refusal(
    id: &Value,
    method: &str,
    params: Option<&Map<String, Value>>,
    initialized: bool,
) -> Option<Vec<u8>> {
    let version = requested_version(params);
    let stateless = version == Some(crate::handshake::STATELESS_VERSION);
    let served = version.is_none_or(|v| SUPPORTED_VERSIONS.contains(&v));
    if initialized && !stateless && served {
        return None;
    }
    if stateless && let Some(removed) = removed_method(id, method) {
        return Some(removed.to_line());
    }
    if let Some(version) = version.filter(|_| !served) {
        return Some(unsupported_version_line(id, version));
    }
    let missing = missing_meta(params);
    if !missing.is_empty() {
        return Some(missing_meta_reply(id, &missing).to_line());
    }
    log_level_refusal(id, params).map(|refused| refused.to_line())
}

/// The `-32602` reply to an `initialize` whose params are not the handshake's: a string
/// `protocolVersion`, an object of `capabilities` and a `clientInfo` with a string `name` and
/// `version`, naming what is missing or malformed. The light path and the full server's stdio
/// reader both answer by it (rmcp would read such a request as a stateless one and ask for
/// `_meta`, which a legacy client does not know of).
pub fn initialize_refusal(id: &Value, params: Option<&Map<String, Value>>) -> ErrorReply {
    let string = |v: Option<&Value>| v.is_some_and(Value::is_string);
    let client = params.and_then(|p| p.get("clientInfo"));
    let problems: Vec<&str> = [
        (
            !string(params.and_then(|p| p.get("protocolVersion"))),
            "protocolVersion",
        ),
        (
            !params
                .and_then(|p| p.get("capabilities"))
                .is_some_and(Value::is_object),
            "capabilities",
        ),
        (
            !(string(client.and_then(|c| c.get("name")))
                && string(client.and_then(|c| c.get("version")))),
            "clientInfo",
        ),
    ]
    .into_iter()
    .filter_map(|(wrong, name)| wrong.then_some(name))
    .collect();
    ErrorReply {
        id: id.clone(),
        code: jsonrpc::INVALID_PARAMS,
        message: format!(
            "Invalid params for `initialize`: missing or malformed {}; it needs \
             `protocolVersion` (a string), `capabilities` (an object) and `clientInfo` with \
             `name` and `version` (strings)",
            problems.join(", ")
        ),
    }
}

/// Whether an `initialize` request's params are the handshake's (see [`initialize_refusal`]).
pub fn initialize_is_complete(params: Option<&Map<String, Value>>) -> bool {
    params.is_some_and(|p| {
        p.get("protocolVersion").is_some_and(Value::is_string)
            && p.get("capabilities").is_some_and(Value::is_object)
            && p.get("clientInfo").is_some_and(|c| {
                c.get("name").is_some_and(Value::is_string)
                    && c.get("version").is_some_and(Value::is_string)
            })
    })
}

/// What a stdio session has chosen so far, as the light path and the full server's reader
/// both track it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Era {
    /// An `initialize` was read: the legacy lifecycle.
    pub initialized: bool,
    /// A request chose the stateless era ([`chooses_stateless`]): `initialize` is refused.
    pub stateless: bool,
}

/// The reply the light path gives itself to a request that the full server's stdio reader
/// must answer the same way before its MCP library sees it, in the light path's order: a
/// `ping` without a lifecycle ([`ping_reply_line`]); an `initialize` after a request that
/// chose the stateless era ([`initialize_after_stateless`]) or with incomplete params
/// ([`initialize_refusal`]); what `_meta` says ([`meta_refusal`]); a list's cursor
/// ([`cursor_refusal`]). `None` when the request is the server's to answer.
pub fn answered_alike(
    id: &Value,
    method: &str,
    params: Option<&Map<String, Value>>,
    era: Era,
) -> Option<Vec<u8>> {
    if method == "ping" && !era.initialized {
        return Some(ping_reply_line(id, params));
    }
    if method == "initialize" && !era.initialized {
        // The legacy opening: its params are the handshake's, not `_meta`.
        if era.stateless {
            return Some(initialize_after_stateless(id).to_line());
        }
        return (!initialize_is_complete(params)).then(|| initialize_refusal(id, params).to_line());
    }
    if let Some(refused) = meta_refusal(id, method, params, era.initialized) {
        return Some(refused);
    }
    LISTS
        .contains(&method)
        .then(|| cursor_refusal(id, params))
        .flatten()
        .map(|refused| refused.to_line())
}

/// The list requests, each answered on one page: a cursor is refused ([`cursor_refusal`]).
pub const LISTS: [&str; 4] = [
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// The `-32602` reply to a request (before any `initialize`) whose `_meta` lacks `missing`.
pub fn missing_meta_reply(id: &Value, missing: &[&str]) -> ErrorReply {
    ErrorReply {
        id: id.clone(),
        code: jsonrpc::INVALID_PARAMS,
        message: format!(
            "request _meta is missing or has malformed required fields: {}; every 2026-07-28 \
             request carries `{PROTOCOL_VERSION_KEY}` (a string) and \
             `{CLIENT_CAPABILITIES_KEY}` (an object) in `params._meta`, or open the session \
             with `initialize`",
            missing.join(", ")
        ),
    }
}

/// The `-32022` error line for a request naming `requested`: `data` holds the requested
/// version and every supported one (`{"requested": ..., "supported": [...]}`, as rmcp words it).
pub fn unsupported_version_line(id: &Value, requested: &str) -> Vec<u8> {
    line(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": UNSUPPORTED_PROTOCOL_VERSION,
            "message": "Unsupported protocol version",
            "data": { "requested": requested, "supported": SUPPORTED_VERSIONS },
        },
    }))
}

/// Whether a request with `method` and `params`, read before any `initialize`, chooses the
/// stateless era for the whole stdio process: it carries complete `_meta` naming a supported
/// version and is not `initialize`, `server/discover` (a probe that leaves both eras open) or
/// `ping`. This is rmcp's rule; the light path follows it too, so both sides of the handoff
/// agree on the era. Callers answer the removed methods ([`removed_method`]) before asking.
pub fn chooses_stateless(method: &str, params: Option<&Map<String, Value>>) -> bool {
    !matches!(method, "initialize" | "server/discover" | "ping")
        && missing_meta(params).is_empty()
        && requested_version(params).is_some_and(|v| SUPPORTED_VERSIONS.contains(&v))
}

/// The `-32600` reply to an `initialize` on a stdio process whose earlier request chose the
/// stateless era ([`chooses_stateless`]): one process serves the era it was opened with, and
/// an answered `initialize` would promise a legacy session that the requests after it (without
/// `_meta`) would not get.
pub fn initialize_after_stateless(id: &Value) -> ErrorReply {
    ErrorReply {
        id: id.clone(),
        code: jsonrpc::INVALID_REQUEST,
        message: format!(
            "`initialize` after a 2026-07-28 request: this server process already serves the \
             stateless revision that an earlier request chose with its `_meta`, and one stdio \
             process serves one era; go on sending `{PROTOCOL_VERSION_KEY}` and \
             `{CLIENT_CAPABILITIES_KEY}` in every request's `_meta`, or start a new server \
             process and open it with `initialize`"
        ),
    }
}

/// The methods the 2026-07-28 revision removed, each with what replaces it (empty when
/// nothing does: `ping` went with the lifecycle).
pub const REMOVED_METHODS: [(&str, &str); 4] = [
    ("ping", ""),
    (
        "logging/setLevel",
        "send `io.modelcontextprotocol/logLevel` in each request's `_meta` instead",
    ),
    (
        "resources/subscribe",
        "send `subscriptions/listen` with the resource's URI in `resourceSubscriptions`",
    ),
    (
        "resources/unsubscribe",
        "cancel the `subscriptions/listen` that holds the resource",
    ),
];

/// The `-32601` reply to a 2026-07-28 request for a method that revision removed, saying what
/// replaces it; `None` for any other method. Every path answers these by this one table (the
/// light path, the full server on stdio, the daemon over HTTP).
pub fn removed_method(id: &Value, method: &str) -> Option<ErrorReply> {
    let (_, instead) = REMOVED_METHODS.iter().find(|(m, _)| *m == method)?;
    let mut message =
        format!("Method not found: `{method}` is not part of protocol version 2026-07-28");
    if !instead.is_empty() {
        message.push_str("; ");
        message.push_str(instead);
    }
    Some(ErrorReply {
        id: id.clone(),
        code: jsonrpc::METHOD_NOT_FOUND,
        message,
    })
}

/// The reply to a `ping` before any `initialize`: `{}` without a version or for a version with
/// a lifecycle (the legacy rules allow a ping before `initialize`), `-32601` for 2026-07-28
/// (which removed it), `-32022` for a version not served. The light path and the full server
/// answer by this one rule, so a client cannot tell which one it met.
pub fn ping_reply_line(id: &Value, params: Option<&Map<String, Value>>) -> Vec<u8> {
    match requested_version(params) {
        Some(v) if !SUPPORTED_VERSIONS.contains(&v) => unsupported_version_line(id, v),
        Some(crate::handshake::STATELESS_VERSION) => removed_method(id, "ping")
            .map(|reply| reply.to_line())
            .unwrap_or_default(),
        _ => jsonrpc::result_line(id, &json!({})),
    }
}

/// The `-32602` reply to a list request that carries a cursor (`params.cursor`, `null`
/// aside): every list this server answers fits one page and never names a `nextCursor`, so no
/// cursor is valid, and the specification asks for this error (which also tells a client to
/// drop pages it cached). `None` for a request without one.
pub fn cursor_refusal(id: &Value, params: Option<&Map<String, Value>>) -> Option<ErrorReply> {
    let cursor = params?.get("cursor").filter(|c| !c.is_null())?;
    Some(ErrorReply {
        id: id.clone(),
        code: jsonrpc::INVALID_PARAMS,
        message: invalid_cursor_message(cursor),
    })
}

/// What is wrong with `cursor` (the full server words its refusal the same way).
pub fn invalid_cursor_message(cursor: &Value) -> String {
    format!(
        "invalid cursor {cursor}: every list here fits one page and no `nextCursor` is ever \
         given, so no cursor is valid; send the request without one"
    )
}

/// The `-32603` reply to a request the front end could not complete, saying why.
pub fn internal_error(id: &Value, message: impl Into<String>) -> ErrorReply {
    ErrorReply {
        id: id.clone(),
        code: jsonrpc::INTERNAL_ERROR,
        message: message.into(),
    }
}

/// Who may keep a cached result (`cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Anyone: the result holds nothing specific to a user or session.
    Public,
    /// Only this client.
    Private,
}

impl CacheScope {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// The caching hints a cacheable 2026-07-28 result carries (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// How long the result stays fresh, in milliseconds.
    pub ttl_ms: u64,
    /// Who may keep it.
    pub scope: CacheScope,
}

impl CacheHints {
    /// A result fixed for the server's lifetime: an hour, public.
    pub const STABLE: CacheHints = CacheHints {
        ttl_ms: STABLE_TTL_MS,
        scope: CacheScope::Public,
    };
    /// A result that may change at any time, or that belongs to this client: stale at once,
    /// private.
    pub const VOLATILE: CacheHints = CacheHints {
        ttl_ms: 0,
        scope: CacheScope::Private,
    };

    /// The hints on `tools/list`: fixed ([`Self::STABLE`]) unless the start mode lists the
    /// discovery tools, whose `load_modules` changes the list ([`Self::VOLATILE`]).
    pub fn tools_list(discovery: bool) -> CacheHints {
        if discovery {
            CacheHints::VOLATILE
        } else {
            CacheHints::STABLE
        }
    }
}

/// The `_meta` key a server names itself under in a result.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Writes `object` (a JSON object's text) as a complete 2026-07-28 result: `resultType`,
/// `_meta` naming the server (basic/index: servers SHOULD include
/// `io.modelcontextprotocol/serverInfo` in every result's `_meta`), `ttlMs` and `cacheScope`
/// first (rmcp's field order), then the object's own members, copied without parsing them.
///
/// # Errors
/// What writing fails with; [`io::ErrorKind::InvalidData`] when `object` does not start with
/// `{`.
pub fn write_complete(out: &mut impl Write, hints: CacheHints, object: &[u8]) -> io::Result<()> {
    let Some(members) = object.trim_ascii().strip_prefix(b"{") else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a result must be a JSON object",
        ));
    };
    write!(
        out,
        "{{\"resultType\":\"complete\",\"_meta\":{{\"{SERVER_INFO_KEY}\":{{\"name\":\"{}\",\
         \"version\":\"{}\"}}}},\"ttlMs\":{},\"cacheScope\":\"{}\"",
        crate::handshake::SERVER_NAME,
        crate::handshake::SERVER_VERSION,
        hints.ttl_ms,
        hints.scope.as_str()
    )?;
    let members = members.trim_ascii_start();
    if !members.starts_with(b"}") {
        out.write_all(b",")?;
    }
    out.write_all(members)
}

/// A complete 2026-07-28 result line for `result` (an object) with `hints`.
pub fn complete_result_line(id: &Value, hints: CacheHints, result: &Value) -> Vec<u8> {
    let mut bytes = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    bytes.extend_from_slice(&serde_json::to_vec(id).unwrap_or_default());
    bytes.extend_from_slice(b",\"result\":");
    let object = serde_json::to_vec(result).unwrap_or_default();
    // Writing to memory cannot fail, and `result` is an object.
    let _ = write_complete(&mut bytes, hints, &object);
    bytes.extend_from_slice(b"}\n");
    bytes
}

/// A result line whose result is `result`, JSON text written as it is (what the store's
/// listing child printed, checked by the caller).
pub fn raw_result_line(id: &Value, result: &[u8]) -> Vec<u8> {
    let mut bytes = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    bytes.extend_from_slice(&serde_json::to_vec(id).unwrap_or_default());
    bytes.extend_from_slice(b",\"result\":");
    bytes.extend_from_slice(result.trim_ascii());
    bytes.extend_from_slice(b"}\n");
    bytes
}

/// A `subscriptions/listen` request the light path can hold: which list changes it asked for
/// and the light path accepts (tools and resources; prompts are not offered).
#[derive(Debug, Clone, PartialEq)]
pub struct Listen {
    /// The request's id: the subscription's id.
    pub id: Value,
    /// `toolsListChanged` was asked for.
    pub tools_list_changed: bool,
    /// `resourcesListChanged` was asked for.
    pub resources_list_changed: bool,
}

/// The filter names a `subscriptions/listen` may ask for (2026-07-28).
const FILTER_KEYS: [&str; 4] = [
    "toolsListChanged",
    "promptsListChanged",
    "resourcesListChanged",
    "resourceSubscriptions",
];

/// Reads a `subscriptions/listen` request's `notifications` filter.
///
/// # Errors
/// Why the full server must take the request: no `notifications` object, resource
/// subscriptions (a non-empty `resourceSubscriptions`), or a member the light path does not
/// know or of the wrong type.
pub fn listen_filter(id: &Value, params: Option<&Map<String, Value>>) -> Result<Listen, String> {
    let Some(Value::Object(asked)) = params.and_then(|p| p.get("notifications")) else {
        return Err("`subscriptions/listen` without a `notifications` object".into());
    };
    let mut listen = Listen {
        id: id.clone(),
        tools_list_changed: false,
        resources_list_changed: false,
    };
    for (key, value) in asked {
        match (key.as_str(), value) {
            (key, Value::Null) if FILTER_KEYS.contains(&key) => {}
            ("toolsListChanged", Value::Bool(b)) => listen.tools_list_changed = *b,
            ("resourcesListChanged", Value::Bool(b)) => listen.resources_list_changed = *b,
            ("promptsListChanged", Value::Bool(_)) => {}
            ("resourceSubscriptions", Value::Array(uris)) if uris.is_empty() => {}
            ("resourceSubscriptions", _) => {
                return Err("`subscriptions/listen` with resource subscriptions".into());
            }
            (key, _) => {
                return Err(format!(
                    "`subscriptions/listen` with a filter member the light path does not take: \
                     `{key}`"
                ));
            }
        }
    }
    Ok(listen)
}

impl Listen {
    /// The `notifications/subscriptions/acknowledged` line for this subscription: its id in
    /// `_meta`, and the accepted filter (only what was asked for and is offered, each `true`).
    pub fn acknowledgement_line(&self) -> Vec<u8> {
        let mut accepted = Map::new();
        if self.tools_list_changed {
            accepted.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if self.resources_list_changed {
            accepted.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        line(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "_meta": { (SUBSCRIPTION_ID_KEY): self.id },
                "notifications": accepted,
            },
        }))
    }
}

/// The `notifications/resources/list_changed` line for the subscription `id`.
pub fn resources_list_changed_line(id: &Value) -> Vec<u8> {
    line(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/resources/list_changed",
        "params": { "_meta": { (SUBSCRIPTION_ID_KEY): id } },
    }))
}

/// The request a `notifications/cancelled` message cancels (`params.requestId`).
pub fn cancelled_request(message: &Value) -> Option<&Value> {
    if message.get("method")?.as_str()? != "notifications/cancelled" {
        return None;
    }
    message.get("params")?.get("requestId")
}

fn line(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests;
