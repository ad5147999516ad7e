//! The database URL and the connection settings around it.
//!
//! The URL is libpq's (`postgres://user:password@host:port/dbname?param=value&...`). The
//! parameters libpq has and the Rust client lacks (`sslmode=verify-ca|verify-full`,
//! `sslrootcert`) are taken out here; the rest goes to the client unchanged. Credentials come
//! only from the URL or from `PGUSER` / `PGPASSWORD`, and nothing here ever prints them.

use std::str::FromStr;
use std::time::Duration;

use super::tls::{TlsSettings, Verify};
use crate::{BUSY_TIMEOUT_ENV, DATABASE_URL_ENV, StoreError};

/// Environment variable: most connections one process keeps open (default 8).
pub const POOL_SIZE_ENV: &str = "HOOKS_MCP_DB_POOL_SIZE";
/// Environment variable: how long opening a connection may take, in milliseconds (default 5000).
pub const CONNECT_TIMEOUT_ENV: &str = "HOOKS_MCP_DB_CONNECT_TIMEOUT_MS";
/// Environment variable: longest a statement may run, in milliseconds (default 30000).
pub const STATEMENT_TIMEOUT_ENV: &str = "HOOKS_MCP_DB_STATEMENT_TIMEOUT_MS";

/// How to open a PostgreSQL store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// Apply the migrations to an empty database; without it an empty database is
    /// [`StoreError::Missing`].
    pub create: bool,
    /// Most connections kept open by this process (at least 1). None is opened before the
    /// first call needs one.
    pub pool_size: u32,
    /// Limit on opening one connection, and on waiting for a free one.
    pub connect_timeout: Duration,
    /// Limit on one statement (`statement_timeout`).
    pub statement_timeout: Duration,
    /// Limit on waiting for another transaction's row lock (`lock_timeout`).
    pub lock_timeout: Duration,
    /// Keep trying to connect for up to `connect_timeout` when an attempt fails (a server
    /// restarting comes back within it): what a long-lived process wants. Off, the first failed
    /// attempt is the answer and the pool keeps one connection: what a process serving one
    /// event wants (the command hook, which the agent waits on).
    pub retry_connect: bool,
}

impl Default for PgOptions {
    /// Do not create; 8 connections; 5 s to connect, retrying; 30 s per statement; 5 s per
    /// lock.
    fn default() -> Self {
        PgOptions {
            create: false,
            pool_size: 8,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(5),
            retry_connect: true,
        }
    }
}

impl PgOptions {
    /// The defaults, overridden by [`POOL_SIZE_ENV`], [`CONNECT_TIMEOUT_ENV`],
    /// [`STATEMENT_TIMEOUT_ENV`] and [`BUSY_TIMEOUT_ENV`] where set.
    ///
    /// # Errors
    /// [`StoreError::InvalidSetting`] naming the variable whose value is not a positive integer.
    pub fn from_env(create: bool) -> Result<Self, StoreError> {
        Self::resolve(create, |k| std::env::var(k).ok())
    }

