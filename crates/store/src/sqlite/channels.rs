//! The channels part of the SQLite backend.
//!
//! Channel lists travel into SQL as one JSON array (`json_each`), so each query is one cached
//! statement whatever the number of channels.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Fail, SqliteStore, audit, parse_column};
use crate::delivery::{self, Head, InfoSource, NoInfo, Plan, Urgent};
use crate::{
    Actor, Admission, ChannelStore, ChannelSummary, Delivery, DeliveryPoint, Message, MessageQuery,
    MessageScope, MessageView, Millis, NewMessage, Severity, StoreError, StoreResult,
};

/// The message columns, in the order [`message_from_row`] reads them.
pub(super) const MESSAGE_COLUMNS: &str =
    "m.id, m.channel, m.body, m.severity, m.created_at, m.expires_at, m.target";

/// Reads the first seven columns (see [`MESSAGE_COLUMNS`]) of a row.
pub(super) fn message_from_row(row: &Row<'_>) -> rusqlite::Result<(Message, String)> {
    Ok((
        Message {
            id: row.get(0)?,
            channel: row.get(1)?,
            body: row.get(2)?,
            // Decoded by `finish`; rusqlite's row closure cannot return a domain error.
            severity: Severity::Info,
            created_at: row.get(4)?,
            expires_at: row.get(5)?,
            target: row.get(6)?,
        },
        row.get(3)?,
    ))
}

/// Sets the severity read as text by [`message_from_row`].
pub(super) fn finish((mut message, severity): (Message, String)) -> Result<Message, Fail> {
    message.severity = parse_column(&severity)?;
    Ok(message)
}

/// A JSON array of strings, for `json_each`.
pub(super) fn json_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    serde_json::Value::from(items.into_iter().collect::<Vec<_>>()).to_string()
}

/// The SQL filter on `column` for a channel list bound as parameter `param` (a JSON array), or
/// a no-op on that parameter without one. The filter goes into the statement only when there
/// is a list: a hook prepares each statement once per process, and a `json_each` table costs
/// its preparation more than the whole filter saves.
pub(super) fn channel_filter(column: &str, param: &str, listed: bool) -> String {
    if listed {
        format!("AND {column} IN (SELECT value FROM json_each({param}))")
    } else {
        format!("AND {param} IS NULL")
    }
}

