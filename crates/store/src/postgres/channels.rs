//! The channels part of the PostgreSQL backend.
//!
//! Channel and severity lists travel as `text[]` parameters, so each query is one prepared
//! statement whatever their length. Publications notify the store's channel in the same
//! statement (delivered on commit).

use postgres::Row;

use super::{Db, Fail, PostgresStore, audit, parse_column, to_u64};
use crate::delivery::{self, Head, InfoSource, Plan, Urgent};
use crate::{
    Actor, Admission, ChannelStore, ChannelSummary, Delivery, DeliveryPoint, Message, MessageQuery,
    MessageScope, MessageView, Millis, NewMessage, Severity, StoreError, StoreResult,
};

/// The message columns, in the order [`message_from_row`] reads them.
macro_rules! message_columns {
    () => {
        "m.id, m.channel, m.body, m.severity, m.created_at, m.expires_at, m.target"
    };
}
pub(super) use message_columns;

/// Reads the first seven columns (see [`message_columns`]) of a row.
pub(super) fn message_from_row(row: &Row) -> Result<Message, Fail> {
    Ok(Message {
        id: row.try_get(0)?,
        channel: row.try_get(1)?,
        body: row.try_get(2)?,
        severity: parse_column(row.try_get::<_, &str>(3)?)?,
        created_at: row.try_get(4)?,
        expires_at: row.try_get(5)?,
        target: row.try_get(6)?,
    })
}

/// The unexpired messages of the severities due at `point` every time until acknowledged
/// ([`delivery::repeating`]), on `channels`, that the session did not acknowledge: one read of
/// the urgent-message index (`<> 'info'` selects its partial index), with the messages to the
/// session alone that are due at `point` (one range of their index).
fn urgent(
    db: &mut Db,
    session_id: &str,
    channels: Option<&[String]>,
    point: DeliveryPoint,
    now: Millis,
) -> Result<Vec<Urgent>, Fail> {
    let repeating: Vec<&str> = delivery::repeating(point)
        .iter()
        .map(|s| s.as_str())
        .collect();
    if repeating.is_empty() {
        return Ok(Vec::new());
    }
    let rows = db.query(
        concat!(
            "SELECT ",
            message_columns!(),
            ", EXISTS (SELECT 1 FROM message_deliveries d
                       WHERE d.message_id = m.id AND d.session_id = $1)
             FROM messages m
             WHERE m.severity <> 'info' AND m.severity = ANY ($3::text[])
               AND m.expires_at > $2 AND m.target IS NULL
               AND ($4::text[] IS NULL OR m.channel = ANY ($4::text[]))
               AND NOT EXISTS (SELECT 1 FROM message_acks a
                               WHERE a.message_id = m.id AND a.session_id = $1)
             UNION ALL
             SELECT ",
            message_columns!(),
            ", EXISTS (SELECT 1 FROM message_deliveries d
                       WHERE d.message_id = m.id AND d.session_id = $1)
             FROM messages m
             WHERE m.target = $1 AND m.expires_at > $2
               AND NOT EXISTS (SELECT 1 FROM message_acks a
                               WHERE a.message_id = m.id AND a.session_id = $1)"
        ),
        &[&session_id, &now, &repeating, &channels],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let message = message_from_row(row)?;
        let delivered_before: bool = row.try_get(7)?;
        // A message to the session alone is due as its severity says (an `info` one until
        // it is shown); the others were selected by the repeating severities.
        if message.target.is_none() || message.severity.is_due(point, delivered_before, false) {
            out.push(Urgent {
                message,
                delivered_before,
            });
        }
    }
    Ok(out)
}

