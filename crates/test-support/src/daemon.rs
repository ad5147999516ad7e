//! A daemon under test: a child process whose stderr is collected line by line, found
//! listening through its `listening on http://ADDR` log line.
//!
//! [`Daemon::spawn`] starts any command (such as `hooks-mcp-full serve`). With the
//! `in-process-daemon` feature, [`Daemon::start`] re-runs the test binary itself with the
//! test's name and `HOOKS_MCP_TEST_DAEMON_CHILD=1`, and the test's first call
//! ([`child_entry`]) runs `daemon::serve_from_env` in that child, so that exit codes, signals
//! and the start-up log are the real ones.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::PATIENCE;
use crate::http::http;

/// The daemon's stderr, line by line, as it arrives.
#[derive(Debug, Default)]
pub struct Log {
    lines: Mutex<Vec<String>>,
    grew: Condvar,
}

impl Log {
    fn lines(&self) -> MutexGuard<'_, Vec<String>> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Everything so far.
    pub fn text(&self) -> String {
        self.lines().join("\n")
    }

    /// Waits (up to [`PATIENCE`]) for a line containing `needle`.
    pub fn wait_for(&self, needle: &str) -> Option<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut lines = self.lines();
        loop {
            if let Some(line) = lines.iter().find(|l| l.contains(needle)) {
                return Some(line.clone());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            lines = self
                .grew
                .wait_timeout(lines, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Collects `child`'s stderr (which must be piped) into a new log; the thread ends with
    /// the stream, when the log is complete.
    ///
    /// # Panics
    /// When `child`'s stderr is not piped.
    pub fn collect(child: &mut Child) -> (Arc<Log>, JoinHandle<()>) {
        let log = Arc::new(Log::default());
        let stderr = child.stderr.take().expect("the daemon's stderr is piped");
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lines().push(line);
                sink.grew.notify_all();
            }
        });
        (log, reader)
    }
}