    /// [`PgOptions::from_env`] over any variable lookup (for tests).
    ///
    /// # Errors
    /// As [`PgOptions::from_env`].
    pub fn resolve(create: bool, var: impl Fn(&str) -> Option<String>) -> Result<Self, StoreError> {
        let mut options = PgOptions {
            create,
            ..PgOptions::default()
        };
        let number = |name: &'static str, max: u64| -> Result<Option<u64>, StoreError> {
            let Some(text) = var(name).filter(|v| !v.trim().is_empty()) else {
                return Ok(None);
            };
            text.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .map(Some)
                .ok_or_else(|| StoreError::InvalidSetting {
                    name,
                    problem: format!("must be a whole number from 1 to {max}, got `{text}`"),
                })
        };
        if let Some(n) = number(POOL_SIZE_ENV, 1000)? {
            options.pool_size = u32::try_from(n).unwrap_or(1000);
        }
        let day_ms = 24 * 3600 * 1000;
        if let Some(ms) = number(CONNECT_TIMEOUT_ENV, day_ms)? {
            options.connect_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = number(STATEMENT_TIMEOUT_ENV, day_ms)? {
            options.statement_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = number(BUSY_TIMEOUT_ENV, day_ms)? {
            options.lock_timeout = Duration::from_millis(ms);
        }
        Ok(options)
    }
}

/// A parsed database URL: the client's configuration, the TLS settings, and the description
/// used in logs and errors.
pub(crate) struct Target {
    pub config: postgres::Config,
    pub tls: TlsSettings,
    pub describe: String,
}

fn bad_url(problem: impl Into<String>) -> StoreError {
    StoreError::InvalidSetting {
        name: DATABASE_URL_ENV,
        problem: problem.into(),
    }
}

/// Decodes `%XX` escapes (and leaves anything else as it is).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `url` and applies `options`' timeouts; `var` looks up `PGUSER` and `PGPASSWORD`.
pub(crate) fn parse(
    url: &str,
    options: &PgOptions,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Target, StoreError> {
    let url = url.trim();
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(bad_url(
            "must be a postgres:// URL, e.g. postgres://hooks@db.internal:5432/hooks?sslmode=verify-full",
        ));
    }
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept: Vec<&str> = Vec::new();
    let mut sslmode = None;
    let mut root_cert = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => sslmode = Some(percent_decode(value)),
            "sslrootcert" => root_cert = Some(percent_decode(value).into()),
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" | "sslsni" => {
                return Err(bad_url(format!(
                    "`{key}` is not supported: authenticate with a password over TLS \
                     (sslmode=verify-full)"
                )));
            }
            _ => kept.push(pair),
        }
    }
    let (client_mode, verify) = match sslmode.as_deref() {
        None | Some("prefer") => ("prefer", None),
        Some("disable") => ("disable", None),
        Some("require") => ("require", None),
        Some("verify-ca") => ("require", Some(Verify::Chain)),
        Some("verify-full") => ("require", Some(Verify::Full)),
        Some(other) => {
            return Err(bad_url(format!(
                "sslmode `{other}` is not one of disable, prefer, require, verify-ca, verify-full"
            )));
        }
    };
    // As in libpq, a root certificate file makes `prefer` and `require` check the chain.
    let verify = verify.unwrap_or(if root_cert.is_some() {
        Verify::Chain
    } else {
        Verify::Nothing
    });
    kept.push(match client_mode {
        "disable" => "sslmode=disable",
        "require" => "sslmode=require",
        _ => "sslmode=prefer",
    });
    let rebuilt = format!("{base}?{}", kept.join("&"));
    // The client's messages name the offending option, never its value.
    let mut config = postgres::Config::from_str(&rebuilt).map_err(|e| {
        let cause = std::error::Error::source(&e)
            .map(|s| format!(": {s}"))
            .unwrap_or_default();
        bad_url(format!("{e}{cause}"))
    })?;

    if config.get_user().is_none()
        && let Some(user) = var("PGUSER").filter(|v| !v.is_empty())
    {
        config.user(&user);
    }
    if config.get_password().is_none()
        && let Some(password) = var("PGPASSWORD").filter(|v| !v.is_empty())
    {
        config.password(password);
    }
    if config.get_hosts().is_empty() {
        config.host("localhost");
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(options.connect_timeout);
    }
    if config.get_application_name().is_none() {
        config.application_name("hooks-mcp");
    }
    // Server-side limits travel in the start-up packet: no extra round trip. Settings the URL
    // already gives (`options=-c statement_timeout=...`) come later and win. JIT is off: the
    // store's statements are short, and a plan costed on a table no `ANALYZE` has seen yet
    // (a store just filled) can pass `jit_above_cost` and spend 60 to 100 ms compiling a
    // statement that runs in one (the channel summary on 10,000 fresh messages).
    let limits = format!(
        "-c statement_timeout={} -c lock_timeout={} -c jit=off",
        options.statement_timeout.as_millis(),
        options.lock_timeout.as_millis()
    );
    let merged = match config.get_options() {
        Some(given) if !given.trim().is_empty() => format!("{limits} {given}"),
        _ => limits,
    };
    config.options(&merged);

    let describe = describe(&config);
    Ok(Target {
        config,
        tls: TlsSettings { verify, root_cert },
        describe,
    })
}

