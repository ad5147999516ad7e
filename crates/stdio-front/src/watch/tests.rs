//! Tests of the store's location, the inotify watch and the pacing of the listing child.

use std::collections::HashMap;
use std::io::Write;

use super::*;

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let vars: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |name| vars.get(name).cloned()
}

#[test]
fn the_store_file_follows_the_store_crates_rule() {
    type Vars<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Vars<'_>, Option<&str>); 8] = [
        (&[("HOOKS_MCP_HOME", "/h")], Some("/h/state.db")),
        (
            &[
                ("HOOKS_MCP_HOME", "/h"),
                ("XDG_STATE_HOME", "/x"),
                ("HOME", "/u"),
            ],
            Some("/h/state.db"),
        ),
        (
            &[
                ("HOOKS_MCP_HOME", ""),
                ("XDG_STATE_HOME", "/x"),
                ("HOME", "/u"),
            ],
            Some("/x/hooks-mcp/state.db"),
        ),
        (
            &[("XDG_STATE_HOME", ""), ("HOME", "/u")],
            Some("/u/.local/state/hooks-mcp/state.db"),
        ),
        (&[], None),
        (
            &[("HOOKS_MCP_DATABASE_URL", "postgres://x/y"), ("HOME", "/u")],
            None,
        ),
        (
            &[("HOOKS_MCP_DATABASE_URL", "  "), ("HOME", "/u")],
            Some("/u/.local/state/hooks-mcp/state.db"),
        ),
        (
            &[("HOOKS_MCP_HOME", " "), ("HOME", "/u")],
            Some(" /state.db"),
        ),
    ];
    for (vars, expected) in cases {
        assert_eq!(
            sqlite_store_file(lookup(vars)),
            expected.map(PathBuf::from),
            "{vars:?}"
        );
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn the_watch_wakes_for_the_database_and_its_wal_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new/dir/state.db");
    let mut watch = StoreWatch::open(&db).unwrap();
    assert!(db.parent().unwrap().is_dir(), "the directory is created");
    assert!(!watch.drain(), "nothing yet");

    let append = |name: &str| {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(db.with_file_name(name))
            .unwrap();
        f.write_all(b"x").unwrap();
    };
    append("state.db-shm");
    append("other.db");
    assert!(!watch.drain(), "other files are ignored");
    append("state.db-wal");
    assert!(watch.drain(), "a WAL write wakes");
    assert!(!watch.drain(), "drained");
    append("state.db");
    append("state.db");
    assert!(watch.drain(), "a database write wakes");
    // A store put in place by rename (a restore) counts too.
    append("state.db.new");
    assert!(!watch.drain());
    std::fs::rename(db.with_file_name("state.db.new"), &db).unwrap();
    assert!(watch.drain(), "a rename onto the database wakes");
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_removed_store_directory_is_watched_again_once_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let db = home.join("state.db");
    let mut watch = StoreWatch::open(&db).unwrap();
    std::fs::remove_dir_all(&home).unwrap();
    // The watch ended: the store may have changed, and the directory is watched again.
    assert!(watch.drain(), "an ended watch counts as a change");
    assert!(home.is_dir(), "made again");
    assert!(!watch.drain(), "drained");
    std::fs::write(home.join("state.db-wal"), b"x").unwrap();
    assert!(watch.drain(), "a write after the new watch wakes");
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_store_reached_through_a_link_wakes_on_the_wal_sqlite_writes() {
    let real = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let file = real.path().join("shared.db");
    std::fs::write(&file, b"").unwrap();
    let db = home.path().join("state.db");
    std::os::unix::fs::symlink(&file, &db).unwrap();
    let mut watch = StoreWatch::open(&db).unwrap();
    std::fs::write(real.path().join("shared.db-wal"), b"x").unwrap();
    assert!(watch.drain(), "the WAL beside the real file wakes");
}

#[test]
fn a_wake_runs_once_settled_then_no_sooner_than_the_gap() {
    let start = Instant::now();
    let mut pacer = Pacer::default();
    assert_eq!(pacer.wait(start), None, "nothing pending");
    pacer.woken(start);
    assert_eq!(
        pacer.wait(start),
        Some(SETTLE),
        "a write's first event may come before its commit"
    );
    assert_eq!(pacer.wait(start + SETTLE), Some(Duration::ZERO));
    assert!(!pacer.start());
    pacer.ran(start, false, true, false);
    assert_eq!(pacer.wait(start), None);
    // Wakes soon after a run wait for the gap, and coalesce.
    let soon = start + Duration::from_millis(100);
    pacer.woken(soon);
    pacer.woken(soon + Duration::from_millis(50));
    assert_eq!(pacer.wait(soon), Some(MIN_GAP - Duration::from_millis(100)));
    assert_eq!(pacer.wait(start + MIN_GAP), Some(Duration::ZERO));
    // Writes that keep coming do not put the run off: the first wake counts.
    pacer.start();
    let late = start + MAX_GAP * 2;
    pacer.ran(late, false, true, false);
    let next = late + MIN_GAP;
    pacer.woken(next);
    pacer.woken(next + Duration::from_millis(5));
    assert_eq!(pacer.wait(next + SETTLE), Some(Duration::ZERO));
}

#[test]
fn unchanged_runs_back_off_while_writes_go_on_and_a_change_or_a_quiet_spell_resets_the_gap() {
    let mut now = Instant::now();
    let mut pacer = Pacer::default();
    let mut gaps = Vec::new();
    for _ in 0..6 {
        pacer.woken(now);
        pacer.start();
        pacer.ran(now, false, false, false);
        pacer.woken(now);
        let gap = pacer.wait(now).unwrap();
        gaps.push(gap.as_millis());
        now += gap;
        pacer.start();
        pacer.ran(now, false, false, false);
    }
    // The first run came after a quiet spell (none before): it leaves the shortest gap.
    assert_eq!(gaps, [250, 1000, 4000, 4000, 4000, 4000]);
    // A run long after the last that finds nothing (a write's first event before its commit,
    // say) does not wait the longest gap for the next: the store had been quiet.
    let later = now + MAX_GAP + Duration::from_secs(1);
    pacer.woken(later);
    pacer.start();
    pacer.ran(later, false, false, true);
    assert_eq!(pacer.wait(later), Some(MIN_GAP));
    pacer.start();
    pacer.ran(later + MIN_GAP, true, false, false);
    // A run that finds a change leaves the shortest gap too.
    let last = later + MIN_GAP * 2;
    pacer.woken(last);
    pacer.start();
    pacer.ran(last, false, true, false);
    pacer.woken(last);
    assert_eq!(pacer.wait(last), Some(MIN_GAP));
}

#[test]
fn events_during_a_run_start_one_follow_up_and_an_unchanged_follow_up_none() {
    let now = Instant::now();
    let mut pacer = Pacer::default();
    pacer.woken(now);
    let follow_up = pacer.start();
    assert!(!follow_up);
    // The store was written while the child ran: run again (it may have missed that write).
    pacer.ran(now, follow_up, false, true);
    assert!(pacer.wait(now).is_some());
    let follow_up = pacer.start();
    assert!(follow_up);
    // The follow-up found nothing new, and what it saw during its run was its own echo.
    pacer.ran(now, follow_up, false, true);
    assert_eq!(pacer.wait(now), None, "no endless self-waking");
    // A follow-up that found a change runs once more.
    pacer.woken(now);
    pacer.start();
    pacer.ran(now, false, true, true);
    let follow_up = pacer.start();
    pacer.ran(now, follow_up, true, true);
    assert!(pacer.wait(now).is_some());
    // A wake from outside while a follow-up is pending makes it an ordinary run.
    pacer.woken(now);
    assert!(!pacer.start());
}

#[test]
fn follow_ups_and_the_baseline_do_not_back_off() {
    let now = Instant::now();
    let mut pacer = Pacer::default();
    // A new store: the baseline's own child created it, so its run saw writes.
    pacer.baseline(now, true);
    assert_eq!(
        pacer.wait(now),
        Some(MIN_GAP),
        "one follow-up, after the gap"
    );
    let follow_up = pacer.start();
    assert!(follow_up);
    pacer.ran(now + MIN_GAP, follow_up, false, false);
    // A publication right after: no longer wait than the shortest gap.
    pacer.woken(now);
    assert_eq!(pacer.wait(now + MIN_GAP), Some(MIN_GAP));
    let mut quiet = Pacer::default();
    quiet.baseline(now, false);
    assert_eq!(quiet.wait(now), None, "nothing to follow up");
}
