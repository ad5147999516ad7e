//! `hooks-mcp-hook`: the agent client's hook command alone (`hooks-mcp-hook hook <Event>`).
//!
//! It runs twice around every tool call, so it is its own small executable: the hook dispatcher
//! (`hook-dispatch`) with the store and the tools crates only (no async runtime, no MCP SDK, no
//! network server), which saves start-up time on every call. `hooks-mcp init` registers it.

use std::process::ExitCode;

fn main() -> ExitCode {
    match hook_dispatch::run_from_args() {
        Some(code) => code,
        None => {
            protocol_lite::diag!(
                "hooks-mcp-hook: usage: hooks-mcp-hook hook <SessionStart|UserPromptSubmit|\
                 PreToolUse|PostToolUse>; nothing was done"
            );
            // A broken hook registration must never block the agent.
            ExitCode::SUCCESS
        }
    }
}
