//! The enforcement part of the PostgreSQL backend.

use postgres::Row;

use super::{Fail, PostgresStore, audit, to_u64};
use crate::{
    Actor, EnforcementStore, Millis, NewReminder, Reminder, ReminderScope, StoreError, StoreResult,
};

fn reminder_from_row(row: &Row) -> Result<Reminder, Fail> {
    let cadence: i64 = row.try_get(2)?;
    Ok(Reminder {
        id: row.try_get(0)?,
        message: row.try_get(1)?,
        cadence: u32::try_from(cadence).map_err(|_| {
            Fail::Store(StoreError::InvalidData(format!(
                "reminder cadence {cadence}"
            )))
        })?,
        tag: row.try_get(3)?,
        created_at: row.try_get(4)?,
    })
}

impl EnforcementStore for PostgresStore {
    fn add_reminder(&self, reminder: &NewReminder, actor: &Actor) -> StoreResult<Reminder> {
        self.transaction(|db| {
            let row = db.query_one(
                "INSERT INTO reminders (message, cadence, tag, created_at)
                 VALUES ($1, $2, $3, $4) RETURNING id",
                &[
                    &reminder.message,
                    &i64::from(reminder.cadence),
                    &reminder.tag,
                    &reminder.created_at,
                ],
            )?;
            let stored = Reminder {
                id: row.try_get(0)?,
                message: reminder.message.clone(),
                cadence: reminder.cadence,
                tag: reminder.tag.clone(),
                created_at: reminder.created_at,
            };
            audit::insert(
                db,
                actor,
                reminder.created_at,
                &crate::audit::reminder_set(&stored),
            )?;
            Ok(stored)
        })
    }

    fn reminders(&self) -> StoreResult<Vec<Reminder>> {
        self.run(|db| {
            db.query(
                "SELECT id, message, cadence, tag, created_at FROM reminders ORDER BY id",
                &[],
            )?
            .iter()
            .map(reminder_from_row)
            .collect()
        })
    }

    fn clear_reminders(
        &self,
        scope: &ReminderScope,
        actor: &Actor,
        now: Millis,
    ) -> StoreResult<u64> {
        self.transaction(|db| {
            let removed = match scope {
                ReminderScope::Id(id) => {
                    db.execute("DELETE FROM reminders WHERE id = $1", &[id])?
                }
                ReminderScope::Tag(tag) => {
                    db.execute("DELETE FROM reminders WHERE tag = $1", &[tag])?
                }
            };
            if removed > 0 {
                audit::insert(
                    db,
                    actor,
                    now,
                    &crate::audit::reminder_clear(scope, removed),
                )?;
            }
            Ok(removed)
        })
    }

    /// One upsert: the row lock it takes makes concurrent calls (from any daemon) count in turn.
    fn count_tool_call(&self, session_id: &str, now: Millis) -> StoreResult<u64> {
        self.run(|db| {
            let n: i64 = db
                .query_one(
                    "INSERT INTO session_counters AS c (session_id, tool_calls, updated_at)
                     VALUES ($1, 1, $2)
                     ON CONFLICT (session_id) DO UPDATE
                         SET tool_calls = c.tool_calls + 1, updated_at = excluded.updated_at
                     RETURNING tool_calls",
                    &[&session_id, &now],
                )?
                .try_get(0)?;
            to_u64(n, "tool-call count")
        })
    }

    fn tool_calls(&self, session_id: &str) -> StoreResult<u64> {
        self.run(|db| {
            let n: Option<i64> = db
                .query_opt(
                    "SELECT tool_calls FROM session_counters WHERE session_id = $1",
                    &[&session_id],
                )?
                .map(|r| r.try_get(0))
                .transpose()?;
            to_u64(n.unwrap_or(0), "tool-call count")
        })
    }
}
