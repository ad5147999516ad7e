//! The operator's view of the fleet: `audit`, `sessions` and `channel status`. These read the
//! store directly (they are no agent tools) and print through `operator`, or their JSON with
//! `--json`.

use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use hook_dispatch::open;
use store::{AuditQuery, ReportQuery, Retention, SessionQuery, StoreHandle};

use crate::ops::print_out;

/// A store value as JSON (the store's types serialize infallibly: plain fields, string keys).
macro_rules! to_json {
    ($value:expr) => {
        serde_json::to_value($value).unwrap_or(Value::Null)
    };
}

/// Audit entries (or sessions) read per page: the commands page through the whole trail.
const PAGE: u32 = 500;

/// `hooks-mcp audit [--since T] [--json]`
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// Only changes made since T: an RFC 3339 time, or a duration back from now (`90s`,
    /// `30m`, `1h`, `7d`).
    #[arg(long, value_parser = parse_since)]
    since: Option<Since>,
    /// Print the entries as JSON.
    #[arg(long)]
    json: bool,
}

/// `hooks-mcp sessions [--all] [--json]`
#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    /// Every recorded session, not only the live ones (seen within
    /// HOOKS_MCP_SESSION_LIVE_MINUTES).
    #[arg(long)]
    all: bool,
    /// Print the sessions as JSON.
    #[arg(long)]
    json: bool,
}

/// A `--since` value: an instant, or a span back from now.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Since {
    At(i64),
    Ago(i64),
}

impl Since {
    fn instant(self, now: i64) -> i64 {
        match self {
            Since::At(at) => at,
            Since::Ago(ms) => now.saturating_sub(ms),
        }
    }
}

/// Parses `2026-01-01T00:00:00Z` or `90s`, `30m`, `1h`, `7d`.
fn parse_since(text: &str) -> Result<Since, String> {
    let text = text.trim();
    let unit = |c: char| match c {
        's' => Some(1_000),
        'm' => Some(60_000),
        'h' => Some(3_600_000),
        'd' => Some(86_400_000),
        _ => None,
    };
    if let Some(last) = text.chars().last()
        && let Some(scale) = unit(last)
        && let Ok(n) = text[..text.len() - 1].parse::<u32>()
    {
        return Ok(Since::Ago(i64::from(n) * scale));
    }
    store::from_rfc3339(text).map(Since::At).map_err(|_| {
        format!(
            "`{text}` is neither an RFC 3339 time (2026-01-01T09:00:00Z) nor a duration such \
             as 90s, 30m, 1h or 7d"
        )
    })
}