/// The address in a `listening on http://ADDR` log line.
pub fn listening_addr(line: &str) -> Option<SocketAddr> {
    line.split("listening on http://")
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

/// A daemon child process, killed when dropped.
#[derive(Debug)]
pub struct Daemon {
    child: Mutex<Child>,
    /// Its first listening address.
    pub addr: SocketAddr,
    /// Its stderr.
    pub log: Arc<Log>,
}

impl Daemon {
    /// Starts `command` with its stderr piped (the rest is the caller's) and waits until it
    /// logs `listening on http://ADDR`.
    ///
    /// # Panics
    /// When it cannot be started or does not listen within [`PATIENCE`] (with its log).
    pub fn spawn(mut command: Command) -> Daemon {
        let mut child = command
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the daemon {command:?}: {e}"));
        let (log, _) = Log::collect(&mut child);
        let Some(addr) = log
            .wait_for("listening on http://")
            .as_deref()
            .and_then(listening_addr)
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the daemon did not start listening:\n{}", log.text());
        };
        Daemon {
            child: Mutex::new(child),
            addr,
            log,
        }
    }

    fn child(&self) -> MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The daemon's pid.
    pub fn pid(&self) -> u32 {
        self.child().id()
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Its stderr so far.
    pub fn text(&self) -> String {
        self.log.text()
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends `signal` (e.g. `TERM`) to the daemon.
    ///
    /// # Panics
    /// When `kill` fails.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("kill: {e}"));
        assert!(status.success());
    }

    /// Waits for the daemon to exit.
    ///
    /// # Panics
    /// When it does not within [`PATIENCE`] (with its log).
    pub fn wait_exit(&self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self
                .child()
                .try_wait()
                .unwrap_or_else(|e| panic!("wait: {e}"))
            {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not exit:\n{}",
                self.log.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `/health` answers 200 (the daemon is ready).
    ///
    /// # Panics
    /// When it does not within [`PATIENCE`] (with its log).
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + PATIENCE;
        while http(self.addr, "GET", "/health", &[], "").status != 200 {
            assert!(
                Instant::now() < deadline,
                "never ready:\n{}",
                self.log.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the daemon and waits for it.
    pub fn stop(&self) {
        let mut child = self.child();
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(feature = "in-process-daemon")]
pub use in_process::{child_entry, run_to_exit};

#[cfg(feature = "in-process-daemon")]
mod in_process {
    use std::path::Path;
    use std::process::{Command, ExitStatus, Stdio};
    use std::time::{Duration, Instant};

    use super::{Daemon, Log, listening_addr};
    use crate::PATIENCE;
    use crate::http::try_http;

    /// Set in a daemon child: the test function runs the daemon instead of testing.
    const CHILD_ENV: &str = "HOOKS_MCP_TEST_DAEMON_CHILD";

    /// In a daemon child: runs the daemon as `hooks-mcp-full serve` would and exits with its
    /// status. In the test process: returns at once. Every test that spawns a daemon calls it
    /// first (through [`Daemon::start`] or [`run_to_exit`], or directly when it prepares
    /// anything before its first daemon).
    pub fn child_entry() {
        if std::env::var_os(CHILD_ENV).is_none() {
            return;
        }
        // Leave when the test process goes away (its end of our stdin closes), so no daemon
        // outlives a crashed test run.
        std::thread::spawn(|| {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            std::process::exit(0);
        });
        // The daemon's own subscriber and default, as `hooks-mcp-full serve` installs them.
        server_full::logging::init("info,rmcp=warn");
        // A thread of its own: the test function may run inside a tokio runtime, and the
        // daemon builds its own.
        let daemon = std::thread::spawn(daemon::serve_from_env);
        let code = match daemon.join() {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                protocol_lite::diag!("hooks-mcp: error: {e}");
                1
            }
            Err(_) => 101,
        };
        std::process::exit(code);
    }

    /// The command that re-runs this test binary as a daemon for the test named `test`, with
    /// its store in `home` and `env` on top of a cleared environment.
    fn command(test: &str, home: &Path, env: &[(&str, &str)]) -> Command {
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the test binary: {e}"));
        let mut cmd = Command::new(exe);
        cmd.args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env(CHILD_ENV, "1")
            .env("HOOKS_MCP_HOME", home)
            .env("MCP_TRANSPORT", "streamable-http")
            .env("MCP_HOST", "127.0.0.1")
            .env("MCP_PORT", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    impl Daemon {
        /// Starts a daemon for the test named `test` (its full path, e.g. `lifecycle::name`)
        /// with its store in `home`, and waits until it listens. In the child, runs the daemon
        /// instead.
        ///
        /// # Panics
        /// When it does not listen within [`PATIENCE`] (with its log).
        pub fn start(test: &str, home: &Path, env: &[(&str, &str)]) -> Daemon {
            child_entry();
            Daemon::spawn(command(test, home, env))
        }
    }

    /// Runs a daemon for the test named `test` that is expected to stop by itself; returns
    /// its exit status and stderr, and the `/health` answers seen while it ran.
    ///
    /// # Panics
    /// When it cannot be started or does not exit within [`PATIENCE`].
    pub fn run_to_exit(
        test: &str,
        home: &Path,
        env: &[(&str, &str)],
    ) -> (ExitStatus, String, Vec<u16>) {
        child_entry();
        let mut child = command(test, home, env)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the daemon: {e}"));
        let (log, reader) = Log::collect(&mut child);
        let deadline = Instant::now() + PATIENCE;
        let mut seen = Vec::new();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("wait: {e}")) {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not exit:\n{}",
                log.text()
            );
            let text = log.text();
            let addr = text.lines().find_map(listening_addr);
            if let Some(reply) = addr.and_then(|a| try_http(a, "GET", "/health", &[], "")) {
                seen.push(reply.status);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        // The reader ends at the end of the process's stderr: then the log is complete.
        let _ = reader.join();
        (status, log.text(), seen)
    }
}
