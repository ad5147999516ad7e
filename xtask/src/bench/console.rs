//! `cargo xtask bench console`: the operator console's pages on a filled SQLite store, one
//! request at a time on a keep-alive connection to a release daemon (no token: loopback), as
//! a browser asks for them (a page, and its live region alone with `HX-Request`).
//!
//! Server time is the daemon's own `Server-Timing` (`app;dur=`: the request reaching the
//! console to the rendered page); client time is the request written to the response read.
//! Page weight is a first load: the page and every asset it names, uncompressed. The live
//! figure is how soon a change committed by another process (a publication on the store,
//! here from this process) reaches an open `/console/events` stream as a `change` event.
//! Nothing here asserts a timing.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use store::{Actor, ChannelStore, NewMessage, Severity, SqliteStore};

use super::api::{Filled, StoreSize};
use super::now_ms;
use super::stats::{Summary, millis, num};
use crate::markdown::{Align, table};
use crate::util::cargo::Profile;
use crate::util::http::Conn;

/// Options of `cargo xtask bench console`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Timed requests per page (after 20 warm-up ones).
    #[arg(long, default_value_t = 300)]
    requests: usize,
    /// What the store holds.
    #[command(flatten)]
    size: StoreSize,
    /// Publications timed to the event stream.
    #[arg(long, default_value_t = 30)]
    changes: usize,
    /// Smoke run: the smallest store, two requests per page, two changes, a dev daemon; every
    /// page is asked, the figures mean nothing.
    #[arg(long)]
    pub(super) smoke: bool,
}

impl Args {
    /// These options, or the smallest sizes for a smoke run.
    fn sized(&self) -> Args {
        if !self.smoke {
            return self.clone();
        }
        Args {
            requests: 2,
            size: StoreSize::SMOKE,
            changes: 2,
            ..self.clone()
        }
    }
}

/// The pages timed.
const PAGES: [&str; 7] = [
    "/console/",
    "/console/channels",
    "/console/sessions",
    "/console/schedules",
    "/console/reminders",
    "/console/conditions",
    "/console/audit",
];

/// The assets every page names.
const ASSETS: [&str; 3] = [
    "/console/assets/console.css",
    "/console/assets/htmx.min.js",
    "/console/assets/console.js",
];

/// Runs the benchmark.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let args = &args.sized();
    anyhow::ensure!(args.requests >= 1, "--requests: at least 1");
    let filled = Filled::start("console", &args.size, Profile::for_smoke(args.smoke))?;
    let (db, message_id, audit_rows) = (&filled.db, filled.message_id, filled.audit_rows);
    let daemon = &filled.daemon;
    let addr = SocketAddr::from(([127, 0, 0, 1], daemon.port));
    let mut conn = Conn::connect(addr)?;

    let asset_bytes: usize = ASSETS
        .iter()
        .map(|a| get(&mut conn, a).map(|(body, _)| body.len()))
        .sum::<anyhow::Result<usize>>()?;
    let message_page = format!("/console/messages/{message_id}");
    let mut rows = Vec::new();
    for page in PAGES.iter().copied().chain([message_page.as_str()]) {
        let mut bytes = 0;
        for _ in 0..20 {
            bytes = get(&mut conn, page)?.0.len();
        }
        let mut server = Vec::with_capacity(args.requests);
        let mut client = Vec::with_capacity(args.requests);
        for _ in 0..args.requests {
            let started = Instant::now();
            let (_, server_ms) = get(&mut conn, page)?;
            client.push(millis(started.elapsed()));
            server.push(server_ms.context("no Server-Timing header")?);
        }
        let s = Summary::of(&server).context("no samples")?;
        let c = Summary::of(&client).context("no samples")?;
        rows.push(vec![
            format!("`{page}`"),
            num(s.median, 2),
            num(s.p99, 2),
            num(c.median, 2),
            num(c.p99, 2),
            format!("{:.1}", bytes as f64 / 1024.0),
            format!("{:.1}", (bytes + asset_bytes) as f64 / 1024.0),
        ]);
    }

    let live = live_latency(addr, db, args.changes)?;
    drop(filled);

    println!("## Operator console (`cargo xtask bench console`)\n");
    println!(
        "{} daemon on SQLite; the store holds {} unexpired messages on {} channels, {} \
         sessions and {audit_rows} audit entries. {} sequential requests per page on one \
         keep-alive connection (after 20 warm-up ones). Server time: the daemon's \
         `Server-Timing`; client time: request written to response read. First load: the page \
         and its assets ({:.1} KiB of CSS and scripts), uncompressed.\n",
        if args.smoke {
            "Dev (smoke run)"
        } else {
            "Release"
        },
        args.size.messages,
        super::api::CHANNELS,
        args.size.sessions,
        args.requests,
        asset_bytes as f64 / 1024.0
    );
    print!(
        "{}",
        table(
            &[
                ("page", Align::Left),
                ("server p50 ms", Align::Right),
                ("server p99 ms", Align::Right),
                ("client p50 ms", Align::Right),
                ("client p99 ms", Align::Right),
                ("page KiB", Align::Right),
                ("first load KiB", Align::Right),
            ],
            &rows,
        )
    );
    let l = Summary::of(&live).context("no live samples")?;
    println!(
        "\nA publication committed by another connection reached the open event stream as \
         `change` in {} ms (median), {} ms (p90), {} ms (max) over {} publications.",
        num(l.median, 0),
        num(l.p90, 0),
        num(l.max, 0),
        l.n
    );
    Ok(())
}

/// One GET: its body and server time. Fails on anything but 200.
fn get(conn: &mut Conn, path: &str) -> anyhow::Result<(String, Option<f64>)> {
    let reply = conn.request_at("GET", path, "")?;
    if reply.status != 200 {
        bail!("GET {path}: {} {}", reply.status, reply.body);
    }
    Ok((reply.body, reply.server_ms))
}

/// Milliseconds from each of `n` publications (through a store connection of this process)
/// to the `change` event on an open `/console/events` stream.
fn live_latency(addr: SocketAddr, db: &std::path::Path, n: usize) -> anyhow::Result<Vec<f64>> {
    let stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut writer = stream.try_clone()?;
    write!(
        writer,
        "GET /console/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        if line.trim().is_empty() {
            break;
        }
    }
    // The stream takes its first reading of the store's version within a poll.
    std::thread::sleep(Duration::from_millis(500));
    let store = SqliteStore::create(db)?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let now = now_ms();
        let started = Instant::now();
        store.publish(
            &NewMessage {
                channel: "live".into(),
                body: format!("live {i}"),
                severity: Severity::Info,
                created_at: now,
                expires_at: now + 60_000,
                target: None,
            },
            &Actor::Daemon,
        )?;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                bail!("the event stream closed");
            }
            if line.trim() == "event: change" {
                break;
            }
        }
        out.push(millis(started.elapsed()));
        // Spread the publications over the stream's poll.
        std::thread::sleep(Duration::from_millis(137));
    }
    Ok(out)
}
