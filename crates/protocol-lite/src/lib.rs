//! Newline-delimited JSON-RPC for MCP over stdio, and the handshake, with no async runtime.
//!
//! It also holds a lean loopback HTTP/1.1 client, [`local_daemon`], that short-lived processes
//! (the hook command) use to reach the local daemon: plain `std::net`, no HTTP crate.
//!
//! # What this crate owns
//!
//! - [`jsonrpc`]: checking one line of input against JSON-RPC 2.0 and MCP's message shapes, and
//!   the exact error replies the specification asks for (`-32700` with `"id": null`, `-32600`,
//!   `-32602` for a malformed `tools/call`). Both the lightweight front end and the full server
//!   use it, so both answer bad input identically.
//! - [`diag`]: diagnostics on stderr that ignore write errors and never block (`diag!`): a
//!   closed or full stderr never takes a process down or stalls it; what it cannot take at
//!   once is dropped. `survive_file_size_limit` answers `SIGXFSZ`, so that a write past
//!   `ulimit -f` fails instead of killing the process.
//! - [`fdio`]: a pipe handed over with `O_NONBLOCK`, read and written as if it blocked
//!   (waiting in `poll`), and whether the reader of stdout is gone: both halves of a stdio
//!   session use it.
//! - [`handshake`]: the server's identity and capabilities, defined once, and protocol version
//!   negotiation; the full server builds its rmcp `initialize` and `server/discover` results
//!   from the same JSON.
//! - [`modern`]: the 2026-07-28 (stateless) framing: the `_meta` every request carries, the
//!   version check and its `-32022`, caching hints, `subscriptions/listen` filters and the
//!   acknowledgement and list-change lines.
//! - [`light`]: the front end's session state machine: it answers `initialize`, `ping`, the
//!   2026-07-28 `server/discover` and the discovery lists itself, holds `subscriptions/listen`
//!   requests, and says when to hand the connection to the full server, keeping the bytes the
//!   full server must replay and what it must not answer again.
//! - [`local_daemon`]: the lean, std-only HTTP/1.1 client for the local network daemon: one
//!   `POST` per call to a loopback address only, with the daemon's bearer token and short
//!   timeouts. The hook command hands events to the daemon through it instead of opening a
//!   database connection of its own.
//! - [`push`]: pushing urgent messages into a session (Claude Code's channels): whether a
//!   process pushes, the `notifications/claude/channel` line, the cursor carried across the
//!   handoff and the batch the store's child prints for the front end.
//! - [`setting`]: the [`setting::Setting`] record every crate documents its settings with, and
//!   the front end's own settings.
//!
//! # What it must not depend on
//!
//! No tokio, no rmcp, no store, no tool implementations: this crate is the whole protocol
//! surface of a process that most agent sessions never take past `tools/list`, and it must stay
//! small. Only `serde`/`serde_json`, `thiserror`, `rustix` (`poll`, for [`diag`] and [`fdio`])
//! and `libc` (`sigaction`, for `survive_file_size_limit`).
//!
//! # Example
//!
//! ```
//! use protocol_lite::jsonrpc::{self, Incoming};
//!
//! // A request line is checked and classified...
//! let line = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
//! let Ok((_, Incoming::Request { id, method, .. })) = jsonrpc::parse_line(line) else {
//!     return Err("not a request".into());
//! };
//! assert_eq!(method, "ping");
//! // ...and answered with one line.
//! let reply = jsonrpc::result_line(&id, &serde_json::json!({}));
//! assert_eq!(reply, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
//!
//! // A line that is not JSON gets the error reply the specification asks for.
//! let Err(bad) = jsonrpc::parse_line(b"{oops") else {
//!     return Err("accepted".into());
//! };
//! assert_eq!(bad.code, jsonrpc::PARSE_ERROR);
//! assert!(bad.id.is_null());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod diag;
pub mod fdio;
pub mod handshake;
pub mod jsonrpc;
pub mod light;
pub mod local_daemon;
pub mod modern;
pub mod push;
pub mod setting;
