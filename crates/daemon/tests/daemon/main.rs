//! The network daemon over real HTTP on 127.0.0.1 ephemeral ports.
//!
//! Each daemon is a child process of this test binary (it re-runs itself with the test's name
//! and `HOOKS_MCP_TEST_DAEMON_CHILD=1`, and the test's first call runs the daemon in the
//! child), so exit codes, signals and the start-up log are the real ones.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_macros)]

mod api;
mod balancer;
mod fast_calls;
mod fleet;
mod hardening;
mod hook_route;
mod lazy;
mod lifecycle;
mod limits;
mod metrics;
mod readiness;
mod resources;
mod security;
mod shared_state;
mod stateless;
mod support;
mod transports;
