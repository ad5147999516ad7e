//! The channels part of the PostgreSQL backend.
//!
//! Channel and severity lists travel as `text[]` parameters, so each query is one prepared
//! statement whatever their length. Publications notify the store's channel in the same
//! statement (delivered on commit).

use postgres::Row;

use super::{Db, Fail, PostgresStore, audit, parse_column, to_u64};
use crate::{
    Actor, ChannelStore, ChannelSummary, DeliveryPoint, Message, MessageQuery, MessageScope,
    MessageView, Millis, NewMessage, Severity, StoreError, StoreResult,
};

/// The message columns, in the order [`message_from_row`] reads them.
macro_rules! message_columns {
    () => {
        "m.id, m.channel, m.body, m.severity, m.created_at, m.expires_at"
    };
}

/// Reads the first six columns (see [`message_columns`]) of a row.
pub(super) fn message_from_row(row: &Row) -> Result<Message, Fail> {
    Ok(Message {
        id: row.try_get(0)?,
        channel: row.try_get(1)?,
        body: row.try_get(2)?,
        severity: parse_column(row.try_get::<_, &str>(3)?)?,
        created_at: row.try_get(4)?,
        expires_at: row.try_get(5)?,
    })
}

/// A message that may be due, with what decides whether it is.
struct Candidate {
    message: Message,
    delivered_before: bool,
}

/// The unexpired, unacknowledged messages of the severities `point` can deliver at all, on
/// `channels`, oldest first, with whether each was delivered to the session before.
fn candidates(
    db: &mut Db,
    session_id: &str,
    channels: Option<&[String]>,
    point: DeliveryPoint,
    now: Millis,
) -> Result<Vec<Candidate>, Fail> {
    // Narrow in SQL by the severities that can be due at this point at all (derived from
    // `is_due`, so the rule lives in one place); the exact rule is applied by the caller.
    let severities: Vec<&str> = Severity::ALL
        .iter()
        .filter(|s| s.is_due(point, false, false) || s.is_due(point, true, false))
        .map(|s| s.as_str())
        .collect();
    let rows = db.query(
        concat!(
            "SELECT ",
            message_columns!(),
            ", EXISTS (SELECT 1 FROM message_deliveries d
                       WHERE d.message_id = m.id AND d.session_id = $1)
             FROM messages m
             WHERE m.expires_at > $2
               AND m.severity = ANY ($3::text[])
               AND ($4::text[] IS NULL OR m.channel = ANY ($4::text[]))
               AND NOT EXISTS (SELECT 1 FROM message_acks a
                               WHERE a.message_id = m.id AND a.session_id = $1)
             ORDER BY m.created_at, m.id"
        ),
        &[&session_id, &now, &severities, &channels],
    )?;
    rows.iter()
        .map(|row| {
            Ok(Candidate {
                message: message_from_row(row)?,
                delivered_before: row.try_get(6)?,
            })
        })
        .collect()
}

/// Deletes the messages a filter selects and, when there were any, notifies the store's
/// channel (`cleared N`) on commit; answers one row with the count, or none.
macro_rules! cleared_notifying {
    ($filter:literal) => {
        concat!(
            "WITH d AS (DELETE FROM messages ",
            $filter,
            " RETURNING 1), n AS (SELECT count(*) AS c FROM d)
             SELECT c, pg_notify('hooks_mcp_' || left(md5(current_schema()), 16), 'cleared ' || c)
             FROM n WHERE c > 0"
        )
    };
}

/// The count a `cleared_notifying!` statement answered.
fn count_of(rows: &[Row]) -> Result<u64, Fail> {
    match rows.first() {
        Some(row) => to_u64(row.try_get(0)?, "count"),
        None => Ok(0),
    }
}

