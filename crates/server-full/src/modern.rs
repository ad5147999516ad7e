//! What the stateless 2026-07-28 revision changes for this server: which era a request is
//! served in, the caching hints of list and read results, the session a request names in its
//! `_meta`, and the notification filter `subscriptions/listen` accepts.
//!
//! rmcp serves both eras on one handler: it strips `resultType` for legacy peers and fills
//! missing caching hints for modern ones with the most conservative values (`ttlMs: 0`,
//! `cacheScope: "private"`). This module says where the server can promise more.

// Logging is deprecated by SEP-2577 for future revisions; 2026-07-28 still defines a
// request's `logLevel`, so it is honoured.
#![allow(deprecated)]

use catalogue::LogLevel;
use rmcp::RoleServer;
use rmcp::model::{
    CacheScope, CallToolResult, CompleteResult, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel, MetaObject,
    ProtocolVersion, ReadResourceResult, RequestMetaObject, ResultType, SubscriptionFilter,
};
use rmcp::service::RequestContext;
use serde_json::Value;

/// How long a result that only changes with the server's configuration stays fresh: an hour
/// (the configuration lasts for the process; a client re-fetches after a restart anyway).
pub(crate) const CONFIGURATION_TTL_MS: u64 = protocol_lite::handshake::STABLE_TTL_MS;

/// The `_meta` key a 2026-07-28 client may set to name its session when a tool takes no
/// `session_id` argument: deliveries, acknowledgements, the condition gate and the call's
/// sighting are then attributed to it (docs/network.md).
pub const SESSION_META_KEY: &str = "dev.hooks-mcp/session";

/// Whether `context`'s request is served by the 2026-07-28 rules: its own `_meta` names that
/// revision (or later), or the stdio session began without `initialize`.
pub(crate) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Who may cache a result, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cache {
    /// The same for every client of this server while its configuration lasts.
    Configuration,
    /// Per session or per store: immediately stale, never shared.
    Private,
}

impl Cache {
    fn hints(self) -> (u64, CacheScope) {
        match self {
            Cache::Configuration => (CONFIGURATION_TTL_MS, CacheScope::Public),
            Cache::Private => (0, CacheScope::Private),
        }
    }
}

/// `meta` with the server named in it (`io.modelcontextprotocol/serverInfo`, the light path's
/// words): basic/index asks servers to include it in every 2026-07-28 result's `_meta`, to
/// identify themselves without relying on any earlier request.
fn name_the_server(meta: &mut Option<MetaObject>) {
    let meta = meta.get_or_insert_with(MetaObject::default);
    meta.0.insert(
        protocol_lite::modern::SERVER_INFO_KEY.to_owned(),
        serde_json::json!({
            "name": protocol_lite::handshake::SERVER_NAME,
            "version": protocol_lite::handshake::SERVER_VERSION,
        }),
    );
}

/// A 2026-07-28 result that names the server in its `_meta` ([`name_the_server`]).
pub(crate) trait Identified: Sized {
    /// The result marked complete, naming the server when `modern`.
    fn identified(self, modern: bool) -> Self;
}

/// A cacheable result: marked complete, with caching hints and the server's name for a modern
/// request (a legacy request keeps the historical shape; rmcp strips the `resultType` there).
pub(crate) trait Cacheable: Identified {
    /// The result marked complete, hinted as `cache` says and naming the server when `modern`.
    fn cached(self, modern: bool, cache: Cache) -> Self;
}

macro_rules! identified {
    ($($result:ty),* $(,)?) => {$(
        impl Identified for $result {
            fn identified(mut self, modern: bool) -> Self {
                self.result_type = Some(ResultType::COMPLETE);
                if modern {
                    name_the_server(&mut self.meta);
                }
                self
            }
        }
    )*};
}

identified!(
    CallToolResult,
    GetPromptResult,
    CompleteResult,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    ReadResourceResult,
);

macro_rules! cacheable {
    ($($result:ty),* $(,)?) => {$(
        impl Cacheable for $result {
            fn cached(mut self, modern: bool, cache: Cache) -> Self {
                if modern {
                    let (ttl, scope) = cache.hints();
                    (self.ttl_ms, self.cache_scope) = (Some(ttl), Some(scope));
                }
                self.identified(modern)
            }
        }
    )*};
}

cacheable!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    ReadResourceResult,
);

/// The session a request names in its `_meta` ([`SESSION_META_KEY`]), if a string that
/// passes [`catalogue::check_session_id`] (one that does not names no session).
pub(crate) fn session_from_meta(meta: &RequestMetaObject) -> Option<String> {
    let named = meta.get(SESSION_META_KEY).and_then(Value::as_str)?;
    catalogue::check_session_id(named).ok().map(str::to_owned)
}

/// The catalogue's log level for an MCP logging level.
pub(crate) fn log_level(level: LoggingLevel) -> LogLevel {
    match serde_json::to_value(level)
        .ok()
        .as_ref()
        .and_then(Value::as_str)
    {
        Some("debug") => LogLevel::Debug,
        Some("info") => LogLevel::Info,
        Some("notice") => LogLevel::Notice,
        Some("warning") => LogLevel::Warning,
        Some("error") => LogLevel::Error,
        Some("critical") => LogLevel::Critical,
        Some("alert") => LogLevel::Alert,
        _ => LogLevel::Emergency,
    }
}

/// What this server honours of a `subscriptions/listen` filter: tool and resource list
/// changes, and updates of the requested resources it serves (`hooks://channels/{channel}`).
/// Prompts are not offered, so their list never changes. rmcp intersects this with the
/// request and the advertised capabilities before acknowledging.
pub(crate) fn accepted_filter(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut accepted = SubscriptionFilter::new();
    accepted.tools_list_changed = Some(true);
    accepted.resources_list_changed = Some(true);
    accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
        uris.iter()
            .filter(|uri| crate::resources_and_prompts::resource_for(uri).is_ok())
            // Only a channel that can be read: one a read would refuse can never change.
            .filter(|uri| {
                uri.strip_prefix(tools_channels::CHANNEL_URI_PREFIX)
                    .is_none_or(|name| store::rules::check_channel_name(name).is_ok())
            })
            .cloned()
            .collect()
    });
    accepted
}
