//! Persistence for hooks-mcp: the domain API the tools use, and its embedded SQLite backend.
//!
//! # What this crate owns
//!
//! - The domain API ([`api`]): one trait per tool category ([`ChannelStore`],
//!   [`EnforcementStore`], [`ConditionStore`], [`ScheduleStore`]) plus [`StoreAdmin`] for opening
//!   checks and health. [`Store`] is all of them together; tools hold a [`StoreHandle`].
//!   The API speaks in domain types and Unix-millisecond timestamps, never in SQL, so another
//!   backend (PostgreSQL) can implement it without touching the tools.
//! - [`SqliteStore`], the embedded default: WAL, a busy timeout, versioned migrations and
//!   [`StoreAdmin::verify`]. Many processes (one stdio server per agent session, hooks, a daemon)
//!   share one database file; every multi-statement write is one immediate transaction.
//! - [`StoreLocation`]: where the database lives (`HOOKS_MCP_HOME`, else the XDG state directory).
//! - [`StoreError`]: typed failures that say what is wrong and how to repair it.
//!
//! # What it must not depend on
//!
//! No MCP SDK, no async runtime, no tools crate (it uses only the catalogue's `ToolError`, to
//! convert its errors for tool results): the store is a plain library the
//! hook path can open in a millisecond.

pub mod api;
mod error;
mod location;
pub mod rules;
mod sqlite;

pub use api::*;
pub use error::StoreError;
pub use location::{HOME_ENV, StoreLocation};
pub use rules::{from_rfc3339, to_rfc3339};
pub use sqlite::{OpenOptions, Opened, SCHEMA_VERSION, SqliteStore};
