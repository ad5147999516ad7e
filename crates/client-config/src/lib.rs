//! Client configuration: registering hooks-mcp with the agent clients (Claude Code, Codex,
//! Gemini CLI, Copilot CLI, Cursor, VS Code) and checking it.
//!
//! # What this crate owns
//!
//! - [`client`]: Claude Code's two files (`~/.claude.json` for `mcpServers`,
//!   `~/.claude/settings.json` for `hooks`, or `$CLAUDE_CONFIG_DIR`), the entries hooks-mcp
//!   writes there, and how to recognise hooks-mcp's hook commands (any client's).
//! - [`clients`]: every other client's files, whether it is on this machine, and the changes
//!   that register hooks-mcp there or take it out (docs/clients.md).
//! - [`doc`]: editing those files in place (JSON with comments, TOML), keeping the user's
//!   formatting and comments, with backups and atomic writes.
//! - [`init`]: adding or removing the entries, idempotently (a second run writes nothing),
//!   planning every file before writing any, touching nothing else.
//! - [`status`]: comparing the configuration, every client's files and the daemon, and the
//!   hook payloads no client could place.
//!
//! # What it must not depend on
//!
//! No server, async runtime or HTTP crate: the daemon is probed through a function the binary
//! passes in. It names the hook events through `hook-dispatch` (the events it dispatches are
//! the events registered).

pub mod client;
pub mod clients;
pub mod doc;
pub mod init;
pub mod status;

/// Why the client's configuration cannot be read or changed (a sentence saying what to fix;
/// nothing was written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);
