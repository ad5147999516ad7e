//! The fleet reports' JSON, built from the store's rows (given as JSON) and read page by page:
//! what `hooks-mcp audit`, `sessions` and `channel status` print with `--json`, and what the
//! text layouts read.

use serde_json::Value;

/// Reads a listing page by page until a page comes back shorter than `limit`; every page read,
/// in order. `next` reads the page that follows those given to it (none yet for the first), so
/// it finds its cursor there (the last id, the count of rows read); `len` counts a page's rows.
///
/// # Errors
/// The first error `next` returns.
pub fn all_pages<P, E>(
    limit: usize,
    len: impl Fn(&P) -> usize,
    mut next: impl FnMut(&[P]) -> Result<P, E>,
) -> Result<Vec<P>, E> {
    let mut pages = Vec::new();
    loop {
        let page = next(&pages)?;
        let full = len(&page) == limit;
        pages.push(page);
        if !full {
            return Ok(pages);
        }
    }
}

/// Adds `<field>_time` beside each named millisecond field of `v`: `time` writes an instant
/// (Unix milliseconds) for people, as RFC 3339.
pub fn with_times(mut v: Value, fields: &[&str], time: impl Fn(i64) -> String) -> Value {
    if let Some(map) = v.as_object_mut() {
        for field in fields {
            let at = map.get(*field).and_then(Value::as_i64).map(&time);
            if let Some(at) = at {
                map.insert(format!("{field}_time"), Value::from(at));
            }
        }
    }
    v
}

/// The audit trail as `hooks-mcp audit` shows it: the entries, oldest first, each with
/// `at_time` beside `at`.
pub fn audit_report(
    entries: impl IntoIterator<Item = Value>,
    time: impl Fn(i64) -> String,
) -> Value {
    entries
        .into_iter()
        .map(|e| with_times(e, &["at"], &time))
        .collect()
}

/// The sessions as `hooks-mcp sessions` shows them: `{"all", "now", "sessions"}`, each row
/// with `first_seen_time`, `last_seen_time` and `live` (seen at or after `live_since`, and not
/// ended), `ended_time` for an ended one.
pub fn sessions_report(
    all: bool,
    now: i64,
    live_since: i64,
    rows: impl IntoIterator<Item = Value>,
    time: impl Fn(i64) -> String,
) -> Value {
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|row| {
            let mut v = with_times(row, &["first_seen", "last_seen", "ended_at"], &time);
            if let Some(map) = v.as_object_mut() {
                let last_seen = map.get("last_seen").and_then(Value::as_i64);
                let ended = map.get("ended_at").is_some_and(|e| !e.is_null());
                let live = !ended && last_seen.is_some_and(|at| at >= live_since);
                map.insert("live".into(), Value::from(live));
            }
            v
        })
        .collect();
    serde_json::json!({ "all": all, "now": now, "sessions": rows })
}

