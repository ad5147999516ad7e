//! Throwaway PostgreSQL servers for tests.
//!
//! [`PrivateServer`] is a server a test owns, so that it can stop and start it.
//! [`test_database_url`] is the server a test binary's PostgreSQL tests share: the one
//! `HOOKS_MCP_TEST_DATABASE_URL` names, else one private server started on first use and
//! stopped when the test process ends, however it ends (see `Watchdog`). [`Database`] is a
//! fresh schema on a server of the test's own (or on the named server), dropped afterwards.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

/// Environment variable naming the PostgreSQL server of the PostgreSQL tests.
pub const TEST_DATABASE_URL_ENV: &str = "HOOKS_MCP_TEST_DATABASE_URL";

/// Environment variable naming the directory of PostgreSQL's server programs (`initdb`,
/// `pg_ctl`); without it the newest `/usr/lib/postgresql/<version>/bin` is used.
pub const BINDIR_ENV: &str = "PG_CI_BINDIR";

/// A throwaway PostgreSQL server of this test's own, so that it can be stopped and started.
#[derive(Debug)]
pub struct PrivateServer {
    /// The directory of the server programs it runs.
    pub bindir: PathBuf,
    /// Its directory: the cluster (`data`), the log and the Unix socket.
    pub dir: tempfile::TempDir,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Stops the server and removes its directory when this value or the process goes.
    watchdog: Option<Watchdog>,
}

/// Whether `dir` holds the server programs a [`PrivateServer`] runs.
fn has_server_programs(dir: &Path) -> bool {
    ["initdb", "pg_ctl", "postgres"]
        .iter()
        .all(|p| dir.join(p).is_file())
}

/// Where PostgreSQL's server programs are: `PG_CI_BINDIR` when set (`None` when it lacks
/// them), else the newest `/usr/lib/postgresql/<version>/bin`.
pub fn server_bindir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(BINDIR_ENV) {
        let dir = PathBuf::from(dir);
        return has_server_programs(&dir).then_some(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, p)| has_server_programs(p))
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p)
}

/// What a test says on stderr when it skips for want of a PostgreSQL server.
pub fn no_server_note(what: &str) -> String {
    format!(
        "note: {TEST_DATABASE_URL_ENV} is unset and no PostgreSQL server programs were found \
         ({BINDIR_ENV}, or /usr/lib/postgresql/<version>/bin): {what} not run; install \
         PostgreSQL's server package, or locally `source .ci/postgres`\n"
    )
}

