//! What the daemons of one store share in the SQLite backend: signing keys, resumable
//! Streamable HTTP sessions and leases.

use std::fs::{File, TryLockError};

use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use crate::{DaemonStateStore, KeyRequest, Lease, Millis, SigningKey, StoreError, StoreResult};

/// A lease held as an exclusive lock on a file beside the database (`<database>.<name>.lease`):
/// the system frees it when the file is closed, however the holder ends.
struct FileLease {
    _file: File,
}

impl Lease for FileLease {
    fn still_held(&mut self) -> bool {
        true
    }
}

impl DaemonStateStore for SqliteStore {
    fn try_lease(&self, name: &str) -> StoreResult<Option<Box<dyn Lease>>> {
        let mut path = self.path.clone().into_os_string();
        path.push(format!(".{name}.lease"));
        // A file beside the database: the directory must be writable, as for the database.
        let path = std::path::PathBuf::from(path);
        let unavailable = |source: std::io::Error| StoreError::Io {
            action: "cannot open the lease file (the store's directory must be writable)",
            path: path.clone(),
            source,
        };
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(unavailable)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(FileLease { _file: file }))),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(unavailable(e)),
        }
    }

    fn signing_keys(&self, request: &KeyRequest<'_>) -> StoreResult<Vec<SigningKey>> {
        // One immediate transaction: concurrent callers queue, and the second finds the
        // first one's new key.
        self.write(|tx| {
            let newest: Option<Millis> = tx
                .prepare_cached("SELECT max(created_at) FROM signing_keys WHERE purpose = ?1")?
                .query_row([request.purpose], |r| r.get(0))?;
            if newest.is_none_or(|at| at < request.rotate_before) {
                tx.prepare_cached(
                    "INSERT INTO signing_keys (purpose, secret, created_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![
                    request.purpose,
                    request.candidate,
                    request.now
                ])?;
            }
            tx.prepare_cached(
                "DELETE FROM signing_keys WHERE purpose = ?1 AND EXISTS
                     (SELECT 1 FROM signing_keys AS n
                      WHERE n.purpose = ?1 AND n.id > signing_keys.id AND n.created_at < ?2)",
            )?
            .execute(params![request.purpose, request.keep_since])?;
            let mut stmt = tx.prepare_cached(
                "SELECT id, secret, created_at FROM signing_keys WHERE purpose = ?1
                 ORDER BY id DESC",
            )?;
            let keys = stmt
                .query_map([request.purpose], |r| {
                    Ok(SigningKey {
                        id: r.get(0)?,
                        secret: r.get(1)?,
                        created_at: r.get(2)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(keys)
        })
    }

    fn save_http_session(&self, session_id: &str, state: &str, now: Millis) -> StoreResult<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO http_sessions (session_id, state, created_at, seen_at)
                 VALUES (?1, ?2, ?3, ?3)
                 ON CONFLICT (session_id) DO UPDATE SET state = excluded.state,
                     seen_at = max(seen_at, excluded.seen_at)",
            )?
            .execute(params![session_id, state, now])?;
            Ok(())
        })
    }

    fn http_session(&self, session_id: &str, now: Millis) -> StoreResult<Option<String>> {
        self.write(|tx| {
            let state: Option<String> = tx
                .prepare_cached("SELECT state FROM http_sessions WHERE session_id = ?1")?
                .query_row([session_id], |r| r.get(0))
                .optional()?;
            if state.is_some() {
                tx.prepare_cached(
                    "UPDATE http_sessions SET seen_at = max(seen_at, ?2) WHERE session_id = ?1",
                )?
                .execute(params![session_id, now])?;
            }
            Ok(state)
        })
    }

    fn delete_http_session(&self, session_id: &str) -> StoreResult<bool> {
        self.write(|tx| {
            Ok(tx
                .prepare_cached("DELETE FROM http_sessions WHERE session_id = ?1")?
                .execute([session_id])?
                > 0)
        })
    }

    fn prune_http_sessions(&self, before: Millis) -> StoreResult<u64> {
        self.write(|tx| {
            Ok(tx
                .prepare_cached("DELETE FROM http_sessions WHERE seen_at < ?1")?
                .execute([before])? as u64)
        })
    }
}
