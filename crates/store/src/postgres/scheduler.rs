//! The scheduler part of the PostgreSQL backend.
//!
//! [`ScheduleStore::fire_due`] runs as one transaction that claims the due schedules with
//! `SELECT ... FOR UPDATE SKIP LOCKED`: several daemons (and hooks) firing at the same moment
//! each take a disjoint set, and a schedule another one fired and committed meanwhile no longer
//! matches when its lock is taken. Every occurrence also gets a `schedule_firings` row whose
//! primary key refuses a second firing, as in SQLite.

use postgres::Row;

use super::{Fail, PostgresStore, audit, parse_column, to_i64, to_u64};
use crate::{
    Actor, Firing, FiringRecord, Message, Millis, NewSchedule, NextFire, Schedule, ScheduleStatus,
    ScheduleStore, Severity, StoreError, StoreResult, Trigger,
};

/// The columns [`schedule_from_row`] reads, in order.
macro_rules! schedule_columns {
    () => {
        "id, name, channel, message, severity, ttl_seconds, kind, at_ms, every_seconds, cron, \
         next_fire_at, last_fired_at, fire_count, skipped_count, status, created_at"
    };
}

fn invalid(id: i64, what: &str) -> Fail {
    Fail::Store(StoreError::InvalidData(format!("schedule {id}: {what}")))
}

fn schedule_from_row(r: &Row) -> Result<Schedule, Fail> {
    let id: i64 = r.try_get(0)?;
    let kind: &str = r.try_get(6)?;
    let trigger = match (
        kind,
        r.try_get::<_, Option<i64>>(7)?,
        r.try_get::<_, Option<i64>>(8)?,
        r.try_get::<_, Option<String>>(9)?,
    ) {
        ("at", Some(at), _, _) => Trigger::At(at),
        ("every", _, Some(s), _) => Trigger::Every(
            u32::try_from(s).map_err(|_| invalid(id, &format!("every_seconds {s}")))?,
        ),
        ("cron", _, _, Some(expr)) => Trigger::Cron(expr),
        (kind, ..) => return Err(invalid(id, &format!("kind `{kind}` without its value"))),
    };
    let ttl: i64 = r.try_get(5)?;
    Ok(Schedule {
        id,
        name: r.try_get(1)?,
        channel: r.try_get(2)?,
        message: r.try_get(3)?,
        severity: parse_column(r.try_get::<_, &str>(4)?)?,
        ttl_seconds: u32::try_from(ttl).map_err(|_| invalid(id, &format!("ttl_seconds {ttl}")))?,
        trigger,
        next_fire_at: r.try_get(10)?,
        last_fired_at: r.try_get(11)?,
        fire_count: to_u64(r.try_get(12)?, "fire_count")?,
        skipped_count: to_u64(r.try_get(13)?, "skipped_count")?,
        status: parse_column(r.try_get::<_, &str>(14)?)?,
        created_at: r.try_get(15)?,
    })
}

/// The `(kind, at_ms, every_seconds, cron)` columns of a trigger.
fn trigger_columns(trigger: &Trigger) -> (&'static str, Option<i64>, Option<i64>, Option<&str>) {
    match trigger {
        Trigger::At(at) => ("at", Some(*at), None, None),
        Trigger::Every(s) => ("every", None, Some(i64::from(*s)), None),
        Trigger::Cron(expr) => ("cron", None, None, Some(expr.as_str())),
    }
}

