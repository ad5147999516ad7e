//! The operator's web side of hooks-mcp: the read API at `/api/v1/...` (JSON, with its OpenAPI
//! document generated from the handlers) and the console at `/console/` (server-rendered
//! pages, live over server-sent events, a few operator actions), over one read model.
//!
//! # What this crate owns
//!
//! - [`OperatorWeb`]: what both read: the store, the process's feed of store changes, the
//!   retention settings, and a narrow view of the daemon that serves them ([`DaemonView`]:
//!   uptime, the scheduler, open sessions, the degraded rule's verdict, per-minute charts, the
//!   token check), implemented by the `daemon` crate.
//! - `model`: the read model: the overview computed once for the API and the console.
//! - `api` ([`OperatorWeb::api_router`], [`openapi_json`]) and `console`
//!   ([`OperatorWeb::console_router`]).
//!
//! # What it must not depend on
//!
//! The daemon: it depends on this crate (to mount the routers), never the reverse; this crate
//! sees the daemon only through [`DaemonView`]. No transport, listener or MCP session code.

mod api;
mod console;
mod context;
mod model;
mod view;

pub use api::openapi_json;
pub use console::{CSP, ConsoleError, PREFIX as CONSOLE_PREFIX};
pub use context::OperatorWeb;
pub use view::{Charts, DaemonState, DaemonView, OpenSessions, SchedulerState};

use std::sync::Arc;

impl OperatorWeb {
    /// The read API's routes (`/api/v1/...`, with `openapi.json`). Mount them behind the
    /// daemon's bearer-token, `Host` and `Origin` checks.
    pub fn api_router(self: &Arc<Self>) -> axum::Router {
        api::router(self.clone())
    }

    /// The console's routes (`/console/...`). Mount them behind the `Host` and `Origin` checks
    /// only: the console signs browsers in itself (a cookie, or the bearer token to start one).
    ///
    /// # Errors
    /// [`ConsoleError::Random`] when the session secret cannot be drawn.
    pub fn console_router(self: &Arc<Self>) -> Result<axum::Router, ConsoleError> {
        console::router(self.clone())
    }
}
