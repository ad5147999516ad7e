//! What the fleet runs on: a throwaway PostgreSQL server of its own, and HAProxy with the
//! configuration the deployment docs ship (`packaging/fleet/haproxy.cfg`), its `bind` and
//! `server` lines replaced and a runtime API socket added.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::util::paths;

/// A free port on 127.0.0.1 (bound and released).
pub(super) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// A PostgreSQL server in a temporary directory, stopped and removed when dropped.
pub(super) struct Postgres {
    bindir: PathBuf,
    dir: tempfile::TempDir,
    /// Its port on 127.0.0.1.
    pub(super) port: u16,
}

impl Postgres {
    /// initdb (user `hooks`, trust on loopback) and start, on a free port.
    pub(super) fn start() -> anyhow::Result<Postgres> {
        let bindir = bindir().context(
            "PostgreSQL's server programs are not installed (apt-get install postgresql, or \
             set PG_CI_BINDIR)",
        )?;
        let dir = tempfile::Builder::new()
            .prefix("hooks-mcp-fleet-pg")
            .tempdir()?;
        if is_root() {
            let ok = Command::new("chown")
                .arg("postgres:")
                .arg(dir.path())
                .status()?
                .success();
            anyhow::ensure!(ok, "chown postgres {}", dir.path().display());
        }
        let server = Postgres {
            bindir,
            port: free_port()?,
            dir,
        };
        let data = server.data();
        server.run(
            "initdb",
            &["-D", &data, "-U", "hooks", "-A", "trust", "--no-sync"],
        )?;
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections=100",
            server.port,
            server.dir.path().display()
        );
        let log = server.dir.path().join("log").display().to_string();
        server.run(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-w", "-o", &options, "start"],
        )?;
        Ok(server)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn command(&self, program: &str) -> Command {
        let program = self.bindir.join(program);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn run(&self, program: &str, args: &[&str]) -> anyhow::Result<()> {
        let out = self.command(program).args(args).output()?;
        if !out.status.success() {
            bail!(
                "{program}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// The store's URL.
    pub(super) fn url(&self) -> String {
        format!("postgres://hooks@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// `PG_CI_BINDIR`, else the newest `/usr/lib/postgresql/<version>/bin`.
fn bindir() -> Option<PathBuf> {
    let has = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("PG_CI_BINDIR").map(PathBuf::from) {
        return has(&dir).then_some(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, p): &(u32, PathBuf)| has(p))
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p)
}

/// HAProxy, killed when dropped.
pub(super) struct Haproxy {
    child: Child,
    /// Its port on 127.0.0.1.
    pub(super) port: u16,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

/// The shipped configuration with `bind` on `port`, the `server` lines for `servers` and a
/// runtime socket.
fn configure(shipped: &str, port: u16, servers: &[(String, SocketAddr)], socket: &Path) -> String {
    let mut out = String::new();
    for line in shipped.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("server ") {
            continue;
        }
        if trimmed.starts_with("bind ") {
            out.push_str(&format!("    bind 127.0.0.1:{port}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if trimmed == "global" {
            out.push_str(&format!(
                "    stats socket {} level admin\n",
                socket.display()
            ));
        }
    }
    for (name, addr) in servers {
        out.push_str(&format!("    server {name} {addr}\n"));
    }
    out
}

impl Haproxy {
    /// Starts HAProxy in front of `servers` with the shipped configuration.
    pub(super) fn start(servers: &[(String, SocketAddr)]) -> anyhow::Result<Haproxy> {
        let program = [
            "/usr/sbin/haproxy",
            "/usr/bin/haproxy",
            "/usr/local/sbin/haproxy",
        ]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .context("HAProxy is not installed: apt-get install haproxy (.ci/run does)")?;
        let shipped = std::fs::read_to_string(paths::in_workspace("packaging/fleet/haproxy.cfg"))
            .context("packaging/fleet/haproxy.cfg")?;
        let dir = tempfile::Builder::new()
            .prefix("hooks-mcp-fleet-lb")
            .tempdir()?;
        let socket = dir.path().join("admin.sock");
        let port = free_port()?;
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, configure(&shipped, port, servers, &socket))?;
        let child = Command::new(&program)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let lb = Haproxy {
            child,
            port,
            socket,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while lb.command("show info").is_err() {
            anyhow::ensure!(Instant::now() < deadline, "HAProxy never answered");
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(lb)
    }

    fn command(&self, command: &str) -> anyhow::Result<String> {
        let mut stream = UnixStream::connect(&self.socket)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(format!("{command}\n").as_bytes())?;
        let mut out = String::new();
        stream.read_to_string(&mut out)?;
        Ok(out)
    }

    /// The backend's servers: name, status, retries, redispatches.
    pub(super) fn servers(&self) -> Vec<(String, String, u64, u64)> {
        let text = self.command("show stat").unwrap_or_default();
        let mut lines = text.lines();
        let Some(head) = lines.next() else {
            return Vec::new();
        };
        let columns: Vec<&str> = head.trim_start_matches("# ").split(',').collect();
        let at = |name: &str| {
            columns
                .iter()
                .position(|c| *c == name)
                .unwrap_or(usize::MAX)
        };
        let (px, sv, st, re, rd) = (
            at("pxname"),
            at("svname"),
            at("status"),
            at("wretr"),
            at("wredis"),
        );
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.get(px) == Some(&"daemons") && f.get(sv) != Some(&"BACKEND"))
            .map(|f| {
                let num = |i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
                (
                    f.get(sv).unwrap_or(&"").to_string(),
                    f.get(st).unwrap_or(&"").to_string(),
                    num(re),
                    num(rd),
                )
            })
            .collect()
    }

    /// Waits (up to 60 s) until `name` is up, or (with `up` false) not up.
    pub(super) fn wait_server(&self, name: &str, up: bool) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let is_up = self.servers().iter().any(|s| s.0 == name && s.1 == "UP");
            if is_up == up {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "HAProxy never saw {name} {}",
                if up { "up" } else { "down" }
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