/// Which database and schema `url` reaches, without its password: [`describe`]'s
/// `postgres://user@host:port/dbname`, plus the server options the URL gives (a `search_path`
/// there selects another fleet's tables). Two processes whose identities match use the same
/// store; `var` looks up `PGUSER`, as when connecting. Parsing only: nothing is connected.
///
/// # Errors
/// [`StoreError::InvalidSetting`] for a URL the store could not connect with either.
pub(crate) fn identity(
    url: &str,
    var: impl Fn(&str) -> Option<String>,
) -> Result<String, StoreError> {
    let target = parse(url, &PgOptions::default(), |k| {
        // The password never enters the identity, so it is not even looked up.
        (k == "PGUSER").then(|| var(k)).flatten()
    })?;
    Ok(match target.config.get_options() {
        Some(options) => format!("{} options={options}", target.describe),
        None => target.describe,
    })
}

/// `postgres://user@host:port/dbname`: never the password.
fn describe(config: &postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                postgres::config::Host::Tcp(name) => name.clone(),
                postgres::config::Host::Unix(path) => path.display().to_string(),
            };
            let port = config
                .get_ports()
                .get(i)
                .or_else(|| config.get_ports().first())
                .copied()
                .unwrap_or(5432);
            format!("{name}:{port}")
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    format!(
        "postgres://{user}{}/{}",
        hosts.join(","),
        config
            .get_dbname()
            .or(config.get_user())
            .unwrap_or("postgres")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Result<Target, StoreError> {
        parse(url, &PgOptions::default(), |_| None)
    }

    #[test]
    fn identities_ignore_the_password_and_keep_the_schema() {
        let none = |_: &str| None;
        let a = identity("postgres://hooks:one@db:5432/fleet", none).unwrap();
        let b = identity("postgres://hooks:two@db:5432/fleet?sslmode=disable", none).unwrap();
        assert_eq!(a, b);
        assert!(!a.contains("one"), "{a}");
        let other_schema = identity(
            "postgres://hooks@db:5432/fleet?options=-c%20search_path%3Dother",
            none,
        )
        .unwrap();
        assert_ne!(a, other_schema);
        let from_env = identity("postgres://db:5432/fleet", |k: &str| {
            (k == "PGUSER").then(|| "hooks".to_owned())
        })
        .unwrap();
        assert_eq!(a, from_env);
        assert!(identity("mysql://db/fleet", none).is_err());
    }

    #[test]
    fn describe_never_shows_the_password() {
        let t = target("postgres://hooks:s3cr%40t@db.example:6543/fleet?sslmode=disable").unwrap();
        assert_eq!(t.describe, "postgres://hooks@db.example:6543/fleet");
        assert_eq!(t.config.get_password(), Some(&b"s3cr@t"[..]));
        let t = target("postgresql://db.example/fleet?password=hunter2").unwrap();
        assert_eq!(t.describe, "postgres://db.example:5432/fleet");
        assert!(!format!("{:?}", t.config).contains("hunter2"));
    }

    #[test]
    fn credentials_fall_back_to_the_environment() {
        let env = |k: &str| match k {
            "PGUSER" => Some("ops".to_string()),
            "PGPASSWORD" => Some("from-env".to_string()),
            _ => None,
        };
        let t = parse("postgres://db/fleet", &PgOptions::default(), env).unwrap();
        assert_eq!(t.config.get_user(), Some("ops"));
        assert_eq!(t.config.get_password(), Some(&b"from-env"[..]));
        // The URL wins over the environment.
        let t = parse("postgres://me:pw@db/fleet", &PgOptions::default(), env).unwrap();
        assert_eq!(t.config.get_user(), Some("me"));
        assert_eq!(t.config.get_password(), Some(&b"pw"[..]));
    }

    #[test]
    fn sslmode_follows_libpq() {
        let cases = [
            ("", postgres::config::SslMode::Prefer, Verify::Nothing),
            (
                "?sslmode=disable",
                postgres::config::SslMode::Disable,
                Verify::Nothing,
            ),
            (
                "?sslmode=require",
                postgres::config::SslMode::Require,
                Verify::Nothing,
            ),
            (
                "?sslmode=verify-ca",
                postgres::config::SslMode::Require,
                Verify::Chain,
            ),
            (
                "?sslmode=verify-full",
                postgres::config::SslMode::Require,
                Verify::Full,
            ),
            (
                "?sslmode=require&sslrootcert=%2Fetc%2Froot.crt",
                postgres::config::SslMode::Require,
                Verify::Chain,
            ),
        ];
        for (query, mode, verify) in cases {
            let t = target(&format!("postgres://u@h/d{query}")).unwrap();
            assert_eq!(t.config.get_ssl_mode(), mode, "{query}");
            assert_eq!(t.tls.verify, verify, "{query}");
        }
        let t = target("postgres://u@h/d?sslrootcert=%2Fetc%2Froot.crt").unwrap();
        assert_eq!(t.tls.root_cert, Some("/etc/root.crt".into()));
    }

    #[test]
    fn bad_urls_name_the_setting_and_the_problem() {
        for (url, needle) in [
            ("mysql://h/d", "postgres:// URL"),
            ("postgres://h/d?sslmode=allowed", "sslmode `allowed`"),
            (
                "postgres://h/d?sslcert=/c.pem",
                "`sslcert` is not supported",
            ),
            ("postgres://h/d?frobnicate=1", "frobnicate"),
        ] {
            match target(url) {
                Err(e @ StoreError::InvalidSetting { name, .. }) => {
                    assert_eq!(name, DATABASE_URL_ENV);
                    assert!(e.to_string().contains(needle), "{url}: {e}");
                }
                other => panic!("{url}: expected InvalidSetting, got {:?}", other.err()),
            }
        }
    }

    #[test]
    fn limits_travel_in_the_startup_options_and_the_url_wins() {
        let options = PgOptions {
            statement_timeout: Duration::from_millis(1234),
            lock_timeout: Duration::from_millis(99),
            ..PgOptions::default()
        };
        let t = parse(
            "postgres://h/d?options=-c%20search_path%3Dx",
            &options,
            |_| None,
        )
        .unwrap();
        assert_eq!(
            t.config.get_options(),
            Some("-c statement_timeout=1234 -c lock_timeout=99 -c jit=off -c search_path=x")
        );
        assert_eq!(t.config.get_application_name(), Some("hooks-mcp"));
    }

    #[test]
    fn options_come_from_the_environment_and_bad_values_name_the_variable() {
        let env = |k: &str| match k {
            POOL_SIZE_ENV => Some("3".to_string()),
            STATEMENT_TIMEOUT_ENV => Some("2500".to_string()),
            _ => None,
        };
        let options = PgOptions::resolve(true, env).unwrap();
        assert_eq!(options.pool_size, 3);
        assert_eq!(options.statement_timeout, Duration::from_millis(2500));
        assert_eq!(options.lock_timeout, Duration::from_secs(5));
        assert!(options.create);
        for bad in ["0", "-1", "many", "1001"] {
            let env = |k: &str| (k == POOL_SIZE_ENV).then(|| bad.to_string());
            match PgOptions::resolve(false, env) {
                Err(
                    e @ StoreError::InvalidSetting {
                        name: POOL_SIZE_ENV,
                        ..
                    },
                ) => {
                    assert!(e.to_string().contains(bad), "{e}")
                }
                other => panic!("{bad}: expected InvalidSetting, got {other:?}"),
            }
        }
    }
}
