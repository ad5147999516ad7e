//! The fleet reports as text for people: the audit trail, the sessions and a message's delivery
//! report.

use serde_json::Value;

use crate::fields::{items, s, t};

/// The audit trail (a JSON array of entries, each with `at_time`) as one line per change:
/// time, actor, action, subject and the detail's fields.
pub fn audit(v: &Value) -> String {
    let rows = v.as_array().map(Vec::as_slice).unwrap_or(&[]);
    if rows.is_empty() {
        return "no changes recorded".into();
    }
    rows.iter()
        .map(|e| {
            let actor = e
                .get("actor")
                .map_or(String::new(), |a| match s(a, "name") {
                    "" => s(a, "kind").to_owned(),
                    name => format!("{}:{name}", s(a, "kind")),
                });
            let detail = e
                .get("detail")
                .and_then(Value::as_object)
                .map(|d| {
                    d.iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| match v {
                            // Quoted (JSON escapes) when it would not read as one word.
                            Value::String(text)
                                if !text.is_empty()
                                    && !text
                                        .chars()
                                        .any(|c| c.is_whitespace() || "\"=".contains(c)) =>
                            {
                                format!("{k}={text}")
                            }
                            other => format!("{k}={other}"),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            format!(
                "{} {actor} {} {} {detail}",
                s(e, "at_time"),
                s(e, "action"),
                s(e, "subject")
            )
            .trim_end()
            .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// How long ago `then` was at `now` (both Unix milliseconds): `12s`, `5m`, `3h`, `2d`.
fn ago(now: i64, then: i64) -> String {
    let secs = (now.saturating_sub(then) / 1000).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// The sessions (`{"all", "now", "sessions": [...]}`) as one line each: id, live or not, last
/// seen (ago), last event and transport, tool calls, working directory.
pub fn sessions(v: &Value) -> String {
    let now = v.get("now").and_then(Value::as_i64).unwrap_or(0);
    let rows = items(v, "sessions");
    if rows.is_empty() {
        return if v.get("all") == Some(&Value::Bool(true)) {
            "no sessions recorded".into()
        } else {
            "no live sessions (--all shows the recent ones)".into()
        };
    }
    rows.iter()
        .map(|r| {
            let last = r.get("last_seen").and_then(Value::as_i64).unwrap_or(0);
            let ended = r.get("ended_at").is_some_and(|e| !e.is_null());
            let live = if r.get("live") == Some(&Value::Bool(true)) {
                "live"
            } else if ended {
                "ended"
            } else {
                "gone"
            };
            let cwd = match s(r, "cwd") {
                "" => String::new(),
                cwd => format!(" {cwd}"),
            };
            format!(
                "{} {live} seen {} ago ({} via {}), {} tool calls{cwd}",
                s(r, "session_id"),
                ago(now, last),
                s(r, "last_event"),
                s(r, "transport"),
                t(r, "tool_calls"),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A message's delivery report as its summary line (`critical #12 deploys: delivered 9 of 9
/// live sessions, acknowledged 7`) and one line per session concerned.
pub fn delivery(v: &Value) -> String {
    let empty = Value::Null;
    let m = v.get("message").unwrap_or(&empty);
    let expired = if v.get("expired") == Some(&Value::Bool(true)) {
        " (expired)"
    } else {
        ""
    };
    let mut lines = vec![format!(
        "{} #{} {}{expired}: delivered {} of {} live sessions, acknowledged {}",
        s(m, "severity"),
        t(m, "id"),
        s(m, "channel"),
        t(v, "delivered_live"),
        t(v, "live_subscribed"),
        t(v, "acknowledged"),
    )];
    for r in items(v, "sessions") {
        let mut facts = Vec::new();
        match s(r, "delivered_at_time") {
            "" => facts.push("not delivered".to_owned()),
            at => facts.push(format!("delivered {at}")),
        }
        if let Some(at) = r.get("acknowledged_at_time").and_then(Value::as_str) {
            facts.push(format!("acknowledged {at}"));
        }
        if r.get("live") != Some(&Value::Bool(true)) {
            facts.push("not live".into());
        } else if r.get("subscribed") != Some(&Value::Bool(true)) {
            facts.push("not subscribed".into());
        }
        lines.push(format!("  {} {}", s(r, "session_id"), facts.join(", ")));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{audit, delivery, sessions};

    #[test]
    fn a_delivery_report_leads_with_its_summary() {
        let report = json!({
            "message": { "id": 12, "channel": "deploys", "severity": "critical" },
            "live_subscribed": 9, "delivered_live": 9, "delivered": 10, "acknowledged": 7,
            "expired": false,
            "sessions": [
                { "session_id": "s1", "delivered_at_time": "2026-12-01T10:00:00Z",
                  "live": true, "subscribed": true },
                { "session_id": "s2", "live": true, "subscribed": true }
            ]
        });
        let text = delivery(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "critical #12 deploys: delivered 9 of 9 live sessions, acknowledged 7"
        );
        assert_eq!(lines[1], "  s1 delivered 2026-12-01T10:00:00Z");
        assert_eq!(lines[2], "  s2 not delivered");
    }

    #[test]
    fn audit_and_sessions_read_one_line_each() {
        let entries = json!([{
            "at_time": "2026-12-01T10:00:00Z", "action": "publish", "subject": "12",
            "actor": { "kind": "operator", "name": "alice" },
            "detail": { "channel": "deploys", "tag": null, "body": "line one\nline two" }
        }]);
        assert_eq!(
            audit(&entries),
            "2026-12-01T10:00:00Z operator:alice publish 12 channel=deploys \
             body=\"line one\\nline two\""
        );
        assert_eq!(audit(&json!([])), "no changes recorded");
        let listed = json!({ "all": false, "now": 600_000, "sessions": [{
            "session_id": "s1", "live": true, "last_seen": 300_000, "last_event": "PreToolUse",
            "transport": "hook", "tool_calls": 4, "cwd": "/src/app"
        }]});
        assert_eq!(
            sessions(&listed),
            "s1 live seen 5m ago (PreToolUse via hook), 4 tool calls /src/app"
        );
    }
}