/// Opens the store (never creating it: there is nothing to show then).
fn open_store() -> Result<StoreHandle, ExitCode> {
    match open::store_from_env(false) {
        Ok((store, _)) => Ok(store),
        Err(e) => {
            protocol_lite::diag!("hooks-mcp: cannot open the store: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

fn retention() -> Result<Retention, ExitCode> {
    Retention::from_env().map_err(|e| {
        protocol_lite::diag!("hooks-mcp: {e}");
        ExitCode::FAILURE
    })
}

fn store_failed(e: store::StoreError) -> ExitCode {
    protocol_lite::diag!("hooks-mcp: {e}");
    ExitCode::FAILURE
}

/// Adds `<field>_time`, the RFC 3339 form, beside each named millisecond field of `v`.
fn with_times(mut v: Value, fields: &[&str]) -> Value {
    if let Some(map) = v.as_object_mut() {
        for field in fields {
            let time = map
                .get(*field)
                .and_then(Value::as_i64)
                .map(store::to_rfc3339);
            if let Some(time) = time {
                map.insert(format!("{field}_time"), Value::from(time));
            }
        }
    }
    v
}

fn print(value: &Value, json: bool, text: impl FnOnce(&Value) -> String) {
    if json {
        print_out(&serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string()));
    } else {
        print_out(&text(value));
    }
}

/// Runs `hooks-mcp audit`.
pub(crate) fn audit(args: AuditArgs) -> ExitCode {
    let store = match open_store() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let since = args.since.map(|s| s.instant(open::now_ms()));
    let mut entries = Vec::new();
    let mut after_id = None;
    loop {
        let page = match store.audit(&AuditQuery {
            since,
            after_id,
            limit: PAGE,
        }) {
            Ok(page) => page,
            Err(e) => return store_failed(e),
        };
        let full = page.len() == PAGE as usize;
        after_id = page.last().map(|e| e.id);
        entries.extend(page.iter().map(|e| with_times(to_json!(e), &["at"])));
        if !full {
            break;
        }
    }
    print(&Value::from(entries), args.json, operator::audit);
    ExitCode::SUCCESS
}

/// Runs `hooks-mcp sessions`.
pub(crate) fn sessions(args: SessionsArgs) -> ExitCode {
    let (store, retention) = match (open_store(), retention()) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let now = open::now_ms();
    let live_since = retention.live_since(now);
    let mut rows = Vec::new();
    let mut offset = 0;
    loop {
        let page = match store.sessions(&SessionQuery {
            seen_since: (!args.all).then_some(live_since),
            offset,
            limit: PAGE,
        }) {
            Ok(page) => page,
            Err(e) => return store_failed(e),
        };
        let full = page.len() == PAGE as usize;
        offset += PAGE;
        for session in &page {
            let mut v = with_times(to_json!(session), &["first_seen", "last_seen"]);
            if let Some(map) = v.as_object_mut() {
                map.insert("live".into(), Value::from(session.last_seen >= live_since));
            }
            rows.push(v);
        }
        if !full {
            break;
        }
    }
    let answer = serde_json::json!({ "all": args.all, "now": now, "sessions": rows });
    print(&answer, args.json, operator::sessions);
    ExitCode::SUCCESS
}

/// Runs `hooks-mcp channel status ID`.
pub(crate) fn channel_status(message_id: i64, json: bool) -> ExitCode {
    let (store, retention) = match (open_store(), retention()) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let now = open::now_ms();
    let mut report: Option<store::DeliveryReport> = None;
    let mut after_session = None;
    loop {
        let page = match store.delivery_report(&ReportQuery {
            message_id,
            live_since: retention.live_since(now),
            after_session: after_session.clone(),
            limit: PAGE,
        }) {
            Ok(Some(page)) => page,
            Ok(None) => {
                protocol_lite::diag!(
                    "hooks-mcp: no message has id {message_id}; `hooks-mcp channel read` lists \
                     the unexpired ones"
                );
                return ExitCode::FAILURE;
            }
            Err(e) => return store_failed(e),
        };
        let full = page.sessions.len() == PAGE as usize;
        after_session = page.sessions.last().map(|s| s.session_id.clone());
        match &mut report {
            None => report = Some(page),
            Some(report) => report.sessions.extend(page.sessions),
        }
        if !full {
            break;
        }
    }
    let Some(report) = report else {
        return ExitCode::FAILURE;
    };
    let mut v = to_json!(&report);
    if let Some(map) = v.as_object_mut() {
        if let Some(message) = map.remove("message") {
            map.insert(
                "message".into(),
                with_times(message, &["created_at", "expires_at"]),
            );
        }
        if let Some(Value::Array(sessions)) = map.remove("sessions") {
            let sessions: Vec<Value> = sessions
                .into_iter()
                .map(|s| with_times(s, &["delivered_at", "acknowledged_at"]))
                .collect();
            map.insert("sessions".into(), Value::from(sessions));
        }
        map.insert(
            "expired".into(),
            Value::from(report.message.expires_at <= now),
        );
    }
    print(&v, json, operator::delivery);
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_durations_and_rfc3339() {
        assert!(matches!(parse_since("90s"), Ok(Since::Ago(90_000))));
        assert!(matches!(parse_since("2h"), Ok(Since::Ago(7_200_000))));
        assert!(matches!(parse_since("7d"), Ok(Since::Ago(604_800_000))));
        assert!(matches!(
            parse_since("1970-01-01T00:00:01Z"),
            Ok(Since::At(1_000))
        ));
        let refused = parse_since("yesterday").unwrap_err();
        assert!(refused.contains("RFC 3339"), "{refused}");
        assert!(parse_since("h").is_err());
    }
}
