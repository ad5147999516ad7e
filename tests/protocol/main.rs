//! End-to-end protocol tests: the real `hooks-mcp` binary over real pipes.
//!
//! Each test starts its own server with its own store directory. The front end answers the
//! handshake and discovery itself; the first other request hands the session to the full server
//! in the same process. These tests observe that boundary from outside (/proc).

// Tests unwrap freely: a failure is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A test crate: its helpers are shared between modules, not a public API.
#![allow(unreachable_pub, missing_docs)]

mod support;

mod boundary;
mod clients;
mod contention;
mod errors;
mod handoff;
mod handoff_faults;
mod handshake;
mod lazy;
mod pipes;
mod push;
mod python_clients;
mod resources;
mod stateless;
mod stderr;
