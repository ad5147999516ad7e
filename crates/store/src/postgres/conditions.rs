//! The conditions part of the PostgreSQL backend.

use postgres::Row;

use super::{Fail, PostgresStore, parse_column};
use crate::{Condition, ConditionStore, Millis, PutMode, PutOutcome, StoreError, StoreResult};

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
    /// One statement either way, so two callers racing for a new name cannot both create it.
    fn put_condition(&self, condition: &Condition, mode: PutMode) -> StoreResult<PutOutcome> {
        self.run(|db| {
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
            match mode {
                PutMode::CreateOnly => {
                    let inserted = db.execute(
                        concat!(
                            "INSERT INTO conditions (",
                            condition_columns!(),
                            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                             ON CONFLICT (name) DO NOTHING"
                        ),
                        &params,
                    )?;
                    if inserted == 0 {
                        return Err(Fail::Store(StoreError::Conflict(format!(
                            "a condition named `{}` already exists; pass replace=true to replace \
                             it, or choose another name",
                            condition.name
                        ))));
                    }
                    Ok(PutOutcome::Created)
                }
                PutMode::Replace => {
                    // Replacing keeps the original creation time; `xmax = 0` marks a fresh row.
                    let created: bool = db
                        .query_one(
                            concat!(
                                "INSERT INTO conditions AS c (",
                                condition_columns!(),
                                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                                 ON CONFLICT (name) DO UPDATE
                                 SET step = excluded.step, matcher = excluded.matcher,
                                     script = excluded.script, language = excluded.language,
                                     run_async = excluded.run_async,
                                     session_id = excluded.session_id,
                                     updated_at = excluded.updated_at
                                 RETURNING (c.xmax = 0)"
                            ),
                            &params,
                        )?
                        .try_get(0)?;
                    Ok(if created {
                        PutOutcome::Created
                    } else {
                        PutOutcome::Replaced
                    })
                }
            }
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

    fn delete_condition(&self, name: &str) -> StoreResult<bool> {
        self.run(|db| Ok(db.execute("DELETE FROM conditions WHERE name = $1", &[&name])? > 0))
    }

    fn arm_gate(&self, session_id: &str, until: Millis) -> StoreResult<()> {
        self.run(|db| {
            db.execute(
                "INSERT INTO condition_gates (session_id, armed_until) VALUES ($1, $2)
                 ON CONFLICT (session_id) DO UPDATE SET armed_until = excluded.armed_until",
                &[&session_id, &until],
            )?;
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
