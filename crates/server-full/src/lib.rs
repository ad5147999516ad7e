//! The full MCP server: hooks-mcp's tools served through rmcp.
//!
//! # What this crate owns
//!
//! - [`HooksServer`]: the rmcp `ServerHandler` over the filtered catalogue. `tools/list` and
//!   `tools/call` dispatch to the handlers the tools crates registered; server info and
//!   capabilities come from `protocol_lite::handshake`, so the light front end advertises the
//!   same bytes.
//! - [`stdio`]: serving one session on stdin/stdout, either from the start or after the light
//!   front end handed the connection over (replaying the handshake, suppressing the duplicate
//!   `initialize` response), with JSON-RPC errors as the specification words them.
//! - [`daemon`]: the long-lived network daemon (`MCP_TRANSPORT=streamable-http` or `sse`):
//!   start-up phases, `/health`, Streamable HTTP at `/mcp` and the legacy SSE transport, bearer
//!   token and `Host`/`Origin` checks, the session cap, hook events forwarded by hook
//!   processes (`POST /hook/{event}`) and Claude Code's HTTP hooks (`POST /hooks/{Event}`),
//!   both answered by `hook-dispatch` over the daemon's store, the scheduler tick (woken by the
//!   store's change feed where it has one: `changes`), Prometheus metrics at `/metrics`
//!   (`metrics`), the instance lock and graceful shutdown.
//! - [`api`](openapi_json): the operator's read API at `/api/v1/...` (JSON, behind the same
//!   checks as `/mcp`) and its OpenAPI document, generated from the handlers.
//! - the operator console at `/console/` (`console`): server-rendered pages of the fleet,
//!   updated live from server-sent events, with a few operator actions behind a signed session
//!   cookie and CSRF tokens.
//! - [`Settings`]: the environment the server runs in (filters, session policy, store).
//! - [`link_tools`]: the one place that names every tools crate, so their registrations are
//!   linked into any binary that uses this crate.
//!
//! # What it must not depend on
//!
//! Nothing depends on this crate but the `hooks-mcp` binary. It must never be linked into the
//! light front end: it brings tokio, rmcp, SQLite and every tool.

mod api;
mod auth;
mod changes;
mod client_link;
mod console;
pub mod daemon;
mod discovery;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod health;
mod hook_route;
mod http;
mod http_sessions;
mod metrics;
mod offer;
mod registry;
mod server;
mod settings;
mod sse;
pub mod stdio;
mod watch;

pub use api::openapi_json;
pub use auth::{Access, Refusal, Token};
pub use daemon::{DaemonConfig, DaemonError, InstanceLock};
pub use health::{Phase, probe as probe_health};
pub use http::BindError;
pub use registry::{ToolEntry, link_tools};
pub use server::HooksServer;
pub use settings::{SESSION_ENV, SESSION_SETTINGS, Settings, SettingsError, mode_from_env, now_ms};
