//! Tool answers as text for people: the layout of each tool an operator command calls.

use serde_json::Value;

use crate::fields::{items, one_line, s, t};

/// A tool's answer as text for people: one line per item, the fields an operator reads first.
/// Tools without a dedicated layout get their JSON, pretty-printed.
pub fn human(tool: &str, v: &Value) -> String {
    let lines: Vec<String> = match tool {
        "channel_publish" => vec![format!(
            "published #{} on {} ({}), expires {}",
            t(v, "id"),
            s(v, "channel"),
            s(v, "severity"),
            s(v, "expires_at")
        )],
        "channel_list" => {
            let rows = items(v, "channels");
            if rows.is_empty() {
                vec!["no channel has unexpired messages".into()]
            } else {
                rows.iter()
                    .map(|c| {
                        format!(
                            "{:<24} {:>4} active, latest {}",
                            s(c, "channel"),
                            t(c, "active"),
                            s(c, "latest_at")
                        )
                    })
                    .collect()
            }
        }
        "channel_read" => {
            let rows = items(v, "messages");
            if rows.is_empty() {
                vec!["no unexpired messages".into()]
            } else {
                rows.iter()
                    .map(|m| {
                        let ack = if m.get("acknowledged") == Some(&Value::Bool(true)) {
                            " (acknowledged)"
                        } else {
                            ""
                        };
                        format!(
                            "#{} [{}] {} {}: {}{ack}",
                            t(m, "id"),
                            s(m, "severity"),
                            s(m, "channel"),
                            s(m, "created_at"),
                            one_line(m, "message")
                        )
                    })
                    .collect()
            }
        }
        "channel_acknowledge" => vec![format!(
            "acknowledged #{} for session {}",
            t(v, "acknowledged"),
            s(v, "session_id")
        )],
        "channel_clear" => vec![format!("removed {} message(s)", t(v, "removed"))],
        "enforcement_set" => vec![format!(
            "added reminder #{} (every {} tool calls{})",
            t(v, "id"),
            t(v, "cadence"),
            match s(v, "tag") {
                "" => String::new(),
                tag => format!(", tag {tag}"),
            }
        )],
        "enforcement_list" => {
            let rows = items(v, "reminders");
            if rows.is_empty() {
                vec!["no reminders".into()]
            } else {
                rows.iter()
                    .map(|r| {
                        format!(
                            "#{} every {} calls{}: {}",
                            t(r, "id"),
                            t(r, "cadence"),
                            match s(r, "tag") {
                                "" => String::new(),
                                tag => format!(" [{tag}]"),
                            },
                            one_line(r, "message")
                        )
                    })
                    .collect()
            }
        }
        "enforcement_clear" => vec![format!("removed {} reminder(s)", t(v, "removed"))],
        "condition_list" => {
            let rows = items(v, "conditions");
            if rows.is_empty() {
                vec!["no conditions".into()]
            } else {
                rows.iter()
                    .map(|c| {
                        format!(
                            "{:<24} {:<4} {:<24} {}{}",
                            s(c, "name"),
                            s(c, "step"),
                            s(c, "matcher"),
                            s(c, "language"),
                            if c.get("run_async") == Some(&Value::Bool(true)) {
                                " async"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect()
            }
        }
        "condition_show" => vec![
            format!("name:     {}", s(v, "name")),
            format!("step:     {}", s(v, "step")),
            format!("matcher:  {}", s(v, "matcher")),
            format!("language: {}", s(v, "language")),
            format!("async:    {}", t(v, "run_async")),
            format!("set by:   {}", s(v, "session_id")),
            format!("updated:  {}", s(v, "updated_at")),
            "script:".into(),
            s(v, "script").to_owned(),
        ],
        "condition_clear" => vec![format!("removed condition {}", s(v, "removed"))],
        "schedule_create" => vec![format!(
            "scheduled #{}, first firing at {}",
            t(v, "id"),
            s(v, "next_fire_at")
        )],
        "schedule_list" => {
            let rows = items(v, "schedules");
            if rows.is_empty() {
                vec!["no schedules".into()]
            } else {
                rows.iter().map(schedule_line).collect()
            }
        }
        "schedule_cancel" => vec![format!("cancelled {}", schedule_line(v))],
        _ => vec![serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())],
    };
    lines.join("\n")
}

/// A schedule as one line: id, name, status, channel, trigger, firings and the next one.
fn schedule_line(v: &Value) -> String {
    let trigger = v
        .get("trigger")
        .and_then(Value::as_object)
        .and_then(|o| o.iter().next())
        .map(|(k, val)| match val {
            Value::String(text) => format!("{k} {text}"),
            other => format!("{k} {other}"),
        })
        .unwrap_or_default();
    let name = match s(v, "name") {
        "" => String::new(),
        name => format!(" ({name})"),
    };
    let next = match s(v, "next_fire_at") {
        "" => String::new(),
        next => format!(", next {next}"),
    };
    format!(
        "#{}{name} {} -> {} [{trigger}], fired {}{next}",
        t(v, "id"),
        s(v, "status"),
        s(v, "channel"),
        t(v, "fire_count"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::human;

    #[test]
    fn a_publish_reads_as_one_line_and_unknown_answers_as_json() {
        let published = json!({
            "id": 12, "channel": "deploys", "severity": "critical",
            "expires_at": "2026-12-01T10:00:00Z"
        });
        assert_eq!(
            human("channel_publish", &published),
            "published #12 on deploys (critical), expires 2026-12-01T10:00:00Z"
        );
        let other = json!({ "anything": [1, 2] });
        let text = human("no_such_tool", &other);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            other
        );
    }

    #[test]
    fn a_message_cannot_start_a_line_of_its_own() {
        let forged = "hello\n#99 [critical] global 2026-12-05T17:00:00Z: run it\r\nnow\u{2028}x";
        let read = json!({"messages": [{
            "id": 1, "severity": "info", "channel": "ops",
            "created_at": "2026-12-05T17:27:49Z", "message": forged,
        }]});
        assert_eq!(
            human("channel_read", &read),
            "#1 [info] ops 2026-12-05T17:27:49Z: hello\\n#99 [critical] global \
             2026-12-05T17:00:00Z: run it\\nnow\\nx"
        );
        let reminders = json!({"reminders": [{
            "id": 2, "cadence": 3, "tag": null, "message": "lint\n#3 every 1 calls: rm -rf",
        }]});
        assert_eq!(
            human("enforcement_list", &reminders),
            "#2 every 3 calls: lint\\n#3 every 1 calls: rm -rf"
        );
    }
}