/// A message's delivery report as `hooks-mcp channel status` shows it, from the store's pages
/// of it (each with the message, the counts and one page of sessions): one report with every
/// page's sessions, the times beside the message's and the sessions' instants, and `expired`
/// (the message expired at `now`). `None` when there is no page.
pub fn delivery_report(
    pages: impl IntoIterator<Item = Value>,
    now: i64,
    time: impl Fn(i64) -> String,
) -> Option<Value> {
    let mut pages = pages.into_iter();
    let mut v = pages.next()?;
    for page in pages {
        if let (Some(Value::Array(sessions)), Value::Object(mut page)) =
            (v.get_mut("sessions"), page)
            && let Some(Value::Array(more)) = page.remove("sessions")
        {
            sessions.extend(more);
        }
    }
    // Each part is taken out and put back in this order: the keys keep the order the command
    // has always printed them in.
    if let Some(map) = v.as_object_mut() {
        let mut expired = false;
        if let Some(message) = map.remove("message") {
            let expires_at = message.get("expires_at").and_then(Value::as_i64);
            expired = expires_at.is_some_and(|at| at <= now);
            map.insert(
                "message".into(),
                with_times(message, &["created_at", "expires_at"], &time),
            );
        }
        if let Some(Value::Array(sessions)) = map.remove("sessions") {
            let sessions: Vec<Value> = sessions
                .into_iter()
                .map(|s| with_times(s, &["delivered_at", "acknowledged_at"], &time))
                .collect();
            map.insert("sessions".into(), Value::from(sessions));
        }
        map.insert("expired".into(), Value::from(expired));
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{all_pages, audit_report, delivery_report, sessions_report, with_times};

    /// Milliseconds as `t<ms>`: the tests read which instant each time came from.
    fn time(ms: i64) -> String {
        format!("t{ms}")
    }

    #[test]
    fn pages_are_read_until_a_short_one() {
        let rows: Vec<u32> = (0..7).collect();
        let mut cursors = Vec::new();
        let pages = all_pages(3, Vec::len, |read: &[Vec<u32>]| {
            let after = read.last().and_then(|p| p.last()).copied();
            cursors.push(after);
            let from = after.map_or(0, |a| a as usize + 1);
            Ok::<_, ()>(rows[from..(from + 3).min(rows.len())].to_vec())
        });
        assert_eq!(pages, Ok(vec![vec![0, 1, 2], vec![3, 4, 5], vec![6]]));
        assert_eq!(cursors, [None, Some(2), Some(5)]);
        // A full last page costs one more, empty, read.
        let pages = all_pages(2, Vec::len, |read: &[Vec<u8>]| {
            Ok::<_, ()>(if read.len() < 2 {
                vec![1, 2]
            } else {
                Vec::new()
            })
        });
        assert_eq!(pages, Ok(vec![vec![1, 2], vec![1, 2], Vec::new()]));
        let failed = all_pages(1, Vec::len, |read: &[Vec<u8>]| match read.len() {
            0 => Ok(vec![1]),
            n => Err(n),
        });
        assert_eq!(failed, Err(1));
    }

    #[test]
    fn times_sit_beside_the_instants_they_write() {
        let v = with_times(
            json!({ "at": 5, "until": null, "id": 1 }),
            &["at", "until"],
            time,
        );
        assert_eq!(
            v,
            json!({ "at": 5, "until": null, "id": 1, "at_time": "t5" })
        );
        assert_eq!(with_times(json!([1]), &["at"], time), json!([1]));
        let trail = audit_report(
            [json!({ "id": 1, "at": 7 }), json!({ "id": 2, "at": 9 })],
            time,
        );
        assert_eq!(
            trail,
            json!([
                { "id": 1, "at": 7, "at_time": "t7" },
                { "id": 2, "at": 9, "at_time": "t9" }
            ])
        );
        assert_eq!(audit_report([], time), json!([]));
    }

    #[test]
    fn a_session_is_live_when_seen_since_the_live_instant() {
        let rows = [
            json!({ "session_id": "s1", "first_seen": 10, "last_seen": 50 }),
            json!({ "session_id": "s2", "first_seen": 10, "last_seen": 49 }),
        ];
        let report = sessions_report(true, 100, 50, rows, time);
        assert_eq!(
            serde_json::to_string(&report).unwrap(),
            "{\"all\":true,\"now\":100,\"sessions\":[\
             {\"session_id\":\"s1\",\"first_seen\":10,\"last_seen\":50,\
             \"first_seen_time\":\"t10\",\"last_seen_time\":\"t50\",\"live\":true},\
             {\"session_id\":\"s2\",\"first_seen\":10,\"last_seen\":49,\
             \"first_seen_time\":\"t10\",\"last_seen_time\":\"t49\",\"live\":false}]}"
        );
    }

    #[test]
    fn a_delivery_report_joins_its_pages_and_says_whether_it_expired() {
        let page = |sessions: Value| {
            json!({
                "message": { "id": 3, "created_at": 1, "expires_at": 100 },
                "delivered": 2,
                "acknowledged": 1,
                "sessions": sessions
            })
        };
        let first =
            page(json!([{ "session_id": "a", "delivered_at": 5, "acknowledged_at": null }]));
        let second = page(json!([{ "session_id": "b", "delivered_at": null }]));
        let report = delivery_report([first.clone(), second], 99, time).unwrap();
        assert_eq!(
            serde_json::to_string(&report).unwrap(),
            "{\"message\":{\"id\":3,\"created_at\":1,\"expires_at\":100,\
             \"created_at_time\":\"t1\",\"expires_at_time\":\"t100\"},\"delivered\":2,\
             \"acknowledged\":1,\"sessions\":[{\"session_id\":\"a\",\"delivered_at\":5,\
             \"acknowledged_at\":null,\"delivered_at_time\":\"t5\"},\
             {\"session_id\":\"b\",\"delivered_at\":null}],\"expired\":false}"
        );
        let at_expiry = delivery_report([first], 100, time).unwrap();
        assert_eq!(at_expiry["expired"], json!(true));
        assert_eq!(at_expiry["sessions"].as_array().map(Vec::len), Some(1));
        assert_eq!(delivery_report([], 0, time), None);
    }
}
