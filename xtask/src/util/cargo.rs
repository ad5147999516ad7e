//! Cargo invocations: building the workspace's binaries and examples in a profile, finding
//! what a build produced, and re-running this command with the optimised xtask.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use super::paths::{target_dir, workspace_root};

/// A cargo build profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    /// `dev` (`target/debug`): quick to build; figures not representative.
    Dev,
    /// `release` (`target/release`): fat LTO, slow to build; what the figures are taken on.
    Release,
}

impl Profile {
    /// `Dev` for a smoke run, else `Release`.
    pub(crate) fn for_smoke(smoke: bool) -> Profile {
        if smoke {
            Profile::Dev
        } else {
            Profile::Release
        }
    }

    /// `Dev` when `debug`, else `Release`.
    pub(crate) fn debug_if(debug: bool) -> Profile {
        Profile::for_smoke(debug)
    }

    /// The profile's name in messages: `dev` or `release`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Profile::Dev => "dev",
            Profile::Release => "release",
        }
    }

    /// The folder of the target directory the profile builds into.
    pub(crate) fn dir(self) -> PathBuf {
        target_dir().join(match self {
            Profile::Dev => "debug",
            Profile::Release => "release",
        })
    }

    /// A binary of this profile.
    pub(crate) fn bin(self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    /// An example of this profile.
    pub(crate) fn example(self, name: &str) -> PathBuf {
        self.dir().join("examples").join(name)
    }
}

/// `cargo` as the running cargo names it (`CARGO`), in the workspace root.
pub(crate) fn command() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root());
    cmd
}

/// `cargo +nightly ARGS` through rustup's proxy (not `CARGO`, which names one toolchain), in
/// the workspace root.
pub(crate) fn nightly(args: &[&str]) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(workspace_root()).arg("+nightly").args(args);
    cmd
}

/// Runs `cargo ARGS` in the workspace root; its messages go to stderr, its stdout nowhere.
pub(crate) fn run(args: &[&str]) -> anyhow::Result<()> {
    let status = command()
        .args(args)
        .stdout(Stdio::null())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// `cargo build --quiet` of `what` (package and target options) in `profile`.
pub(crate) fn build(profile: Profile, what: &[&str]) -> anyhow::Result<()> {
    let mut args = vec!["build", "--quiet"];
    if profile == Profile::Release {
        args.push("--release");
    }
    args.extend_from_slice(what);
    run(&args)
}

/// Builds the daemon binary (`hooks-mcp-full`) in `profile`; returns its path.
pub(crate) fn build_daemon(profile: Profile) -> anyhow::Result<PathBuf> {
    eprintln!("building hooks-mcp-full ({})...", profile.name());
    build(profile, &["-p", "hooks-mcp", "--bin", "hooks-mcp-full"])?;
    Ok(profile.bin("hooks-mcp-full"))
}

/// `profile`'s `name` binary, which must have been built already (`--skip-build`).
pub(crate) fn built_bin(profile: Profile, name: &str) -> anyhow::Result<PathBuf> {
    let bin = profile.bin(name);
    anyhow::ensure!(
        bin.is_file(),
        "--skip-build: no {} (build it once without --skip-build)",
        bin.display()
    );
    Ok(bin)
}

/// Builds the release xtask and runs this same command line with it, so that what is measured
/// (and the load generator) is optimised code, not the compiler's debug mode.
pub(crate) fn rerun_optimised() -> anyhow::Result<()> {
    eprintln!("building the optimised xtask (cargo build --release -p xtask)...");
    build(Profile::Release, &["-p", "xtask"])?;
    let exe = Profile::Release.bin("xtask");
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let status = Command::new(&exe)
        .args(&args)
        .status()
        .with_context(|| format!("running {}", exe.display()))?;
    if !status.success() {
        bail!("the optimised run failed ({status})");
    }
    Ok(())
}
