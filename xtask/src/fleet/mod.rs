//! `cargo xtask fleet --daemons N --minutes M`: N daemons on one throwaway PostgreSQL server
//! behind HAProxy (Debian's package) with the configuration the deployment docs ship
//! (`packaging/fleet/haproxy.cfg`), under a mixed load for M minutes (2026-07-28 `tools/call`
//! publishes, legacy sessions, HTTP hook events, interval schedules, a console page open),
//! with a rolling restart of every daemon in the middle third (SIGTERM, the shipped shutdown
//! delay, start again on the same port, back up in HAProxy before the next).
//!
//! It reports calls/s and p50/p99 latency before, during and after the restart, failed
//! requests, lost or duplicated publishes and schedule firings, and fails on any of those (and
//! when p99 during the restart is over `--max-p99-ratio` times p99 before it). With one daemon
//! there is nothing to roll: the load runs without a restart, for comparison. `--smoke` runs
//! two debug daemons for a few seconds and asserts no latency figure.

mod infra;
mod load;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use self::infra::{Haproxy, Postgres};
use self::load::{Sample, TOKEN, Tally};
use crate::bench::stats::nearest_rank;
use crate::util::cargo::{self, Profile};
use crate::util::daemon::Daemon;
use crate::util::paths;

/// The shutdown delay the deployment docs set.
const SHUTDOWN_DELAY_SECS: &str = "3";

/// Options of `cargo xtask fleet`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Daemons behind the balancer.
    #[arg(long, default_value_t = 3)]
    daemons: usize,
    /// How long the load runs, in minutes (the restart runs in its middle third).
    #[arg(long, default_value_t = 2.0)]
    minutes: f64,
    /// 2026-07-28 clients (each sends `--rate` publishes a second).
    #[arg(long, default_value_t = 6)]
    clients: usize,
    /// Legacy session clients (each sends `--rate` publishes a second in its session).
    #[arg(long, default_value_t = 2)]
    legacy: usize,
    /// Requests a second per client (0: as fast as each client can).
    #[arg(long, default_value_t = 20.0)]
    rate: f64,
    /// One-shot schedules, due one after another over the run.
    #[arg(long, default_value_t = 200)]
    schedules: usize,
    /// Most p99 latency during the restart, as a multiple of p99 before it.
    #[arg(long, default_value_t = 2.0)]
    max_p99_ratio: f64,
    /// Use the daemon already built in target/ (release, or debug with --debug).
    #[arg(long)]
    skip_build: bool,
    /// Run debug daemons (quick to build; figures not representative).
    #[arg(long)]
    debug: bool,
    /// Smoke run: two debug daemons, a few seconds, no latency figure asserted.
    #[arg(long)]
    smoke: bool,
}

/// One phase of the run and its samples.
struct Phase {
    name: &'static str,
    from: Duration,
    to: Duration,
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let mut args = args.clone();
    if args.smoke {
        args.daemons = 2;
        args.minutes = args.minutes.min(0.25);
        args.clients = 2;
        args.legacy = 1;
        args.schedules = 20;
        args.debug = true;
    }
    anyhow::ensure!((1..=8).contains(&args.daemons), "--daemons: 1 to 8");
    anyhow::ensure!(
        args.minutes > 0.0 && args.minutes <= 60.0,
        "--minutes: up to 60"
    );
    let profile = Profile::debug_if(args.debug);
    let bin = if args.skip_build {
        cargo::built_bin(profile, "hooks-mcp-full")?
    } else {
        cargo::build_daemon(profile)?
    };
    let pg = Postgres::start()?;
    let url = pg.url();
    let homes: Vec<tempfile::TempDir> = (0..args.daemons)
        .map(|_| tempfile::Builder::new().prefix("hooks-mcp-fleet").tempdir())
        .collect::<Result<_, _>>()?;
    let logs: Vec<PathBuf> = homes.iter().map(|h| h.path().join("daemon.log")).collect();
    let start = |i: usize, port: u16| -> anyhow::Result<Daemon> {
        let port = port.to_string();
        Daemon::start_configured(&bin, homes[i].path(), &logs[i], None, |cmd| {
            cmd.env("HOOKS_MCP_DATABASE_URL", &url)
                .env("HOOKS_MCP_TOKEN", TOKEN)
                .env("HOOKS_MCP_SHUTDOWN_DELAY_SECS", SHUTDOWN_DELAY_SECS)
                .env("HOOKS_MCP_DB_POOL_SIZE", "4")
                .env("HOOKS_MCP_LOG", "info,rmcp=warn")
                .env("MCP_PORT", &port);
        })
    };
    let mut daemons = Vec::new();
    for i in 0..args.daemons {
        daemons.push(start(i, infra::free_port()?)?);
    }
    let names: Vec<String> = (1..=args.daemons).map(|i| format!("daemon{i}")).collect();
    let servers: Vec<(String, std::net::SocketAddr)> = names
        .iter()
        .cloned()
        .zip(daemons.iter().map(Daemon::addr))
        .collect();
    let lb = Haproxy::start(&servers)?;
    for name in &names {
        lb.wait_server(name, true)?;
    }
    let lb_addr = std::net::SocketAddr::from(([127, 0, 0, 1], lb.port));
    let cookie = sign_in(lb_addr)?;
    let total = Duration::from_secs_f64(args.minutes * 60.0);
    let schedules_due = create_schedules(&url, args.schedules, total)?;
    let payload = std::fs::read_to_string(paths::in_workspace(
        "tests/fixtures/hooks/user_prompt_submit.json",
    ))?;

