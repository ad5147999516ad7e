//! The conditions part of the SQLite backend.

use rusqlite::{OptionalExtension, Row, params};

use super::{Fail, SqliteStore, audit, parse_column};
use crate::{
    Actor, Condition, ConditionStore, Millis, PutMode, PutOutcome, StoreError, StoreResult,
};

const CONDITION_COLUMNS: &str =
    "name, step, matcher, script, language, run_async, session_id, created_at, updated_at";

/// A row as stored, before its enum columns are parsed.
struct RawCondition {
    name: String,
    step: String,
    matcher: String,
    script: String,
    language: String,
    run_async: bool,
    session_id: String,
    created_at: Millis,
    updated_at: Millis,
}

fn raw_from_row(row: &Row<'_>) -> rusqlite::Result<RawCondition> {
    Ok(RawCondition {
        name: row.get(0)?,
        step: row.get(1)?,
        matcher: row.get(2)?,
        script: row.get(3)?,
        language: row.get(4)?,
        run_async: row.get(5)?,
        session_id: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    })
}

impl RawCondition {
    fn parse(self) -> Result<Condition, Fail> {
        Ok(Condition {
            step: parse_column(&self.step)?,
            language: parse_column(&self.language)?,
            name: self.name,
            matcher: self.matcher,
            script: self.script,
            run_async: self.run_async,
            session_id: self.session_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

impl ConditionStore for SqliteStore {
    fn put_condition(
        &self,
        condition: &Condition,
        mode: PutMode,
        actor: &Actor,
    ) -> StoreResult<PutOutcome> {
        self.write(|tx| {
            let old_script: Option<String> = tx
                .query_row(
                    "SELECT script FROM conditions WHERE name = ?1",
                    [&condition.name],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(old_script) = old_script else {
                tx.execute(
                    &format!(
                        "INSERT INTO conditions ({CONDITION_COLUMNS})
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                    ),
                    params![
                        condition.name,
                        condition.step.as_str(),
                        condition.matcher,
                        condition.script,
                        condition.language.as_str(),
                        condition.run_async,
                        condition.session_id,
                        condition.created_at,
                        condition.updated_at,
                    ],
                )?;
                audit::insert(
                    tx,
                    actor,
                    condition.updated_at,
                    &crate::audit::condition_set(condition, None),
                )?;
                return Ok(PutOutcome::Created);
            };
            if mode == PutMode::CreateOnly {
                return Err(Fail::Store(StoreError::Conflict(format!(
                    "a condition named `{}` already exists; pass replace=true to replace it, \
                     or choose another name",
                    condition.name
                ))));
            }
            // Replacing keeps the original creation time.
            tx.execute(
                "UPDATE conditions
                 SET step = ?2, matcher = ?3, script = ?4, language = ?5, run_async = ?6,
                     session_id = ?7, updated_at = ?8
                 WHERE name = ?1",
                params![
                    condition.name,
                    condition.step.as_str(),
                    condition.matcher,
                    condition.script,
                    condition.language.as_str(),
                    condition.run_async,
                    condition.session_id,
                    condition.updated_at,
                ],
            )?;
            audit::insert(
                tx,
                actor,
                condition.updated_at,
                &crate::audit::condition_set(condition, Some(&old_script)),
            )?;
            Ok(PutOutcome::Replaced)
        })
    }

    fn conditions(&self) -> StoreResult<Vec<Condition>> {
        self.read(|tx| {
            let mut stmt = tx.prepare(&format!(
                "SELECT {CONDITION_COLUMNS} FROM conditions ORDER BY name"
            ))?;
            let raw = stmt
                .query_map([], raw_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            raw.into_iter().map(RawCondition::parse).collect()
        })
    }

    fn condition(&self, name: &str) -> StoreResult<Option<Condition>> {
        self.read(|tx| {
            tx.query_row(
                &format!("SELECT {CONDITION_COLUMNS} FROM conditions WHERE name = ?1"),
                [name],
                raw_from_row,
            )
            .optional()?
            .map(RawCondition::parse)
            .transpose()
        })
    }

    fn delete_condition(&self, name: &str, actor: &Actor, now: Millis) -> StoreResult<bool> {
        self.write(|tx| {
            let script: Option<String> = tx
                .query_row(
                    "DELETE FROM conditions WHERE name = ?1 RETURNING script",
                    [name],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(script) = script else {
                return Ok(false);
            };
            audit::insert(
                tx,
                actor,
                now,
                &crate::audit::condition_clear(name, &script),
            )?;
            Ok(true)
        })
    }

    fn arm_gate(
        &self,
        session_id: &str,
        until: Millis,
        actor: &Actor,
        now: Millis,
    ) -> StoreResult<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO condition_gates (session_id, armed_until) VALUES (?1, ?2)
                 ON CONFLICT (session_id) DO UPDATE SET armed_until = excluded.armed_until",
                params![session_id, until],
            )?;
            audit::insert(tx, actor, now, &crate::audit::gate_open(session_id, until))?;
            Ok(())
        })
    }

    fn disarm_gate(&self, session_id: &str) -> StoreResult<()> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM condition_gates WHERE session_id = ?1",
                [session_id],
            )?;
            Ok(())
        })
    }

    fn gate_open_until(&self, session_id: &str, now: Millis) -> StoreResult<Option<Millis>> {
        self.read(|tx| {
            Ok(tx
                .query_row(
                    "SELECT armed_until FROM condition_gates
                     WHERE session_id = ?1 AND armed_until > ?2",
                    params![session_id, now],
                    |r| r.get(0),
                )
                .optional()?)
        })
    }
}
