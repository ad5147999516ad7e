//! HAProxy in front of daemons under test, with the configuration the deployment docs ship
//! (`packaging/fleet/haproxy.cfg`): its `bind` line replaced by a loopback port of the test's,
//! its `server` lines by the daemons', and a runtime API socket added to ask which servers are
//! up.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::PATIENCE;

/// The shipped configuration, relative to the workspace root.
pub const SHIPPED_CONFIG: &str = "packaging/fleet/haproxy.cfg";

/// What the test says when HAProxy is not installed.
pub const MISSING: &str = "HAProxy is not installed: the balancer tests need it; install it \
                           with `apt-get install haproxy` (`.ci/run` does)";

/// The `haproxy` program: on `PATH`, else where Debian puts it.
pub fn program() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("haproxy"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/sbin/haproxy");
        debian.is_file().then_some(debian)
    })
}

/// `shipped` with its `bind` on `127.0.0.1:port`, its `server` lines replaced by `servers`
/// (name, address; appended to the last section, the backend) and a runtime API socket at
/// `socket`.
pub fn configure(
    shipped: &str,
    port: u16,
    servers: &[(String, SocketAddr)],
    socket: &Path,
) -> String {
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

/// A running HAProxy, stopped when dropped.
#[derive(Debug)]
pub struct Haproxy {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Starts HAProxy with the shipped configuration in front of `servers`.
    ///
    /// # Panics
    /// When HAProxy is not installed ([`MISSING`]), the configuration is refused, or it does
    /// not answer on its runtime socket within [`PATIENCE`].
    pub fn start(workspace: &Path, servers: &[(String, SocketAddr)]) -> Haproxy {
        let program = program().unwrap_or_else(|| panic!("{MISSING}"));
        let shipped = std::fs::read_to_string(workspace.join(SHIPPED_CONFIG))
            .unwrap_or_else(|e| panic!("{SHIPPED_CONFIG}: {e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
        let socket = dir.path().join("admin.sock");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap_or_else(|e| panic!("no free port: {e}"))
            .port();
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, configure(&shipped, port, servers, &socket))
            .unwrap_or_else(|e| panic!("{}: {e}", config.display()));
        let child = Command::new(&program)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let haproxy = Haproxy {
            child,
            port,
            socket,
            _dir: dir,
        };
        let deadline = Instant::now() + PATIENCE;
        while haproxy.try_command("show info").is_none() {
            assert!(
                Instant::now() < deadline,
                "HAProxy never answered on its socket"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        haproxy
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn try_command(&self, command: &str) -> Option<String> {
        let mut stream = UnixStream::connect(&self.socket).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        stream.write_all(format!("{command}\n").as_bytes()).ok()?;
        let mut out = String::new();
        stream.read_to_string(&mut out).ok()?;
        Some(out)
    }

    /// The backend's servers: (name, status such as `UP`, `DOWN`, `UP 1/2`, retries,
    /// redispatches).
    pub fn servers(&self) -> Vec<ServerStat> {
        let text = self.try_command("show stat").unwrap_or_default();
        let mut lines = text.lines();
        let Some(head) = lines.next() else {
            return Vec::new();
        };
        let columns: Vec<&str> = head.trim_start_matches("# ").split(',').collect();
        let at = |name: &str| columns.iter().position(|c| *c == name);
        let (Some(px), Some(sv), Some(status), Some(retries), Some(redispatches)) = (
            at("pxname"),
            at("svname"),
            at("status"),
            at("wretr"),
            at("wredis"),
        ) else {
            return Vec::new();
        };
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.get(px) == Some(&"daemons") && f.get(sv) != Some(&"BACKEND"))
            .map(|f| ServerStat {
                name: f.get(sv).unwrap_or(&"").to_string(),
                status: f.get(status).unwrap_or(&"").to_string(),
                retries: f.get(retries).and_then(|v| v.parse().ok()).unwrap_or(0),
                redispatches: f
                    .get(redispatches)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            })
            .collect()
    }

    /// Waits until server `name` is `UP` (or, with `up` false, anything but up).
    ///
    /// # Panics
    /// When it does not within [`PATIENCE`].
    pub fn wait_server(&self, name: &str, up: bool) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let servers = self.servers();
            let is_up = servers.iter().any(|s| s.name == name && s.status == "UP");
            if is_up == up {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "HAProxy never saw {name} {}: {servers:?}",
                if up { "up" } else { "down" }
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One server as HAProxy's statistics show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStat {
    /// Its name in the configuration.
    pub name: String,
    /// `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/2` (coming up), `NOLB`, `MAINT`.
    pub status: String,
    /// Requests HAProxy retried on it.
    pub retries: u64,
    /// Requests it sent elsewhere.
    pub redispatches: u64,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