/// The unexpired messages of the severities due at `point` every time until acknowledged
/// ([`delivery::repeating`]), on `channels`, that the session did not acknowledge: one read of
/// the urgent-message index; with, in the same statement, the messages to the session alone
/// that are due at `point` ([`crate::Severity::is_due`]; an `info` one until it is shown): one
/// range of their index, as long as the session's own unexpired messages.
fn urgent(
    tx: &Connection,
    session_id: &str,
    channels: Option<&str>,
    point: DeliveryPoint,
    now: Millis,
) -> Result<Vec<Urgent>, Fail> {
    let repeating = delivery::repeating(point);
    if repeating.is_empty() {
        return Ok(Vec::new());
    }
    // The severities go in as literals (their own lower-case names); `<> 'info'` lets SQLite
    // use the partial index of the urgent messages.
    let severities = repeating
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let filter = channel_filter("m.channel", "?3", channels.is_some());
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS},
                EXISTS (SELECT 1 FROM message_deliveries d
                        WHERE d.message_id = m.id AND d.session_id = ?1)
         FROM messages m
         WHERE m.severity <> 'info' AND m.severity IN ({severities})
           AND m.expires_at > ?2 AND m.target IS NULL
           {filter}
           AND NOT EXISTS (SELECT 1 FROM message_acks a
                           WHERE a.message_id = m.id AND a.session_id = ?1)
         UNION ALL
         SELECT {MESSAGE_COLUMNS},
                EXISTS (SELECT 1 FROM message_deliveries d
                        WHERE d.message_id = m.id AND d.session_id = ?1)
         FROM messages m INDEXED BY messages_targeted
         WHERE m.target = ?1 AND m.expires_at > ?2
           AND NOT EXISTS (SELECT 1 FROM message_acks a
                           WHERE a.message_id = m.id AND a.session_id = ?1)"
    );
    let mut stmt = tx.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![session_id, now, channels], |row| {
        Ok((message_from_row(row)?, row.get::<_, bool>(7)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (raw, delivered_before) = row?;
        let message = finish(raw)?;
        // A message to the session alone is due as its severity says; the others were
        // selected by the repeating severities.
        if message.target.is_none() || message.severity.is_due(point, delivered_before, false) {
            out.push(Urgent {
                message,
                delivered_before,
            });
        }
    }
    Ok(out)
}

/// The channels (of `channels`) whose newest info message is above the session's mark: one
/// read of the per-channel counters and the session's marks.
fn heads(tx: &Connection, session_id: &str, channels: Option<&str>) -> Result<Vec<Head>, Fail> {
    let filter = channel_filter("c.channel", "?2", channels.is_some());
    let sql = format!(
        "SELECT c.channel, c.last_info_id, c.info, coalesce(k.info_mark, 0)
         FROM channel_stats c
         LEFT JOIN delivery_marks k ON k.session_id = ?1 AND k.channel = c.channel
         WHERE c.last_info_id > coalesce(k.info_mark, 0)
           {filter}
         ORDER BY c.channel"
    );
    let mut stmt = tx.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![session_id, channels], |r| {
        Ok(Head {
            channel: r.get(0)?,
            last_info_id: r.get(1)?,
            info: r.get::<_, i64>(2)?.max(0) as u64,
            mark: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// What the delivery plan reads of the heads' info messages, in one transaction.
struct Source<'a> {
    tx: &'a Connection,
    session_id: &'a str,
    now: Millis,
}

impl InfoSource for Source<'_> {
    type Error = Fail;

    fn page(&mut self, head: &Head, below: i64, limit: usize) -> Result<Vec<Message>, Fail> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages m
             WHERE m.channel = ?1 AND m.severity = 'info' AND m.target IS NULL
               AND m.id > ?2 AND m.id < ?3 AND m.expires_at > ?4
               AND NOT EXISTS (SELECT 1 FROM message_acks a
                               WHERE a.message_id = m.id AND a.session_id = ?5)
             ORDER BY m.id DESC LIMIT ?6"
        );
        let below = below.min(head.last_info_id.saturating_add(1));
        let mut stmt = self.tx.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![
                head.channel,
                head.mark,
                below,
                self.now,
                self.session_id,
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            message_from_row,
        )?;
        let mut out = Vec::with_capacity(limit);
        for row in rows {
            out.push(finish(row?)?);
        }
        Ok(out)
    }

    /// A channel the session has a mark on: its due info messages above the mark, counted (as
    /// many as are new). A channel it has none on (a new session): its counter of info
    /// messages, less the expired and the acknowledged ones, so a new session never counts a
    /// whole channel.
    fn due_counts(&mut self, heads: &[&Head]) -> Result<Vec<u64>, Fail> {
        let mut expired = std::collections::HashMap::new();
        let mut acked = std::collections::HashMap::new();
        if heads.iter().any(|h| h.mark == 0) {
            // The expired messages only (by expiry), not every info message (by channel, which
            // the planner prefers for the grouping).
            let mut stmt = self.tx.prepare_cached(
                "SELECT channel, count(*) FROM messages INDEXED BY messages_by_expiry
                 WHERE expires_at <= ?1 AND severity = 'info' AND target IS NULL
                 GROUP BY channel",
            )?;
            for row in stmt.query_map([self.now], |r| Ok((r.get(0)?, r.get(1)?)))? {
                let (channel, n): (String, i64) = row?;
                expired.insert(channel, n.max(0) as u64);
            }
            let mut stmt = self.tx.prepare_cached(
                "SELECT m.channel, count(*) FROM message_acks a
                 JOIN messages m ON m.id = a.message_id
                 WHERE a.session_id = ?1 AND m.severity = 'info' AND m.target IS NULL
                   AND m.expires_at > ?2
                 GROUP BY m.channel",
            )?;
            for row in stmt.query_map(params![self.session_id, self.now], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })? {
                let (channel, n): (String, i64) = row?;
                acked.insert(channel, n.max(0) as u64);
            }
        }
        let mut out = Vec::with_capacity(heads.len());
        for head in heads {
            if head.mark == 0 {
                let gone = expired.get(&head.channel).copied().unwrap_or(0)
                    + acked.get(&head.channel).copied().unwrap_or(0);
                out.push(head.info.saturating_sub(gone));
                continue;
            }
            let n: i64 = self
                .tx
                .prepare_cached(
                    "SELECT count(*) FROM messages m
                     WHERE m.channel = ?1 AND m.severity = 'info' AND m.target IS NULL
                       AND m.id > ?2 AND m.id <= ?3 AND m.expires_at > ?4
                       AND NOT EXISTS (SELECT 1 FROM message_acks a
                                       WHERE a.message_id = m.id AND a.session_id = ?5)",
                )?
                .query_row(
                    params![
                        head.channel,
                        head.mark,
                        head.last_info_id,
                        self.now,
                        self.session_id
                    ],
                    |r| r.get(0),
                )?;
            out.push(n.max(0) as u64);
        }
        Ok(out)
    }
}

