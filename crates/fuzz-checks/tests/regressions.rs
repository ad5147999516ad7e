//! Replays every kept fuzz input (`fuzz/regressions/<target>/`) and every generated seed
//! through its target's check, on stable Rust: a fixed crash stays fixed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fuzz_checks::seeds::{repository_root, seeds};

/// The kept inputs of `target`, sorted by file name.
fn regressions(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = repository_root().join("fuzz/regressions").join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

fn replay(name: &str) {
    let target = fuzz_checks::target(name).unwrap();
    let seeds = seeds(name, &repository_root());
    assert!(
        !seeds.is_empty(),
        "{name} has no seeds: are examples/ and tests/fixtures/ there?"
    );
    for seed in &seeds {
        (target.check)(seed);
    }
    for (path, data) in regressions(name) {
        let replayed = std::panic::catch_unwind(|| (target.check)(&data));
        assert!(replayed.is_ok(), "{} fails again", path.display());
    }
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { replay(stringify!($name)); })*

        #[test]
        fn every_target_is_replayed() {
            let here = [$(stringify!($name)),*];
            let all: Vec<&str> = fuzz_checks::TARGETS.iter().map(|t| t.name).collect();
            assert_eq!(here.as_slice(), all.as_slice());
        }
    };
}

targets!(
    jsonrpc_line,
    light_session,
    stdio_transport,
    tool_args,
    matcher,
    channel_rules,
    http_sessions,
    hook_payload,
);

/// The example session through the HTTP target opens a session and gets every request
/// answered: the target's checks run on real traffic, not only on refusals.
#[test]
fn http_seed_reaches_the_tools() {
    let seed = &seeds("http_sessions", &repository_root())[0];
    let seen = fuzz_checks::http::run(seed);
    assert_eq!(seen.sessions, 1, "{seen:?}");
    // initialize, tools/list and two tool calls (the notification gets 202).
    assert_eq!(seen.answered, 4, "{seen:?}");
}

/// The example session over the stdio transport gets its four requests answered.
#[test]
fn stdio_seed_reaches_the_tools() {
    let seed = &seeds("stdio_transport", &repository_root())[0];
    let outputs = fuzz_checks::stdio::run(seed);
    let mut ids: Vec<i64> = outputs.iter().filter_map(|v| v["id"].as_i64()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3, 4], "{outputs:?}");
    assert!(
        outputs.iter().all(|v| v.get("result").is_some()),
        "{outputs:?}"
    );
}
