//! The audit trail in the PostgreSQL backend.

use super::{Db, Fail, PostgresStore, parse_column};
use crate::audit::Record;
use crate::{Actor, AuditEntry, AuditQuery, AuditStore, Millis, StoreError, StoreResult};

/// Writes `record` made by `actor` at `at`, inside the caller's transaction.
pub(super) fn insert(db: &mut Db, actor: &Actor, at: Millis, record: &Record) -> Result<(), Fail> {
    db.execute(
        "INSERT INTO audit_log (at, actor_kind, actor_name, action, subject, detail)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &at,
            &actor.kind(),
            &actor.name(),
            &record.action.as_str(),
            &record.subject,
            &record.detail_text(),
        ],
    )?;
    Ok(())
}

/// The entries `rows` holds (columns: id, at, actor kind and name, action, subject, detail).
fn entries(rows: &[postgres::Row]) -> Result<Vec<AuditEntry>, Fail> {
    rows.iter()
        .map(|r| {
            let id: i64 = r.try_get(0)?;
            let detail: &str = r.try_get(6)?;
            Ok(AuditEntry {
                id,
                at: r.try_get(1)?,
                actor: Actor::from_parts(r.try_get(2)?, r.try_get(3)?)?,
                action: parse_column(r.try_get::<_, &str>(4)?)?,
                subject: r.try_get(5)?,
                detail: serde_json::from_str(detail).map_err(|e| {
                    StoreError::InvalidData(format!("audit entry {id}: detail: {e}"))
                })?,
            })
        })
        .collect()
}

impl AuditStore for PostgresStore {
    fn audit(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        self.run(|db| {
            let rows = db.query(
                "SELECT id, at, actor_kind, actor_name, action, subject, detail FROM audit_log
                 WHERE ($1::bigint IS NULL OR at >= $1) AND ($2::bigint IS NULL OR id > $2)
                 ORDER BY id LIMIT $3",
                &[&query.since, &query.after_id, &i64::from(query.limit)],
            )?;
            entries(&rows)
        })
    }

    fn recent_audit(&self, before_id: Option<i64>, limit: u32) -> StoreResult<Vec<AuditEntry>> {
        self.run(|db| {
            let rows = db.query(
                "SELECT id, at, actor_kind, actor_name, action, subject, detail FROM audit_log
                 WHERE ($1::bigint IS NULL OR id < $1) ORDER BY id DESC LIMIT $2",
                &[&before_id, &i64::from(limit)],
            )?;
            entries(&rows)
        })
    }

    fn prune_audit(&self, before: Millis) -> StoreResult<u64> {
        self.run(|db| Ok(db.execute("DELETE FROM audit_log WHERE at < $1", &[&before])?))
    }
}
