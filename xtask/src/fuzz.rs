//! `cargo xtask fuzz [--seconds N] [TARGET]`: builds the cargo-fuzz targets in `fuzz/` and runs
//! them (all, or one) from their seeds, then prints per target: runs, exec/s, coverage, corpus
//! size and crashes.
//!
//! Seeds are generated at run time from `examples/` and `tests/fixtures/`
//! (`fuzz_checks::seeds`) into `fuzz/corpus/<target>/` (not committed), together with the kept
//! inputs of `fuzz/regressions/<target>/`. A crashing input lands in
//! `fuzz/artifacts/<target>/`; each run's libFuzzer output in `fuzz/logs/<target>.log`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, bail};

use crate::util::{cargo, paths};

/// Options of `cargo xtask fuzz`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Seconds to run each target.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// The sanitizer cargo-fuzz builds with: none (fastest; the code is safe Rust), address,
    /// leak, memory, thread.
    #[arg(long, default_value = "none")]
    sanitizer: String,
    /// Megabytes of resident memory after which libFuzzer reports an out-of-memory finding.
    #[arg(long, default_value_t = 4096)]
    rss_limit_mb: u64,
    /// Run only this target (default: every target).
    target: Option<String>,
}

/// The figures of one target's run, read from libFuzzer's output.
#[derive(Debug, Default)]
struct Figures {
    runs: Option<u64>,
    exec_per_sec: Option<u64>,
    coverage: Option<u64>,
    features: Option<u64>,
    corpus: Option<u64>,
    crashes: Vec<String>,
    status: String,
}

/// Fails with what to install when nightly or cargo-fuzz is missing.
pub(crate) fn check_tools() -> anyhow::Result<()> {
    let nightly = cargo::nightly(&["--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !nightly.is_ok_and(|s| s.success()) {
        bail!(
            "the nightly toolchain is missing (libFuzzer builds need it): install it with \
             `rustup toolchain install nightly`, then run this again"
        );
    }
    let fuzz = cargo::nightly(&["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !fuzz.is_ok_and(|s| s.success()) {
        bail!(
            "cargo-fuzz is missing: install it with `cargo install cargo-fuzz --locked`, then \
             run this again"
        );
    }
    Ok(())
}

/// Writes the target's seeds and kept regressions into its corpus folder; returns it.
fn seed_corpus(root: &Path, target: &str) -> anyhow::Result<PathBuf> {
    let corpus = root.join("fuzz/corpus").join(target);
    std::fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    for (i, seed) in fuzz_checks::seeds::seeds(target, root).iter().enumerate() {
        std::fs::write(corpus.join(format!("seed-{i:03}")), seed)?;
    }
    if let Ok(entries) = std::fs::read_dir(root.join("fuzz/regressions").join(target)) {
        for entry in entries.flatten() {
            let path = entry.path();
            if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                std::fs::copy(&path, corpus.join(format!("regression-{name}")))?;
            }
        }
    }
    Ok(corpus)
}

/// The number after `key` in a libFuzzer status line (`cov: 1234`).
fn number_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn read_figures(log: &str, figures: &mut Figures) {
    for line in log.lines() {
        if line.starts_with('#') && line.contains("cov: ") {
            figures.runs = line[1..]
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .or(figures.runs);
            figures.coverage = number_after(line, "cov:").or(figures.coverage);
            figures.features = number_after(line, "ft:").or(figures.features);
            figures.corpus = number_after(line, "corp:").or(figures.corpus);
            figures.exec_per_sec = number_after(line, "exec/s:").or(figures.exec_per_sec);
        }
        if let Some(n) = line
            .strip_prefix("stat::number_of_executed_units:")
            .and_then(|n| n.trim().parse().ok())
        {
            figures.runs = Some(n);
        }
        if let Some(n) = line
            .strip_prefix("stat::average_exec_per_sec:")
            .and_then(|n| n.trim().parse().ok())
        {
            figures.exec_per_sec = Some(n);
        }
        if let Some(path) = line
            .split("Test unit written to ")
            .nth(1)
            .map(|p| p.trim().to_owned())
        {
            figures.crashes.push(path);
        }
    }
}

fn run_target(root: &Path, args: &Args, target: &str) -> anyhow::Result<Figures> {
    let corpus = seed_corpus(root, target)?;
    let artifacts = root.join("fuzz/artifacts").join(target);
    std::fs::create_dir_all(&artifacts)?;
    let logs = root.join("fuzz/logs");
    std::fs::create_dir_all(&logs)?;
    let log_path = logs.join(format!("{target}.log"));
    println!(
        "== {target}: {} s (libFuzzer output: {})",
        args.seconds,
        log_path.display()
    );
    let mut child = cargo::nightly(&["fuzz", "run", "--sanitizer", &args.sanitizer, target])
        .arg(&corpus)
        .arg("--")
        .arg(format!("-max_total_time={}", args.seconds))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(format!("-rss_limit_mb={}", args.rss_limit_mb))
        .args(["-timeout=60", "-print_final_stats=1", "-print_pcs=0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting cargo fuzz run")?;
    // libFuzzer reports on stderr; stdout is drained on its own thread so neither pipe fills.
    let stdout = child.stdout.take();
    let drain = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(out) = stdout {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    });
    let mut log = String::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            log.push_str(&line);
            log.push('\n');
        }
    }
    let status = child.wait()?;
    log.push_str(&drain.join().unwrap_or_default());
    std::fs::write(&log_path, &log)?;
    let mut figures = Figures::default();
    read_figures(&log, &mut figures);
    figures.status = if status.success() {
        "ok".into()
    } else if figures.crashes.is_empty() {
        format!("failed ({status}); see the log")
    } else {
        "FINDING".into()
    };
    Ok(figures)
}

