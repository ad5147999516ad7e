//! The scheduler part of the SQLite backend.
//!
//! [`ScheduleStore::fire_due`] is the one delicate operation: several processes (stdio servers,
//! hooks, a daemon) call it at the same moment. It runs as one `BEGIN IMMEDIATE` transaction, so
//! the schedules it reads as due cannot be fired by anyone else before it commits, and every
//! occurrence also gets a `schedule_firings` row whose primary key refuses a second firing.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Fail, SqliteStore, audit, parse_column};
use crate::{
    Actor, Firing, FiringRecord, Message, Millis, NewSchedule, NextFire, Schedule, ScheduleStatus,
    ScheduleStore, StoreError, StoreResult, Trigger,
};

/// The columns [`schedule_from_row`] reads, in order.
const COLUMNS: &str = "id, name, channel, message, severity, ttl_seconds, kind, at_ms, \
                       every_seconds, cron, next_fire_at, last_fired_at, fire_count, \
                       skipped_count, status, created_at";

/// The raw columns of one schedule row, decoded outside the row callback so that invalid values
/// become [`StoreError::InvalidData`] rather than SQLite errors.
struct RawSchedule {
    id: i64,
    name: Option<String>,
    channel: String,
    message: String,
    severity: String,
    ttl_seconds: i64,
    kind: String,
    at_ms: Option<i64>,
    every_seconds: Option<i64>,
    cron: Option<String>,
    next_fire_at: Option<i64>,
    last_fired_at: Option<i64>,
    fire_count: i64,
    skipped_count: i64,
    status: String,
    created_at: i64,
}

fn raw_from_row(r: &Row<'_>) -> rusqlite::Result<RawSchedule> {
    Ok(RawSchedule {
        id: r.get(0)?,
        name: r.get(1)?,
        channel: r.get(2)?,
        message: r.get(3)?,
        severity: r.get(4)?,
        ttl_seconds: r.get(5)?,
        kind: r.get(6)?,
        at_ms: r.get(7)?,
        every_seconds: r.get(8)?,
        cron: r.get(9)?,
        next_fire_at: r.get(10)?,
        last_fired_at: r.get(11)?,
        fire_count: r.get(12)?,
        skipped_count: r.get(13)?,
        status: r.get(14)?,
        created_at: r.get(15)?,
    })
}

fn invalid(id: i64, what: &str) -> Fail {
    Fail::Store(StoreError::InvalidData(format!("schedule {id}: {what}")))
}

impl RawSchedule {
    fn decode(self) -> Result<Schedule, Fail> {
        let id = self.id;
        let trigger = match (
            self.kind.as_str(),
            self.at_ms,
            self.every_seconds,
            self.cron,
        ) {
            ("at", Some(at), _, _) => Trigger::At(at),
            ("every", _, Some(s), _) => Trigger::Every(
                u32::try_from(s).map_err(|_| invalid(id, &format!("every_seconds {s}")))?,
            ),
            ("cron", _, _, Some(expr)) => Trigger::Cron(expr),
            (kind, ..) => return Err(invalid(id, &format!("kind `{kind}` without its value"))),
        };
        Ok(Schedule {
            id,
            name: self.name,
            channel: self.channel,
            message: self.message,
            severity: parse_column(&self.severity)?,
            ttl_seconds: u32::try_from(self.ttl_seconds)
                .map_err(|_| invalid(id, &format!("ttl_seconds {}", self.ttl_seconds)))?,
            trigger,
            next_fire_at: self.next_fire_at,
            last_fired_at: self.last_fired_at,
            fire_count: u64::try_from(self.fire_count).unwrap_or(0),
            skipped_count: u64::try_from(self.skipped_count).unwrap_or(0),
            status: parse_column(&self.status)?,
            created_at: self.created_at,
        })
    }
}

fn schedule_by_id(tx: &Connection, id: i64) -> Result<Option<Schedule>, Fail> {
    let raw = tx
        .query_row(
            &format!("SELECT {COLUMNS} FROM schedules WHERE id = ?1"),
            [id],
            raw_from_row,
        )
        .optional()?;
    raw.map(RawSchedule::decode).transpose()
}

