//! The channels part of the SQLite backend.
//!
//! Channel lists travel into SQL as one JSON array (`json_each`), so each query is one cached
//! statement whatever the number of channels.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Fail, SqliteStore, audit, parse_column};
use crate::{
    Actor, ChannelStore, ChannelSummary, DeliveryPoint, Message, MessageQuery, MessageScope,
    MessageView, Millis, NewMessage, Severity, StoreError, StoreResult,
};

/// The message columns, in the order [`message_from_row`] reads them.
const MESSAGE_COLUMNS: &str = "m.id, m.channel, m.body, m.severity, m.created_at, m.expires_at";

/// Reads the first six columns (see [`MESSAGE_COLUMNS`]) of a row.
fn message_from_row(row: &Row<'_>) -> rusqlite::Result<(Message, String)> {
    Ok((
        Message {
            id: row.get(0)?,
            channel: row.get(1)?,
            body: row.get(2)?,
            // Decoded by `finish`; rusqlite's row closure cannot return a domain error.
            severity: Severity::Info,
            created_at: row.get(4)?,
            expires_at: row.get(5)?,
        },
        row.get(3)?,
    ))
}

/// Sets the severity read as text by [`message_from_row`].
fn finish((mut message, severity): (Message, String)) -> Result<Message, Fail> {
    message.severity = parse_column(&severity)?;
    Ok(message)
}

/// A JSON array of strings, for `json_each`.
fn json_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    serde_json::Value::from(items.into_iter().collect::<Vec<_>>()).to_string()
}

/// A message that may be due, with what decides whether it is.
struct Candidate {
    message: Message,
    delivered_before: bool,
}

