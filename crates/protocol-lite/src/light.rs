//! The lightweight front end's session: answer the handshake and discovery, or hand off.

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::handshake::ServerIdentity;
use crate::jsonrpc::{self, Incoming};

/// What to do with one line of input.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Write these bytes (one response line) to the client.
    Reply(Vec<u8>),
    /// Answer `tools/list` to the request with this id: write it with
    /// [`LightSession::write_tools_list`], straight from the stored list (no copy of it).
    ListTools(Value),
    /// Nothing to write (a notification, a response, a blank line).
    Nothing,
    /// The full server must take over, starting with [`LightSession::replay`] and then this line.
    Handoff(String),
}

/// State of one stdio session on the light path.
#[derive(Debug)]
pub struct LightSession {
    identity: ServerIdentity,
    /// The `tools/list` result as JSON text: each answer writes these bytes.
    tools_list: String,
    replay: Vec<u8>,
    initialize_id: Option<Value>,
}

impl LightSession {
    /// A session that answers `tools/list` with `tools_list`, the result's JSON text
    /// (`{"tools": [...]}`, as `catalogue::Listing::tools_list_json` builds it from checked
    /// parts): a session that only lists tools holds no JSON tree, and the text is not parsed
    /// again.
    pub fn new(identity: ServerIdentity, tools_list: String) -> Self {
        LightSession {
            identity,
            tools_list,
            replay: Vec::new(),
            initialize_id: None,
        }
    }

    /// The bytes the full server must read before the line that triggered the handoff: the
    /// `initialize` request this session answered and every notification that followed it, each
    /// as received, one per line.
    pub fn replay(&self) -> &[u8] {
        &self.replay
    }

    /// The id of the `initialize` request this session answered; the full server's own answer
    /// to the replayed request must be suppressed.
    pub fn initialize_id(&self) -> Option<&Value> {
        self.initialize_id.as_ref()
    }

    /// Writes the `tools/list` response to the request `id` as one line.
    ///
    /// # Errors
    /// What writing to `out` fails with.
    pub fn write_tools_list(&self, id: &Value, out: &mut impl Write) -> io::Result<()> {
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
        serde_json::to_writer(&mut *out, id)?;
        out.write_all(b",\"result\":")?;
        out.write_all(self.tools_list.as_bytes())?;
        out.write_all(b"}\n")
    }

    /// Handles one line (without its newline).
    pub fn handle(&mut self, line: &[u8]) -> Step {
        if jsonrpc::is_blank(line) {
            return Step::Nothing;
        }
        let incoming = match jsonrpc::parse_line(line) {
            Ok((_, incoming)) => incoming,
            Err(reply) => return Step::Reply(reply.to_line()),
        };
        match incoming {
            Incoming::Response => Step::Nothing,
            Incoming::Notification { .. } => {
                // Before initialize there is no session to notify: the specification lets the
                // server ignore it, and replaying it would break the full server's handshake.
                if self.initialize_id.is_some() {
                    self.replay.extend_from_slice(line);
                    self.replay.push(b'\n');
                }
                Step::Nothing
            }
            Incoming::Request { id, method, params } => self.request(line, id, &method, params),
        }
    }

    fn request(
        &mut self,
        line: &[u8],
        id: Value,
        method: &str,
        params: Option<Map<String, Value>>,
    ) -> Step {
        let initialized = self.initialize_id.is_some();
        let result = match method {
            "ping" => json!({}),
            "initialize" if initialized => {
                return Step::Handoff("a second `initialize` request".into());
            }
            "initialize" => match requested_version(params.as_ref()) {
                Some(version) => {
                    let result = self.identity.initialize_result(version);
                    self.replay.extend_from_slice(line);
                    self.replay.push(b'\n');
                    self.initialize_id = Some(id.clone());
                    result
                }
                None => {
                    return Step::Handoff(
                        "`initialize` params lack protocolVersion, capabilities or clientInfo"
                            .into(),
                    );
                }
            },
            "tools/list" | "resources/templates/list" | "prompts/list" if !initialized => {
                return Step::Handoff(format!("`{method}` before `initialize`"));
            }
            "tools/list" => return Step::ListTools(id),
            "resources/templates/list" => resource_templates(),
            "prompts/list" => json!({ "prompts": [] }),
            other => return Step::Handoff(format!("`{other}` needs the full server")),
        };
        Step::Reply(jsonrpc::result_line(&id, &result))
    }
}

/// The `resources/templates/list` result: hooks-mcp's one template, the channels. It is static,
/// so the light path answers it; listing and reading channels needs the store and hands off.
/// (A test in server-full compares it with what the full server lists.)
pub fn resource_templates() -> Value {
    json!({ "resourceTemplates": [{
        "uriTemplate": "hooks://channels/{channel}",
        "name": "channel",
        "title": "Channel messages",
        "description": "A channel's unexpired messages, newest first (as channel_read returns \
                        them); subscribe to be told when they change.",
        "mimeType": "application/json",
    }] })
}

/// The requested protocol version of a complete `initialize` request.
fn requested_version(params: Option<&Map<String, Value>>) -> Option<&str> {
    let params = params?;
    let client = params.get("clientInfo")?.as_object()?;
    client.get("name")?.as_str()?;
    client.get("version")?.as_str()?;
    params.get("capabilities")?.as_object()?;
    params.get("protocolVersion")?.as_str()
}

#[cfg(test)]
mod tests;