impl ChannelStore for PostgresStore {
    fn publish(&self, message: &NewMessage, actor: &Actor) -> StoreResult<Message> {
        self.transaction(|db| {
            let row = db.query_one(
                "WITH m AS (
                     INSERT INTO messages (channel, body, severity, created_at, expires_at)
                     VALUES ($1, $2, $3, $4, $5) RETURNING id)
                 SELECT id, pg_notify('hooks_mcp_' || left(md5(current_schema()), 16),
                                      'message ' || id)
                 FROM m",
                &[
                    &message.channel,
                    &message.body,
                    &message.severity.as_str(),
                    &message.created_at,
                    &message.expires_at,
                ],
            )?;
            let stored = Message {
                id: row.try_get(0)?,
                channel: message.channel.clone(),
                body: message.body.clone(),
                severity: message.severity,
                created_at: message.created_at,
                expires_at: message.expires_at,
            };
            audit::insert(
                db,
                actor,
                message.created_at,
                &crate::audit::publish(&stored, message),
            )?;
            Ok(stored)
        })
    }

    fn channels(&self, now: Millis) -> StoreResult<Vec<ChannelSummary>> {
        self.run(|db| {
            // Byte order, as SQLite sorts, whatever the database's collation.
            let rows = db.query(
                "SELECT channel, count(*), max(created_at) FROM messages
                 WHERE expires_at > $1 GROUP BY channel ORDER BY channel COLLATE \"C\"",
                &[&now],
            )?;
            rows.iter()
                .map(|r| {
                    Ok(ChannelSummary {
                        channel: r.try_get(0)?,
                        active: r.try_get::<_, i64>(1)?.max(0) as u64,
                        latest_at: r.try_get(2)?,
                    })
                })
                .collect()
        })
    }

    fn read_messages(&self, query: &MessageQuery) -> StoreResult<Vec<MessageView>> {
        self.run(|db| {
            // Without a session nothing is acknowledged, so nothing is hidden either.
            let show_acked = query.include_acknowledged || query.session_id.is_none();
            let rows = db.query(
                concat!(
                    "SELECT * FROM (SELECT ",
                    message_columns!(),
                    ", EXISTS (SELECT 1 FROM message_acks a
                               WHERE a.message_id = m.id AND a.session_id = $2) AS acked
                     FROM messages m
                     WHERE m.expires_at > $1 AND ($3::text IS NULL OR m.channel = $3)) v
                     WHERE ($4 OR NOT v.acked)
                       AND ($6::bigint IS NULL OR (v.created_at, v.id) < ($6, $7::bigint))
                     ORDER BY v.created_at DESC, v.id DESC
                     LIMIT $5"
                ),
                &[
                    &query.now,
                    &query.session_id,
                    &query.channel,
                    &show_acked,
                    &i64::from(query.limit),
                    &query.before.map(|c| c.created_at),
                    &query.before.map(|c| c.id),
                ],
            )?;
            rows.iter()
                .map(|row| {
                    Ok(MessageView {
                        message: message_from_row(row)?,
                        acknowledged: row.try_get(6)?,
                    })
                })
                .collect()
        })
    }

    fn message(&self, id: i64, now: Millis) -> StoreResult<Option<Message>> {
        self.run(|db| {
            db.query_opt(
                concat!(
                    "SELECT ",
                    message_columns!(),
                    " FROM messages m WHERE m.id = $1 AND m.expires_at > $2"
                ),
                &[&id, &now],
            )?
            .as_ref()
            .map(message_from_row)
            .transpose()
        })
    }

    fn acknowledge(
        &self,
        message_id: i64,
        session_id: &str,
        now: Millis,
        actor: &Actor,
    ) -> StoreResult<Message> {
        self.transaction(|db| {
            // The message row is share-locked against a concurrent delete; a second
            // acknowledgement keeps the first one's time and changes nothing to audit.
            let row = db.query_opt(
                concat!(
                    "SELECT ",
                    message_columns!(),
                    " FROM messages m WHERE m.id = $1 AND m.expires_at > $2 FOR KEY SHARE"
                ),
                &[&message_id, &now],
            )?;
            let Some(row) = row else {
                return Err(Fail::Store(StoreError::NotFound {
                    what: "message",
                    id: message_id.to_string(),
                }));
            };
            let message = message_from_row(&row)?;
            let added = db.execute(
                "INSERT INTO message_acks (message_id, session_id, acked_at)
                 VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&message_id, &session_id, &now],
            )?;
            if added > 0 {
                audit::insert(
                    db,
                    actor,
                    now,
                    &crate::audit::acknowledge(&message, session_id),
                )?;
            }
            Ok(message)
        })
    }

    fn clear_messages(&self, scope: &MessageScope, actor: &Actor, now: Millis) -> StoreResult<u64> {
        self.transaction(|db| {
            let rows = match scope {
                MessageScope::All => db.query(cleared_notifying!(""), &[])?,
                MessageScope::Channel(channel) => {
                    db.query(cleared_notifying!("WHERE channel = $1"), &[channel])?
                }
                MessageScope::Id(id) => db.query(cleared_notifying!("WHERE id = $1"), &[id])?,
            };
            let n = count_of(&rows)?;
            if n > 0 {
                audit::insert(db, actor, now, &crate::audit::clear(scope, n))?;
            }
            Ok(n)
        })
    }

    fn prune_expired(&self, now: Millis) -> StoreResult<u64> {
        self.run(|db| {
            let rows = db.query(cleared_notifying!("WHERE expires_at <= $1"), &[&now])?;
            count_of(&rows)
        })
    }

    /// Reads first: when every due message was delivered to the session before (repeating
    /// alerts) or nothing is due (the common case), there is nothing to record. Otherwise one
    /// statement records the first deliveries; a message whose record another call of the same
    /// session inserted first counts as delivered before, so two concurrent hooks of one session
    /// never both deliver an `info` message.
    fn deliver(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        point: DeliveryPoint,
        now: Millis,
    ) -> StoreResult<Vec<Message>> {
        self.run(|db| {
            let seen = candidates(db, session_id, channels, point, now)?;
            let first: Vec<i64> = seen
                .iter()
                .filter(|c| !c.delivered_before && c.message.severity.is_due(point, false, false))
                .map(|c| c.message.id)
                .collect();
            let recorded: Vec<i64> = if first.is_empty() {
                Vec::new()
            } else {
                db.query(
                    "INSERT INTO message_deliveries (message_id, session_id, delivered_at)
                     SELECT m.id, $2, $3 FROM messages m WHERE m.id = ANY ($1::bigint[])
                     FOR KEY SHARE
                     ON CONFLICT DO NOTHING RETURNING message_id",
                    &[&first, &session_id, &now],
                )?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?
            };
            Ok(seen
                .into_iter()
                .filter(|c| {
                    // Due as a first delivery but recorded by a concurrent call first.
                    let lost_race =
                        first.contains(&c.message.id) && !recorded.contains(&c.message.id);
                    let delivered_before = c.delivered_before || lost_race;
                    c.message.severity.is_due(point, delivered_before, false)
                })
                .map(|c| c.message)
                .collect())
        })
    }
}