/// Records what a delivery plan says: the heads' marks and the first deliveries.
fn record(tx: &Connection, session_id: &str, now: Millis, plan: &Plan) -> Result<(), Fail> {
    if !plan.marks.is_empty() {
        let mut mark = tx.prepare_cached(
            "INSERT INTO delivery_marks (session_id, channel, info_mark) VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id, channel)
             DO UPDATE SET info_mark = max(info_mark, excluded.info_mark)",
        )?;
        for (channel, to, _) in &plan.marks {
            mark.execute(params![session_id, channel, to])?;
        }
    }
    if !plan.first.is_empty() {
        let mut record = tx.prepare_cached(
            "INSERT OR IGNORE INTO message_deliveries (message_id, session_id, delivered_at)
             VALUES (?1, ?2, ?3)",
        )?;
        for id in &plan.first {
            record.execute(params![id, session_id, now])?;
        }
    }
    Ok(())
}

impl ChannelStore for SqliteStore {
    fn publish(&self, message: &NewMessage, actor: &Actor) -> StoreResult<Message> {
        self.write(|tx| {
            let id: i64 = tx.query_row(
                "INSERT INTO messages (channel, body, severity, created_at, expires_at, target)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                params![
                    message.channel,
                    message.body,
                    message.severity.as_str(),
                    message.created_at,
                    message.expires_at,
                    message.target
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
                target: message.target.clone(),
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

    /// From the per-channel counters: each channel's count less its expired messages (an
    /// index range of what expired and is not pruned yet), and its newest unexpired message
    /// found from the newest end of its time index. No channel's messages are counted.
    fn channels(&self, now: Millis) -> StoreResult<Vec<ChannelSummary>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT c.channel,
                        c.messages - (SELECT count(*) FROM messages e
                                      WHERE e.channel = c.channel AND e.expires_at <= ?1),
                        (SELECT m.created_at FROM messages m INDEXED BY messages_by_time
                         WHERE m.channel = c.channel AND m.expires_at > ?1
                         ORDER BY m.created_at DESC, m.id DESC LIMIT 1)
                 FROM channel_stats c ORDER BY c.channel",
            )?;
            let rows = stmt.query_map([now], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Option<Millis>>(2)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                if let (channel, active @ 1.., Some(latest_at)) = row? {
                    out.push(ChannelSummary {
                        channel,
                        active: active as u64,
                        latest_at,
                    });
                }
            }
            Ok(out)
        })
    }

