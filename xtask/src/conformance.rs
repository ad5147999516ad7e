//! `cargo xtask conformance`: the official MCP conformance suite against the daemon's `/mcp`.
//!
//! Installs Node 22 and the suite (pinned) into `target/conformance/` with npm, builds and
//! starts `hooks-mcp-full` as a daemon on an ephemeral port, runs the suite with the
//! expected-failures baseline, and stops the daemon. With `--fixtures` it runs the suite
//! against the `conformance_fixtures` example of the `daemon` crate instead (the suite's fixture
//! tools, resources and prompts registered through the catalogue), whose baseline is empty. The run fails on any scenario that fails
//! without being listed in the baseline, and on any listed scenario that passes (a stale
//! entry).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::util::cargo::{self, Profile};
use crate::util::daemon::Daemon;
use crate::util::paths;

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
    let cache = paths::target_dir().join("conformance");
    let (node, suite) = install(&cache)?;
    let profile = Profile::debug_if(!args.release);
    let (daemon_bin, default_baseline) = if args.fixtures {
        (
            build_fixtures(profile)?,
            "xtask/conformance/expected-failures.fixtures.yml",
        )
    } else {
        (
            cargo::build_daemon(profile)?,
            "xtask/conformance/expected-failures.yml",
        )
    };
    let baseline = args
        .expected_failures
        .clone()
        .unwrap_or_else(|| paths::in_workspace(default_baseline));
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

/// Builds the `daemon` crate's `conformance_fixtures` example and returns its path.
fn build_fixtures(profile: Profile) -> anyhow::Result<PathBuf> {
    cargo::build(
        profile,
        &["-p", "daemon", "--example", "conformance_fixtures"],
    )?;
    Ok(profile.example("conformance_fixtures"))
}
