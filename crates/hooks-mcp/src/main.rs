//! `hooks-mcp`: the lightweight stdio front end that agent sessions start.
//!
//! Most sessions never call a tool, so this process answers the opening and discovery itself
//! (`initialize` or the 2026-07-28 `server/discover`, `ping`, `tools/list`, the resource and
//! prompt lists, held `subscriptions/listen` requests) from a catalogue that a short-lived
//! child (`hooks-mcp-catalogue`) generated, with no async runtime, no store and no tool code
//! linked. The first other request `exec`s `hooks-mcp-stdio` in this same process (same pid,
//! same pipes), handing it the bytes to replay through an inherited file. All of it lives in
//! the `stdio-front` crate.
//!
//! Subcommands and network transports belong to the full binary: they are `exec`ed at once.
//!
//! This binary must build with `--no-default-features` (CI does so): that proves it links
//! nothing of the full server.

use std::process::ExitCode;

fn main() -> ExitCode {
    // A diagnostic to a redirected stderr past `ulimit -f` is dropped, not a killed session.
    let _ = protocol_lite::diag::survive_file_size_limit();
    stdio_front::run()
}
