//! The conditions part of the PostgreSQL backend.

use postgres::Row;

use super::{Fail, PostgresStore, audit, parse_column};
use crate::{
    Actor, Condition, ConditionStore, Millis, PutMode, PutOutcome, StoreError, StoreResult,
};

macro_rules! condition_columns {
    () => {
        "name, step, matcher, script, language, run_async, session_id, created_at, updated_at"
    };
}

fn condition_from_row(row: &Row) -> Result<Condition, Fail> {
    Ok(Condition {
        name: row.try_get(0)?,
        step: parse_column(row.try_get::<_, &str>(1)?)?,
        matcher: row.try_get(2)?,
        script: row.try_get(3)?,
        language: parse_column(row.try_get::<_, &str>(4)?)?,
        run_async: row.try_get(5)?,
        session_id: row.try_get(6)?,
        created_at: row.try_get(7)?,
        updated_at: row.try_get(8)?,
    })
}

impl ConditionStore for PostgresStore {
    /// Inside one transaction: the existing row (if any) is locked first, so the old script's
    /// hash is the one replaced; two callers racing for a new name cannot both create it.
    fn put_condition(
        &self,
        condition: &Condition,
        mode: PutMode,
        actor: &Actor,
    ) -> StoreResult<PutOutcome> {
        self.transaction(|db| {
            let params: [&(dyn postgres::types::ToSql + Sync); 9] = [
                &condition.name,
                &condition.step.as_str(),
                &condition.matcher,
                &condition.script,
                &condition.language.as_str(),
                &condition.run_async,
                &condition.session_id,
                &condition.created_at,
                &condition.updated_at,
            ];
            let locked = |db: &mut super::Db| -> Result<Option<String>, Fail> {
                Ok(db
                    .query_opt(
                        "SELECT script FROM conditions WHERE name = $1 FOR UPDATE",
                        &[&condition.name],
                    )?
                    .map(|r| r.try_get(0))
                    .transpose()?)
            };
            let mut old = locked(db)?;
            if old.is_none() {
                let inserted = db.execute(
                    concat!(
                        "INSERT INTO conditions (",
                        condition_columns!(),
                        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                         ON CONFLICT (name) DO NOTHING"
                    ),
                    &params,
                )?;
                if inserted == 1 {
                    audit::insert(
                        db,
                        actor,
                        condition.updated_at,
                        &crate::audit::condition_set(condition, None),
                    )?;
                    return Ok(PutOutcome::Created);
                }
                // Created by a concurrent caller since: replace that one (it is committed).
                old = locked(db)?;
            }
            let Some(old) = old else {
                return Err(Fail::Store(StoreError::Conflict(format!(
                    "the condition `{}` was created and removed concurrently; retry",
                    condition.name
                ))));
            };
            if mode == PutMode::CreateOnly {
                return Err(Fail::Store(StoreError::Conflict(format!(
                    "a condition named `{}` already exists; pass replace=true to replace it, or \
                     choose another name",
                    condition.name
                ))));
            }
            // Replacing keeps the original creation time.
            db.execute(
                "UPDATE conditions
                 SET step = $2, matcher = $3, script = $4, language = $5, run_async = $6,
                     session_id = $7, updated_at = $8
                 WHERE name = $1",
                &[
                    &condition.name,
                    &condition.step.as_str(),
                    &condition.matcher,
                    &condition.script,
                    &condition.language.as_str(),
                    &condition.run_async,
                    &condition.session_id,
                    &condition.updated_at,
                ],
            )?;
            audit::insert(
                db,
                actor,
                condition.updated_at,
                &crate::audit::condition_set(condition, Some(&old)),
            )?;
            Ok(PutOutcome::Replaced)
        })
    }

    fn conditions(&self) -> StoreResult<Vec<Condition>> {
        self.run(|db| {
            db.query(
                concat!(
                    "SELECT ",
                    condition_columns!(),
                    " FROM conditions ORDER BY name COLLATE \"C\""
                ),
                &[],
            )?
            .iter()
            .map(condition_from_row)
            .collect()
        })
    }

    fn condition(&self, name: &str) -> StoreResult<Option<Condition>> {
        self.run(|db| {
            db.query_opt(
                concat!(
                    "SELECT ",
                    condition_columns!(),
                    " FROM conditions WHERE name = $1"
                ),
                &[&name],
            )?
            .as_ref()
            .map(condition_from_row)
            .transpose()
        })
    }

    fn delete_condition(&self, name: &str, actor: &Actor, now: Millis) -> StoreResult<bool> {
        self.transaction(|db| {
            let Some(row) = db.query_opt(
                "DELETE FROM conditions WHERE name = $1 RETURNING script",
                &[&name],
            )?
            else {
                return Ok(false);
            };
            let script: String = row.try_get(0)?;
            audit::insert(
                db,
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
        self.transaction(|db| {
            db.execute(
                "INSERT INTO condition_gates (session_id, armed_until) VALUES ($1, $2)
                 ON CONFLICT (session_id) DO UPDATE SET armed_until = excluded.armed_until",
                &[&session_id, &until],
            )?;
            audit::insert(db, actor, now, &crate::audit::gate_open(session_id, until))?;
            Ok(())
        })
    }

    fn disarm_gate(&self, session_id: &str) -> StoreResult<()> {
        self.run(|db| {
            db.execute(
                "DELETE FROM condition_gates WHERE session_id = $1",
                &[&session_id],
            )?;
            Ok(())
        })
    }

    fn gate_open_until(&self, session_id: &str, now: Millis) -> StoreResult<Option<Millis>> {
        self.run(|db| {
            Ok(db
                .query_opt(
                    "SELECT armed_until FROM condition_gates
                     WHERE session_id = $1 AND armed_until > $2",
                    &[&session_id, &now],
                )?
                .map(|r| r.try_get(0))
                .transpose()?)
        })
    }
}
