//! A network daemon (`hooks-mcp-full serve`, or an example serving the same way) as a child
//! process on an ephemeral loopback port, its stderr kept in a log file; stopped with SIGTERM,
//! killed when dropped.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How long a daemon may take to listen, and then to become ready.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A daemon child process on an ephemeral loopback port.
pub(crate) struct Daemon {
    child: Child,
    /// The port it listens on.
    pub(crate) port: u16,
}

impl Daemon {
    /// Starts `bin serve` with its store in `home`, logging to `log`, and waits until it
    /// listens and answers `/health` with 200.
    pub(crate) fn start(bin: &Path, home: &Path, log: &Path) -> anyhow::Result<Daemon> {
        Daemon::start_with(bin, home, log, &[], None)
    }

    /// [`Daemon::start`] with extra environment, optionally pinned to CPUs with `taskset`.
    pub(crate) fn start_with(
        bin: &Path,
        home: &Path,
        log: &Path,
        env: &[(&str, &str)],
        cpus: Option<&str>,
    ) -> anyhow::Result<Daemon> {
        Daemon::start_configured(bin, home, log, cpus, |cmd| {
            cmd.envs(env.iter().copied());
        })
    }

    /// [`Daemon::start`], with `configure` adjusting the command (environment set or removed)
    /// after the defaults: streamable HTTP on 127.0.0.1, an ephemeral port, no token.
    pub(crate) fn start_configured(
        bin: &Path,
        home: &Path,
        log: &Path,
        cpus: Option<&str>,
        configure: impl FnOnce(&mut Command),
    ) -> anyhow::Result<Daemon> {
        let mut cmd = pinned_command(bin, cpus);
        cmd.arg("serve")
            .env("MCP_TRANSPORT", "streamable-http")
            .env("MCP_HOST", "127.0.0.1")
            .env("MCP_PORT", "0")
            .env("HOOKS_MCP_HOME", home)
            .env_remove("HOOKS_MCP_TOKEN")
            .env_remove("HOOKS_MCP_TOKEN_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        configure(&mut cmd);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stderr = child.stderr.take().context("no stderr pipe")?;
        let port = match log_and_find_port(stderr, log)?.recv_timeout(START_TIMEOUT) {
            Ok(port) => port,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "{} did not start listening; its log is in {}",
                    bin.display(),
                    log.display()
                )
            }
        };
        let daemon = Daemon { child, port };
        daemon.wait_ready(log)?;
        Ok(daemon)
    }

    /// The daemon's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The address it listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn wait_ready(&self, log: &Path) -> anyhow::Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if matches!(
                daemon::probe_health(self.addr(), None, Duration::from_secs(5)),
                Ok((200, _))
            ) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the daemon never became ready; its log is in {}",
                    log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then waits for a clean exit (kills it after 20 s).
    pub(crate) fn stop(&mut self) -> anyhow::Result<()> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait()? {
                anyhow::ensure!(status.success(), "the daemon exited with {status}");
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                bail!("the daemon did not stop within 20 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Copies the daemon's stderr into `log` on a thread of its own; the receiver gets the port of
/// its `listening on http://…` line.
fn log_and_find_port(
    stderr: std::process::ChildStderr,
    log: &Path,
) -> anyhow::Result<mpsc::Receiver<u16>> {
    let mut file =
        std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = writeln!(file, "{line}");
            if let Some(port) = line
                .split("listening on http://")
                .nth(1)
                .and_then(|addr| addr.trim().rsplit(':').next())
                .and_then(|p| p.parse::<u16>().ok())
            {
                let _ = tx.send(port);
            }
        }
    });
    Ok(rx)
}

/// The last `lines` lines of the log at `log` (empty when it cannot be read).
pub(crate) fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(lines).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// A command running `bin`, on the CPUs `cpus` names (a `taskset` list) when some.
pub(crate) fn pinned_command(bin: &Path, cpus: Option<&str>) -> Command {
    match cpus {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpus]).arg(bin);
            c
        }
        None => Command::new(bin),
    }
}
