//! Pushing urgent messages into an idle session (`HOOKS_MCP_CHANNEL_PUSH`), at no cost while
//! nothing is written: an inotify watch on the SQLite store's directory (its own descriptor,
//! woken only by writes to the database or its WAL) and, after such a write, a short-lived
//! child (`hooks-mcp-stdio --pending-pushes CURSOR`) that prints the alert and critical
//! messages to push after the cursor. The front end writes them as
//! `notifications/claude/channel` lines and keeps the cursor, which the full server takes over
//! at a handoff.
//!
//! The cursor starts at this process's start: what was published before is the hooks' to
//! deliver (an unacknowledged alert reaches the session at its next prompt anyway).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use protocol_lite::push::{Batch, Cursor, notification_line};
use protocol_lite::setting::{FULL_BIN_ENV, PENDING_PUSHES_ARG, QUIET_ARG};

use crate::child::{self, Named};
use crate::error::{FrontError, debug};
use crate::watch::{Pacer, StoreWatch};

/// How long the child may take: it opens the store and reads it.
const LIMIT: Duration = Duration::from_secs(10);
/// The shortest gap between two runs of the child: writes in between are coalesced.
pub(crate) const MIN_GAP: Duration = Duration::from_millis(200);
/// The longest: each run that found nothing doubles the gap up to this, so a store written all
/// the time (every hook writes it) costs an idle session about two children a second, and a
/// message still reaches it within a second of its publication.
pub(crate) const MAX_GAP: Duration = Duration::from_millis(600);

/// The push state of one light session.
#[derive(Debug)]
pub(crate) struct Pushing {
    watch: StoreWatch,
    pacer: Pacer,
    cursor: Cursor,
    /// The child cannot be started: pushing stopped for this session (said once).
    stopped: bool,
    /// A child ran: the next ones keep the settings' warnings to themselves.
    ran: bool,
}

impl Pushing {
    /// Watches the store at `db`; nothing published before `since_ms` is pushed.
    ///
    /// # Errors
    /// [`FrontError::Watch`] when the directory cannot be created or watched.
    pub(crate) fn start(db: &Path, since_ms: i64) -> Result<Pushing, FrontError> {
        let watch = StoreWatch::open(db).map_err(|source| FrontError::Watch {
            dir: db.parent().unwrap_or(Path::new(".")).to_path_buf(),
            source,
        })?;
        Ok(Pushing {
            watch,
            pacer: Pacer::new(MIN_GAP, MAX_GAP),
            cursor: Cursor::starting(since_ms),
            stopped: false,
            ran: false,
        })
    }

    /// The descriptor to poll.
    pub(crate) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.watch.fd()
    }

    /// The descriptor was readable: reads its events, and a write to the store makes a run due.
    pub(crate) fn woken(&mut self) {
        if self.watch.drain() {
            self.pacer.woken(Instant::now());
        }
    }

    /// How long until a run is due (`None`: none is, or pushing stopped).
    pub(crate) fn wait(&self, now: Instant) -> Option<Duration> {
        self.pacer.wait(now).filter(|_| !self.stopped)
    }

    /// Where pushing stands, for the full server at a handoff.
    pub(crate) fn cursor(&self) -> Cursor {
        self.cursor
    }

    /// Runs the child and returns the lines to write, moving the cursor past them. A failed
    /// run is reported and pushes nothing (the next write tries again).
    pub(crate) fn run(&mut self, stdio: &Path) -> Vec<Vec<u8>> {
        // Writes queued before this run are what it answers.
        self.watch.drain();
        let follow_up = self.pacer.start();
        let batch = pending(stdio, self.cursor, std::mem::replace(&mut self.ran, true));
        let written = self.watch.drain();
        let (lines, more) = match batch {
            Ok(batch) => match Cursor::parse(&batch.cursor) {
                Ok(cursor) => {
                    self.cursor = cursor;
                    let lines: Vec<Vec<u8>> = batch.pushes.iter().map(notification_line).collect();
                    (lines, batch.more)
                }
                Err(e) => {
                    protocol_lite::diag!("hooks-mcp: cannot push: {e}");
                    (Vec::new(), false)
                }
            },
            Err(e) => {
                // A child that cannot be started will not start at the next write either.
                self.stopped = matches!(e, FrontError::Spawn { .. });
                let stop = if self.stopped {
                    "; pushing stops for this session (the hooks still deliver)"
                } else {
                    ""
                };
                protocol_lite::diag!("hooks-mcp: cannot read the messages to push: {e}{stop}");
                (Vec::new(), false)
            }
        };
        // Events during the run may be the child's own (folding a long WAL back): they start
        // one follow-up run, which starts no other unless it finds something.
        self.pacer
            .ran(Instant::now(), follow_up, !lines.is_empty(), written);
        if more {
            self.pacer.woken(Instant::now());
        }
        debug(|| format!("push run: {} to push, cursor {}", lines.len(), self.cursor));
        lines
    }
}

