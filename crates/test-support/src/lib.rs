//! What hooks-mcp's tests share (a dev-dependency only): a daemon launcher ([`daemon`]), a
//! throwaway PostgreSQL server ([`pg`]), HAProxy with the shipped configuration
//! ([`haproxy`]), and a small HTTP client ([`http`]) with the MCP helpers the tests use
//! ([`mcp`]).
// Test code: a panic is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod daemon;
pub mod haproxy;
pub mod http;
pub mod mcp;
pub mod pg;

/// How long anything is waited for before a test gives up.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);
