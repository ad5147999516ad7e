//! What a tool handler receives (the call context) and returns on failure (a tool error).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Content;

/// A type-keyed map of services a server hands to tool handlers (the store, settings...).
///
/// The catalogue does not know the types; tools crates look up what they need.
#[derive(Default)]
pub struct Extensions {
    map: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.len())
            .finish()
    }
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Extensions::default()
    }

    /// Inserts a value, replacing any earlier value of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.map.insert(TypeId::of::<T>(), Box::new(value));
    }

    /// The value of type `T`, if one was inserted.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref::<T>())
    }
}

/// Where a tool call may take the acting session's id from when the caller passes none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionPolicy {
    /// One process serves one agent session (stdio): fall back to this id, if known.
    Fallback(Option<String>),
    /// One process serves many sessions (network transports): the caller must pass the id.
    ExplicitOnly,
}

/// How severe a log message sent to the client is (MCP's syslog levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Act now.
    Alert,
    /// Unusable.
    Emergency,
}

impl LogLevel {
    /// The level as MCP spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

/// The client of the session a call runs in, as a handler can reach it during the call.
///
/// Servers implement it; every method blocks until the message is sent (or answered), which a
/// handler on a blocking thread may do.
pub trait ClientLink: fmt::Debug + Send + Sync {
    /// Reports progress of this call (a no-op when the client asked for none).
    ///
    /// # Errors
    /// [`ToolError::Internal`] when the session has ended.
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), ToolError>;

    /// Sends a log message (a no-op below the level the client set with `logging/setLevel`).
    ///
    /// # Errors
    /// [`ToolError::Internal`] when the session has ended.
    fn log(&self, level: LogLevel, data: Value) -> Result<(), ToolError>;

    /// Sends a request to the client (`sampling/createMessage`, `elicitation/create`...) and
    /// returns its result.
    ///
    /// # Errors
    /// [`ToolError::Refused`] when the client does not support it or answers with an error.
    fn request(&self, method: &str, params: Value) -> Result<Value, ToolError>;
}

/// Everything a tool handler gets besides its arguments.
#[derive(Debug)]
pub struct CallContext<'a> {
    now_ms: i64,
    session: &'a SessionPolicy,
    extensions: &'a Extensions,
    client: Option<&'a dyn ClientLink>,
    content: Mutex<Option<Vec<Content>>>,
}

impl<'a> CallContext<'a> {
    /// A context for one call at `now_ms` (Unix milliseconds).
    pub fn new(now_ms: i64, session: &'a SessionPolicy, extensions: &'a Extensions) -> Self {
        CallContext {
            now_ms,
            session,
            extensions,
            client: None,
            content: Mutex::new(None),
        }
    }

    /// The same context with the session's client reachable through [`CallContext::client`].
    pub fn with_client(mut self, client: &'a dyn ClientLink) -> Self {
        self.client = Some(client);
        self
    }

    /// The client of the session the call runs in.
    ///
    /// # Errors
    /// [`ToolError::Refused`] when the call has no client (the CLI, a schedule, a hook).
    pub fn client(&self) -> Result<&'a dyn ClientLink, ToolError> {
        self.client.ok_or_else(|| {
            ToolError::Refused(
                "this call has no MCP client to talk to (it runs outside a session)".into(),
            )
        })
    }

    /// Makes the call's result carry `content` instead of its JSON value as text (images,
    /// audio, embedded resources). The JSON value stays the structured result unless it is
    /// `null`.
    pub fn reply_with(&self, content: Vec<Content>) {
        *self.content.lock().unwrap_or_else(|p| p.into_inner()) = Some(content);
    }

    /// The content a handler set with [`CallContext::reply_with`], taken out.
    pub fn take_content(&self) -> Option<Vec<Content>> {
        self.content
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The time of the call, in Unix milliseconds. Handlers use it instead of the clock so that
    /// one call sees one instant and tests can set it.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// The service of type `T`.
    ///
    /// # Errors
    /// [`ToolError::Internal`] when the server did not provide it (a wiring bug, not bad input).
    pub fn service<T: Any>(&self) -> Result<&'a T, ToolError> {
        self.extensions.get::<T>().ok_or_else(|| {
            ToolError::Internal(format!(
                "the server provides no {}; this is a server set-up bug",
                std::any::type_name::<T>()
            ))
        })
    }

    /// The acting session: `explicit` when given and non-blank, else the policy's fallback.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] naming `session_id` when no id is available; an id is
    /// never made up.
    pub fn session_id(&self, explicit: Option<&str>) -> Result<String, ToolError> {
        if let Some(id) = explicit.filter(|s| !s.trim().is_empty()) {
            return check_session_id(id)
                .map(str::to_owned)
                .map_err(|e| ToolError::InvalidArguments(format!("session_id: {e}")));
        }
        match self.session {
            SessionPolicy::Fallback(Some(id)) => Ok(id.clone()),
            SessionPolicy::Fallback(None) => Err(ToolError::InvalidArguments(
                "session_id: required; pass the agent session id (no CLAUDE_CODE_SESSION_ID or \
                 HOOKS_MCP_SESSION_ID is set in the server's environment to fall back on)"
                    .into(),
            )),
            SessionPolicy::ExplicitOnly => Err(ToolError::InvalidArguments(
                "session_id: required; this server serves many sessions over the network, so \
                 pass your session id explicitly (the SessionStart banner shows it), as \
                 `session_id` or, in a 2026-07-28 request, as `dev.hooks-mcp/session` in \
                 `_meta`"
                    .into(),
            )),
        }
    }
}

