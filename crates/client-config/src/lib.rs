//! Client configuration: registering hooks-mcp in Claude Code's settings and checking it.
//!
//! # What this crate owns
//!
//! - [`client`]: where the client's two files live (`~/.claude.json` for `mcpServers`,
//!   `~/.claude/settings.json` for `hooks`, or `$CLAUDE_CONFIG_DIR`), the entries hooks-mcp
//!   writes there, and how to recognise them.
//! - [`init`]: adding or removing those entries, idempotently (a second run writes nothing),
//!   with a backup of each changed file and an atomic rename, touching nothing else.
//! - [`status`]: comparing the configuration, the client's files and the daemon.
//!
//! # What it must not depend on
//!
//! No server, async runtime or HTTP crate: the daemon is probed through a function the binary
//! passes in. It names the hook events through `hook-dispatch` (the events it dispatches are
//! the events registered).

pub mod client;
pub mod init;
pub mod status;

/// Why the client's configuration cannot be read or changed (a sentence saying what to fix;
/// nothing was written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);
