//! What the daemons of one store share in the PostgreSQL backend: signing keys, resumable
//! Streamable HTTP sessions and leases.

use super::PostgresStore;
use crate::{DaemonStateStore, KeyRequest, Lease, Millis, SigningKey, StoreError, StoreResult};

/// A lease held as a session-level advisory lock on a connection of its own (outside the
/// pool), keyed by the store's schema and the lease's name: the server frees it when the
/// connection closes, however the holder ends.
struct AdvisoryLease {
    client: postgres::Client,
    lost: bool,
}

impl Lease for AdvisoryLease {
    fn still_held(&mut self) -> bool {
        if !self.lost {
            self.lost = self.client.is_closed() || self.client.simple_query("SELECT 1").is_err();
        }
        !self.lost
    }
}

impl DaemonStateStore for PostgresStore {
    fn try_lease(&self, name: &str) -> StoreResult<Option<Box<dyn Lease>>> {
        if crate::no_wait::active() {
            return Err(crate::no_wait::refuse());
        }
        let unavailable = |e: postgres::Error| StoreError::Unavailable {
            store: self.describe.clone(),
            detail: format!("cannot take the lease {name:?}: {e}"),
        };
        let mut client = self.config.connect(self.tls.clone()).map_err(unavailable)?;
        let taken: bool = client
            .query_one(
                "SELECT pg_try_advisory_lock(hashtext(current_schema()), hashtext($1))",
                &[&name],
            )
            .and_then(|row| row.try_get(0))
            .map_err(unavailable)?;
        // Not taken: the connection closes here, so only the holder keeps one.
        Ok(taken.then(|| {
            Box::new(AdvisoryLease {
                client,
                lost: false,
            }) as Box<dyn Lease>
        }))
    }

    fn signing_keys(&self, request: &KeyRequest<'_>) -> StoreResult<Vec<SigningKey>> {
        // Daemons starting together queue on a lock for this purpose: the first one adds the
        // key, the others find it.
        self.transaction(|db| {
            db.execute(
                "SELECT pg_advisory_xact_lock(hashtext('hooks_mcp_keys:' || current_schema() \
                 || ':' || $1))",
                &[&request.purpose],
            )?;
            let newest: Option<Millis> = db
                .query_one(
                    "SELECT max(created_at) FROM signing_keys WHERE purpose = $1",
                    &[&request.purpose],
                )?
                .try_get(0)?;
            if newest.is_none_or(|at| at < request.rotate_before) {
                db.execute(
                    "INSERT INTO signing_keys (purpose, secret, created_at) VALUES ($1, $2, $3)",
                    &[&request.purpose, &request.candidate, &request.now],
                )?;
            }
            db.execute(
                "DELETE FROM signing_keys AS k WHERE purpose = $1 AND EXISTS
                     (SELECT 1 FROM signing_keys AS n
                      WHERE n.purpose = $1 AND n.id > k.id AND n.created_at < $2)",
                &[&request.purpose, &request.keep_since],
            )?;
            let rows = db.query(
                "SELECT id, secret, created_at FROM signing_keys WHERE purpose = $1
                 ORDER BY id DESC",
                &[&request.purpose],
            )?;
            rows.iter()
                .map(|r| {
                    Ok(SigningKey {
                        id: r.try_get(0)?,
                        secret: r.try_get(1)?,
                        created_at: r.try_get(2)?,
                    })
                })
                .collect()
        })
    }

    fn save_http_session(&self, session_id: &str, state: &str, now: Millis) -> StoreResult<()> {
        self.run(|db| {
            db.execute(
                "INSERT INTO http_sessions AS h (session_id, state, created_at, seen_at)
                 VALUES ($1, $2, $3, $3)
                 ON CONFLICT (session_id) DO UPDATE SET state = excluded.state,
                     seen_at = GREATEST(h.seen_at, excluded.seen_at)",
                &[&session_id, &state, &now],
            )?;
            Ok(())
        })
    }

    fn http_session(&self, session_id: &str, now: Millis) -> StoreResult<Option<String>> {
        self.run(|db| {
            let row = db.query_opt(
                "UPDATE http_sessions SET seen_at = GREATEST(seen_at, $2)
                 WHERE session_id = $1 RETURNING state",
                &[&session_id, &now],
            )?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        })
    }

    fn delete_http_session(&self, session_id: &str) -> StoreResult<bool> {
        self.run(|db| {
            Ok(db.execute(
                "DELETE FROM http_sessions WHERE session_id = $1",
                &[&session_id],
            )? > 0)
        })
    }

    fn prune_http_sessions(&self, before: Millis) -> StoreResult<u64> {
        self.run(|db| Ok(db.execute("DELETE FROM http_sessions WHERE seen_at < $1", &[&before])?))
    }
}