/// The unexpired, unacknowledged messages of the severities `point` can deliver, on `channels`,
/// oldest first, each filtered by [`Severity::is_due`].
fn due(
    tx: &Connection,
    session_id: &str,
    channels: Option<&str>,
    point: DeliveryPoint,
    now: Millis,
) -> Result<Vec<Candidate>, Fail> {
    // Narrow in SQL by the severities that can be due at this point at all (derived from
    // `is_due`, so the rule lives in one place); the exact rule is applied below. They go into
    // the statement as literals (the severities' own lower-case names), and the channel filter
    // only when there is one: a hook prepares this statement once per process, and a
    // `json_each` table costs its preparation more than the whole filter saves.
    let severities = Severity::ALL
        .iter()
        .filter(|s| s.is_due(point, false, false) || s.is_due(point, true, false))
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let channel_filter = if channels.is_some() {
        "AND m.channel IN (SELECT value FROM json_each(?3))"
    } else {
        "AND ?3 IS NULL"
    };
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS},
                EXISTS (SELECT 1 FROM message_deliveries d
                        WHERE d.message_id = m.id AND d.session_id = ?1)
         FROM messages m
         WHERE m.expires_at > ?2
           AND m.severity IN ({severities})
           {channel_filter}
           AND NOT EXISTS (SELECT 1 FROM message_acks a
                           WHERE a.message_id = m.id AND a.session_id = ?1)
         ORDER BY m.created_at, m.id"
    );
    let mut stmt = tx.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![session_id, now, channels], |row| {
        Ok((message_from_row(row)?, row.get::<_, bool>(6)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (raw, delivered_before) = row?;
        let message = finish(raw)?;
        if message.severity.is_due(point, delivered_before, false) {
            out.push(Candidate {
                message,
                delivered_before,
            });
        }
    }
    Ok(out)
}

impl ChannelStore for SqliteStore {
    fn publish(&self, message: &NewMessage, actor: &Actor) -> StoreResult<Message> {
        self.write(|tx| {
            let id: i64 = tx.query_row(
                "INSERT INTO messages (channel, body, severity, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
                params![
                    message.channel,
                    message.body,
                    message.severity.as_str(),
                    message.created_at,
                    message.expires_at
                ],
                |r| r.get(0),
            )?;
            let stored = Message {
                id,
                channel: message.channel.clone(),
                body: message.body.clone(),
                severity: message.severity,
                created_at: message.created_at,
                expires_at: message.expires_at,
            };
            audit::insert(
                tx,
                actor,
                message.created_at,
                &crate::audit::publish(&stored, message),
            )?;
            Ok(stored)
        })
    }

    fn channels(&self, now: Millis) -> StoreResult<Vec<ChannelSummary>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT channel, count(*), max(created_at) FROM messages
                 WHERE expires_at > ?1 GROUP BY channel ORDER BY channel",
            )?;
            let rows = stmt.query_map([now], |r| {
                Ok(ChannelSummary {
                    channel: r.get(0)?,
                    active: r.get::<_, i64>(1)?.max(0) as u64,
                    latest_at: r.get(2)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn read_messages(&self, query: &MessageQuery) -> StoreResult<Vec<MessageView>> {
        self.read(|tx| {
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS},
                        EXISTS (SELECT 1 FROM message_acks a
                                WHERE a.message_id = m.id AND a.session_id = ?2) AS acked
                 FROM messages m
                 WHERE m.expires_at > ?1
                   AND (?3 IS NULL OR m.channel = ?3)
                   AND (?4 OR NOT acked)
                   AND (?6 IS NULL OR m.created_at < ?6 OR (m.created_at = ?6 AND m.id < ?7))
                 ORDER BY m.created_at DESC, m.id DESC
                 LIMIT ?5"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            // Without a session nothing is acknowledged, so nothing is hidden either.
            let show_acked = query.include_acknowledged || query.session_id.is_none();
            let rows = stmt.query_map(
                params![
                    query.now,
                    query.session_id,
                    query.channel,
                    show_acked,
                    query.limit,
                    query.before.map(|c| c.created_at),
                    query.before.map(|c| c.id)
                ],
                |row| Ok((message_from_row(row)?, row.get::<_, bool>(6)?)),
            )?;
            let mut out = Vec::new();
            for row in rows {
                let (raw, acknowledged) = row?;
                out.push(MessageView {
                    message: finish(raw)?,
                    acknowledged,
                });
            }
            Ok(out)
        })
    }

    fn message(&self, id: i64, now: Millis) -> StoreResult<Option<Message>> {
        self.read(|tx| {
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.id = ?1 AND m.expires_at > ?2"
            );
            let raw = tx
                .prepare_cached(&sql)?
                .query_row(params![id, now], message_from_row)
                .optional()?;
            raw.map(finish).transpose()
        })
    }

    fn acknowledge(
        &self,
        message_id: i64,
        session_id: &str,
        now: Millis,
        actor: &Actor,
    ) -> StoreResult<Message> {
        self.write(|tx| {
            let raw = tx
                .query_row(
                    &format!(
                        "SELECT {MESSAGE_COLUMNS} FROM messages m
                         WHERE m.id = ?1 AND m.expires_at > ?2"
                    ),
                    params![message_id, now],
                    message_from_row,
                )
                .optional()?;
            let Some(raw) = raw else {
                return Err(Fail::Store(StoreError::NotFound {
                    what: "message",
                    id: message_id.to_string(),
                }));
            };
            // A second acknowledgement keeps the first one's time, and changes nothing to audit.
            let added = tx.execute(
                "INSERT OR IGNORE INTO message_acks (message_id, session_id, acked_at)
                 VALUES (?1, ?2, ?3)",
                params![message_id, session_id, now],
            )?;
            let message = finish(raw)?;
            if added > 0 {
                audit::insert(
                    tx,
                    actor,
                    now,
                    &crate::audit::acknowledge(&message, session_id),
                )?;
            }
            Ok(message)
        })
    }

    fn clear_messages(&self, scope: &MessageScope, actor: &Actor, now: Millis) -> StoreResult<u64> {
        self.write(|tx| {
            let n = match scope {
                MessageScope::All => tx.execute("DELETE FROM messages", [])?,
                MessageScope::Channel(channel) => {
                    tx.execute("DELETE FROM messages WHERE channel = ?1", [channel])?
                }
                MessageScope::Id(id) => tx.execute("DELETE FROM messages WHERE id = ?1", [id])?,
            } as u64;
            if n > 0 {
                audit::insert(tx, actor, now, &crate::audit::clear(scope, n))?;
            }
            Ok(n)
        })
    }

    fn prune_expired(&self, now: Millis) -> StoreResult<u64> {
        self.write(|tx| {
            Ok(tx.execute("DELETE FROM messages WHERE expires_at <= ?1", [now])? as u64)
        })
    }

    /// Reads first, without the write lock: when every due message was delivered to the session
    /// before (repeating alerts) or nothing is due (the common case), there is nothing to record
    /// and the hook path never queues behind writers. Otherwise the due set is computed again
    /// inside one immediate transaction that records the first deliveries, so two concurrent
    /// hooks of one session cannot both deliver an `info` message.
    fn deliver(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        point: DeliveryPoint,
        now: Millis,
    ) -> StoreResult<Vec<Message>> {
        let channels = channels.map(|list| json_list(list.iter().map(String::as_str)));
        let channels = channels.as_deref();
        let seen = self.read(|tx| due(tx, session_id, channels, point, now))?;
        if seen.iter().all(|c| c.delivered_before) {
            return Ok(seen.into_iter().map(|c| c.message).collect());
        }
        self.write(|tx| {
            let due = due(tx, session_id, channels, point, now)?;
            let mut record = tx.prepare_cached(
                "INSERT OR IGNORE INTO message_deliveries (message_id, session_id, delivered_at)
                 VALUES (?1, ?2, ?3)",
            )?;
            for candidate in due.iter().filter(|c| !c.delivered_before) {
                record.execute(params![candidate.message.id, session_id, now])?;
            }
            Ok(due.into_iter().map(|c| c.message).collect())
        })
    }
}
