//! Sessions and delivery reports in the SQLite backend.

use rusqlite::{Connection, OptionalExtension, ToSql, params};

use super::{Fail, SqliteStore, parse_column};
use crate::fleet::{ReportRows, subscriptions_from_text, subscriptions_text};
use crate::{
    CallCount, DeliveryReport, Message, Millis, ReportQuery, SessionQuery, SessionRecord,
    SessionStore, Sighting, StoreError, StoreResult,
};

/// The known session's `UPDATE`, up to the parent's column: `?1` to `?6` are the sighting's.
macro_rules! update_sighting {
    ($parent:literal) => {
        concat!(
            "UPDATE sessions SET
                 first_seen = min(first_seen, ?2),
                 last_seen = max(last_seen, ?2),
                 last_event = ?3,
                 transport = ?4,
                 cwd = coalesce(?5, cwd),
                 subscriptions = coalesce(?6, subscriptions),
                 ended_at = CASE WHEN ended_at > ?2 THEN ended_at END,
                 turn_started_at = CASE WHEN ?3 = 'UserPromptSubmit' THEN ?2
                                        ELSE turn_started_at END",
            $parent,
            "
             WHERE session_id = ?1"
        )
    };
}

/// Records `sighting` inside the caller's transaction, and `parent` as the session's parent
/// when given (a subagent's `SubagentStart`; `None` keeps what is recorded).
///
/// A known session (every event after its first) is one `UPDATE`; the upsert runs only when
/// no row changed. A hook is a new process each time, so each statement it runs is prepared
/// again, and an `UPDATE` is cheaper to prepare than an `INSERT … ON CONFLICT DO UPDATE`,
/// which SQLite compiles as both (with the tool-call count below, 0.1 M instructions fewer
/// per `PreToolUse` hook: docs/benchmarks.md). The parent's column is in the `UPDATE` only
/// when a parent is given: SQLite maintains every index on a column the `SET` names, changed
/// or not, and every other event would pay for the parent's index.
fn upsert(tx: &Connection, sighting: &Sighting, parent: Option<&str>) -> Result<(), Fail> {
    let subscriptions = subscriptions_text(sighting.subscriptions.as_ref());
    let args: [&dyn ToSql; 7] = [
        &sighting.session_id,
        &sighting.at,
        &sighting.event,
        &sighting.transport.as_str(),
        &sighting.cwd,
        &subscriptions,
        &parent,
    ];
    let changed = match parent {
        None => tx
            .prepare_cached(update_sighting!(""))?
            .execute(&args[..6])?,
        Some(_) => tx
            .prepare_cached(update_sighting!(",\n                 parent_id = ?7"))?
            .execute(&args[..])?,
    };
    if changed > 0 {
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT INTO sessions
             (session_id, first_seen, last_seen, last_event, transport, cwd, subscriptions,
              turn_started_at, parent_id)
         VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, CASE WHEN ?3 = 'UserPromptSubmit' THEN ?2 END, ?7)
         ON CONFLICT (session_id) DO UPDATE SET
             first_seen = min(first_seen, excluded.first_seen),
             last_seen = max(last_seen, excluded.last_seen),
             last_event = excluded.last_event,
             transport = excluded.transport,
             cwd = coalesce(excluded.cwd, cwd),
             subscriptions = coalesce(excluded.subscriptions, subscriptions),
             ended_at = CASE WHEN ended_at > excluded.last_seen THEN ended_at END,
             turn_started_at = coalesce(excluded.turn_started_at, turn_started_at),
             parent_id = coalesce(excluded.parent_id, parent_id)",
    )?
    .execute(&args[..])?;
    Ok(())
}