    let period = if args.rate > 0.0 {
        Duration::from_secs_f64(1.0 / args.rate)
    } else {
        Duration::ZERO
    };
    let tally = Tally::default();
    let stop = AtomicBool::new(false);
    let origin = Instant::now();
    let rolling = args.daemons > 1;
    println!(
        "## Fleet: {} daemon(s), {:.1} minutes\n\n{} build; HAProxy with packaging/fleet/haproxy.cfg; \
         {} 2026-07-28 clients and {} legacy session clients at {} requests/s each, one hook \
         client, one console page, {} one-shot schedules due over the run; {}.\n",
        args.daemons,
        args.minutes,
        profile.name(),
        args.clients,
        args.legacy,
        if args.rate > 0.0 {
            format!("{}", args.rate)
        } else {
            "as many".into()
        },
        args.schedules,
        if rolling {
            "a rolling restart of every daemon from a third of the run on"
        } else {
            "no restart (one daemon)"
        }
    );
    let mut restart_window = (total / 3, total / 3);
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let (tally, stop, cookie, payload) = (&tally, &stop, &cookie, &payload);
        let until = move || stop.load(Ordering::Relaxed) || origin.elapsed() > total + total;
        for worker in 0..args.clients {
            scope
                .spawn(move || load::modern_client(lb_addr, tally, origin, worker, period, &until));
        }
        for worker in 0..args.legacy {
            scope
                .spawn(move || load::legacy_client(lb_addr, tally, origin, worker, period, &until));
        }
        let hook_period = Duration::from_millis(100);
        scope
            .spawn(move || load::hook_client(lb_addr, tally, origin, payload, hook_period, &until));
        scope.spawn(move || load::console_client(lb_addr, tally, origin, cookie, &until));