/// The `(kind, at_ms, every_seconds, cron)` columns of a trigger.
fn trigger_columns(trigger: &Trigger) -> (&'static str, Option<i64>, Option<i64>, Option<&str>) {
    match trigger {
        Trigger::At(at) => ("at", Some(*at), None, None),
        Trigger::Every(s) => ("every", None, Some(i64::from(*s)), None),
        Trigger::Cron(expr) => ("cron", None, None, Some(expr.as_str())),
    }
}

impl ScheduleStore for SqliteStore {
    fn create_schedule(&self, schedule: &NewSchedule, actor: &Actor) -> StoreResult<Schedule> {
        self.write(|tx| {
            let (kind, at_ms, every_seconds, cron) = trigger_columns(&schedule.trigger);
            tx.execute(
                "INSERT INTO schedules (name, channel, message, severity, ttl_seconds, kind, \
                 at_ms, every_seconds, cron, next_fire_at, status, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'active', ?11)",
                params![
                    schedule.name,
                    schedule.channel,
                    schedule.message,
                    schedule.severity.as_str(),
                    schedule.ttl_seconds,
                    kind,
                    at_ms,
                    every_seconds,
                    cron,
                    schedule.next_fire_at,
                    schedule.created_at,
                ],
            )?;
            let id = tx.last_insert_rowid();
            audit::insert(
                tx,
                actor,
                schedule.created_at,
                &crate::audit::schedule_create(id, schedule),
            )?;
            Ok(Schedule {
                id,
                name: schedule.name.clone(),
                channel: schedule.channel.clone(),
                message: schedule.message.clone(),
                severity: schedule.severity,
                ttl_seconds: schedule.ttl_seconds,
                trigger: schedule.trigger.clone(),
                next_fire_at: Some(schedule.next_fire_at),
                last_fired_at: None,
                fire_count: 0,
                skipped_count: 0,
                status: ScheduleStatus::Active,
                created_at: schedule.created_at,
            })
        })
    }

