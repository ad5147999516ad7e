//! Where the SQLite store's files live, and a watch on them.
//!
//! # What this crate owns
//!
//! - [`StoreLocation`]: the rule that places the database file (`HOOKS_MCP_HOME`, else the XDG
//!   state directory, else `~/.local/state`), in one place for every program that opens the
//!   store or watches it.
//! - [`DirWatch`]: an inotify descriptor on the database's directory that tells writes to the
//!   database or its WAL from the rest of the directory, and says when the watch ended or the
//!   database was replaced. The store's change feed and the stdio front end's light loop both
//!   sleep on it; the path is resolved first, so a database reached through a symbolic link is
//!   watched where SQLite writes it.
//!
//! # What it must not depend on
//!
//! The standard library and rustix only: no SQLite, no async runtime, no other crate of the
//! workspace. The stdio front end links it, and must stay small.

mod location;
mod watch;

pub use location::{HOME_ENV, StoreLocation};
pub use watch::{DirWatch, Drained, WatchError};