/// The longest session id taken (an agent's are UUIDs, 36 bytes).
pub const SESSION_ID_MAX_BYTES: usize = 256;

/// Checks a session id, wherever one comes from (a tool's argument, a message's recipient, a
/// hook's payload): not blank, at most [`SESSION_ID_MAX_BYTES`], no control characters;
/// returns it trimmed. One rule, so that every id a session is recorded under can be named.
///
/// # Errors
/// What is wrong with it, for the caller to name the field.
pub fn check_session_id(id: &str) -> Result<&str, String> {
    let id = id.trim();
    if id.is_empty() {
        return Err("is blank; give a session id".into());
    }
    if id.len() > SESSION_ID_MAX_BYTES {
        return Err(format!(
            "is {} bytes; a session id is at most {SESSION_ID_MAX_BYTES}",
            id.len()
        ));
    }
    if id.chars().any(char::is_control) {
        return Err("contains control characters; give a session id".into());
    }
    Ok(id)
}

/// A failure the caller can see and, usually, correct. Servers report it as a tool result with
/// `isError: true`, never as a protocol error or a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments are wrong; the message names the field and the fix.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// Something the arguments refer to does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The request is well-formed but refused (a closed gate, a name already taken...).
    #[error("refused: {0}")]
    Refused(String),
    /// The server failed (the store is unreachable...). Retrying later may help.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Deserializes a call's arguments into `T`, turning serde's complaint into a
/// [`ToolError::InvalidArguments`] that names the field. A missing or `null` arguments value
/// counts as `{}`.
///
/// # Errors
/// [`ToolError::InvalidArguments`] when the arguments are not an object or do not fit `T`.
pub fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        Value::Object(mut fields) => {
            whole_numbers_as_integers(&mut fields);
            Value::Object(fields)
        }
        other => {
            return Err(ToolError::InvalidArguments(format!(
                "arguments must be a JSON object, got {}",
                json_kind(&other)
            )));
        }
    };
    match T::deserialize(&args) {
        Ok(parsed) => Ok(parsed),
        Err(e) => Err(ToolError::InvalidArguments(name_the_field::<T>(
            &args,
            e.to_string(),
        ))),
    }
}

/// A whole number written with a fraction or an exponent (`5.0`, `1e3`) taken as the integer
/// it is: JSON Schema's `integer`, which the tools' schemas advertise, admits it, and models
/// write it. Only exact values (below 2^53); a real fraction stays for the parser to refuse.
fn whole_numbers_as_integers(fields: &mut serde_json::Map<String, Value>) {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    for value in fields.values_mut() {
        if let Value::Number(n) = value
            && n.is_f64()
            && let Some(f) = n.as_f64()
            && f.fract() == 0.0
            && f.abs() < EXACT
        {
            // Exact below 2^53, so the cast loses nothing.
            *value = Value::from(f as i64);
        }
    }
}

/// Prefixes serde's message with the top-level field it concerns (`limit: invalid type: ...`).
///
/// Missing and unknown field messages already name the field. For the others (wrong type, bad
/// value, unknown variant) the arguments are parsed again from pretty-printed text, where every
/// top-level field starts its own line (strings never span lines), and the error's line number
/// leads back to the field.
fn name_the_field<T: DeserializeOwned>(args: &Value, message: String) -> String {
    if message.starts_with("missing field") || message.starts_with("unknown field") {
        return message;
    }
    let Ok(text) = serde_json::to_string_pretty(args) else {
        return message;
    };
    let Err(located) = serde_json::from_str::<T>(&text) else {
        return message;
    };
    let field = text
        .lines()
        .take(located.line())
        .filter_map(|line| line.strip_prefix("  \""))
        .last()
        .and_then(|rest| {
            // `rest` is the key without its opening quote, then `": value`.
            serde_json::Deserializer::from_str(&format!("\"{rest}"))
                .into_iter::<String>()
                .next()
                .and_then(Result::ok)
        });
    match field {
        Some(field) => format!("{field}: {message}"),
        None => message,
    }
}

/// How an error message names the kind of a JSON value ("a string", "an array", "null"...).
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