/// The channels (of `channels`) whose newest info message is above the session's mark, by
/// name (the order the marks are then locked in).
fn heads(db: &mut Db, session_id: &str, channels: Option<&[String]>) -> Result<Vec<Head>, Fail> {
    let rows = db.query(
        "SELECT c.channel, c.last_info_id, c.info, coalesce(k.info_mark, 0)
         FROM channel_stats c
         LEFT JOIN delivery_marks k ON k.session_id = $1 AND k.channel = c.channel
         WHERE c.last_info_id > coalesce(k.info_mark, 0)
           AND ($2::text[] IS NULL OR c.channel = ANY ($2::text[]))
         ORDER BY c.channel COLLATE \"C\"",
        &[&session_id, &channels],
    )?;
    rows.iter()
        .map(|r| {
            Ok(Head {
                channel: r.try_get(0)?,
                last_info_id: r.try_get(1)?,
                info: to_u64(r.try_get(2)?, "count")?,
                mark: r.try_get(3)?,
            })
        })
        .collect()
}

/// What the delivery plan reads of the heads' info messages, statement by statement: each
/// read is bounded by the head's newest info message, so messages published meanwhile wait
/// for the next event (the head's mark stops below them).
struct Source<'a> {
    db: &'a mut Db,
    session_id: &'a str,
    now: Millis,
}

impl InfoSource for Source<'_> {
    type Error = Fail;

    fn page(&mut self, head: &Head, below: i64, limit: usize) -> Result<Vec<Message>, Fail> {
        let below = below.min(head.last_info_id.saturating_add(1));
        let rows = self.db.query(
            concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages m
                 WHERE m.channel = $1 AND m.severity = 'info' AND m.target IS NULL
                   AND m.id > $2 AND m.id < $3 AND m.expires_at > $4
                   AND NOT EXISTS (SELECT 1 FROM message_acks a
                                   WHERE a.message_id = m.id AND a.session_id = $5)
                 ORDER BY m.id DESC LIMIT $6"
            ),
            &[
                &head.channel,
                &head.mark,
                &below,
                &self.now,
                &self.session_id,
                &i64::try_from(limit).unwrap_or(i64::MAX),
            ],
        )?;
        rows.iter().map(message_from_row).collect()
    }

    /// One statement for every head's first page.
    fn first_pages(&mut self, heads: &[Head], limit: usize) -> Result<Vec<Vec<Message>>, Fail> {
        let channels: Vec<&str> = heads.iter().map(|h| h.channel.as_str()).collect();
        let marks: Vec<i64> = heads.iter().map(|h| h.mark).collect();
        let lasts: Vec<i64> = heads.iter().map(|h| h.last_info_id).collect();
        let rows = self.db.query(
            concat!(
                "SELECT h.n, ",
                message_columns!(),
                " FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY
                       AS h (channel, mark, last, n)
                 CROSS JOIN LATERAL (
                     SELECT * FROM messages m
                     WHERE m.channel = h.channel AND m.severity = 'info' AND m.target IS NULL
                       AND m.id > h.mark AND m.id <= h.last AND m.expires_at > $4
                       AND NOT EXISTS (SELECT 1 FROM message_acks a
                                       WHERE a.message_id = m.id AND a.session_id = $5)
                     ORDER BY m.id DESC LIMIT $6) m
                 ORDER BY h.n, m.id DESC"
            ),
            &[
                &channels,
                &marks,
                &lasts,
                &self.now,
                &self.session_id,
                &i64::try_from(limit).unwrap_or(i64::MAX),
            ],
        )?;
        let mut pages: Vec<Vec<Message>> = heads.iter().map(|_| Vec::new()).collect();
        for row in &rows {
            let n: i64 = row.try_get(0)?;
            let message = Message {
                id: row.try_get(1)?,
                channel: row.try_get(2)?,
                body: row.try_get(3)?,
                severity: parse_column(row.try_get::<_, &str>(4)?)?,
                created_at: row.try_get(5)?,
                expires_at: row.try_get(6)?,
                target: row.try_get(7)?,
            };
            let slot = usize::try_from(n - 1).ok().and_then(|i| pages.get_mut(i));
            if let Some(page) = slot {
                page.push(message);
            }
        }
        Ok(pages)
    }

    /// As the SQLite backend: a channel with a mark counts its due messages above it; one
    /// without (a new session) takes its counter, less the expired and acknowledged ones.
    fn due_counts(&mut self, heads: &[&Head]) -> Result<Vec<u64>, Fail> {
        let counted: Vec<&str> = heads
            .iter()
            .filter(|h| h.mark == 0)
            .map(|h| h.channel.as_str())
            .collect();
        let mut gone = std::collections::HashMap::new();
        if !counted.is_empty() {
            let rows = self.db.query(
                "SELECT channel, sum(n)::bigint FROM (
                     SELECT channel, count(*) AS n FROM messages
                     WHERE expires_at <= $1 AND severity = 'info' AND target IS NULL
                       AND channel = ANY ($3::text[])
                     GROUP BY channel
                     UNION ALL
                     SELECT m.channel, count(*) FROM message_acks a
                     JOIN messages m ON m.id = a.message_id
                     WHERE a.session_id = $2 AND m.severity = 'info' AND m.target IS NULL
                       AND m.expires_at > $1 AND m.channel = ANY ($3::text[])
                     GROUP BY m.channel) g
                 GROUP BY channel",
                &[&self.now, &self.session_id, &counted],
            )?;
            for row in &rows {
                let channel: String = row.try_get(0)?;
                gone.insert(channel, to_u64(row.try_get(1)?, "count")?);
            }
        }
        let mut out = Vec::with_capacity(heads.len());
        for head in heads {
            if head.mark == 0 {
                let gone = gone.get(&head.channel).copied().unwrap_or(0);
                out.push(head.info.saturating_sub(gone));
                continue;
            }
            let row = self.db.query_one(
                "SELECT count(*) FROM messages m
                 WHERE m.channel = $1 AND m.severity = 'info' AND m.target IS NULL
                   AND m.id > $2 AND m.id <= $3 AND m.expires_at > $4
                   AND NOT EXISTS (SELECT 1 FROM message_acks a
                                   WHERE a.message_id = m.id AND a.session_id = $5)",
                &[
                    &head.channel,
                    &head.mark,
                    &head.last_info_id,
                    &self.now,
                    &self.session_id,
                ],
            )?;
            out.push(to_u64(row.try_get(0)?, "count")?);
        }
        Ok(out)
    }
}

