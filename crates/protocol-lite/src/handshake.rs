//! Server identity, capabilities and protocol version negotiation.

use serde::Serialize;
use serde_json::Value;

/// The server's name in `serverInfo`.
pub const SERVER_NAME: &str = "hooks-mcp";
/// The server's version in `serverInfo`.
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Protocol versions answered through `initialize`, oldest first. A client asking for one of
/// these gets it echoed; anything else gets [`LATEST_WITH_INITIALIZE`] (the rule rmcp applies).
pub const VERSIONS_WITH_INITIALIZE: [&str; 4] =
    ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The newest protocol version that still has an `initialize` handshake.
pub const LATEST_WITH_INITIALIZE: &str = "2025-11-25";

/// The version to answer a client that asked for `requested` in `initialize`.
pub fn negotiate(requested: &str) -> &'static str {
    VERSIONS_WITH_INITIALIZE
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LATEST_WITH_INITIALIZE)
}

/// What the server announces about itself in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerIdentity {
    /// Instructions for the model, if any (every token is paid by every session).
    pub instructions: Option<String>,
}

// Field order and omissions follow rmcp's `InitializeResult`, so the light path's bytes equal
// the full server's (a test in server-full compares them).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult<'a> {
    protocol_version: &'a str,
    capabilities: Capabilities,
    server_info: ServerInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
}

#[derive(Serialize)]
struct Capabilities {
    logging: Empty,
    #[serde(skip_serializing_if = "Option::is_none")]
    completions: Option<Empty>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompts: Option<PromptsCapability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<ResourcesCapability>,
    tools: ToolsCapability,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PromptsCapability {
    list_changed: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourcesCapability {
    subscribe: bool,
    list_changed: bool,
}

/// What a server offers besides tools and logging, which decides its declared capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// Resources (with subscriptions and list changes).
    pub resources: bool,
    /// Prompts.
    pub prompts: bool,
    /// Argument completion for prompts and resource templates.
    pub completions: bool,
}

impl Features {
    /// What hooks-mcp itself offers: channel resources and completion of their names.
    pub const HOOKS_MCP: Features = Features {
        resources: true,
        prompts: false,
        completions: true,
    };
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolsCapability {
    list_changed: bool,
}

#[derive(Serialize)]
struct ServerInfo {
    name: &'static str,
    version: &'static str,
}

impl ServerIdentity {
    /// The `initialize` result for a client that requested `requested_version`.
    ///
    /// The capabilities are hooks-mcp's own ([`Features::HOOKS_MCP`]).
    pub fn initialize_result(&self, requested_version: &str) -> Value {
        self.initialize_result_with(requested_version, Features::HOOKS_MCP)
    }

    /// The `initialize` result of a server offering `features`.
    pub fn initialize_result_with(&self, requested_version: &str, features: Features) -> Value {
        let result = InitializeResult {
            protocol_version: negotiate(requested_version),
            capabilities: Capabilities {
                logging: Empty {},
                completions: features.completions.then_some(Empty {}),
                prompts: features.prompts.then_some(PromptsCapability {
                    list_changed: false,
                }),
                resources: features.resources.then_some(ResourcesCapability {
                    subscribe: true,
                    list_changed: true,
                }),
                tools: ToolsCapability { list_changed: true },
            },
            server_info: ServerInfo {
                name: SERVER_NAME,
                version: SERVER_VERSION,
            },
            instructions: self.instructions.as_deref(),
        };
        // Serializing a struct of strings and booleans cannot fail.
        serde_json::to_value(result).unwrap_or(Value::Null)
    }
}
