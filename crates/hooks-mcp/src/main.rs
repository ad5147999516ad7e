//! `hooks-mcp`: the lightweight stdio front end that agent sessions start.
//!
//! Most sessions never call a tool, so this process answers the handshake and discovery
//! (`initialize`, `ping`, `tools/list`, the empty resource and prompt lists) from a catalogue
//! that a short-lived child (`hooks-mcp-catalogue`) generated, with no async runtime,
//! no store and no tool code linked. The first other request `exec`s `hooks-mcp-full` in this
//! same process (same pid, same pipes), handing it the bytes to replay through an inherited file.
//!
//! Subcommands and network transports belong to the full binary: they are `exec`ed at once.
//!
//! This binary must build with `--no-default-features` (CI does so): that proves it links
//! nothing of the full server.

mod front;

use std::process::ExitCode;

fn main() -> ExitCode {
    front::run()
}
