//! Helpers the commands share, one job per module: where the workspace and its build output
//! are ([`paths`]), cargo invocations ([`cargo`]), a daemon child process ([`daemon`]), a small
//! HTTP/1.1 client ([`http`]), and readings of a process from `/proc` ([`procfs`]).
//!
//! Commands import these; no command module imports another command module.

pub(crate) mod cargo;
pub(crate) mod daemon;
pub(crate) mod http;
pub(crate) mod paths;
pub(crate) mod procfs;
