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

/// The entries `sql` selects (its columns: id, at, actor kind and name, action, subject,
/// detail), in its order.
fn entries(
    tx: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<AuditEntry>, Fail> {
    let mut stmt = tx.prepare_cached(sql)?;
    let rows = stmt.query_map(params, |r| {
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
            detail: serde_json::from_str(&detail)
                .map_err(|e| StoreError::InvalidData(format!("audit entry {id}: detail: {e}")))?,
        });
    }
    Ok(out)
}

impl AuditStore for SqliteStore {
    fn audit(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        self.read(|tx| {
            entries(
                tx,
                "SELECT id, at, actor_kind, actor_name, action, subject, detail FROM audit_log
                 WHERE (?1 IS NULL OR at >= ?1) AND (?2 IS NULL OR id > ?2)
                 ORDER BY id LIMIT ?3",
                params![query.since, query.after_id, query.limit],
            )
        })
    }

    fn recent_audit(&self, before_id: Option<i64>, limit: u32) -> StoreResult<Vec<AuditEntry>> {
        self.read(|tx| {
            entries(
                tx,
                "SELECT id, at, actor_kind, actor_name, action, subject, detail FROM audit_log
                 WHERE (?1 IS NULL OR id < ?1) ORDER BY id DESC LIMIT ?2",
                params![before_id, limit],
            )
        })
    }

    fn prune_audit(&self, before: Millis) -> StoreResult<u64> {
        self.write(|tx| Ok(tx.execute("DELETE FROM audit_log WHERE at < ?1", [before])? as u64))
    }
}
