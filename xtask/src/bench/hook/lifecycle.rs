//! The lifecycle events beyond the four, as extra series of `cargo xtask bench hook`:
//! `hooks-mcp-hook hook <Event>` on `SessionStart` after a compaction (the unacknowledged
//! alerts and the reminders again), `SubagentStart` (a recipient recorded, the urgent messages
//! delivered into it), `Stop` (its common case: nothing published during the turn, one read)
//! and `SessionEnd` (one write), each on the same store and in the same rounds as the rest of
//! the run, compared with the `UserPromptSubmit` hook's median of the same run (target: each at
//! most that median).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{KNOWN_SESSION, Measured};

/// The series: label, event, payload (Claude Code's documented examples, for the benchmark's
/// session).
fn series() -> [(&'static str, &'static str, String); 4] {
    let common = format!(
        r#""session_id":"{KNOWN_SESSION}","transcript_path":"/home/dev/.claude/projects/-home-dev-src-app/{KNOWN_SESSION}.jsonl","cwd":"/home/dev/src/app""#
    );
    [
        (
            "SessionStart (source compact)",
            "SessionStart",
            format!(r#"{{{common},"hook_event_name":"SessionStart","source":"compact"}}"#),
        ),
        (
            "SubagentStart",
            "SubagentStart",
            format!(
                r#"{{{common},"hook_event_name":"SubagentStart","agent_id":"agent-abc123","agent_type":"Explore"}}"#
            ),
        ),
        (
            "Stop (nothing new in the turn)",
            "Stop",
            format!(
                r#"{{{common},"permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done.","background_tasks":[],"session_crons":[]}}"#
            ),
        ),
        (
            "SessionEnd",
            "SessionEnd",
            format!(r#"{{{common},"hook_event_name":"SessionEnd","reason":"other"}}"#),
        ),
    ]
}

/// Writes the series' payloads into `home` and gives each one's label, payload file and
/// command: `lean` (the hook `init` registers) on that event. The caller measures them in the
/// same rounds as the `UserPromptSubmit` hook they are compared with, so that both see the
/// machine alike.
pub(super) fn cases(
    home: &Path,
    lean: &Path,
) -> anyhow::Result<Vec<(String, PathBuf, Vec<OsString>)>> {
    let mut out = Vec::new();
    for (i, (label, event, payload)) in series().into_iter().enumerate() {
        let file = home.join(format!("lifecycle-{i}.json"));
        std::fs::write(&file, payload)?;
        let command: Vec<OsString> = vec![lean.into(), "hook".into(), event.into()];
        out.push((format!("hooks-mcp-hook hook {label}"), file, command));
    }
    Ok(out)
}

/// Prints the series beside `prompt_median` (the `UserPromptSubmit` hook's, same run).
pub(super) fn print(results: &[Measured], prompt_median: f64, smoke: bool) {
    println!("\n## lifecycle events (hooks-mcp-hook, same store and run)\n");
    println!(
        "| command | median ms | p90 ms | p99 ms | median / UserPromptSubmit's | peak RSS MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for m in results {
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.1} |",
            m.label,
            m.median_ms,
            m.p90_ms,
            m.p99_ms,
            m.median_ms / prompt_median,
            m.peak_rss_mib
        );
    }
    if smoke {
        return;
    }
    println!("\n| target (medians, same run) | measured | verdict |");
    println!("|---|---:|---|");
    for m in results {
        let ratio = m.median_ms / prompt_median;
        println!(
            "| {} ≤ the UserPromptSubmit hook's | {ratio:.2}× | {} |",
            m.label,
            if ratio <= 1.0 { "met" } else { "not met" }
        );
    }
}
