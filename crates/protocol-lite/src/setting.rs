//! Documented settings, and those of the front end's launch of the full server.

/// A setting some crate parses: environment variable, command-line flag, default and effect.
/// Each crate lists its own next to the code that parses them; `cargo xtask docs` gathers them
/// into docs/configuration.md, so the reference cannot drift from the parsers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable.
    pub env: &'static str,
    /// The equivalent command-line flag, or empty.
    pub flag: &'static str,
    /// The default, as a reader should see it.
    pub default: &'static str,
    /// What it does, in a sentence or two.
    pub effect: &'static str,
}

/// An on/off setting's value: `Some(true)` for `on`, `1`, `true` or `yes`, `Some(false)` for
/// `off`, `0`, `false` or `no` (any case, spaces around ignored), `None` for anything else,
/// blank included, which each setting resolves to its default and names if not blank.
pub fn switch(value: &str) -> Option<bool> {
    let value = value.trim();
    let is = |words: [&str; 4]| words.iter().any(|w| w.eq_ignore_ascii_case(value));
    if is(["on", "1", "true", "yes"]) {
        Some(true)
    } else if is(["off", "0", "false", "no"]) {
        Some(false)
    } else {
        None
    }
}

/// Overrides where the full server binary is (default: `hooks-mcp-full` beside `hooks-mcp`).
pub const FULL_BIN_ENV: &str = "HOOKS_MCP_FULL_BIN";
/// Overrides where the catalogue child binary is (default: `hooks-mcp-catalogue` beside the
/// full server).
pub const CATALOGUE_BIN_ENV: &str = "HOOKS_MCP_CATALOGUE_BIN";
/// The catalogue child's time limit in milliseconds.
pub const CATALOGUE_TIMEOUT_ENV: &str = "HOOKS_MCP_CATALOGUE_TIMEOUT_MS";
/// Log filter for stderr.
pub const LOG_ENV: &str = "HOOKS_MCP_LOG";
/// Tells the full server which inherited descriptor holds the bytes to replay (internal).
pub const REPLAY_FD_ENV: &str = "HOOKS_MCP_REPLAY_FD";
/// Tells the full server the id of the `initialize` it must not answer again (internal). It
/// travels in the replay file's header line (`light::Handoff::file`), not the environment: an
/// id may be as long as the client likes, and Linux caps one variable at 128 KiB; the full
/// server still reads the variable from a front end of an earlier build.
pub const SUPPRESS_ID_ENV: &str = "HOOKS_MCP_SUPPRESS_ID";
/// Tells the full server the ids of the `subscriptions/listen` requests the front end held and
/// acknowledged, as a JSON array (internal; set only when it held any; in the replay file's
/// header line, as [`SUPPRESS_ID_ENV`]). Those requests open the replay; the full server drops
/// its own acknowledgement of each, and hands the line that triggered the handoff on only once
/// they are in place, so what that line changes reaches them.
pub const SUPPRESS_ACKS_ENV: &str = "HOOKS_MCP_SUPPRESS_ACKS";
/// The argument that makes `hooks-mcp-stdio` print the store's `resources/list` result
/// (2026-07-28 form, one JSON object on one line), then when its next message expires
/// (`{"nextExpiry": MILLIS}` or `null`, on a second line), and exit (internal): how the front
/// end answers `resources/list` and watches the list for a held subscription without linking
/// the store.
pub const LIST_RESOURCES_ARG: &str = "--list-resources";
/// The argument that makes `hooks-mcp-stdio` print the urgent messages waiting to be pushed
/// into its session after a cursor (the next argument, [`crate::push::Cursor`]'s text) as one
/// [`crate::push::Batch`] and exit (internal): how the front end pushes into an idle session
/// without linking the store.
pub const PENDING_PUSHES_ARG: &str = "--pending-pushes";
/// After [`PENDING_PUSHES_ARG`] and its cursor: the child keeps the settings' warnings to
/// itself (internal; the front end passes it from the second run on, the first having said
/// them).
pub const QUIET_ARG: &str = "--quiet";
/// Turns on pushing urgent messages into the session (`notifications/claude/channel`).
pub const PUSH_ENV: &str = "HOOKS_MCP_CHANNEL_PUSH";
/// The channels allowed to push into the session (default: every channel it receives).
pub const PUSH_CHANNELS_ENV: &str = "HOOKS_MCP_PUSH_CHANNELS";
/// Tells the full server where the front end's pushes stopped (internal): the
/// [`crate::push::Cursor`] text, so that nothing is pushed twice or lost across the handoff.
pub const PUSH_CURSOR_ENV: &str = "HOOKS_MCP_PUSH_CURSOR";
/// Environment variables naming the agent session a stdio server acts for, in priority order.
pub const SESSION_ENV: [&str; 2] = ["HOOKS_MCP_SESSION_ID", "CLAUDE_CODE_SESSION_ID"];