        std::thread::sleep((total / 3).saturating_sub(origin.elapsed()));
        if rolling {
            let began = origin.elapsed();
            for (i, name) in names.iter().enumerate() {
                let port = daemons[i].port;
                daemons[i].stop()?;
                lb.wait_server(name, false)?;
                let fresh = start(i, port)?;
                lb.wait_server(name, true)?;
                daemons[i] = fresh;
                println!(
                    "- {name} restarted at {:.1} s",
                    origin.elapsed().as_secs_f64()
                );
            }
            restart_window = (began, origin.elapsed());
        }
        std::thread::sleep(total.saturating_sub(origin.elapsed()));
        stop.store(true, Ordering::Relaxed);
        Ok(())
    })?;
    let ended = origin.elapsed();

    let phases = [
        Phase {
            name: "before",
            from: Duration::ZERO,
            to: restart_window.0,
        },
        Phase {
            name: "during the restart",
            from: restart_window.0,
            to: restart_window.1,
        },
        Phase {
            name: "after",
            from: restart_window.1,
            to: ended,
        },
    ];
    let samples = tally.samples.lock().map(|s| s.clone()).unwrap_or_default();
    let mut failures = report_latency(&args, &phases, &samples, rolling);
    failures.extend(check_publishes(&pg, &tally)?);
    failures.extend(check_firings(&pg, &schedules_due, server_full::now_ms())?);
    let servers = lb.servers();
    println!(
        "\nHAProxy: {}.",
        servers
            .iter()
            .map(|(n, s, r, d)| format!("{n} {s}, {r} retries, {d} redispatches"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let failed = tally.failures.lock().map(|f| f.clone()).unwrap_or_default();
    println!("Failed requests: {} of {}.", failed.len(), samples.len());
    for f in failed.iter().take(20) {
        println!("  - {f}");
    }
    if !failed.is_empty() {
        failures.push(format!("{} failed requests", failed.len()));
    }
    for daemon in &mut daemons {
        daemon.stop()?;
    }
    if failures.is_empty() {
        println!("\nfleet: passed");
        Ok(())
    } else {
        anyhow::bail!("fleet failed: {}", failures.join("; "))
    }
}

/// Signs in to the console through the balancer; the session cookie.
fn sign_in(lb: std::net::SocketAddr) -> anyhow::Result<String> {
    let reply = load::request(
        lb,
        "POST",
        "/console/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &format!("token={TOKEN}&next=%2Fconsole%2Fchannels"),
    )
    .map_err(anyhow::Error::msg)?;
    anyhow::ensure!(reply.status == 303, "console sign-in: {}", reply.status);
    reply
        .head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("set-cookie")
                .then(|| v.trim().split(';').next().unwrap_or("").to_owned())
        })
        .context("console sign-in: no cookie")
}

/// Creates `count` one-shot schedules due one after another over `span` from now, straight in
/// the store (as an operator's command would); their due times.
fn create_schedules(url: &str, count: usize, span: Duration) -> anyhow::Result<Vec<i64>> {
    use store::ScheduleStore;
    let options = store::PgOptions {
        create: true,
        pool_size: 1,
        ..store::PgOptions::default()
    };
    let (store, _) = store::PostgresStore::open(url, &options)?;
    let now = server_full::now_ms();
    let step = i64::try_from(span.as_millis()).unwrap_or(i64::MAX) / count.max(1) as i64;
    let mut due = Vec::new();
    for i in 0..count {
        let at = now + 500 + step * i as i64;
        store.create_schedule(
            &store::NewSchedule {
                name: None,
                channel: "fleet-schedules".into(),
                message: format!("firing {i}"),
                severity: store::Severity::Info,
                ttl_seconds: 3600,
                trigger: store::Trigger::At(at),
                next_fire_at: at,
                created_at: now,
            },
            &store::Actor::Daemon,
        )?;
        due.push(at);
    }
    Ok(due)
}

