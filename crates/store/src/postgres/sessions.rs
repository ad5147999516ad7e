//! Sessions and delivery reports in the PostgreSQL backend.
//!
//! A sighting is one statement, and a counted tool call with its sighting is one statement too
//! (data-modifying common table expressions): the hook pays no extra round trip.

use postgres::types::ToSql;

use super::{Fail, PostgresStore, parse_column, to_u64};
use crate::fleet::{ReportRows, subscriptions_from_text, subscriptions_text};
use crate::{
    CallCount, DeliveryReport, Millis, ReportQuery, SessionQuery, SessionRecord, SessionStore,
    Sighting, StoreResult,
};

/// The sighting upsert, `$1`-`$7`: session, time, event, transport, cwd, subscriptions, and
/// the parent session (a subagent's; `NULL` keeps what is recorded).
macro_rules! upsert_sql {
    () => {
        "INSERT INTO sessions AS s
             (session_id, first_seen, last_seen, last_event, transport, cwd, subscriptions,
              turn_started_at, parent_id)
         VALUES ($1, $2, $2, $3, $4, $5, $6,
                 CASE WHEN $3::text = 'UserPromptSubmit' THEN $2::bigint END, $7)
         ON CONFLICT (session_id) DO UPDATE SET
             first_seen = LEAST(s.first_seen, excluded.first_seen),
             last_seen = GREATEST(s.last_seen, excluded.last_seen),
             last_event = excluded.last_event,
             transport = excluded.transport,
             cwd = coalesce(excluded.cwd, s.cwd),
             subscriptions = coalesce(excluded.subscriptions, s.subscriptions),
             ended_at = CASE WHEN s.ended_at > excluded.last_seen THEN s.ended_at END,
             turn_started_at = coalesce(excluded.turn_started_at, s.turn_started_at),
             parent_id = coalesce(excluded.parent_id, s.parent_id)"
    };
}

/// Calls `f` with the parameters of [`upsert_sql!`] for `sighting` and `parent`.
fn with_sighting<T>(
    sighting: &Sighting,
    parent: Option<&str>,
    f: impl FnOnce(&[&(dyn ToSql + Sync)]) -> T,
) -> T {
    let subscriptions = subscriptions_text(sighting.subscriptions.as_ref());
    f(&[
        &sighting.session_id,
        &sighting.at,
        &sighting.event,
        &sighting.transport.as_str(),
        &sighting.cwd,
        &subscriptions,
        &parent,
    ])
}

impl SessionStore for PostgresStore {
    fn record_sighting(&self, sighting: &Sighting) -> StoreResult<()> {
        self.run(|db| {
            with_sighting(sighting, None, |params| db.execute(upsert_sql!(), params))?;
            Ok(())
        })
    }

    fn count_sighted_call(
        &self,
        sighting: &Sighting,
        call_id: Option<&str>,
    ) -> StoreResult<CallCount> {
        let call_id = crate::fleet::remembered_call_id(call_id);
        self.run(|db| {
            let row = with_sighting(sighting, None, |params| {
                let mut all: Vec<&(dyn ToSql + Sync)> = params.to_vec();
                all.push(&call_id);
                db.query_opt(
                    concat!(
                        "WITH seen AS (",
                        upsert_sql!(),
                        ")
                         INSERT INTO session_counters AS c
                             (session_id, tool_calls, updated_at, recent_calls)
                         VALUES ($1, 1, $2, $8)
                         ON CONFLICT (session_id) DO UPDATE
                             SET tool_calls = c.tool_calls + 1,
                                 updated_at = excluded.updated_at,
                                 recent_calls = CASE WHEN $8::text IS NULL THEN c.recent_calls
                                     ELSE left($8::text || ' ' || coalesce(c.recent_calls, ''), 600)
                                 END
                             WHERE $8::text IS NULL
                                OR position(' ' || $8::text || ' '
                                            IN ' ' || coalesce(c.recent_calls, '') || ' ') = 0
                         RETURNING tool_calls"
                    ),
                    &all,
                )
            })?;
            if let Some(row) = row {
                return Ok(CallCount {
                    calls: to_u64(row.try_get(0)?, "tool-call count")?,
                    first_report: true,
                });
            }
            // The same call reported again: its count as it stands (the sighting is recorded).
            let n: i64 = db
                .query_one(
                    "SELECT tool_calls FROM session_counters WHERE session_id = $1",
                    &[&sighting.session_id],
                )?
                .try_get(0)?;
            Ok(CallCount {
                calls: to_u64(n, "tool-call count")?,
                first_report: false,
            })
        })
    }

    fn end_session(&self, session_id: &str, at: Millis) -> StoreResult<bool> {
        self.transaction(|db| {
            let live = db
                .query_opt(
                    "SELECT ended_at IS NULL FROM sessions WHERE session_id = $1 FOR UPDATE",
                    &[&session_id],
                )?
                .map(|r| r.try_get::<_, bool>(0))
                .transpose()?
                .unwrap_or(false);
            db.execute(
                "INSERT INTO sessions AS s
                     (session_id, first_seen, last_seen, last_event, transport, ended_at)
                 VALUES ($1, $2, $2, 'SessionEnd', 'hook', $2)
                 ON CONFLICT (session_id) DO UPDATE SET
                     last_seen = GREATEST(s.last_seen, excluded.last_seen),
                     last_event = excluded.last_event,
                     transport = excluded.transport,
                     ended_at = excluded.ended_at",
                &[&session_id, &at],
            )?;
            db.execute(
                "UPDATE sessions SET ended_at = $2 WHERE parent_id = $1 AND ended_at IS NULL",
                &[&session_id, &at],
            )?;
            Ok(live)
        })
    }

