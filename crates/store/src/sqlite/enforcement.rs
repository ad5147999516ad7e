//! The enforcement part of the SQLite backend.

use rusqlite::{OptionalExtension, Row, params};

use super::{Fail, SqliteStore, audit};
use crate::{
    Actor, EnforcementStore, Millis, NewReminder, Reminder, ReminderScope, StoreError, StoreResult,
};

const REMINDER_COLUMNS: &str = "id, message, cadence, tag, created_at";

fn reminder_from_row(row: &Row<'_>) -> rusqlite::Result<Reminder> {
    Ok(Reminder {
        id: row.get(0)?,
        message: row.get(1)?,
        cadence: row.get(2)?,
        tag: row.get(3)?,
        created_at: row.get(4)?,
    })
}

/// Converts a counter read from SQLite (never negative when written by this build).
fn to_count(n: i64) -> Result<u64, Fail> {
    u64::try_from(n).map_err(|_| {
        Fail::Store(StoreError::InvalidData(format!(
            "negative tool-call count {n}"
        )))
    })
}

impl EnforcementStore for SqliteStore {
    fn add_reminder(&self, reminder: &NewReminder, actor: &Actor) -> StoreResult<Reminder> {
        self.write(|tx| {
            let id: i64 = tx.query_row(
                "INSERT INTO reminders (message, cadence, tag, created_at)
                 VALUES (?1, ?2, ?3, ?4) RETURNING id",
                params![
                    reminder.message,
                    reminder.cadence,
                    reminder.tag,
                    reminder.created_at
                ],
                |r| r.get(0),
            )?;
            let stored = Reminder {
                id,
                message: reminder.message.clone(),
                cadence: reminder.cadence,
                tag: reminder.tag.clone(),
                created_at: reminder.created_at,
            };
            audit::insert(
                tx,
                actor,
                reminder.created_at,
                &crate::audit::reminder_set(&stored),
            )?;
            Ok(stored)
        })
    }

    fn reminders(&self) -> StoreResult<Vec<Reminder>> {
        self.read(|tx| {
            let mut stmt = tx.prepare(&format!(
                "SELECT {REMINDER_COLUMNS} FROM reminders ORDER BY id"
            ))?;
            let rows = stmt
                .query_map([], reminder_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    fn clear_reminders(
        &self,
        scope: &ReminderScope,
        actor: &Actor,
        now: Millis,
    ) -> StoreResult<u64> {
        self.write(|tx| {
            let removed = match scope {
                ReminderScope::Id(id) => tx.execute("DELETE FROM reminders WHERE id = ?1", [id])?,
                ReminderScope::Tag(tag) => {
                    tx.execute("DELETE FROM reminders WHERE tag = ?1", [tag])?
                }
            } as u64;
            if removed > 0 {
                audit::insert(
                    tx,
                    actor,
                    now,
                    &crate::audit::reminder_clear(scope, removed),
                )?;
            }
            Ok(removed)
        })
    }

    fn count_tool_call(&self, session_id: &str, now: Millis) -> StoreResult<u64> {
        self.write(|tx| to_count(super::sessions::count_call(tx, session_id, now, None)?.0))
    }

    fn tool_calls(&self, session_id: &str) -> StoreResult<u64> {
        self.read(|tx| {
            let n: Option<i64> = tx
                .query_row(
                    "SELECT tool_calls FROM session_counters WHERE session_id = ?1",
                    [session_id],
                    |r| r.get(0),
                )
                .optional()?;
            to_count(n.unwrap_or(0))
        })
    }
}
