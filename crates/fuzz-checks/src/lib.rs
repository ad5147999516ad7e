//! The invariants hooks-mcp's fuzz targets check, as plain functions of the fuzz input.
//!
//! Each target module has `check(data: &[u8])`, which panics when an invariant breaks (that is
//! how libFuzzer learns of a finding) and returns normally otherwise. The cargo-fuzz crate in
//! `fuzz/` calls these functions with coverage-guided inputs; the test `regressions` in this
//! crate replays every kept input under `fuzz/regressions/<target>/` and the seeds on stable
//! Rust, so a fixed crash stays fixed. [`seeds`] builds each target's starting corpus from the
//! repository's fixtures and examples.
//!
//! Not shipped: nothing but the fuzz crate and tests depends on it.

// A failed invariant is a panic by design: it is how a fuzz target reports a finding.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

pub mod channels;
pub mod hook;
pub mod http;
pub mod jsonrpc;
pub mod light;
pub mod matcher;
pub mod runtime;
pub mod seeds;
pub mod stdio;
pub mod tools;

/// One fuzz target: its name (the file `fuzz/fuzz_targets/<name>.rs`, the folders
/// `fuzz/regressions/<name>/`) and its check.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The target's name.
    pub name: &'static str,
    /// What it exercises, in one line.
    pub about: &'static str,
    /// The check: panics when an invariant breaks.
    pub check: fn(&[u8]),
}

/// Every target, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "jsonrpc_line",
        about: "protocol-lite's line checks (parse_line, error replies)",
        check: jsonrpc::check,
    },
    Target {
        name: "light_session",
        about: "the light front end's session fed line sequences",
        check: light::check,
    },
    Target {
        name: "stdio_transport",
        about: "the full server's stdio line transport over arbitrary stdin bytes",
        check: stdio::check,
    },
    Target {
        name: "tool_args",
        about: "every tool's argument parsing through catalogue::call over a temporary store",
        check: tools::check,
    },
    Target {
        name: "matcher",
        about: "the condition matcher grammar and its shell-command heuristic",
        check: matcher::check,
    },
    Target {
        name: "channel_rules",
        about: "channel names and subscription lists, RFC 3339 times",
        check: channels::check,
    },
    Target {
        name: "http_sessions",
        about: "Streamable HTTP requests routed through the daemon's session layer",
        check: http::check,
    },
    Target {
        name: "hook_payload",
        about: "hook payloads through the dispatcher HTTP and command hooks share",
        check: hook::check,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
