//! The backend-independent store suite: each test is a function of a [`Backend`], run once for
//! SQLite and once for PostgreSQL (see `store_suite.rs`).
//!
//! The PostgreSQL part runs on the server `HOOKS_MCP_TEST_DATABASE_URL` names (CI sets it);
//! when it is unset, on a private throwaway server that the first PostgreSQL test of this
//! process starts and that stops when the process ends (`test_support::pg::test_database_url`), if
//! PostgreSQL's server programs are installed; with neither, that part is skipped with a note.
//! Each test gets a fresh schema of its own, dropped afterwards.
//!
//! `model` is the store model test (random operation sequences against both backends and an
//! in-memory model, shrunk on disagreement); its module documentation says how to run more
//! cases.

pub(crate) mod admin;
pub(crate) mod channels;
pub(crate) mod daemon_state;
pub(crate) mod enforcement_conditions;
pub(crate) mod fleet;
pub(crate) mod lifecycle;
pub(crate) mod model;
pub(crate) mod multiprocess;
#[cfg(feature = "postgres")]
pub(crate) mod pg_only;
pub(crate) mod push;
pub(crate) mod scheduler;

use std::path::PathBuf;
use std::sync::Arc;

use store::{Opened, Store, StoreError};

/// A kind of store the suite runs against.
pub(crate) trait Backend: Sync {
    /// `sqlite` or `postgres`.
    fn name(&self) -> &'static str;
    /// A new, empty place for a store (a fresh directory; a fresh schema).
    fn location(&self) -> Box<dyn Location>;
}

/// One place a store lives, with raw access for checks the API does not offer.
pub(crate) trait Location: Send + Sync {
    /// Opens the store here.
    fn open(&self, create: bool) -> Result<(Arc<dyn Store>, Opened), StoreError>;
    /// Rows in `table`.
    fn count(&self, table: &str) -> i64;
    /// Runs one statement returning one integer.
    fn scalar(&self, sql: &str) -> i64;
    /// The schema version recorded in the database.
    fn schema_version(&self) -> u32;
    /// Overwrites the recorded schema version.
    fn set_schema_version(&self, version: u32);
    /// Drops a table behind the store's back.
    fn drop_table(&self, table: &str);
    /// Runs statements behind the store's back.
    fn execute(&self, sql: &str);
    /// How a child process finds this store (see [`open_spec`]).
    fn spec(&self) -> String;
}

/// A created store and its location (kept alive together).
pub(crate) struct Fixture {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) location: Box<dyn Location>,
}

impl std::ops::Deref for Fixture {
    type Target = dyn Store;

    fn deref(&self) -> &Self::Target {
        &*self.store
    }
}

impl Fixture {
    /// Another handle on the same store, with connections of its own (as another process has).
    pub(crate) fn open_another(&self) -> Arc<dyn Store> {
        self.location.open(false).unwrap().0
    }

    /// Rows in `table`.
    pub(crate) fn count(&self, table: &str) -> i64 {
        self.location.count(table)
    }
}

/// A fresh store of `backend`.
pub(crate) fn fresh(backend: &dyn Backend) -> Fixture {
    let location = backend.location();
    let (store, opened) = location
        .open(true)
        .unwrap_or_else(|e| panic!("cannot create a {} store: {e}", backend.name()));
    assert_eq!(opened, Opened::Created);
    Fixture { store, location }
}

/// Opens the store a [`Location::spec`] names (in a child process).
pub(crate) fn open_spec(spec: &str) -> Arc<dyn Store> {
    match spec.split_once(':') {
        Some(("sqlite", path)) => Arc::new(
            store::SqliteStore::open(
                &store::StoreLocation::at(path),
                &store::OpenOptions::default(),
            )
            .unwrap()
            .0,
        ),
        #[cfg(feature = "postgres")]
        Some(("postgres", rest)) => postgres::open_spec(rest).unwrap().0,
        _ => panic!("unknown store spec `{spec}`"),
    }
}

// --- SQLite -----------------------------------------------------------------------------------

/// The embedded backend, in a temporary directory per test.
pub(crate) struct Sqlite;

impl Backend for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn location(&self) -> Box<dyn Location> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/state.db");
        Box::new(SqliteLocation { _dir: dir, path })
    }
}

struct SqliteLocation {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl SqliteLocation {
    fn raw(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(&self.path).unwrap()
    }
}

impl Location for SqliteLocation {
    fn open(&self, create: bool) -> Result<(Arc<dyn Store>, Opened), StoreError> {
        let options = store::OpenOptions {
            create,
            ..store::OpenOptions::default()
        };
        store::SqliteStore::open(&store::StoreLocation::at(&self.path), &options)
            .map(|(s, o)| (Arc::new(s) as Arc<dyn Store>, o))
    }

    fn count(&self, table: &str) -> i64 {
        self.scalar(&format!("SELECT count(*) FROM {table}"))
    }

    fn scalar(&self, sql: &str) -> i64 {
        self.raw().query_row(sql, [], |r| r.get(0)).unwrap()
    }

