//! `hooks-mcp-catalogue`: prints every registered tool as listing JSON and exits.
//!
//! The stdio front end runs it as its short-lived catalogue child before it answers
//! `initialize`, so it is its own small executable: the catalogue and the tools crates'
//! registrations, nothing that serves, opens a store or starts a runtime. It starts in a
//! fraction of the full server's time, and every session waits for it once.

// Naming each tools crate links its registrations (see `server_full::link_tools`, which the
// protocol tests compare this listing against).
use tools_channels as _;
use tools_conditions as _;
use tools_enforcement as _;
use tools_scheduler as _;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A diagnostic to a redirected stderr past `ulimit -f` is dropped, not a killed child.
    let _ = protocol_lite::diag::survive_file_size_limit();
    if std::env::args_os().len() > 1 {
        protocol_lite::diag!(
            "hooks-mcp-catalogue: takes no arguments; it prints the tool listing the stdio \
             front end serves from"
        );
        return ExitCode::FAILURE;
    }
    let catalogue = match catalogue::Catalogue::from_registry() {
        Ok(catalogue) => catalogue,
        Err(e) => {
            protocol_lite::diag!("hooks-mcp-catalogue: cannot build the catalogue: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(catalogue.listing_json().as_bytes())
        .and_then(|()| out.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            protocol_lite::diag!("hooks-mcp-catalogue: cannot write the listing: {e}");
            ExitCode::FAILURE
        }
    }
}
