//! The hook command, `init`, `status` and the operator subcommands over the real
//! `hooks-mcp-full` binary, fed with recorded hook payloads (`tests/fixtures/hooks/`), and the
//! daemon's operator console in Chromium.
//!
//! Each test has its own store directory (`HOOKS_MCP_HOME`) and its own `HOME`, so none of them
//! reads or writes anything outside its temporary directory.

// Tests unwrap freely: a failure is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A test crate: its helpers are shared between modules, not a public API.
#![allow(unreachable_pub, missing_docs)]

mod support;

mod client_clis;
mod client_hooks;
mod client_init;
mod conditions;
mod console;
mod double_reports;
mod events;
mod forward;
mod hand_over;
mod http;
mod init;
mod lifecycle;
mod linking;
mod ops;
mod status;
