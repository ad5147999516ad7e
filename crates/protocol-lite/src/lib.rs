//! Newline-delimited JSON-RPC for MCP over stdio, and the handshake, with no async runtime.
//!
//! # What this crate owns
//!
//! - [`jsonrpc`]: checking one line of input against JSON-RPC 2.0 and MCP's message shapes, and
//!   the exact error replies the specification asks for (`-32700` with `"id": null`, `-32600`,
//!   `-32602` for a malformed `tools/call`). Both the lightweight front end and the full server
//!   use it, so both answer bad input identically.
//! - [`diag`]: diagnostics on stderr that ignore write errors (`diag!`): a closed or full
//!   stderr never takes a process down.
//! - [`handshake`]: the server's identity and capabilities, defined once, and protocol version
//!   negotiation; the full server builds its rmcp `initialize` result from the same JSON.
//! - [`light`]: the front end's session state machine: it answers `initialize`, `ping` and the
//!   discovery lists itself and says when to hand the connection to the full server, keeping the
//!   bytes the full server must replay.
//! - [`local_daemon`]: a lean, std-only HTTP/1.1 client for the local network daemon, which
//!   the hook command hands events to instead of opening a database connection of its own.
//! - [`setting`]: the [`setting::Setting`] record every crate documents its settings with, and
//!   the front end's own settings.
//!
//! # What it must not depend on
//!
//! No tokio, no rmcp, no store, no tool implementations: this crate is the whole protocol
//! surface of a process that most agent sessions never take past `tools/list`, and it must stay
//! small. Only `serde`/`serde_json` and `thiserror`.

pub mod diag;
pub mod handshake;
pub mod jsonrpc;
pub mod light;
pub mod local_daemon;
pub mod setting;
