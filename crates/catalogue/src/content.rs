//! MCP content that tool results, prompt messages and resource reads carry, and the
//! registrations of resources and prompts (the counterparts of [`crate::ToolRegistration`]).

use serde_json::{Map, Value, json};

use crate::{CallContext, ToolError};

/// One item of MCP content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// An image: base64 `data` of type `mime_type`.
    Image {
        /// Base64 bytes.
        data: String,
        /// Such as `image/png`.
        mime_type: String,
    },
    /// Audio: base64 `data` of type `mime_type`.
    Audio {
        /// Base64 bytes.
        data: String,
        /// Such as `audio/wav`.
        mime_type: String,
    },
    /// A resource embedded in the message.
    Resource(ResourceContents),
}

impl Content {
    /// The MCP JSON of this item (`{"type":"text","text":...}` and so on).
    pub fn to_mcp(&self) -> Value {
        match self {
            Content::Text(text) => json!({ "type": "text", "text": text }),
            Content::Image { data, mime_type } => {
                json!({ "type": "image", "data": data, "mimeType": mime_type })
            }
            Content::Audio { data, mime_type } => {
                json!({ "type": "audio", "data": data, "mimeType": mime_type })
            }
            Content::Resource(contents) => {
                json!({ "type": "resource", "resource": contents.to_mcp() })
            }
        }
    }
}

/// The contents of one resource, as `resources/read` returns them or content embeds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// Text, or base64 bytes.
    pub body: ResourceBody,
}

/// What a resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// UTF-8 text.
    Text(String),
    /// Base64-encoded bytes.
    Blob(String),
}

impl ResourceContents {
    /// Text contents of `uri`.
    pub fn text(uri: impl Into<String>, mime_type: &str, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.to_owned()),
            body: ResourceBody::Text(text.into()),
        }
    }

    /// The MCP JSON (`{"uri", "mimeType", "text"|"blob"}`).
    pub fn to_mcp(&self) -> Value {
        let mut object = Map::new();
        object.insert("uri".into(), Value::String(self.uri.clone()));
        if let Some(mime) = &self.mime_type {
            object.insert("mimeType".into(), Value::String(mime.clone()));
        }
        match &self.body {
            ResourceBody::Text(text) => object.insert("text".into(), Value::String(text.clone())),
            ResourceBody::Blob(blob) => object.insert("blob".into(), Value::String(blob.clone())),
        };
        Value::Object(object)
    }
}

