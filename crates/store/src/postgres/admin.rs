//! Verification, health, counts and the change feed.

use super::{Fail, PostgresStore, sqlstate, to_u64};
use crate::sqlite::REQUIRED_TABLES;
use crate::{
    ChangeFeed, Counts, Millis, SCHEMA_VERSION, StoreAdmin, StoreError, StoreResult, VerifyReport,
};

impl StoreAdmin for PostgresStore {
    /// Checks the schema version and the required tables (PostgreSQL guards its own pages:
    /// there is no file-level integrity check to run).
    fn verify(&self) -> StoreResult<VerifyReport> {
        self.run(|db| {
            let version = match db.query_opt("SELECT schema_version FROM hooks_mcp_meta", &[]) {
                Ok(row) => row
                    .map(|r| r.try_get::<_, i32>(0))
                    .transpose()?
                    .unwrap_or(0),
                Err(e) if sqlstate(&e) == Some("42P01") => 0,
                Err(e) => return Err(Fail::Pg(e)),
            };
            let version = u32::try_from(version).unwrap_or(0);
            if version > SCHEMA_VERSION {
                return Err(Fail::Store(StoreError::NewerSchema {
                    path: self.path(),
                    found: version,
                    supported: SCHEMA_VERSION,
                }));
            }
            let wanted: Vec<&str> = REQUIRED_TABLES.to_vec();
            let missing: Vec<String> = db
                .query(
                    "SELECT t FROM unnest($1::text[]) WITH ORDINALITY AS w (t, n)
                     WHERE to_regclass(quote_ident(t)) IS NULL ORDER BY n",
                    &[&wanted],
                )?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            if let Some(first) = missing.first() {
                let table = REQUIRED_TABLES
                    .iter()
                    .copied()
                    .find(|t| t == first)
                    .unwrap_or("messages");
                return Err(Fail::Store(StoreError::MissingTable {
                    path: self.path(),
                    table,
                    version,
                }));
            }
            Ok(VerifyReport {
                schema_version: version,
                tables: REQUIRED_TABLES.to_vec(),
            })
        })
    }

    fn ping(&self) -> StoreResult<()> {
        self.run_quick(|db| {
            db.query_one("SELECT 1", &[])?;
            Ok(())
        })
    }

    fn counts(&self, now: Millis) -> StoreResult<Counts> {
        self.run(|db| {
            // One statement: one snapshot.
            let row = db.query_one(
                // The counters, less what expired and is not pruned yet (an index range).
                "SELECT (SELECT coalesce(sum(messages), 0)::bigint FROM channel_stats)
                            - (SELECT count(*) FROM messages WHERE expires_at <= $1),
                        (SELECT count(*) FROM reminders),
                        (SELECT count(*) FROM conditions),
                        (SELECT count(*) FROM schedules WHERE status = 'active')",
                &[&now],
            )?;
            Ok(Counts {
                active_messages: to_u64(row.try_get(0)?, "count")?,
                reminders: to_u64(row.try_get(1)?, "count")?,
                conditions: to_u64(row.try_get(2)?, "count")?,
                active_schedules: to_u64(row.try_get(3)?, "count")?,
            })
        })
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }

    /// LISTEN on a dedicated connection: publications (including schedule firings) and
    /// schedule changes notify it on commit.
    fn changes(&self) -> StoreResult<Option<Box<dyn ChangeFeed>>> {
        Ok(Some(Box::new(self.listen()?)))
    }

    /// Counted by a listening connection of the store's own, opened on the first call.
    fn change_version(&self) -> StoreResult<Option<u64>> {
        Ok(self.version_feed().current())
    }
}