/// Writes `text` straight to stderr (the test harness captures `eprintln!`), ignoring
/// failures.
pub fn note(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// `HOOKS_MCP_TEST_DATABASE_URL` when it is set and not blank.
pub fn named_database_url() -> Option<String> {
    std::env::var(TEST_DATABASE_URL_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// The server this test binary's PostgreSQL tests share: `HOOKS_MCP_TEST_DATABASE_URL` when
/// set; else a private throwaway server, started on the first call (once per process, the
/// calls in between wait) and stopped when the process ends; `None` when neither exists.
///
/// # Panics
/// When the server programs exist but the server cannot be started (every caller panics with
/// the same reason).
pub fn test_database_url() -> Option<String> {
    if let Some(url) = named_database_url() {
        return Some(url);
    }
    static SHARED: OnceLock<Option<Result<PrivateServer, String>>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| server_bindir().map(PrivateServer::try_start));
    match shared.as_ref()? {
        Ok(server) => Some(server.url()),
        Err(reason) => panic!("cannot start a private PostgreSQL server: {reason}"),
    }
}

/// Whether [`test_database_url`] starts a private server (the variable is unset).
pub fn uses_private_server() -> bool {
    named_database_url().is_none() && server_bindir().is_some()
}

/// `url` with `search_path` set to `schema` (in the start-up options).
pub fn url_with_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}

/// A schema name no other test of any process picks: `prefix`, the process id, a counter and
/// the clock's nanoseconds.
pub fn unique_schema(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A process that outlives nothing: it waits for end-of-file on its standard input (a pipe
/// whose only writer is this process, close-on-exec), then stops the server immediately and
/// removes its directory. The pipe closes when the [`PrivateServer`] is dropped or when the
/// process ends in any way (a static is never dropped; `kill -9` runs no destructor), so no
/// server outlives its test process. It ignores the terminal's signals so that a Ctrl-C still
/// lets it clean up.
#[derive(Debug)]
struct Watchdog {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Watchdog {
    fn spawn(server: &PrivateServer) -> Result<Watchdog, String> {
        let stop = server.command_line("pg_ctl");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(
                "trap '' INT TERM HUP QUIT; read -r _; \
                 \"$@\" -D \"$PG_WATCHDOG_DIR/data\" -m immediate -w stop >/dev/null 2>&1; \
                 rm -rf \"$PG_WATCHDOG_DIR\"",
            )
            .arg("pg-watchdog")
            .args(stop)
            .env("PG_WATCHDOG_DIR", server.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start the server's watchdog (sh): {e}"))?;
        let stdin = child.stdin.take();
        Ok(Watchdog { child, stdin })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // End of file: the watchdog stops the server and removes its directory; wait for it.
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.wait();
    }
}

/// Whether this process runs as root (the server refuses to; it then runs as `postgres`).
pub fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

impl PrivateServer {
    /// The words that run `program` of the server's installation as a user the server
    /// accepts.
    fn command_line(&self, program: &str) -> Vec<std::ffi::OsString> {
        let program = self.bindir.join(program).into_os_string();
        if is_root() {
            // The server refuses to run as root.
            vec![
                "runuser".into(),
                "-u".into(),
                "postgres".into(),
                "--".into(),
                program,
            ]
        } else {
            vec![program]
        }
    }

    /// `program` of the server's installation, run as a user the server accepts.
    pub fn command(&self, program: &str) -> Command {
        let words = self.command_line(program);
        let mut c = Command::new(&words[0]);
        c.args(&words[1..]);
        c
    }

    /// Runs `program` with `args`.
    ///
    /// # Panics
    /// When it cannot be run or fails (with its output).
    pub fn run(&self, program: &str, args: &[&str]) {
        if let Err(e) = self.try_run(program, args) {
            panic!("{e}");
        }
    }

    fn try_run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let out = self
            .command(program)
            .args(args)
            .output()
            .map_err(|e| format!("{program}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} {args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// The cluster's data directory.
    pub fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// Creates and starts a server (see [`PrivateServer::try_start`]).
    ///
    /// # Panics
    /// When it cannot.
    pub fn start(bindir: PathBuf) -> Self {
        Self::try_start(bindir).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Creates a cluster in a temporary directory (user `hooks`, trust authentication) and
    /// starts it on 127.0.0.1 and an ephemeral port, with a watchdog that stops it when this
    /// value is dropped or the test process ends.
    pub fn try_start(bindir: PathBuf) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        if is_root() {
            let status = Command::new("chown")
                .args(["postgres:", &dir.path().display().to_string()])
                .status()
                .map_err(|e| format!("chown: {e}"))?;
            if !status.success() {
                return Err(format!(
                    "chown postgres: {}: {status}",
                    dir.path().display()
                ));
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port on 127.0.0.1: {e}"))?
            .port();
        let mut server = PrivateServer {
            bindir,
            dir,
            port,
            watchdog: None,
        };
        // Before anything is started: whatever happens next, the watchdog cleans up.
        server.watchdog = Some(Watchdog::spawn(&server)?);
        let data = server.data();
        server.try_run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "hooks",
                "-A",
                "trust",
                "--no-sync",
                "--no-instructions",
            ],
        )?;
        server.try_up()?;
        Ok(server)
    }

    /// Starts the (stopped) server again, on the same port.
    ///
    /// # Panics
    /// When it cannot.
    pub fn up(&self) {
        if let Err(e) = self.try_up() {
            panic!("{e}");
        }
    }

    fn try_up(&self) -> Result<(), String> {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections=200",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.try_run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log,
                "-w",
                "-o",
                &options,
                "start",
            ],
        )
    }

    /// Stops the server (fast shutdown) and waits until it is down.
    ///
    /// # Panics
    /// When it cannot.
    pub fn down(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }

    /// Its URL: user `hooks`, database `postgres`, on 127.0.0.1.
    pub fn url(&self) -> String {
        format!("postgres://hooks@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        // The watchdog stops the server and removes the directory (before `dir` is dropped).
        match self.watchdog.take() {
            Some(watchdog) => drop(watchdog),
            None => {
                let data = self.data();
                let _ = self
                    .command("pg_ctl")
                    .args(["-D", &data, "-m", "immediate", "-w", "stop"])
                    .output();
            }
        }
    }
}

/// A fresh schema for one test, dropped (with everything in it) when this value goes: on a
/// server of the test's own when PostgreSQL's server programs are installed (whether
/// `HOOKS_MCP_TEST_DATABASE_URL` is set or not, so that the test can restart it), else on the
/// server that variable names.
#[derive(Debug)]
pub struct Database {
    admin_url: String,
    schema: String,
    // Declared last: stopped after the schema is dropped.
    server: Option<PrivateServer>,
}

impl Database {
    /// A fresh schema named after `prefix`, on a server of the test's own when the server
    /// programs are installed, else on the server `HOOKS_MCP_TEST_DATABASE_URL` names; `None`
    /// with neither.
    ///
    /// # Panics
    /// When the server cannot be started or reached.
    pub fn new(prefix: &str) -> Option<Database> {
        let server = server_bindir().map(PrivateServer::start);
        let admin_url = match &server {
            Some(s) => s.url(),
            None => named_database_url()?,
        };
        Some(Database::create(admin_url, prefix, server))
    }

    /// A fresh schema named after `prefix` on the server the test binary's PostgreSQL tests
    /// share ([`test_database_url`]); `None` when there is none.
    ///
    /// # Panics
    /// When the server cannot be started or reached.
    pub fn shared(prefix: &str) -> Option<Database> {
        Some(Database::create(test_database_url()?, prefix, None))
    }

    fn create(admin_url: String, prefix: &str, server: Option<PrivateServer>) -> Database {
        let db = Database {
            admin_url,
            schema: unique_schema(prefix),
            server,
        };
        db.client()
            .batch_execute(&format!("CREATE SCHEMA {}", db.schema))
            .unwrap_or_else(|e| panic!("CREATE SCHEMA {}: {e}", db.schema));
        db
    }

    /// The store's URL: the server, with the schema first on the `search_path`.
    pub fn url(&self) -> String {
        url_with_schema(&self.admin_url, &self.schema)
    }

    /// The server's URL (no schema set).
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// The schema's name.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The server, when it is the test's own (it can be stopped and started).
    pub fn server(&self) -> Option<&PrivateServer> {
        self.server.as_ref()
    }

    /// A new connection to the server (no schema set).
    ///
    /// # Panics
    /// When the server cannot be reached.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.admin_url, postgres::NoTls)
            .unwrap_or_else(|e| panic!("the test's PostgreSQL server cannot be reached: {e}"))
    }

    /// A new connection with the schema as its `search_path`.
    ///
    /// # Panics
    /// When the server cannot be reached.
    pub fn schema_client(&self) -> postgres::Client {
        let mut client = self.client();
        client
            .batch_execute(&format!("SET search_path = {}", self.schema))
            .unwrap_or_else(|e| panic!("SET search_path: {e}"));
        client
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // Best effort: a failed test may leave connections; the schema goes regardless.
        if let Ok(mut client) = postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema));
        }
    }
}