/// Completes one argument: the values that fit `prefix`, best first (a server sends at most
/// 100).
pub type CompleteFn = fn(&CallContext<'_>, &str, &str) -> Result<Vec<String>, ToolError>;

/// Lists the concrete resources a template has now.
pub type ListFn = fn(&CallContext<'_>) -> Result<Vec<ResourceEntry>, ToolError>;

/// Reads one resource: its URI and the template's variables.
pub type ReadFn =
    fn(&CallContext<'_>, &str, &UriVariables) -> Result<Vec<ResourceContents>, ToolError>;

/// Builds a prompt's messages from its arguments.
pub type GetPromptFn =
    fn(&CallContext<'_>, &Map<String, Value>) -> Result<Vec<PromptMessage>, ToolError>;

/// One concrete resource a registration offers now (what `resources/list` shows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceEntry {
    /// Its URI.
    pub uri: String,
    /// A short name.
    pub name: String,
    /// What it is, if worth saying.
    pub description: Option<String>,
}

/// The variables a URI filled into a resource template (`{channel}` → `"ops"`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UriVariables(Vec<(String, String)>);

impl UriVariables {
    /// The value of variable `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A resource, or a template of resources, as a crate registers it with [`crate::submit!`].
#[derive(Debug)]
pub struct ResourceRegistration {
    /// A fixed URI, or an RFC 6570 level-1 template (`scheme://path/{var}`): a variable matches
    /// one non-empty path segment.
    pub uri: &'static str,
    /// A short name.
    pub name: &'static str,
    /// Short human-readable title.
    pub title: &'static str,
    /// What it holds.
    pub description: &'static str,
    /// The MIME type of its contents.
    pub mime_type: &'static str,
    /// For a template: the concrete resources it has now (listed by `resources/list`).
    pub list: Option<ListFn>,
    /// Reads one resource: the URI and the template's variables.
    pub read: ReadFn,
    /// Completes a template variable.
    pub complete: Option<CompleteFn>,
}

impl ResourceRegistration {
    /// Whether the URI is a template (has a `{variable}`).
    pub fn is_template(&self) -> bool {
        self.uri.contains('{')
    }

    /// The variables when `uri` is this resource (or an instance of this template).
    pub fn matches(&self, uri: &str) -> Option<UriVariables> {
        match_template(self.uri, uri)
    }
}

/// Matches `uri` against a level-1 URI template; each `{var}` takes one non-empty segment
/// (no `/`), percent-decoded.
pub fn match_template(template: &str, uri: &str) -> Option<UriVariables> {
    let mut vars = Vec::new();
    let mut rest_t = template;
    let mut rest_u = uri;
    loop {
        let Some(open) = rest_t.find('{') else {
            return (rest_t == rest_u).then_some(UriVariables(vars));
        };
        let literal = &rest_t[..open];
        rest_u = rest_u.strip_prefix(literal)?;
        let close = rest_t[open..].find('}')? + open;
        let name = &rest_t[open + 1..close];
        rest_t = &rest_t[close + 1..];
        let end = rest_u.find('/').unwrap_or(rest_u.len());
        let end = match rest_t.chars().next() {
            Some(c) if c != '/' && c != '{' => rest_u[..end].find(c).unwrap_or(end),
            _ => end,
        };
        if end == 0 {
            return None;
        }
        vars.push((name.to_owned(), percent_decode(&rest_u[..end])?));
        rest_u = &rest_u[end..];
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: Role,
    /// What it says.
    pub content: Content,
}

impl PromptMessage {
    /// The MCP JSON of the message.
    pub fn to_mcp(&self) -> Value {
        let role = match self.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        json!({ "role": role, "content": self.content.to_mcp() })
    }
}

/// One argument a prompt takes.
#[derive(Debug)]
pub struct PromptArgument {
    /// Its name.
    pub name: &'static str,
    /// What to pass.
    pub description: &'static str,
    /// Whether it must be given.
    pub required: bool,
}

/// A prompt, as a crate registers it with [`crate::submit!`].
#[derive(Debug)]
pub struct PromptRegistration {
    /// Unique prompt name.
    pub name: &'static str,
    /// Short human-readable title.
    pub title: &'static str,
    /// What the prompt is for.
    pub description: &'static str,
    /// The arguments it takes.
    pub arguments: &'static [PromptArgument],
    /// Builds the messages from the arguments (string values).
    pub get: GetPromptFn,
    /// Completes an argument.
    pub complete: Option<CompleteFn>,
}

impl PromptRegistration {
    /// The MCP JSON `prompts/list` shows for it.
    pub fn to_mcp(&self) -> Value {
        let arguments: Vec<Value> = self
            .arguments
            .iter()
            .map(
                |a| json!({ "name": a.name, "description": a.description, "required": a.required }),
            )
            .collect();
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "arguments": arguments,
        })
    }
}

inventory::collect!(ResourceRegistration);
inventory::collect!(PromptRegistration);

/// Every resource registration linked into this program, by URI.
pub fn resources() -> Vec<&'static ResourceRegistration> {
    let mut all: Vec<_> = inventory::iter::<ResourceRegistration>
        .into_iter()
        .collect();
    all.sort_by_key(|r| r.uri);
    all
}

/// Every prompt registration linked into this program, by name.
pub fn prompts() -> Vec<&'static PromptRegistration> {
    let mut all: Vec<_> = inventory::iter::<PromptRegistration>.into_iter().collect();
    all.sort_by_key(|p| p.name);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_one_segment_per_variable() {
        let vars = match_template("hooks://channels/{channel}", "hooks://channels/ops%20team");
        assert_eq!(
            vars.as_ref().and_then(|v| v.get("channel")),
            Some("ops team")
        );
        assert!(match_template("hooks://channels/{channel}", "hooks://channels/").is_none());
        assert!(match_template("hooks://channels/{channel}", "hooks://channels/a/b").is_none());
        assert!(match_template("hooks://channels/{channel}", "other://channels/a").is_none());
        let vars = match_template("test://template/{id}/data", "test://template/123/data");
        assert_eq!(vars.as_ref().and_then(|v| v.get("id")), Some("123"));
        assert!(match_template("test://static-text", "test://static-text").is_some());
        assert!(match_template("test://static-text", "test://static-textx").is_none());
    }

    #[test]
    fn content_serializes_as_mcp() {
        let embedded = Content::Resource(ResourceContents::text("a://b", "text/plain", "hi"));
        assert_eq!(
            embedded.to_mcp(),
            json!({"type":"resource","resource":{"uri":"a://b","mimeType":"text/plain","text":"hi"}})
        );
        let audio = Content::Audio {
            data: "AAAA".into(),
            mime_type: "audio/wav".into(),
        };
        assert_eq!(audio.to_mcp()["type"], "audio");
    }
}
