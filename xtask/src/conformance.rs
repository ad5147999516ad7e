//! `cargo xtask conformance`: the official MCP conformance suite against the daemon's `/mcp`.
//!
//! Installs Node 22 and the suite (pinned) into `target/conformance/` with npm, builds and
//! starts `hooks-mcp-full` as a daemon on an ephemeral port, runs the suite with the
//! expected-failures baseline, and stops the daemon. With `--fixtures` it runs the suite
//! against the `conformance_fixtures` example of the `daemon` crate instead (the suite's fixture
//! tools, resources and prompts registered through the catalogue), whose baseline is empty. The run fails on any scenario that fails
//! without being listed in the baseline, and on any listed scenario that passes (a stale
//! entry).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The suite's npm package, pinned.
const SUITE: &str = "@modelcontextprotocol/conformance@0.1.16";
/// The suite needs Node 22 or newer; npm ships it as a package.
const NODE: &str = "node@22";

/// Options of `cargo xtask conformance`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Run only this scenario.
    #[arg(long)]
    scenario: Option<String>,
    /// The expected-failures baseline (default: xtask/conformance/expected-failures.yml).
    #[arg(long)]
    expected_failures: Option<PathBuf>,
    /// Run against the fixture server (the `daemon` crate's `conformance_fixtures` example) with
    /// its own baseline (xtask/conformance/expected-failures.fixtures.yml, empty).
    #[arg(long)]
    fixtures: bool,
    /// Use the release build of the daemon.
    #[arg(long)]
    release: bool,
    /// Print each check's details.
    #[arg(long)]
    verbose: bool,
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let root = workspace_root();
    let cache = root.join("target").join("conformance");
    let (node, suite) = install(&cache)?;
    let (daemon_bin, default_baseline) = if args.fixtures {
        (
            build_fixtures(&root, args.release)?,
            "xtask/conformance/expected-failures.fixtures.yml",
        )
    } else {
        (
            build_daemon(&root, args.release)?,
            "xtask/conformance/expected-failures.yml",
        )
    };
    let baseline = args
        .expected_failures
        .clone()
        .unwrap_or_else(|| root.join(default_baseline));
    anyhow::ensure!(
        baseline.is_file(),
        "--expected-failures: no baseline at {}",
        baseline.display()
    );

    let home = cache.join(format!("home-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    let mut daemon = Daemon::start(&daemon_bin, &home, &cache.join("daemon.log"))?;
    let url = format!("http://127.0.0.1:{}/mcp", daemon.port);
    eprintln!("conformance: {SUITE} against {url}");

    let mut suite_cmd = Command::new(&node);
    suite_cmd
        .arg(&suite)
        .args(["server", "--url", &url, "--expected-failures"])
        .arg(&baseline)
        .arg("-o")
        .arg(cache.join("results"));
    if let Some(scenario) = &args.scenario {
        suite_cmd.args(["--scenario", scenario]);
    }
    if args.verbose {
        suite_cmd.arg("--verbose");
    }
    // The suite's own report goes to a file: its per-check tallies (which count the baseline's
    // expected failures as failures) would read as a failing test run in CI logs.
    let report = cache.join("suite.log");
    let output = suite_cmd
        .current_dir(&cache)
        .output()
        .with_context(|| format!("running {}", node.display()));
    let stopped = daemon.stop();
    let _ = std::fs::remove_dir_all(&home);
    let output = output?;
    stopped?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    std::fs::write(&report, &text).with_context(|| format!("writing {}", report.display()))?;
    let passed = text
        .lines()
        .filter(|l| l.trim_start().starts_with('✓'))
        .count();
    let failed = text
        .lines()
        .filter(|l| l.trim_start().starts_with('✗'))
        .count();
    let status = output.status;
    if !status.success() {
        eprintln!("{text}");
        bail!(
            "the conformance suite failed ({status}): a scenario failed that the baseline does \
             not list, or a listed one passes now (then remove it from {}); the daemon's log \
             is in {}",
            baseline.display(),
            cache.join("daemon.log").display()
        );
    }
    eprintln!(
        "conformance: {passed} of {} scenarios pass; the other {failed} are listed in {} as \
         not applicable (full report: {})",
        passed + failed,
        baseline.display(),
        report.display()
    );
    Ok(())
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Installs Node 22 and the suite under `cache` unless the pinned versions are there; returns
/// the node binary and the suite's entry point.
fn install(cache: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let node = cache.join("node_modules/node/bin/node");
    let package = cache.join("node_modules/@modelcontextprotocol/conformance");
    let suite = package.join("dist/index.js");
    let wanted = SUITE.rsplit('@').next().unwrap_or_default();
    let installed = std::fs::read_to_string(package.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned));
    if node.is_file() && suite.is_file() && installed.as_deref() == Some(wanted) {
        return Ok((node, suite));
    }
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    eprintln!(
        "conformance: installing {NODE} and {SUITE} into {}",
        cache.display()
    );
    let status = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(cache)
        .args([NODE, SUITE])
        .status()
        .context("running npm (install Node.js and npm, any version, to fetch the suite)")?;
    if !status.success() {
        bail!("npm install {NODE} {SUITE} failed ({status})");
    }
    anyhow::ensure!(
        node.is_file(),
        "npm installed no node binary at {}",
        node.display()
    );
    anyhow::ensure!(
        suite.is_file(),
        "npm installed no suite at {}",
        suite.display()
    );
    Ok((node, suite))
}

/// Builds `hooks-mcp-full` and returns its path.
pub(crate) fn build_daemon(root: &Path, release: bool) -> anyhow::Result<PathBuf> {
    let dir = cargo_build(
        root,
        release,
        &["-p", "hooks-mcp", "--bin", "hooks-mcp-full"],
    )?;
    Ok(dir.join("hooks-mcp-full"))
}

/// Builds the `daemon` crate's `conformance_fixtures` example and returns its path.
fn build_fixtures(root: &Path, release: bool) -> anyhow::Result<PathBuf> {
    let what = ["-p", "daemon", "--example", "conformance_fixtures"];
    let dir = cargo_build(root, release, &what)?;
    Ok(dir.join("examples").join("conformance_fixtures"))
}

/// Runs `cargo build --quiet WHAT` (with `--release` when asked) and returns the profile's
/// output directory.
fn cargo_build(root: &Path, release: bool, what: &[&str]) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet"]).args(what);
    if release {
        cmd.arg("--release");
    }
    let status = cmd
        .current_dir(root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build {} failed ({status})", what.join(" "));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Ok(target.join(if release { "release" } else { "debug" }))
}

/// A daemon child process on an ephemeral loopback port.
pub(crate) struct Daemon {
    child: Child,
    /// The port it listens on.
    pub(crate) port: u16,
}

impl Daemon {
    /// Starts `bin serve` with its store in `home`, logging to `log`, and waits for its
    /// `listening on` line.
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
        let mut cmd = match cpus {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpus]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
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
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stderr = child.stderr.take().context("no stderr pipe")?;
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
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(port) => {
                let daemon = Daemon { child, port };
                daemon.wait_ready()?;
                Ok(daemon)
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "the daemon did not start listening; its log is in {}",
                    log.display()
                )
            }
        }
    }

    /// The daemon's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    fn wait_ready(&self) -> anyhow::Result<()> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if matches!(health_probe(addr), Ok((200, _))) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the daemon never became ready");
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

/// `GET /health` over a one-shot connection: the status code and body.
pub(crate) fn health_probe(addr: std::net::SocketAddr) -> std::io::Result<(u16, String)> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET /health HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    Ok((code, body.to_owned()))
}
