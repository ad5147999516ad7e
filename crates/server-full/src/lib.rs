//! The full MCP server: hooks-mcp's tools served through rmcp, and nothing of HTTP or HTML.
//!
//! # What this crate owns
//!
//! - [`HooksServer`]: the rmcp `ServerHandler` over the filtered catalogue. `tools/list` and
//!   `tools/call` dispatch to the handlers the tools crates registered; server info and
//!   capabilities come from `protocol_lite::handshake`, so the light front end advertises the
//!   same bytes. Resources, prompts and completion (`resources_and_prompts`), per-session loaded tools
//!   (`discovery`: `find_tools`, `load_modules`), resource subscriptions (`watch`), what a
//!   handler's `ClientLink` sends during its call (`client_link`).
//! - [`stdio`]: serving one session on stdin/stdout, either from the start or after the light
//!   front end handed the connection over (replaying the handshake, suppressing the duplicate
//!   `initialize` response), with JSON-RPC errors as the specification words them.
//! - [`Settings`]: the environment the server runs in (filters, session policy, store).
//! - [`StoreChanges`]: the process's one feed of store changes (SQLite's data version or
//!   PostgreSQL's LISTEN), which resource subscriptions, the daemon's scheduler and the
//!   console's live pages all subscribe to.
//! - [`ChannelPush`]: pushing urgent messages into a stdio session (`HOOKS_MCP_CHANNEL_PUSH`,
//!   Claude Code's channels): the batches the front end's child prints, and after a handoff a
//!   task woken by [`StoreChanges`] that sends them through rmcp's peer.
//! - [`CallObserver`]: how a host (the network daemon's metrics) hears of each tool call.
//! - [`link_tools`]: names every tools crate, so their registrations are linked into any
//!   binary that uses this crate.
//!
//! # What it must not depend on
//!
//! No HTTP server, HTML or OpenAPI crate (axum, hyper, maud, utoipa, prometheus-client...):
//! the network daemon (`daemon` crate) and the operator's pages (`operator-web`) build on this
//! crate, never the reverse. It must never be linked into the light front end: it brings tokio,
//! rmcp, SQLite and every tool.

mod client_link;
mod discovery;
pub mod logging;
mod memory;
mod modern;
mod observe;
mod push;
mod registry;
mod resources_and_prompts;
mod server;
mod settings;
mod sightings;
pub mod stdio;
mod store_changes;
mod watch;

pub use modern::SESSION_META_KEY;
pub use observe::{CallObserver, CallOutcome};
pub use push::{ChannelPush, print_pending_from_env};
pub use registry::{ToolEntry, link_tools};
pub use server::HooksServer;
pub use settings::{SESSION_ENV, SESSION_SETTINGS, Settings, SettingsError, mode_from_env, now_ms};
pub use store_changes::{StoreChanges, Version as ChangeVersion};

/// A mutex's guard even when a holder panicked: every holder in this crate leaves whole
/// values behind, so what it guards stays usable.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