    fn record_subagent(&self, sighting: &Sighting, parent_id: &str) -> StoreResult<()> {
        self.run(|db| {
            with_sighting(sighting, Some(parent_id), |params| {
                db.execute(upsert_sql!(), params)
            })?;
            Ok(())
        })
    }

    fn count_sessions(&self, seen_since: Millis) -> StoreResult<u64> {
        self.run(|db| {
            let row = db.query_one(
                "SELECT count(*) FROM sessions WHERE last_seen >= $1 AND ended_at IS NULL",
                &[&seen_since],
            )?;
            to_u64(row.try_get(0)?, "count")
        })
    }

    fn sessions(&self, query: &SessionQuery) -> StoreResult<Vec<SessionRecord>> {
        self.run(|db| {
            let rows = db.query(
                "SELECT s.session_id, s.first_seen, s.last_seen, s.last_event, s.transport,
                        s.cwd, s.subscriptions, coalesce(c.tool_calls, 0), s.ended_at,
                        s.parent_id
                 FROM sessions s LEFT JOIN session_counters c ON c.session_id = s.session_id
                 WHERE ($1::bigint IS NULL OR s.last_seen >= $1)
                   AND ($4::boolean OR s.ended_at IS NULL)
                 ORDER BY s.last_seen DESC, s.session_id COLLATE \"C\"
                 LIMIT $2 OFFSET $3",
                &[
                    &query.seen_since,
                    &i64::from(query.limit),
                    &i64::from(query.offset),
                    &query.include_ended,
                ],
            )?;
            rows.iter()
                .map(|r| {
                    let session_id: String = r.try_get(0)?;
                    let subscriptions: Option<&str> = r.try_get(6)?;
                    Ok(SessionRecord {
                        subscriptions: subscriptions_from_text(&session_id, subscriptions)?,
                        first_seen: r.try_get(1)?,
                        last_seen: r.try_get(2)?,
                        last_event: r.try_get(3)?,
                        transport: parse_column(r.try_get::<_, &str>(4)?)?,
                        cwd: r.try_get(5)?,
                        tool_calls: to_u64(r.try_get(7)?, "tool-call count")?,
                        ended_at: r.try_get(8)?,
                        parent_id: r.try_get(9)?,
                        session_id,
                    })
                })
                .collect()
        })
    }

    fn prune_sessions(&self, before: Millis) -> StoreResult<u64> {
        // A pruned session's delivery marks go with it.
        self.transaction(|db| {
            db.execute(
                "DELETE FROM delivery_marks WHERE session_id IN
                     (SELECT session_id FROM sessions WHERE last_seen < $1)",
                &[&before],
            )?;
            Ok(db.execute("DELETE FROM sessions WHERE last_seen < $1", &[&before])?)
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
        self.run(|db| {
            let rows = db.query(
                "SELECT d.session_id, count(*)
                 FROM messages m
                 JOIN message_deliveries d ON d.message_id = m.id
                 WHERE m.expires_at > $2
                   AND m.severity IN ('alert', 'critical')
                   AND d.session_id = ANY ($1::text[])
                   AND NOT EXISTS (SELECT 1 FROM message_acks a
                                   WHERE a.message_id = m.id AND a.session_id = d.session_id)
                 GROUP BY d.session_id ORDER BY d.session_id",
                &[&session_ids, &now],
            )?;
            rows.iter()
                .map(|r| Ok((r.try_get::<_, String>(0)?, to_u64(r.try_get(1)?, "count")?)))
                .collect()
        })
    }

    fn delivery_report(&self, query: &ReportQuery) -> StoreResult<Option<DeliveryReport>> {
        // One snapshot for the three reads.
        self.transaction(|db| {
            db.batch("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
            let Some(row) = db.query_opt(
                "SELECT m.id, m.channel, m.body, m.severity, m.created_at, m.expires_at, m.target
                 FROM messages m WHERE m.id = $1",
                &[&query.message_id],
            )?
            else {
                return Ok(None);
            };
            let message = super::channels::message_from_row(&row)?;
            let received = db
                .query(
                    "SELECT session_id, max(delivered_at), max(acked_at) FROM (
                         SELECT session_id, delivered_at, NULL::bigint AS acked_at
                         FROM message_deliveries WHERE message_id = $1
                         UNION ALL
                         SELECT session_id, NULL::bigint, acked_at
                         FROM message_acks WHERE message_id = $1) r
                     GROUP BY session_id",
                    &[&query.message_id],
                )?
                .iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
                .collect::<Result<Vec<_>, Fail>>()?;
            let live = db
                .query(
                    "SELECT session_id, subscriptions FROM sessions
                     WHERE last_seen >= $1 AND ended_at IS NULL",
                    &[&query.live_since],
                )?
                .iter()
                .map(|r| {
                    let session_id: String = r.try_get(0)?;
                    let subscriptions = subscriptions_from_text(&session_id, r.try_get(1)?)?;
                    Ok((session_id, subscriptions))
                })
                .collect::<Result<Vec<_>, Fail>>()?;
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