/// Calls/s, p50 and p99 per phase; a failure when p99 during the restart is over the ratio.
fn report_latency(args: &Args, phases: &[Phase], samples: &[Sample], rolling: bool) -> Vec<String> {
    println!("\n| phase | seconds | requests | calls/s | p50 (ms) | p99 (ms) | failed |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut p99s = Vec::new();
    for phase in phases {
        let secs = phase.to.saturating_sub(phase.from).as_secs_f64();
        if secs <= 0.0 {
            continue;
        }
        let mut took: Vec<f64> = samples
            .iter()
            .filter(|s| s.at >= phase.from && s.at < phase.to)
            .map(|s| s.took.as_secs_f64() * 1000.0)
            .collect();
        let failed = samples
            .iter()
            .filter(|s| s.at >= phase.from && s.at < phase.to && !s.ok)
            .count();
        took.sort_by(f64::total_cmp);
        let (p50, p99) = if took.is_empty() {
            (0.0, 0.0)
        } else {
            (nearest_rank(&took, 0.5), nearest_rank(&took, 0.99))
        };
        p99s.push((phase.name, p99));
        println!(
            "| {} | {secs:.1} | {} | {:.0} | {p50:.2} | {p99:.2} | {failed} |",
            phase.name,
            took.len(),
            took.len() as f64 / secs,
        );
    }
    let before = p99s.iter().find(|p| p.0 == "before").map(|p| p.1);
    let during = p99s
        .iter()
        .find(|p| p.0 == "during the restart")
        .map(|p| p.1);
    match (rolling, before, during) {
        (true, Some(before), Some(during)) if before > 0.0 => {
            let ratio = during / before;
            println!("\np99 during the restart / p99 before: {ratio:.2}");
            if !args.smoke && ratio > args.max_p99_ratio {
                return vec![format!(
                    "p99 during the restart is {ratio:.2}× p99 before it (at most {})",
                    args.max_p99_ratio
                )];
            }
        }
        _ => {}
    }
    Vec::new()
}

/// Raw reads of the fleet's store.
fn client(pg: &Postgres) -> anyhow::Result<postgres::Client> {
    postgres::Client::connect(&pg.url(), postgres::NoTls).context("the fleet's database")
}

/// Every acknowledged publish stored once, none stored unacknowledged.
fn check_publishes(pg: &Postgres, tally: &Tally) -> anyhow::Result<Vec<String>> {
    let acknowledged = tally
        .acknowledged
        .lock()
        .map(|a| a.clone())
        .unwrap_or_default();
    let mut stored: HashMap<String, i64> = HashMap::new();
    for row in client(pg)?.query("SELECT body FROM messages WHERE channel = 'fleet'", &[])? {
        *stored.entry(row.get(0)).or_default() += 1;
    }
    let lost = acknowledged
        .iter()
        .filter(|m| !stored.contains_key(*m))
        .count();
    let duplicated = stored.values().filter(|&&n| n > 1).count();
    let unacknowledged = stored.len().saturating_sub(acknowledged.len() - lost);
    println!(
        "\nPublishes: {} acknowledged, {lost} lost, {duplicated} duplicated, {unacknowledged} \
         stored without an acknowledgement (a request that failed).",
        acknowledged.len()
    );
    let mut failures = Vec::new();
    if lost > 0 {
        failures.push(format!("{lost} acknowledged publishes lost"));
    }
    if duplicated > 0 {
        failures.push(format!("{duplicated} publishes stored more than once"));
    }
    Ok(failures)
}

/// Every schedule due before the load ended (less a second in flight) fired exactly once, with
/// one message; none fired twice.
fn check_firings(pg: &Postgres, due: &[i64], ended_ms: i64) -> anyhow::Result<Vec<String>> {
    let mut db = client(pg)?;
    // The schedules were created in the order of their due times: ids in the same order.
    let counts: Vec<i64> = db
        .query(
            "SELECT count(f.schedule_id) FROM schedules s
             LEFT JOIN schedule_firings f ON f.schedule_id = s.id GROUP BY s.id ORDER BY s.id",
            &[],
        )?
        .iter()
        .map(|row| row.get(0))
        .collect();
    let fired: HashMap<i64, i64> = due.iter().copied().zip(counts).collect();
    let messages: i64 = db
        .query_one(
            "SELECT count(DISTINCT body) * 1000000 + count(*) FROM messages \
             WHERE channel = 'fleet-schedules'",
            &[],
        )?
        .get(0);
    let (distinct, total) = (messages / 1_000_000, messages % 1_000_000);
    let settled: Vec<i64> = due
        .iter()
        .copied()
        .filter(|&at| at < ended_ms - 1000)
        .collect();
    let firings: i64 = fired.values().sum();
    let twice = fired.values().filter(|&&n| n > 1).count();
    let lost = settled
        .iter()
        .filter(|at| fired.get(at).copied().unwrap_or(0) == 0)
        .count();
    println!(
        "Schedules: {} one-shot schedules due during the load, {firings} firings in all, {lost} \
         lost, {twice} fired twice; {total} messages from them ({distinct} distinct).",
        settled.len()
    );
    let mut failures = Vec::new();
    if lost > 0 {
        failures.push(format!("{lost} schedule firings lost"));
    }
    if twice > 0 || total != distinct || total != firings {
        failures.push(format!(
            "schedule firings duplicated: {firings} firings, {total} messages, {distinct} distinct"
        ));
    }
    Ok(failures)
}
