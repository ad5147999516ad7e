//! A throwaway PostgreSQL server a test owns, so that it can stop and start it. Shared by the
//! store suite (`crates/store/tests/suite/pg_only.rs`) and the daemon fleet test
//! (`crates/server-full/tests/daemon/fleet.rs`), which include this file with `#[path]`.
// Each including test uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// A throwaway PostgreSQL server of this test's own, so that it can be stopped and started.
pub(crate) struct PrivateServer {
    pub(crate) bindir: PathBuf,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) port: u16,
}

pub(crate) fn server_bindir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PG_CI_BINDIR") {
        return Some(dir.into());
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("pg_ctl").exists())
        .collect();
    found.sort();
    found.pop()
}

pub(crate) fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

impl PrivateServer {
    /// `program` of the server's installation, run as a user the server accepts.
    pub(crate) fn command(&self, program: &str) -> Command {
        let program = self.bindir.join(program);
        if is_root() {
            // The server refuses to run as root.
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    pub(crate) fn run(&self, program: &str, args: &[&str]) {
        let out = self.command(program).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub(crate) fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    pub(crate) fn start(bindir: PathBuf) -> Self {
        let dir = tempfile::tempdir().unwrap();
        if is_root() {
            let status = Command::new("chown")
                .args(["postgres:", &dir.path().display().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = PrivateServer { bindir, dir, port };
        let data = server.data();
        server.run(
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
        );
        server.up();
        server
    }

    pub(crate) fn up(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log").display().to_string();
        self.run(
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
        );
    }

    pub(crate) fn down(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }

    pub(crate) fn url(&self) -> String {
        format!("postgres://hooks@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}