    fn schema_version(&self) -> u32 {
        self.raw()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap()
    }

    fn set_schema_version(&self, version: u32) {
        self.raw()
            .execute_batch(&format!("PRAGMA user_version = {version}"))
            .unwrap();
    }

    fn drop_table(&self, table: &str) {
        self.raw()
            .execute_batch(&format!("DROP TABLE {table}"))
            .unwrap();
    }

    fn execute(&self, sql: &str) {
        self.raw().execute_batch(sql).unwrap();
    }

    fn spec(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }
}

// --- PostgreSQL -------------------------------------------------------------------------------

#[cfg(feature = "postgres")]
pub(crate) use self::postgres::{Postgres, url_for};

#[cfg(feature = "postgres")]
mod postgres {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use store::{Opened, PgOptions, PostgresStore, Store, StoreError};

    use super::{Backend, Location};

    /// The suite's PostgreSQL server (see [`test_support::pg::test_database_url`]), a fresh
    /// schema per test.
    pub(crate) struct Postgres {
        url: String,
    }

    impl Postgres {
        /// The server, or `None` when there is none (the PostgreSQL part is skipped; see
        /// `postgres_part_status`). A named but unreachable server fails the test.
        pub(crate) fn from_env() -> Option<Self> {
            test_support::pg::test_database_url().map(|url| Postgres { url })
        }

        /// The server's URL (with its credentials).
        pub(crate) fn url(&self) -> &str {
            &self.url
        }

        fn admin(&self) -> postgres::Client {
            admin(&self.url)
        }
    }

    fn admin(url: &str) -> postgres::Client {
        postgres::Client::connect(url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("the suite's PostgreSQL server cannot be reached: {e}"))
    }

    /// `url` with `search_path` set to `schema` (in the start-up options).
    pub(crate) fn url_for(url: &str, schema: &str) -> String {
        test_support::pg::url_with_schema(url, schema)
    }

    /// Opens the store a [`Location::spec`] names after `postgres:` (`<schema> <url>`), in a
    /// child process: the child reaches the parent's server, whichever it is.
    pub(crate) fn open_spec(spec: &str) -> Result<(Arc<dyn Store>, Opened), StoreError> {
        let (schema, url) = spec
            .split_once(' ')
            .unwrap_or_else(|| panic!("bad PostgreSQL store spec `{spec}`"));
        let options = PgOptions {
            create: false,
            pool_size: 4,
            ..PgOptions::default()
        };
        PostgresStore::open(&url_for(url, schema), &options)
            .map(|(s, o)| (Arc::new(s) as Arc<dyn Store>, o))
    }

    impl Backend for Postgres {
        fn name(&self) -> &'static str {
            "postgres"
        }

        fn location(&self) -> Box<dyn Location> {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            let schema = format!(
                "t_{}_{}_{nanos}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            self.admin()
                .batch_execute(&format!("CREATE SCHEMA {schema}"))
                .unwrap();
            Box::new(PgLocation {
                url: self.url.clone(),
                schema,
            })
        }
    }

    struct PgLocation {
        url: String,
        schema: String,
    }

    impl PgLocation {
        fn raw(&self) -> postgres::Client {
            let mut client = admin(&self.url);
            client
                .batch_execute(&format!("SET search_path = {}", self.schema))
                .unwrap();
            client
        }
    }

    impl Drop for PgLocation {
        fn drop(&mut self) {
            // Best effort: a failed test may leave connections; the schema goes regardless.
            if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
                let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema));
            }
        }
    }

    impl Location for PgLocation {
        fn open(&self, create: bool) -> Result<(Arc<dyn Store>, Opened), StoreError> {
            let options = PgOptions {
                create,
                pool_size: 4,
                ..PgOptions::default()
            };
            PostgresStore::open(&url_for(&self.url, &self.schema), &options)
                .map(|(s, o)| (Arc::new(s) as Arc<dyn Store>, o))
        }

        fn count(&self, table: &str) -> i64 {
            self.scalar(&format!("SELECT count(*) FROM {table}"))
        }

        fn scalar(&self, sql: &str) -> i64 {
            self.raw().query_one(sql, &[]).unwrap().get(0)
        }

        fn schema_version(&self) -> u32 {
            let v: i32 = self
                .raw()
                .query_one("SELECT schema_version FROM hooks_mcp_meta", &[])
                .unwrap()
                .get(0);
            u32::try_from(v).unwrap()
        }

        fn set_schema_version(&self, version: u32) {
            self.raw()
                .execute(
                    "UPDATE hooks_mcp_meta SET schema_version = $1",
                    &[&i32::try_from(version).unwrap()],
                )
                .unwrap();
        }

        fn drop_table(&self, table: &str) {
            self.raw()
                .batch_execute(&format!("DROP TABLE {table} CASCADE"))
                .unwrap();
        }

        fn execute(&self, sql: &str) {
            self.raw().batch_execute(sql).unwrap();
        }

        fn spec(&self) -> String {
            format!("postgres:{} {}", self.schema, self.url)
        }
    }
}
