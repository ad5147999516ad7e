//! The audit trail in the SQLite backend.

use rusqlite::{Connection, params};

use super::{Fail, SqliteStore, parse_column};
use crate::audit::Record;
use crate::{Actor, AuditEntry, AuditQuery, AuditStore, Millis, StoreError, StoreResult};

/// Writes `record` made by `actor` at `at`, inside the caller's transaction.
pub(super) fn insert(
    tx: &Connection,
    actor: &Actor,
    at: Millis,
    record: &Record,
) -> Result<(), Fail> {
    tx.prepare_cached(
        "INSERT INTO audit_log (at, actor_kind, actor_name, action, subject, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        at,
        actor.kind(),
        actor.name(),
        record.action.as_str(),
        record.subject,
        record.detail_text()
    ])?;
    Ok(())
}

impl AuditStore for SqliteStore {
    fn audit(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, at, actor_kind, actor_name, action, subject, detail FROM audit_log
                 WHERE (?1 IS NULL OR at >= ?1) AND (?2 IS NULL OR id > ?2)
                 ORDER BY id LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![query.since, query.after_id, query.limit], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (id, at, kind, name, action, subject, detail) = row?;
                out.push(AuditEntry {
                    id,
                    at,
                    actor: Actor::from_parts(&kind, name)?,
                    action: parse_column(&action)?,
                    subject,
                    detail: serde_json::from_str(&detail).map_err(|e| {
                        StoreError::InvalidData(format!("audit entry {id}: detail: {e}"))
                    })?,
                });
            }
            Ok(out)
        })
    }

    fn prune_audit(&self, before: Millis) -> StoreResult<u64> {
        self.write(|tx| Ok(tx.execute("DELETE FROM audit_log WHERE at < ?1", [before])? as u64))
    }
}