    /// One page by the time index of the channel (or of every channel), from the cursor: the
    /// page's rows and the acknowledged ones it skips, never the rest of the store.
    fn read_messages(&self, query: &MessageQuery) -> StoreResult<Vec<MessageView>> {
        self.read(|tx| {
            let (index, channel) = match query.channel {
                Some(_) => ("messages_by_time", "AND m.channel = ?3"),
                None => ("messages_by_created", "AND ?3 IS NULL"),
            };
            let cursor = match query.before {
                Some(_) => "AND (m.created_at, m.id) < (?6, ?7)",
                None => "AND ?6 IS NULL AND ?7 IS NULL",
            };
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS},
                        EXISTS (SELECT 1 FROM message_acks a
                                WHERE a.message_id = m.id AND a.session_id = ?2) AS acked
                 FROM messages m INDEXED BY {index}
                 WHERE m.expires_at > ?1
                   {channel}
                   AND (m.target IS NULL OR ?2 IS NULL OR m.target = ?2)
                   AND (?4 OR NOT acked)
                   {cursor}
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
                |row| Ok((message_from_row(row)?, row.get::<_, bool>(7)?)),
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
                    // A message to one session is not another's to acknowledge (nor to see).
                    &format!(
                        "SELECT {MESSAGE_COLUMNS} FROM messages m
                         WHERE m.id = ?1 AND m.expires_at > ?2
                           AND (m.target IS NULL OR m.target = ?3)"
                    ),
                    params![message_id, now, session_id],
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

    /// Deletes the scope's messages, expired ones too, and counts the unexpired ones: an
    /// expired message no longer exists for any other call.
    fn clear_messages(&self, scope: &MessageScope, actor: &Actor, now: Millis) -> StoreResult<u64> {
        self.write(|tx| {
            // Each deleted row says whether it was unexpired.
            let live = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> Result<u64, Fail> {
                let mut statement = tx.prepare_cached(sql)?;
                let mut deleted = statement.query(params)?;
                let mut n = 0;
                while let Some(row) = deleted.next()? {
                    n += u64::from(row.get::<_, bool>(0)?);
                }
                Ok(n)
            };
            let n = match scope {
                MessageScope::All => {
                    live("DELETE FROM messages RETURNING expires_at > ?1", &[&now])?
                }
                MessageScope::Channel(channel) => live(
                    "DELETE FROM messages WHERE channel = ?2 RETURNING expires_at > ?1",
                    &[&now, channel],
                )?,
                MessageScope::Id(id) => live(
                    "DELETE FROM messages WHERE id = ?2 RETURNING expires_at > ?1",
                    &[&now, id],
                )?,
            };
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

    fn next_expiry(&self, now: Millis) -> StoreResult<Option<Millis>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT min(expires_at) FROM messages WHERE expires_at > ?1")?
                .query_row([now], |r| r.get(0))?)
        })
    }

    /// Reads first, without the write lock: the session's urgent messages and, at a prompt,
    /// the channels with info messages above its marks. When there is no such channel and
    /// every urgent message was delivered before (the common case), nothing is new and the
    /// hook path never queues behind writers. Otherwise the delivery is planned again inside
    /// one immediate transaction that records the marks and the first deliveries, so two
    /// concurrent hooks of one session cannot both deliver an `info` message.
    fn deliver_within(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        point: DeliveryPoint,
        now: Millis,
        admission: &mut dyn Admission,
    ) -> StoreResult<Delivery> {
        let channels = channels.map(|list| json_list(list.iter().map(String::as_str)));
        let channels = channels.as_deref();
        let reads = |tx: &Connection| -> Result<(Vec<Urgent>, Vec<Head>), Fail> {
            let urgent = urgent(tx, session_id, channels, point, now)?;
            let heads = if delivery::info_once(point) {
                heads(tx, session_id, channels)?
            } else {
                Vec::new()
            };
            Ok((urgent, heads))
        };
        let (seen, new_heads) = self.read(reads)?;
        if new_heads.is_empty() && seen.iter().all(|u| u.delivered_before) {
            let mut none = NoInfo;
            let Ok(plan) = delivery::plan(&mut none, seen, Vec::new(), admission);
            return Ok(plan.delivery);
        }
        self.write(|tx| {
            let (urgent, heads) = reads(tx)?;
            let mut source = Source {
                tx,
                session_id,
                now,
            };
            let plan = delivery::plan(&mut source, urgent, heads, admission)?;
            record(tx, session_id, now, &plan)?;
            Ok(plan.delivery)
        })
    }

    /// One read of the urgent-message index (and of the session's own messages), bounded
    /// below by the start of its turn; writes only when something is shown.
    fn deliver_at_stop(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        now: Millis,
        admission: &mut dyn Admission,
    ) -> StoreResult<Delivery> {
        let channels = channels.map(|list| json_list(list.iter().map(String::as_str)));
        let channels = channels.as_deref();
        let unseen = |tx: &Connection| -> Result<Vec<Message>, Fail> {
            let filter = channel_filter("m.channel", "?3", channels.is_some());
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages m
                 WHERE m.severity <> 'info' AND m.expires_at > ?2
                   AND m.created_at > (SELECT coalesce(s.turn_started_at, s.first_seen)
                                       FROM sessions s WHERE s.session_id = ?1)
                   AND ((m.target IS NULL {filter}) OR m.target = ?1)
                   AND NOT EXISTS (SELECT 1 FROM message_deliveries d
                                   WHERE d.message_id = m.id AND d.session_id = ?1)
                   AND NOT EXISTS (SELECT 1 FROM message_acks a
                                   WHERE a.message_id = m.id AND a.session_id = ?1)"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![session_id, now, channels], message_from_row)?;
            let mut out = Vec::new();
            for row in rows {
                out.push(finish(row?)?);
            }
            Ok(out)
        };
        if self.read(unseen)?.is_empty() {
            return Ok(Delivery::default());
        }
        self.write(|tx| {
            let delivery = Delivery::select(unseen(tx)?, admission);
            let mut record = tx.prepare_cached(
                "INSERT OR IGNORE INTO message_deliveries (message_id, session_id, delivered_at)
                 VALUES (?1, ?2, ?3)",
            )?;
            for message in &delivery.shown {
                record.execute(params![message.id, session_id, now])?;
            }
            Ok(delivery)
        })
    }
}
