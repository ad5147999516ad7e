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
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        // The standard library already treats a closed stdout as a sink.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::render;

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
