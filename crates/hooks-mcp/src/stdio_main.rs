//! `hooks-mcp-stdio`: the full MCP server for one stdio session, and nothing else.
//!
//! The light front end (`hooks-mcp`) `exec`s it on a session's first request it cannot answer,
//! handing the connection over (the handshake replayed from an anonymous file). It links the
//! MCP server (`server-full`), the store and the tools, but none of the network daemon, the
//! operator's pages or the operator commands that `hooks-mcp-full` carries, so a session that
//! called a tool keeps less memory. Started without a handed-over session, it serves stdio from
//! the start, as `hooks-mcp-full serve` does. `--list-resources` prints the store's
//! `resources/list` result and exits (the front end's child while it holds a subscription);
//! `--pending-pushes CURSOR [--quiet]` prints the urgent messages to push into the session
//! after the cursor and exits (the front end's child while push is on).

use std::process::ExitCode;

fn main() -> ExitCode {
    // A store or log write past `ulimit -f` fails as an error instead of killing the session
    // (the handler the front end installed did not survive its `exec`).
    let _ = protocol_lite::diag::survive_file_size_limit();
    // A stdio server stays quiet: warnings only, unless HOOKS_MCP_LOG says otherwise.
    server_full::logging::init("warn,rmcp=error");
    let mut args = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned());
    let outcome = match args.next().as_deref() {
        Some(protocol_lite::setting::LIST_RESOURCES_ARG) => {
            server_full::stdio::print_resources_from_env().map_err(|e| e.to_string())
        }
        Some(protocol_lite::setting::PENDING_PUSHES_ARG) => match args.next() {
            Some(cursor) => {
                let quiet = args.next().as_deref() == Some(protocol_lite::setting::QUIET_ARG);
                server_full::print_pending_from_env(&cursor, quiet)
            }
            None => Err(format!(
                "{} needs the cursor to read after (as the front end passes it)",
                protocol_lite::setting::PENDING_PUSHES_ARG
            )),
        },
        _ => server_full::stdio::serve_from_env().map_err(|e| e.to_string()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            protocol_lite::diag!("hooks-mcp: error: {e}");
            ExitCode::FAILURE
        }
    }
}