/// Counts one tool call of `session_id` inside the caller's transaction and returns the
/// session's count and whether this report counted it: one `UPDATE … RETURNING` for a counted
/// session, the insert for its first. A `call_id` among the session's recent counted calls'
/// (`recent_calls`, see migration 7) is that call again: nothing is counted (a third query
/// reads the count, only then).
pub(super) fn count_call(
    tx: &Connection,
    session_id: &str,
    at: Millis,
    call_id: Option<&str>,
) -> Result<(i64, bool), Fail> {
    let counted: Option<i64> = tx
        .prepare_cached(
            "UPDATE session_counters
             SET tool_calls = tool_calls + 1, updated_at = ?2,
                 recent_calls = CASE WHEN ?3 IS NULL THEN recent_calls
                                     ELSE substr(?3 || ' ' || coalesce(recent_calls, ''), 1, 600)
                                END
             WHERE session_id = ?1
               AND (?3 IS NULL
                    OR instr(' ' || coalesce(recent_calls, '') || ' ', ' ' || ?3 || ' ') = 0)
             RETURNING tool_calls",
        )?
        .query_row(params![session_id, at, call_id], |r| r.get(0))
        .optional()?;
    if let Some(n) = counted {
        return Ok((n, true));
    }
    let first: Option<i64> = tx
        .prepare_cached(
            "INSERT INTO session_counters (session_id, tool_calls, updated_at, recent_calls)
             VALUES (?1, 1, ?2, ?3)
             ON CONFLICT (session_id) DO NOTHING
             RETURNING tool_calls",
        )?
        .query_row(params![session_id, at, call_id], |r| r.get(0))
        .optional()?;
    if let Some(n) = first {
        return Ok((n, true));
    }
    let again: i64 = tx
        .prepare_cached("SELECT tool_calls FROM session_counters WHERE session_id = ?1")?
        .query_row(params![session_id], |r| r.get(0))?;
    Ok((again, false))
}

/// A count read from the store as the API's unsigned one.
fn unsigned_count(n: i64) -> Result<u64, Fail> {
    u64::try_from(n).map_err(|_| {
        Fail::Store(StoreError::InvalidData(format!(
            "negative tool-call count {n}"
        )))
    })
}

impl SessionStore for SqliteStore {
    fn record_sighting(&self, sighting: &Sighting) -> StoreResult<()> {
        self.write(|tx| upsert(tx, sighting, None))
    }

    fn count_sighted_call(
        &self,
        sighting: &Sighting,
        call_id: Option<&str>,
    ) -> StoreResult<CallCount> {
        self.write(|tx| {
            upsert(tx, sighting, None)?;
            let call_id = crate::fleet::remembered_call_id(call_id);
            let (n, first_report) = count_call(tx, &sighting.session_id, sighting.at, call_id)?;
            Ok(CallCount {
                calls: unsigned_count(n)?,
                first_report,
            })
        })
    }

    fn end_session(&self, session_id: &str, at: Millis) -> StoreResult<bool> {
        self.write(|tx| {
            let live: Option<bool> = tx
                .prepare_cached("SELECT ended_at IS NULL FROM sessions WHERE session_id = ?1")?
                .query_row([session_id], |r| r.get(0))
                .optional()?;
            tx.prepare_cached(
                "INSERT INTO sessions
                     (session_id, first_seen, last_seen, last_event, transport, ended_at)
                 VALUES (?1, ?2, ?2, 'SessionEnd', 'hook', ?2)
                 ON CONFLICT (session_id) DO UPDATE SET
                     last_seen = max(last_seen, excluded.last_seen),
                     last_event = excluded.last_event,
                     transport = excluded.transport,
                     ended_at = excluded.ended_at",
            )?
            .execute(params![session_id, at])?;
            tx.prepare_cached(
                "UPDATE sessions SET ended_at = ?2
                 WHERE parent_id = ?1 AND ended_at IS NULL",
            )?
            .execute(params![session_id, at])?;
            Ok(live.unwrap_or(false))
        })
    }

    fn record_subagent(&self, sighting: &Sighting, parent_id: &str) -> StoreResult<()> {
        self.write(|tx| upsert(tx, sighting, Some(parent_id)))
    }