/// The front end's settings.
pub const LAUNCH_SETTINGS: &[Setting] = &[
    Setting {
        env: FULL_BIN_ENV,
        flag: "",
        default: "beside hooks-mcp",
        effect: "Path of `hooks-mcp-full`, which takes a PostgreSQL store's hook events over \
                 from `hooks-mcp-hook`; `hooks-mcp-stdio`, which takes the session over on its \
                 first tool call, is found beside it.",
    },
    Setting {
        env: CATALOGUE_BIN_ENV,
        flag: "",
        default: "beside hooks-mcp-full",
        effect: "Path of `hooks-mcp-catalogue`, the short-lived child that prints every \
                 registered tool at start-up.",
    },
    Setting {
        env: CATALOGUE_TIMEOUT_ENV,
        flag: "",
        default: "30000",
        effect: "Time limit of the catalogue child process at start-up, in milliseconds; on \
                 failure or timeout the server exits before `initialize` with a message.",
    },
    Setting {
        env: LOG_ENV,
        flag: "",
        default: "warn,rmcp=error",
        effect: "Log filter for stderr (`debug` reports when and why the handoff happened). The \
                 daemon's default is `info,rmcp=warn` (docs/network.md).",
    },
];

/// The settings of pushing into an idle session (docs/hooks.md, "Push into an idle session").
pub const PUSH_SETTINGS: &[Setting] = &[
    Setting {
        env: PUSH_ENV,
        flag: "",
        default: "off",
        effect: "stdio only: `on` declares Claude Code's `claude/channel` capability and pushes \
                 each new unacknowledged `alert` or `critical` message of the session's channels \
                 into the session as `notifications/claude/channel`, idle or not, within a \
                 second of its publication. Needs the session's id (`HOOKS_MCP_SESSION_ID` or \
                 `CLAUDE_CODE_SESSION_ID`) and Claude Code started with the server named in \
                 `--channels` or `--dangerously-load-development-channels server:<name>`.",
    },
    Setting {
        env: PUSH_CHANNELS_ENV,
        flag: "",
        default: "every channel received",
        effect: "With push on: comma-separated channels allowed to push (of those the session \
                 receives, `HOOKS_MCP_CHANNELS`); `global` only when listed. Unset, blank, `all` \
                 or `*`: every channel the session receives.",
    },
];

#[cfg(test)]
mod tests {
    use super::switch;

    #[test]
    fn switches_read_the_usual_words_and_nothing_else() {
        for on in ["on", "ON", " 1 ", "true", "Yes"] {
            assert_eq!(switch(on), Some(true), "{on:?}");
        }
        for off in ["off", "Off", "0", "false", " no"] {
            assert_eq!(switch(off), Some(false), "{off:?}");
        }
        for neither in ["", "  ", "of", "disable", "2"] {
            assert_eq!(switch(neither), None, "{neither:?}");
        }
    }
}