impl ScheduleStore for PostgresStore {
    fn create_schedule(&self, schedule: &NewSchedule, actor: &Actor) -> StoreResult<Schedule> {
        self.transaction(|db| {
            let (kind, at_ms, every_seconds, cron) = trigger_columns(&schedule.trigger);
            let row = db.query_one(
                "WITH s AS (
                     INSERT INTO schedules (name, channel, message, severity, ttl_seconds, kind,
                         at_ms, every_seconds, cron, next_fire_at, status, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'active', $11)
                     RETURNING id)
                 SELECT id, pg_notify('hooks_mcp_' || left(md5(current_schema()), 16),
                                      'schedule ' || id)
                 FROM s",
                &[
                    &schedule.name,
                    &schedule.channel,
                    &schedule.message,
                    &schedule.severity.as_str(),
                    &i64::from(schedule.ttl_seconds),
                    &kind,
                    &at_ms,
                    &every_seconds,
                    &cron,
                    &schedule.next_fire_at,
                    &schedule.created_at,
                ],
            )?;
            let id: i64 = row.try_get(0)?;
            audit::insert(
                db,
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
        self.run(|db| {
            db.query(
                concat!(
                    "SELECT ",
                    schedule_columns!(),
                    " FROM schedules ORDER BY id"
                ),
                &[],
            )?
            .iter()
            .map(schedule_from_row)
            .collect()
        })
    }

    fn recent_firings(
        &self,
        schedule_id: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<FiringRecord>> {
        self.run(|db| {
            db.query(
                "SELECT schedule_id, scheduled_for, fired_at, message_id, skipped
                 FROM schedule_firings WHERE $1::bigint IS NULL OR schedule_id = $1
                 ORDER BY fired_at DESC, schedule_id DESC, scheduled_for DESC LIMIT $2",
                &[&schedule_id, &i64::from(limit)],
            )?
            .iter()
            .map(|row| {
                Ok(FiringRecord {
                    schedule_id: row.try_get(0)?,
                    scheduled_for: row.try_get(1)?,
                    fired_at: row.try_get(2)?,
                    message_id: row.try_get(3)?,
                    skipped: to_u64(row.try_get(4)?, "skipped count")?,
                })
            })
            .collect()
        })
    }

    fn cancel_schedule(&self, id: i64, now: Millis, actor: &Actor) -> StoreResult<Schedule> {
        self.transaction(|db| {
            let cancelled = db.query_opt(
                concat!(
                    "WITH s AS (UPDATE schedules SET status = 'cancelled', next_fire_at = NULL
                                WHERE id = $1 AND status = 'active' RETURNING *)
                     SELECT ",
                    schedule_columns!(),
                    ", pg_notify('hooks_mcp_' || left(md5(current_schema()), 16),
                                 'schedule ' || id)
                     FROM s"
                ),
                &[&id],
            )?;
            if let Some(row) = cancelled {
                let schedule = schedule_from_row(&row)?;
                audit::insert(db, actor, now, &crate::audit::schedule_cancel(id))?;
                return Ok(schedule);
            }
            let status = db.query_opt("SELECT status FROM schedules WHERE id = $1", &[&id])?;
            Err(Fail::Store(match status {
                None => StoreError::NotFound {
                    what: "schedule",
                    id: id.to_string(),
                },
                Some(row) => StoreError::Conflict(format!(
                    "schedule {id} is already {}; only active schedules can be cancelled",
                    row.try_get::<_, &str>(0)?
                )),
            }))
        })
    }

    fn next_fire_after(&self, now: Millis) -> StoreResult<Option<Millis>> {
        // One probe of the (status, next_fire_at) index.
        self.run(|db| {
            Ok(db
                .query_one(
                    "SELECT min(next_fire_at) FROM schedules
                     WHERE status = 'active' AND next_fire_at > $1",
                    &[&now],
                )?
                .try_get(0)?)
        })
    }

    fn fire_due(
        &self,
        now: Millis,
        plan: &dyn Fn(&Schedule, Millis) -> NextFire,
        actor: &Actor,
    ) -> StoreResult<Vec<Firing>> {
        self.transaction(|db| {
            let due = db
                .query(
                    concat!(
                        "SELECT ",
                        schedule_columns!(),
                        " FROM schedules WHERE status = 'active' AND next_fire_at <= $1
                         ORDER BY next_fire_at, id
                         FOR UPDATE SKIP LOCKED"
                    ),
                    &[&now],
                )?
                .iter()
                .map(schedule_from_row)
                .collect::<Result<Vec<_>, _>>()?;
            if !due.is_empty() {
                let channels: Vec<String> = due.iter().map(|s| s.channel.clone()).collect();
                let urgent = due.iter().any(|s| s.severity != Severity::Info);
                super::channels::lock_channels(db, &channels, urgent)?;
            }
            let mut firings = Vec::with_capacity(due.len());
            for schedule in due {
                let Some(scheduled_for) = schedule.next_fire_at else {
                    continue;
                };
                let next = plan(&schedule, now);
                let skipped = to_i64(next.skipped);
                // The primary key (schedule_id, scheduled_for) is the last line of defence: an
                // occurrence that already has a row is never published again, whatever `plan`
                // returned before.
                let claimed = db.execute(
                    "INSERT INTO schedule_firings (schedule_id, scheduled_for, fired_at, skipped)
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    &[&schedule.id, &scheduled_for, &now, &skipped],
                )? == 1;
                let status = if next.next_fire_at.is_some() {
                    ScheduleStatus::Active
                } else {
                    ScheduleStatus::Completed
                };
                if claimed {
                    let expires_at =
                        now.saturating_add(i64::from(schedule.ttl_seconds).saturating_mul(1000));
                    let message_id: i64 = db
                        .query_one(
                            "WITH m AS (
                                 INSERT INTO messages (channel, body, severity, created_at,
                                                       expires_at)
                                 VALUES ($1, $2, $3, $4, $5) RETURNING id),
                             f AS (
                                 UPDATE schedule_firings SET message_id = (SELECT id FROM m)
                                 WHERE schedule_id = $6 AND scheduled_for = $7)
                             SELECT id, pg_notify('hooks_mcp_' || left(md5(current_schema()), 16),
                                                  'message ' || id)
                             FROM m",
                            &[
                                &schedule.channel,
                                &schedule.message,
                                &schedule.severity.as_str(),
                                &now,
                                &expires_at,
                                &schedule.id,
                                &scheduled_for,
                            ],
                        )?
                        .try_get(0)?;
                    db.execute(
                        "UPDATE schedules SET fire_count = fire_count + 1,
                             skipped_count = skipped_count + $1, last_fired_at = $2,
                             next_fire_at = $3, status = $4 WHERE id = $5",
                        &[
                            &skipped,
                            &now,
                            &next.next_fire_at,
                            &status.as_str(),
                            &schedule.id,
                        ],
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
                        db,
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
                } else {
                    db.execute(
                        "UPDATE schedules SET next_fire_at = $1, status = $2 WHERE id = $3",
                        &[&next.next_fire_at, &status.as_str(), &schedule.id],
                    )?;
                }
            }
            Ok(firings)
        })
    }
}