    fn count_sessions(&self, seen_since: Millis) -> StoreResult<u64> {
        self.read(|tx| {
            let n: i64 = tx
                .prepare_cached(
                    "SELECT count(*) FROM sessions WHERE last_seen >= ?1 AND ended_at IS NULL",
                )?
                .query_row([seen_since], |r| r.get(0))?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn sessions(&self, query: &SessionQuery) -> StoreResult<Vec<SessionRecord>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT s.session_id, s.first_seen, s.last_seen, s.last_event, s.transport,
                        s.cwd, s.subscriptions, coalesce(c.tool_calls, 0), s.ended_at,
                        s.parent_id
                 FROM sessions s LEFT JOIN session_counters c ON c.session_id = s.session_id
                 WHERE (?1 IS NULL OR s.last_seen >= ?1) AND (?4 OR s.ended_at IS NULL)
                 ORDER BY s.last_seen DESC, s.session_id
                 LIMIT ?2 OFFSET ?3",
            )?;
            let args = params![
                query.seen_since,
                query.limit,
                query.offset,
                query.include_ended
            ];
            let rows = stmt.query_map(args, |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, Option<String>>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, Option<i64>>(8)?,
                    r.get::<_, Option<String>>(9)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (
                    session_id,
                    first_seen,
                    last_seen,
                    last_event,
                    transport,
                    cwd,
                    subs,
                    calls,
                    ended_at,
                    parent_id,
                ) = row?;
                out.push(SessionRecord {
                    subscriptions: subscriptions_from_text(&session_id, subs.as_deref())?,
                    session_id,
                    first_seen,
                    last_seen,
                    last_event,
                    transport: parse_column(&transport)?,
                    cwd,
                    tool_calls: u64::try_from(calls).unwrap_or(0),
                    ended_at,
                    parent_id,
                });
            }
            Ok(out)
        })
    }

    fn prune_sessions(&self, before: Millis) -> StoreResult<u64> {
        // A pruned session's delivery marks go with it.
        self.write(|tx| {
            tx.execute(
                "DELETE FROM delivery_marks WHERE session_id IN
                     (SELECT session_id FROM sessions WHERE last_seen < ?1)",
                [before],
            )?;
            Ok(tx.execute("DELETE FROM sessions WHERE last_seen < ?1", [before])? as u64)
        })
    }

    fn unacknowledged_alerts(
        &self,
        session_ids: &[String],
        now: Millis,
    ) -> StoreResult<Vec<(String, u64)>> {
        if session_ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = serde_json::Value::from(session_ids.to_vec()).to_string();
        // `+d.session_id`: walk each unexpired alert's deliveries by its id and test the session
        // against the list, rather than probe the key once per listed session and message (a
        // hundred times slower with 10,000 messages and a page of 100 sessions).
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT d.session_id, count(*)
                 FROM messages m
                 JOIN message_deliveries d ON d.message_id = m.id
                 WHERE m.expires_at > ?2
                   AND m.severity IN ('alert', 'critical')
                   AND +d.session_id IN (SELECT value FROM json_each(?1))
                   AND NOT EXISTS (SELECT 1 FROM message_acks a
                                   WHERE a.message_id = m.id AND a.session_id = d.session_id)
                 GROUP BY d.session_id ORDER BY d.session_id",
            )?;
            let rows = stmt.query_map(params![ids, now], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (id, n) = row?;
                out.push((id, u64::try_from(n).unwrap_or(0)));
            }
            Ok(out)
        })
    }

    fn delivery_report(&self, query: &ReportQuery) -> StoreResult<Option<DeliveryReport>> {
        self.read(|tx| {
            let raw = tx
                .query_row(
                    "SELECT id, channel, body, severity, created_at, expires_at, target
                     FROM messages WHERE id = ?1",
                    [query.message_id],
                    |r| {
                        Ok((
                            Message {
                                id: r.get(0)?,
                                channel: r.get(1)?,
                                body: r.get(2)?,
                                severity: crate::Severity::Info,
                                created_at: r.get(4)?,
                                expires_at: r.get(5)?,
                                target: r.get(6)?,
                            },
                            r.get::<_, String>(3)?,
                        ))
                    },
                )
                .optional()?;
            let Some((mut message, severity)) = raw else {
                return Ok(None);
            };
            message.severity = parse_column(&severity)?;
            let received = tx
                .prepare_cached(
                    "SELECT session_id, max(delivered_at), max(acked_at) FROM (
                         SELECT session_id, delivered_at, NULL AS acked_at
                         FROM message_deliveries WHERE message_id = ?1
                         UNION ALL
                         SELECT session_id, NULL, acked_at
                         FROM message_acks WHERE message_id = ?1)
                     GROUP BY session_id",
                )?
                .query_map([query.message_id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let live_rows = tx
                .prepare_cached(
                    "SELECT session_id, subscriptions FROM sessions
                     WHERE last_seen >= ?1 AND ended_at IS NULL",
                )?
                .query_map([query.live_since], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let mut live = Vec::with_capacity(live_rows.len());
            for (session_id, subs) in live_rows {
                let subscriptions = subscriptions_from_text(&session_id, subs.as_deref())?;
                live.push((session_id, subscriptions));
            }
            Ok(Some(crate::fleet::report(
                ReportRows {
                    message,
                    received,
                    live,
                },
                query,
            )))
        })
    }
}
