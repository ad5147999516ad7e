//! `hooks-mcp-hook`: the agent clients' hook command alone (`hooks-mcp-hook hook <Event>`, or
//! `hooks-mcp-hook hook --client <name> <event>` for the clients beside Claude Code).
//!
//! It runs twice around every tool call, so it is its own small executable: the hook dispatcher
//! (`hook-dispatch`) with the store and the tools crates only (no async runtime, no MCP SDK, no
//! network server), which saves start-up time on every call. `hooks-mcp init` registers it.
//!
//! It opens an SQLite store itself and never references the PostgreSQL backend, so an
//! optimised build links neither the PostgreSQL client nor TLS: on PostgreSQL, an event that
//! no local daemon answers is handed over to `hooks-mcp-full hook <Event>` (`exec`, the payload
//! replayed on its stdin), which answers exactly as this binary would. The build script links
//! the unwinder into it (no `libgcc_s.so.1` to load at every start); relinked with
//! `-C target-feature=+crt-static` (docs/hooks.md), it needs no dynamic loader at all: it
//! resolves no host names and loads no library at run time.

use std::process::ExitCode;

fn main() -> ExitCode {
    // A store write past `ulimit -f` fails as an error instead of killing the hook (its
    // refusal, which cannot happen in practice, would only leave the default).
    let _ = protocol_lite::diag::survive_file_size_limit();
    match hook_dispatch::run_from_args_with(hook_dispatch::open::sqlite_or_hand_over) {
        Some(code) => code,
        None => {
            protocol_lite::diag!(
                "hooks-mcp-hook: usage: hooks-mcp-hook hook <SessionStart|UserPromptSubmit|\
                 PreToolUse|PostToolUse|SubagentStart|SubagentStop|Stop|SessionEnd>, or \
                 hooks-mcp-hook hook --client <codex|gemini|copilot|cursor|vscode> <the \
                 client's event> (docs/clients.md); nothing was done"
            );
            // A broken hook registration must never block the agent.
            ExitCode::SUCCESS
        }
    }
}