    fn schedules(&self) -> StoreResult<Vec<Schedule>> {
        self.read(|tx| {
            let mut stmt = tx.prepare(&format!("SELECT {COLUMNS} FROM schedules ORDER BY id"))?;
            let raws = stmt
                .query_map([], raw_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            raws.into_iter().map(RawSchedule::decode).collect()
        })
    }

    fn recent_firings(
        &self,
        schedule_id: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<FiringRecord>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT schedule_id, scheduled_for, fired_at, message_id, skipped
                 FROM schedule_firings WHERE ?1 IS NULL OR schedule_id = ?1
                 ORDER BY fired_at DESC, schedule_id DESC, scheduled_for DESC LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![schedule_id, limit], |row| {
                Ok(FiringRecord {
                    schedule_id: row.get(0)?,
                    scheduled_for: row.get(1)?,
                    fired_at: row.get(2)?,
                    message_id: row.get(3)?,
                    skipped: u64::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn cancel_schedule(&self, id: i64, now: Millis, actor: &Actor) -> StoreResult<Schedule> {
        self.write(|tx| {
            let schedule = schedule_by_id(tx, id)?.ok_or_else(|| StoreError::NotFound {
                what: "schedule",
                id: id.to_string(),
            })?;
            if schedule.status != ScheduleStatus::Active {
                return Err(Fail::Store(StoreError::Conflict(format!(
                    "schedule {id} is already {}; only active schedules can be cancelled",
                    schedule.status
                ))));
            }
            tx.execute(
                "UPDATE schedules SET status = 'cancelled', next_fire_at = NULL WHERE id = ?1",
                [id],
            )?;
            audit::insert(tx, actor, now, &crate::audit::schedule_cancel(id))?;
            Ok(Schedule {
                status: ScheduleStatus::Cancelled,
                next_fire_at: None,
                ..schedule
            })
        })
    }

    fn fire_due(
        &self,
        now: Millis,
        plan: &dyn Fn(&Schedule, Millis) -> NextFire,
        actor: &Actor,
    ) -> StoreResult<Vec<Firing>> {
        // Hooks call this around every tool call: when nothing is due (the usual case), a
        // plain read answers without queueing for the write lock.
        let any_due = self.read(|tx| {
            let found: Option<i64> = tx
                .query_row(
                    "SELECT id FROM schedules \
                     WHERE status = 'active' AND next_fire_at <= ?1 LIMIT 1",
                    [now],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(found.is_some())
        })?;
        if !any_due {
            return Ok(Vec::new());
        }
        self.write(|tx| {
            let due = {
                let mut stmt = tx.prepare(&format!(
                    "SELECT {COLUMNS} FROM schedules \
                     WHERE status = 'active' AND next_fire_at <= ?1 \
                     ORDER BY next_fire_at, id"
                ))?;
                let raws = stmt
                    .query_map([now], raw_from_row)?
                    .collect::<Result<Vec<_>, _>>()?;
                raws.into_iter()
                    .map(RawSchedule::decode)
                    .collect::<Result<Vec<_>, _>>()?
            };
            let mut firings = Vec::with_capacity(due.len());
            for schedule in due {
                let Some(scheduled_for) = schedule.next_fire_at else {
                    continue;
                };
                let next = plan(&schedule, now);
                // The primary key (schedule_id, scheduled_for) is the last line of defence: an
                // occurrence that already has a row is never published again, whatever `plan`
                // returned before.
                let claimed = tx.execute(
                    "INSERT OR IGNORE INTO schedule_firings \
                     (schedule_id, scheduled_for, fired_at, skipped) VALUES (?1, ?2, ?3, ?4)",
                    params![
                        schedule.id,
                        scheduled_for,
                        now,
                        skipped_column(next.skipped)
                    ],
                )? == 1;
                if claimed {
                    let expires_at =
                        now.saturating_add(i64::from(schedule.ttl_seconds).saturating_mul(1000));
                    tx.execute(
                        "INSERT INTO messages (channel, body, severity, created_at, expires_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![
                            schedule.channel,
                            schedule.message,
                            schedule.severity.as_str(),
                            now,
                            expires_at
                        ],
                    )?;
                    let message_id = tx.last_insert_rowid();
                    tx.execute(
                        "UPDATE schedule_firings SET message_id = ?1 \
                         WHERE schedule_id = ?2 AND scheduled_for = ?3",
                        params![message_id, schedule.id, scheduled_for],
                    )?;
                    let message = Message {
                        id: message_id,
                        channel: schedule.channel.clone(),
                        body: schedule.message.clone(),
                        severity: schedule.severity,
                        created_at: now,
                        expires_at,
                        target: None,
                    };
                    audit::insert(
                        tx,
                        actor,
                        now,
                        &crate::audit::schedule_fire(
                            schedule.id,
                            scheduled_for,
                            &message,
                            next.skipped,
                        ),
                    )?;
                    firings.push(Firing {
                        schedule_id: schedule.id,
                        scheduled_for,
                        message,
                        skipped: next.skipped,
                    });
                }
                let status = if next.next_fire_at.is_some() {
                    ScheduleStatus::Active
                } else {
                    ScheduleStatus::Completed
                };
                if claimed {
                    tx.execute(
                        "UPDATE schedules SET fire_count = fire_count + 1, \
                         skipped_count = skipped_count + ?1, last_fired_at = ?2, \
                         next_fire_at = ?3, status = ?4 WHERE id = ?5",
                        params![
                            skipped_column(next.skipped),
                            now,
                            next.next_fire_at,
                            status.as_str(),
                            schedule.id
                        ],
                    )?;
                } else {
                    tx.execute(
                        "UPDATE schedules SET next_fire_at = ?1, status = ?2 WHERE id = ?3",
                        params![next.next_fire_at, status.as_str(), schedule.id],
                    )?;
                }
            }
            Ok(firings)
        })
    }
}

/// A skipped count as SQLite stores it (a signed 64-bit integer).
fn skipped_column(skipped: u64) -> i64 {
    i64::try_from(skipped).unwrap_or(i64::MAX)
}
