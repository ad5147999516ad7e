//! What the operator's terminal commands (`hooks-mcp channel`, `enforcement`, `condition`,
//! `schedule`, `audit`, `sessions`) show: tool answers and fleet reports rendered as text for
//! people.
//!
//! # What this crate owns
//!
//! The human-readable layout of every tool answer an operator command prints (`--json` prints
//! the answer itself). The commands call the tools through the catalogue; this crate only
//! turns their JSON answers into lines. The same for the fleet reports (the audit trail, the
//! sessions, a message's delivery report): the commands read the store's rows page by page
//! ([`all_pages`]) and hand them over as JSON; this crate builds each report's JSON (the
//! times for people beside the instants, who is live, whether a message expired) and its
//! lines. Also what the commands' `--since` option reads ([`Since`]), and the writing of it
//! all on stdout.
//!
//! # What it must not depend on
//!
//! Nothing but `serde_json`: no store, server, runtime or argument parser, so any binary or
//! daemon that shows tool answers to people can use it. What needs the store (writing and
//! reading RFC 3339 times, the rows themselves) comes in as plain values and functions.

mod answers;
mod fields;
mod fleet;
mod reports;
mod since;

use serde_json::Value;

pub use answers::human;
pub use fleet::{audit, delivery, sessions};
pub use reports::{all_pages, audit_report, delivery_report, sessions_report, with_times};
pub use since::{Since, SinceError};

/// What a command prints for `value`: its JSON, pretty-printed, with `--json` (`json`), else
/// `text`'s lines for people.
pub fn render(value: &Value, json: bool, text: impl FnOnce(&Value) -> String) -> String {
    if json {
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    } else {
        text(value)
    }
}

/// Writes `text` and a newline on stdout: the operator's terminal (the commands that print
/// serve no MCP stream there).
///
/// A reader that went away (a broken pipe, as `| head` leaves) or a closed stdout is not an
/// error: nobody is there to read.
///
/// # Errors
/// Any other failure to write the whole text (a full disk behind `> file`), so that the
/// command can say so and fail instead of reporting success over a truncated file.
pub fn print_out(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{}", for_terminal(text)).and_then(|()| out.flush()) {
        // The standard library already treats a closed stdout as a sink.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// `text` with every control character but newline and tab written as a `\u00XX` escape:
/// message bodies and session ids come from agents, and an escape sequence among them must not
/// reach the operator's terminal (to move the cursor, rewrite a line, retitle the window). The
/// escape is JSON's own, so `--json` output stays valid.
pub fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{for_terminal, render};

    #[test]
    fn control_characters_reach_the_terminal_escaped() {
        assert_eq!(for_terminal("plain\n\tline"), "plain\n\tline");
        assert_eq!(
            for_terminal("ok\u{1b}[2K\rPWNED\u{7}\u{9b}"),
            "ok\\u001b[2K\\u000dPWNED\\u0007\\u009b"
        );
        // JSON stays JSON.
        let json = serde_json::to_string(&serde_json::json!({"m": "a\u{7f}b\u{9b}"})).unwrap();
        let shown = for_terminal(&json);
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back["m"], "a\u{7f}b\u{9b}");
    }

    #[test]
    fn render_prints_json_or_the_text_layout() {
        let v = json!({ "removed": 2 });
        assert_eq!(
            render(&v, true, |_| "text".into()),
            "{\n  \"removed\": 2\n}"
        );
        assert_eq!(
            render(&v, false, |v| format!("removed {}", v["removed"])),
            "removed 2"
        );
    }
}