fn show(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    check_tools()?;
    let root = paths::workspace_root();
    let targets: Vec<&str> = match &args.target {
        Some(name) => match fuzz_checks::target(name) {
            Some(t) => vec![t.name],
            None => {
                let known: Vec<&str> = fuzz_checks::TARGETS.iter().map(|t| t.name).collect();
                bail!(
                    "no fuzz target is named `{name}`; the targets: {}",
                    known.join(", ")
                );
            }
        },
        None => fuzz_checks::TARGETS.iter().map(|t| t.name).collect(),
    };
    println!(
        "== building the fuzz targets (nightly, sanitizer {})",
        args.sanitizer
    );
    let mut build = cargo::nightly(&["fuzz", "build", "--sanitizer", &args.sanitizer]);
    if let [one] = targets.as_slice() {
        build.arg(one);
    }
    if !build
        .status()
        .context("running cargo fuzz build")?
        .success()
    {
        bail!("cargo fuzz build failed");
    }
    let mut rows = Vec::new();
    for target in &targets {
        let figures = run_target(root, args, target)?;
        rows.push((*target, figures));
    }
    println!();
    println!(
        "| target | seconds | runs | exec/s | coverage (edges) | features | corpus | crashes | status |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for (target, f) in &rows {
        println!(
            "| {target} | {} | {} | {} | {} | {} | {} | {} | {} |",
            args.seconds,
            show(f.runs),
            show(f.exec_per_sec),
            show(f.coverage),
            show(f.features),
            show(f.corpus),
            f.crashes.len(),
            f.status
        );
    }
    let findings: Vec<&String> = rows.iter().flat_map(|(_, f)| &f.crashes).collect();
    if !findings.is_empty() {
        println!();
        for path in &findings {
            println!("finding: {path}");
        }
        bail!(
            "{} finding(s): reproduce with `cargo +nightly fuzz run <target> <file>`; once \
             fixed, keep each input under fuzz/regressions/<target>/",
            findings.len()
        );
    }
    if rows.iter().any(|(_, f)| f.status != "ok") {
        bail!("a fuzz run failed; see fuzz/logs/");
    }
    Ok(())
}
