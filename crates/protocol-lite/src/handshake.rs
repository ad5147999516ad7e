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

/// The stateless revision: every request carries its version and the client's capabilities
/// in `_meta`, and there is no `initialize`.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Every protocol version hooks-mcp serves, oldest first: those with `initialize`, then
/// [`STATELESS_VERSION`]. `server/discover` lists them, and a request naming any other version
/// is refused with `-32022` (`crate::modern::UNSUPPORTED_PROTOCOL_VERSION`).
pub const SUPPORTED_VERSIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    STATELESS_VERSION,
];

/// How long a client may keep the `server/discover` result and the static lists, in
/// milliseconds: an hour (they change only when the server is restarted with other settings).
pub const STABLE_TTL_MS: u64 = 3_600_000;

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
    /// Whether the server pushes messages into the session: it then declares
    /// `experimental["claude/channel"]` (see [`crate::push`]).
    pub channel: bool,
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

// Field order follows rmcp's `DiscoverResult`, for the same reason.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DiscoverResult<'a> {
    result_type: &'static str,
    supported_versions: [&'static str; 5],
    capabilities: Capabilities,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    ttl_ms: u64,
    cache_scope: &'static str,
    #[serde(rename = "_meta")]
    meta: DiscoverMeta,
}

#[derive(Serialize)]
struct DiscoverMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: ServerInfo,
}

#[derive(Serialize)]
struct Capabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    experimental: Option<Experimental>,
    logging: Empty,
    #[serde(skip_serializing_if = "Option::is_none")]
    completions: Option<Empty>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompts: Option<PromptsCapability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<ResourcesCapability>,
    tools: ToolsCapability,
}

/// The experimental capabilities: Claude Code's channel, when the server pushes.
#[derive(Serialize)]
struct Experimental {
    #[serde(rename = "claude/channel")]
    channel: Empty,
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
            capabilities: Capabilities::of(features, self.channel),
            server_info: ServerInfo::HOOKS_MCP,
            instructions: self.instructions.as_deref(),
        };
        // Serializing a struct of strings and booleans cannot fail.
        serde_json::to_value(result).unwrap_or(Value::Null)
    }

    /// The `server/discover` result (protocol 2026-07-28).
    ///
    /// The capabilities are hooks-mcp's own ([`Features::HOOKS_MCP`]).
    pub fn discover_result(&self) -> Value {
        self.discover_result_with(Features::HOOKS_MCP)
    }

    /// The `server/discover` result of a server offering `features`: every
    /// [`SUPPORTED_VERSIONS`], the same capabilities object as the `initialize` result's, the
    /// instructions, an hour's public caching ([`STABLE_TTL_MS`]) and the server's identity
    /// under `_meta["io.modelcontextprotocol/serverInfo"]`.
    pub fn discover_result_with(&self, features: Features) -> Value {
        let result = DiscoverResult {
            result_type: "complete",
            supported_versions: SUPPORTED_VERSIONS,
            capabilities: Capabilities::of(features, self.channel),
            instructions: self.instructions.as_deref(),
            ttl_ms: STABLE_TTL_MS,
            cache_scope: "public",
            meta: DiscoverMeta {
                server_info: ServerInfo::HOOKS_MCP,
            },
        };
        // As above: plain strings, numbers and booleans.
        serde_json::to_value(result).unwrap_or(Value::Null)
    }
}

impl Capabilities {
    fn of(features: Features, channel: bool) -> Self {
        Capabilities {
            experimental: channel.then_some(Experimental { channel: Empty {} }),
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
        }
    }
}

impl ServerInfo {
    const HOOKS_MCP: ServerInfo = ServerInfo {
        name: SERVER_NAME,
        version: SERVER_VERSION,
    };
}