/// Runs `stdio` (`hooks-mcp-stdio`) with [`PENDING_PUSHES_ARG`] and `cursor` in this process's
/// environment (so it opens the same store, for the same session) and reads its batch;
/// `quiet`: with [`QUIET_ARG`].
///
/// # Errors
/// What running the child or reading its output failed with.
fn pending(stdio: &Path, cursor: Cursor, quiet: bool) -> Result<Batch, FrontError> {
    let mut command = Command::new(stdio);
    command.arg(PENDING_PUSHES_ARG).arg(cursor.to_string());
    if quiet {
        command.arg(QUIET_ARG);
    }
    let hint = format!(
        "it is built and installed beside hooks-mcp-full, or set {FULL_BIN_ENV} to the path of \
         hooks-mcp-full (hooks-mcp-stdio lies beside it)"
    );
    let named = Named {
        what: "push child",
        hint: &hint,
        limit_setting: None,
    };
    let output = child::output_of(command, LIMIT, named)?;
    serde_json::from_slice(&output).map_err(|e| FrontError::Unusable {
        what: "push child",
        problem: format!("not a batch: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_runs_are_paced_within_a_second() {
        // The follow-up rule (a run never keeps waking itself) is the pacer's own test
        // (watch/tests.rs); here, push's gaps.
        let t0 = Instant::now();
        let mut p = Pacer::new(MIN_GAP, MAX_GAP);
        assert_eq!(p.wait(t0), None, "nothing written: no run, no timer");
        p.woken(t0);
        assert_eq!(
            p.wait(t0),
            Some(crate::watch::SETTLE),
            "the first run once the write has settled"
        );
        for _ in 0..4 {
            let follow_up = p.start();
            p.ran(t0, follow_up, false, false);
        }
        p.woken(t0);
        assert_eq!(
            p.wait(t0),
            Some(MAX_GAP),
            "bounded, so a push stays within a second"
        );
        let follow_up = p.start();
        p.ran(t0, follow_up, true, false);
        p.woken(t0);
        assert_eq!(
            p.wait(t0),
            Some(MIN_GAP),
            "found something: back to the shortest gap"
        );
    }

    #[test]
    fn a_missing_child_pushes_nothing_keeps_the_cursor_and_is_not_retried() {
        let dir = tempfile::tempdir().unwrap();
        let mut pushing = Pushing::start(&dir.path().join("state.db"), 5).unwrap();
        pushing.pacer.woken(Instant::now());
        let lines = pushing.run(Path::new("/nonexistent/hooks-mcp-stdio"));
        assert!(lines.is_empty());
        assert_eq!(pushing.cursor(), Cursor::starting(5));
        // Not retried at every later write.
        pushing.pacer.woken(Instant::now());
        assert_eq!(pushing.wait(Instant::now() + MAX_GAP), None);
        let err = pending(
            Path::new("/nonexistent/hooks-mcp-stdio"),
            Cursor::starting(5),
            false,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot run the push child `/nonexistent/"),
            "{err}"
        );
    }
}
