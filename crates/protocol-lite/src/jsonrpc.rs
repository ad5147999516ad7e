//! One line of input checked against JSON-RPC 2.0, and the replies the specification asks for.

use serde_json::{Map, Value, json};

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// The server failed while handling a valid request.
pub const INTERNAL_ERROR: i64 = -32603;

/// A well-formed message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request, which gets exactly one response.
    Request {
        /// Its id: a string or an integer.
        id: Value,
        /// The method name.
        method: String,
        /// The params object, if any.
        params: Option<Map<String, Value>>,
    },
    /// A notification, which gets no response.
    Notification {
        /// The method name.
        method: String,
    },
    /// A response to a request the server sent.
    Response,
}

/// An error reply for a line that is not a valid message.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorReply {
    /// The request's id, or `null` when it could not be read.
    pub id: Value,
    /// The JSON-RPC error code.
    pub code: i64,
    /// What was wrong and how to fix it.
    pub message: String,
}

impl ErrorReply {
    /// The reply as one line, newline included.
    pub fn to_line(&self) -> Vec<u8> {
        line(&json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code, "message": self.message },
        }))
    }
}

/// `-32603` replies, one line each, to every request among `lines` (newline-delimited) but the
/// one whose id is `answered`, each with `message`: how a process that cannot serve a session
/// tells each request it was handed why, instead of leaving it unanswered.
pub fn internal_errors_for(lines: &[u8], answered: Option<&Value>, message: &str) -> Vec<u8> {
    let mut replies = Vec::new();
    for line in lines.split(|&b| b == b'\n') {
        if let Ok((_, Incoming::Request { id, .. })) = parse_line(line)
            && answered != Some(&id)
        {
            let message = message.to_owned();
            let code = INTERNAL_ERROR;
            replies.extend(ErrorReply { id, code, message }.to_line());
        }
    }
    replies
}

/// A success response as one line, newline included.
pub fn result_line<T: serde::Serialize + ?Sized>(id: &Value, result: &T) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Reply<'a, T: ?Sized> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: &'a T,
    }
    let mut bytes = serde_json::to_vec(&Reply {
        jsonrpc: "2.0",
        id,
        result,
    })
    .unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn line(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Whether a line holds nothing but white space (such lines are skipped, not answered).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Parses and checks one line.
///
/// # Errors
/// An [`ErrorReply`] to send back: `-32700` (id `null`) for text that is not JSON, `-32600` for
/// JSON that is not a JSON-RPC 2.0 message (a batch, a wrong `jsonrpc`, an id that is not a
/// string or integer, params that are not structured), `-32602` for a `tools/call` whose params
/// lack a string `name` or have non-object `arguments`.
pub fn parse_line(line: &[u8]) -> Result<(Value, Incoming), ErrorReply> {
    let value: Value = serde_json::from_slice(line).map_err(|e| ErrorReply {
        id: Value::Null,
        code: PARSE_ERROR,
        message: format!("Parse error: {e}; send one JSON-RPC 2.0 object per line"),
    })?;
    let incoming = check(&value)?;
    Ok((value, incoming))
}

fn invalid(id: Value, reason: &str) -> ErrorReply {
    ErrorReply {
        id,
        code: INVALID_REQUEST,
        message: format!("Invalid request: {reason}"),
    }
}

fn check(value: &Value) -> Result<Incoming, ErrorReply> {
    let Value::Object(obj) = value else {
        let reason = if value.is_array() {
            "batches are not supported; send each message on its own line"
        } else {
            "a message must be a JSON object"
        };
        return Err(invalid(Value::Null, reason));
    };
    let id = match obj.get("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id.clone()),
        // The integers the full server (rmcp) takes: a 64-bit signed one.
        Some(id @ Value::Number(n)) if n.is_i64() => Some(id.clone()),
        Some(Value::Number(n)) if n.is_u64() => {
            return Err(invalid(
                Value::Null,
                "an integer `id` must lie between -2^63 and 2^63-1; use a smaller one or a string",
            ));
        }
        Some(_) => {
            return Err(invalid(Value::Null, "`id` must be a string or an integer"));
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(reply_id, "`jsonrpc` must be \"2.0\""));
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(invalid(reply_id, "`method` must be a string")),
        None => {
            return match id {
                Some(_) if obj.contains_key("result") || obj.contains_key("error") => {
                    Ok(Incoming::Response)
                }
                _ => Err(invalid(reply_id, "a request needs a `method`")),
            };
        }
    };
    let params = match obj.get("params") {
        None => None,
        Some(Value::Object(p)) => Some(p.clone()),
        Some(_) => return Err(invalid(reply_id, "`params` must be an object")),
    };
    let Some(id) = id else {
        return Ok(Incoming::Notification { method });
    };
    if method == "tools/call" {
        check_tools_call(&id, params.as_ref())?;
    }
    Ok(Incoming::Request { id, method, params })
}

fn check_tools_call(id: &Value, params: Option<&Map<String, Value>>) -> Result<(), ErrorReply> {
    let problem = match params {
        None => Some("params are missing"),
        Some(p) => match (p.get("name"), p.get("arguments")) {
            (Some(Value::String(_)), None | Some(Value::Object(_) | Value::Null)) => None,
            (Some(Value::String(_)), Some(_)) => Some("`arguments` must be an object"),
            _ => Some("`name` must be a string naming the tool"),
        },
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ErrorReply {
            id: id.clone(),
            code: INVALID_PARAMS,
            message: format!(
                "Invalid params for tools/call: {problem}; expected {{\"name\": string, \
                 \"arguments\": object}}"
            ),
        }),
    }
}

#[cfg(test)]
mod tests;
