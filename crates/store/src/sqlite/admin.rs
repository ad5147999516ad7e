//! Verification, health and counts.

use rusqlite::OptionalExtension;

use super::{Fail, REQUIRED_TABLES, SCHEMA_VERSION, SqliteStore};
use crate::{ChangeFeed, Counts, Millis, StoreAdmin, StoreError, StoreResult, VerifyReport};

impl StoreAdmin for SqliteStore {
    fn verify(&self) -> StoreResult<VerifyReport> {
        self.read(|tx| {
            let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version > SCHEMA_VERSION {
                return Err(Fail::Store(StoreError::NewerSchema {
                    path: self.path.clone(),
                    found: version,
                    supported: SCHEMA_VERSION,
                }));
            }
            let mut tables = Vec::with_capacity(REQUIRED_TABLES.len());
            for &table in REQUIRED_TABLES {
                let found: Option<String> = tx
                    .query_row(
                        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                        [table],
                        |r| r.get(0),
                    )
                    .optional()?;
                if found.is_none() {
                    return Err(Fail::Store(StoreError::MissingTable {
                        path: self.path.clone(),
                        table,
                        version,
                    }));
                }
                tables.push(table);
            }
            let mut stmt = tx.prepare("PRAGMA integrity_check")?;
            let problems: Vec<String> = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<_, _>>()?;
            if problems.len() != 1 || problems[0] != "ok" {
                return Err(Fail::Store(StoreError::Corrupt {
                    path: self.path.clone(),
                    detail: format!("integrity check: {}", problems.join("; ")),
                }));
            }
            Ok(VerifyReport {
                schema_version: version,
                tables,
            })
        })
    }

    fn ping(&self) -> StoreResult<()> {
        if crate::no_wait::active() {
            return Err(crate::no_wait::refuse());
        }
        let conn = self.lock();
        conn.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
            .map_err(|e| self.err(e, None))?;
        Ok(())
    }

    fn counts(&self, now: Millis) -> StoreResult<Counts> {
        self.read(|tx| {
            let count = |sql: &str, now: Option<Millis>| -> Result<u64, Fail> {
                let n: i64 = match now {
                    Some(now) => tx.query_row(sql, [now], |r| r.get(0))?,
                    None => tx.query_row(sql, [], |r| r.get(0))?,
                };
                Ok(n.max(0) as u64)
            };
            Ok(Counts {
                // The counters, less what expired and is not pruned yet (an index range).
                active_messages: count(
                    "SELECT (SELECT coalesce(sum(messages), 0) FROM channel_stats)
                            - (SELECT count(*) FROM messages WHERE expires_at <= ?1)",
                    Some(now),
                )?,
                reminders: count("SELECT count(*) FROM reminders", None)?,
                conditions: count("SELECT count(*) FROM conditions", None)?,
                active_schedules: count(
                    "SELECT count(*) FROM schedules WHERE status = 'active'",
                    None,
                )?,
            })
        })
    }

    fn reads_without_waiting(&self) -> bool {
        true
    }

    fn in_one_transaction(&self, writes: bool, work: &mut dyn FnMut()) -> StoreResult<()> {
        self.one_transaction(writes, work)
    }

    fn prepare_exit(&self) {
        self.truncate_long_wal();
    }

    /// On Linux, a watch on the database's files ([`super::watch::FileFeed`]): commits wake
    /// the caller, and nothing runs while the store is quiet. Elsewhere `None` (poll
    /// [`StoreAdmin::change_version`]).
    fn changes(&self) -> StoreResult<Option<Box<dyn ChangeFeed>>> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let feed = super::watch::FileFeed::open(&self.path)?;
            Ok(Some(Box::new(feed)))
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        Ok(None)
    }

    fn change_version(&self) -> StoreResult<Option<u64>> {
        self.data_version().map(Some)
    }

    fn describe(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }
}