/// Records a delivery plan in one transaction on `db`: each head's mark moves only from the
/// value read (a concurrent call of the same session that moved it first delivers that
/// channel's info messages, so this one drops them), then the first deliveries.
fn record(db: &mut Db, session_id: &str, now: Millis, plan: &mut Plan) -> Result<(), Fail> {
    if !plan.marks.is_empty() {
        let channels: Vec<&str> = plan.marks.iter().map(|(c, _, _)| c.as_str()).collect();
        let to: Vec<i64> = plan.marks.iter().map(|(_, to, _)| *to).collect();
        let from: Vec<i64> = plan.marks.iter().map(|(_, _, from)| *from).collect();
        let moved: Vec<String> = db
            .query(
                "INSERT INTO delivery_marks AS k (session_id, channel, info_mark)
                 SELECT $1, u.channel, u.mark
                 FROM unnest($2::text[], $3::bigint[]) AS u (channel, mark)
                 ON CONFLICT (session_id, channel) DO UPDATE SET info_mark = EXCLUDED.info_mark
                 WHERE k.info_mark = (SELECT f.mark FROM unnest($2::text[], $4::bigint[])
                                          AS f (channel, mark)
                                      WHERE f.channel = EXCLUDED.channel)
                 RETURNING k.channel",
                &[&session_id, &channels, &to, &from],
            )?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
        let lost: Vec<String> = plan
            .marks
            .iter()
            .map(|(c, _, _)| c.clone())
            .filter(|c| !moved.contains(c))
            .collect();
        for channel in lost {
            plan.drop_info_of(&channel);
        }
    }
    if !plan.first.is_empty() {
        db.execute(
            "INSERT INTO message_deliveries (message_id, session_id, delivered_at)
             SELECT m.id, $2, $3 FROM messages m WHERE m.id = ANY ($1::bigint[])
             FOR KEY SHARE
             ON CONFLICT DO NOTHING",
            &[&plan.first, &session_id, &now],
        )?;
    }
    Ok(())
}

