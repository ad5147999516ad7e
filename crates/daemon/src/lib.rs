//! The hooks-mcp network daemon (`MCP_TRANSPORT=streamable-http` or `sse`): one long-lived
//! process that every agent session on a machine, or a fleet's sessions, connect to.
//!
//! # What this crate owns
//!
//! - [`lifecycle`]: configuration, start-up phases, the instance lock, the scheduler tick
//!   (woken by the process's feed of store changes, [`server_full::StoreChanges`]) and graceful
//!   shutdown ([`serve_from_env`]).
//! - `http`: the listener and accept loop (HTTP/1.1 on hyper: header-read and body-read
//!   timeouts, a cap on open connections), the gate every request passes (`auth`: bearer
//!   token, `Host` and `Origin` checks), Streamable HTTP at `/mcp` over the daemon's lean
//!   session layer (`http_sessions`; both protocol eras, and `mcp_headers`: the standard
//!   request headers of a 2026-07-28 notification; `fast_call`: a stateless `tools/call`
//!   answered without rmcp's per-request service), the legacy SSE transport (`sse`),
//!   `/health` (`health`),
//!   the hook routes (`hook_route`: `POST /hook/{event}` from hook processes,
//!   `POST /hooks/{Event}` from Claude Code's HTTP hooks), Prometheus metrics at `/metrics`
//!   (`metrics`), and the operator's pages mounted from `operator-web`.
//! - `state`: what every request handler shares (status, access, session cap, in-flight calls),
//!   and the narrow view of it that `operator-web` reads ([`operator_web::DaemonView`]).
//!
//! # What it must not depend on
//!
//! Nothing here knows MCP beyond serving `server_full::HooksServer` over HTTP, or HTML beyond
//! mounting `operator-web`'s router; what a hook does belongs to `hook-dispatch`. Never linked
//! into the light front end or the hook binary.

mod auth;
mod fast_call;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod health;
mod hook_route;
mod http;
mod http_sessions;
pub mod lifecycle;
mod mcp_headers;
mod metrics;
mod sse;
mod state;
mod status;

pub use auth::{Access, Refusal, Token};
pub use health::probe as probe_health;
pub use http::BindError;
pub use lifecycle::{DaemonConfig, DaemonError, InstanceLock, serve_from_env};
pub use status::Phase;
