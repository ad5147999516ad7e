//! `floor-hook`: the floor `cargo xtask bench hook` measures the hook command against.
//!
//! A standard-library-only program that reads a hook payload on stdin and parses it just enough
//! to find `session_id` and `hook_event_name` (a scan, no JSON library), then exits 0 without
//! answering: what running any hook costs before it does any work (process start, reading
//! stdin). It is a measuring stick, not a hook.

#![allow(clippy::disallowed_macros)]

#[path = "../scan.rs"]
mod scan;

use std::io::{self, Read};
use std::process::ExitCode;

use scan::string_member;

fn main() -> ExitCode {
    let mut payload = String::new();
    if let Err(e) = io::stdin().read_to_string(&mut payload) {
        eprintln!("floor-hook: cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    let trimmed = payload.trim();
    if !(trimmed.starts_with('{') && trimmed.ends_with('}')) {
        eprintln!("floor-hook: the payload is not a JSON object");
        return ExitCode::FAILURE;
    }
    match (
        string_member(trimmed, "session_id"),
        string_member(trimmed, "hook_event_name"),
    ) {
        (Some(_), Some(_)) => ExitCode::SUCCESS,
        _ => {
            eprintln!("floor-hook: the payload lacks session_id or hook_event_name");
            ExitCode::FAILURE
        }
    }
}