/// Locks the counter rows of `channels` (creating them), in name order, before messages are
/// added to them. A channel's messages then commit in the order of their ids: a session that
/// reads a channel's newest info message has every older one of that channel visible too, so
/// its mark never passes a message still being published. The counts themselves are kept by
/// the triggers of schema version 3. With `urgent` (an `alert` or `critical` message among
/// them), the schema's urgent lock first ([`lock_urgent`]): every publisher takes the locks in
/// this one order.
pub(super) fn lock_channels(db: &mut Db, channels: &[String], urgent: bool) -> Result<(), Fail> {
    if urgent {
        lock_urgent(db)?;
    }
    db.execute(
        "INSERT INTO channel_stats (channel)
         SELECT DISTINCT c FROM unnest($1::text[]) AS u (c) ORDER BY c
         ON CONFLICT (channel) DO UPDATE SET channel = EXCLUDED.channel",
        &[&channels],
    )?;
    Ok(())
}

/// Takes the schema's lock on urgent publications (held to commit), before the channels' locks:
/// `alert` and `critical` messages then commit in the order of their ids, across channels, so
/// a reader that moves a cursor past one urgent id has every lower one visible (the push's
/// cursor, [`crate::PushStore::urgent_after`]). Urgent messages are few, and info messages do
/// not wait for it.
fn lock_urgent(db: &mut Db) -> Result<(), Fail> {
    db.execute(
        "SELECT pg_advisory_xact_lock(hashtext('hooks_mcp_urgent:' || current_schema()))",
        &[],
    )?;
    Ok(())
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

/// [`cleared_notifying!`] for a clear: it answers the count of the deleted messages that were
/// unexpired at `$1` (and notifies when it deleted any message).
macro_rules! cleared_live_notifying {
    ($filter:literal) => {
        concat!(
            "WITH d AS (DELETE FROM messages ",
            $filter,
            " RETURNING expires_at > $1 AS live),
             n AS (SELECT count(*) AS c, count(*) FILTER (WHERE live) AS live FROM d)
             SELECT live, pg_notify('hooks_mcp_' || left(md5(current_schema()), 16), 'cleared ' || c)
             FROM n WHERE c > 0"
        )
    };
}

/// The count a `cleared_notifying!` or `cleared_live_notifying!` statement answered.
fn count_of(rows: &[Row]) -> Result<u64, Fail> {
    match rows.first() {
        Some(row) => to_u64(row.try_get(0)?, "count"),
        None => Ok(0),
    }
}

impl ChannelStore for PostgresStore {
    fn publish(&self, message: &NewMessage, actor: &Actor) -> StoreResult<Message> {
        self.transaction(|db| {
            let urgent = message.severity != Severity::Info;
            lock_channels(db, std::slice::from_ref(&message.channel), urgent)?;
            let row = db.query_one(
                "WITH m AS (
                     INSERT INTO messages (channel, body, severity, created_at, expires_at, target)
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id)
                 SELECT id, pg_notify('hooks_mcp_' || left(md5(current_schema()), 16),
                                      'message ' || id)
                 FROM m",
                &[
                    &message.channel,
                    &message.body,
                    &message.severity.as_str(),
                    &message.created_at,
                    &message.expires_at,
                    &message.target,
                ],
            )?;
            let stored = Message {
                id: row.try_get(0)?,
                channel: message.channel.clone(),
                body: message.body.clone(),
                severity: message.severity,
                created_at: message.created_at,
                expires_at: message.expires_at,
                target: message.target.clone(),
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

    /// From the per-channel counters, as the SQLite backend (one statement, one snapshot).
    fn channels(&self, now: Millis) -> StoreResult<Vec<ChannelSummary>> {
        self.run(|db| {
            // Byte order, as SQLite sorts, whatever the database's collation.
            let rows = db.query(
                "SELECT c.channel,
                        c.messages - (SELECT count(*) FROM messages e
                                      WHERE e.channel = c.channel AND e.expires_at <= $1),
                        (SELECT m.created_at FROM messages m
                         WHERE m.channel = c.channel AND m.expires_at > $1
                         ORDER BY m.created_at DESC, m.id DESC LIMIT 1)
                 FROM channel_stats c ORDER BY c.channel COLLATE \"C\"",
                &[&now],
            )?;
            let mut out = Vec::new();
            for r in &rows {
                let active: i64 = r.try_get(1)?;
                let latest_at: Option<Millis> = r.try_get(2)?;
                if let (1.., Some(latest_at)) = (active, latest_at) {
                    out.push(ChannelSummary {
                        channel: r.try_get(0)?,
                        active: active as u64,
                        latest_at,
                    });
                }
            }
            Ok(out)
        })
    }

    /// One page by the time index of the channel (or of every channel), from the cursor.
    fn read_messages(&self, query: &MessageQuery) -> StoreResult<Vec<MessageView>> {
        /// The page statement for a channel or every channel, with or without a cursor: four
        /// plain statements, so that each is planned on its index.
        macro_rules! page {
            ($channel:literal, $cursor:literal) => {
                concat!(
                    "SELECT ",
                    message_columns!(),
                    ", EXISTS (SELECT 1 FROM message_acks a
                               WHERE a.message_id = m.id AND a.session_id = $2) AS acked
                     FROM messages m
                     WHERE m.expires_at > $1
                       AND (m.target IS NULL OR $2::text IS NULL OR m.target = $2) ",
                    $channel,
                    " AND ($4 OR NOT EXISTS (SELECT 1 FROM message_acks a
                                             WHERE a.message_id = m.id AND a.session_id = $2)) ",
                    $cursor,
                    " ORDER BY m.created_at DESC, m.id DESC LIMIT $5"
                )
            };
        }
        self.run(|db| {
            // Without a session nothing is acknowledged, so nothing is hidden either.
            let show_acked = query.include_acknowledged || query.session_id.is_none();
            let sql = match (query.channel.is_some(), query.before.is_some()) {
                (true, true) => page!(
                    "AND m.channel = $3::text",
                    "AND (m.created_at, m.id) < ($6::bigint, $7::bigint)"
                ),
                (true, false) => page!(
                    "AND m.channel = $3::text",
                    "AND $6::bigint IS NULL AND $7::bigint IS NULL"
                ),
                (false, true) => page!(
                    "AND $3::text IS NULL",
                    "AND (m.created_at, m.id) < ($6::bigint, $7::bigint)"
                ),
                (false, false) => page!(
                    "AND $3::text IS NULL",
                    "AND $6::bigint IS NULL AND $7::bigint IS NULL"
                ),
            };
            let rows = db.query(
                sql,
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
                        acknowledged: row.try_get(7)?,
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
                    " FROM messages m WHERE m.id = $1 AND m.expires_at > $2",
                    // A message to one session is not another's to acknowledge (nor to see).
                    " AND (m.target IS NULL OR m.target = $3) FOR KEY SHARE"
                ),
                &[&message_id, &now, &session_id],
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

    /// Deletes the scope's messages, expired ones too, and counts the unexpired ones: an
    /// expired message no longer exists for any other call.
    fn clear_messages(&self, scope: &MessageScope, actor: &Actor, now: Millis) -> StoreResult<u64> {
        self.transaction(|db| {
            let rows = match scope {
                MessageScope::All => db.query(cleared_live_notifying!(""), &[&now])?,
                MessageScope::Channel(channel) => db.query(
                    cleared_live_notifying!("WHERE channel = $2"),
                    &[&now, channel],
                )?,
                MessageScope::Id(id) => {
                    db.query(cleared_live_notifying!("WHERE id = $2"), &[&now, id])?
                }
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

    fn next_expiry(&self, now: Millis) -> StoreResult<Option<Millis>> {
        self.run(|db| {
            let row = db.query_one(
                "SELECT min(expires_at) FROM messages WHERE expires_at > $1",
                &[&now],
            )?;
            Ok(row.try_get(0)?)
        })
    }

    /// Reads first: the session's urgent messages and, at a prompt, the channels with info
    /// messages above its marks. With no such channel and every urgent message delivered
    /// before (the common case), there is nothing to record. Otherwise the plan reads what it
    /// shows, and one transaction moves the marks (each only from the value read: of two
    /// concurrent hooks of one session, one delivers a channel's new info messages) and
    /// records the first deliveries.
    fn deliver_within(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        point: DeliveryPoint,
        now: Millis,
        admission: &mut dyn Admission,
    ) -> StoreResult<Delivery> {
        self.run(|db| {
            let urgent = urgent(db, session_id, channels, point, now)?;
            let heads = if delivery::info_once(point) {
                heads(db, session_id, channels)?
            } else {
                Vec::new()
            };
            let mut plan = {
                let mut source = Source {
                    db: &mut *db,
                    session_id,
                    now,
                };
                delivery::plan(&mut source, urgent, heads, admission)?
            };
            if plan.writes() {
                db.batch("BEGIN")?;
                match record(db, session_id, now, &mut plan) {
                    Ok(()) => db.batch("COMMIT")?,
                    Err(e) => {
                        let _ = db.batch("ROLLBACK");
                        return Err(e);
                    }
                }
            }
            Ok(plan.delivery)
        })
    }

    /// As the SQLite backend: one read bounded below by the start of the session's turn; the
    /// shown messages' deliveries recorded in one statement when there are any.
    fn deliver_at_stop(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        now: Millis,
        admission: &mut dyn Admission,
    ) -> StoreResult<Delivery> {
        self.run(|db| {
            let rows = db.query(
                concat!(
                    "SELECT ",
                    message_columns!(),
                    " FROM messages m
                     WHERE m.severity <> 'info' AND m.expires_at > $2
                       AND m.created_at > (SELECT coalesce(s.turn_started_at, s.first_seen)
                                           FROM sessions s WHERE s.session_id = $1)
                       AND ((m.target IS NULL
                             AND ($3::text[] IS NULL OR m.channel = ANY ($3::text[])))
                            OR m.target = $1)
                       AND NOT EXISTS (SELECT 1 FROM message_deliveries d
                                       WHERE d.message_id = m.id AND d.session_id = $1)
                       AND NOT EXISTS (SELECT 1 FROM message_acks a
                                       WHERE a.message_id = m.id AND a.session_id = $1)"
                ),
                &[&session_id, &now, &channels],
            )?;
            let unseen = rows
                .iter()
                .map(message_from_row)
                .collect::<Result<Vec<_>, Fail>>()?;
            let mut delivery = Delivery::select(unseen, admission);
            if !delivery.shown.is_empty() {
                let ids: Vec<i64> = delivery.shown.iter().map(|m| m.id).collect();
                // What another Stop of the session recorded between the read and this
                // statement is its to show: only the deliveries this one inserted are shown,
                // so a message blocks one Stop at most.
                let recorded: Vec<i64> = db
                    .query(
                        "INSERT INTO message_deliveries (message_id, session_id, delivered_at)
                         SELECT m.id, $2, $3 FROM messages m WHERE m.id = ANY ($1::bigint[])
                         FOR KEY SHARE
                         ON CONFLICT DO NOTHING
                         RETURNING message_id",
                        &[&ids, &session_id, &now],
                    )?
                    .iter()
                    .map(|r| r.try_get(0))
                    .collect::<Result<_, _>>()?;
                delivery.shown.retain(|m| recorded.contains(&m.id));
            }
            Ok(delivery)
        })
    }
}
