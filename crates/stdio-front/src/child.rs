//! Short-lived children whose output the front end reads: on this one thread, with `poll`
//! and a time limit (no reader thread: a thread would leave its stack and malloc arena behind
//! in an idle session).

use std::io::{self, Read};
use std::path::Path;
use std::process::{ChildStderr, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};

use crate::error::FrontError;

/// Room reserved for a child's output (the catalogue's is about 9 KiB today): more than
/// glibc's threshold for mapping an allocation on its own ([`MMAP_THRESHOLD`]), so the buffer
/// is unmapped when dropped and a child's output leaves nothing behind in an idle session's
/// heap. Only the pages the output fills are ever touched.
const OUTPUT_ROOM: usize = 256 * 1024;

/// glibc's default threshold for mapping an allocation on its own, kept fixed by
/// [`map_outputs_apart`].
const MMAP_THRESHOLD: usize = 128 * 1024;

const _: () = assert!(OUTPUT_ROOM > MMAP_THRESHOLD);

/// Keeps glibc's threshold for mapping an allocation on its own at its default, so that every
/// child's output buffer ([`OUTPUT_ROOM`]) is mapped apart from the heap. Left dynamic, glibc
/// raises the threshold to the size of the first such buffer when it is freed, and the next
/// child's buffer (the 2026-07-28 opening's listing child) then comes from the heap, whose
/// touched pages stay with the idle session. Called once at start, before any allocation that
/// large.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn map_outputs_apart() {
    #[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
    let threshold = MMAP_THRESHOLD as libc::c_int;
    // SAFETY: `mallopt` takes no pointers; the front end runs on one thread.
    let _ = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, threshold) };
}

/// Other allocators: nothing to set.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn map_outputs_apart() {}

/// How a child is named in messages, and how to fix not finding it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Named<'a> {
    /// What it is ("catalogue child").
    pub(crate) what: &'static str,
    /// How to make it found, for a failed start.
    pub(crate) hint: &'a str,
    /// The setting that changes its time limit, if any.
    pub(crate) limit_setting: Option<&'static str>,
}

/// The most of a child's stderr kept, its end (its last line says why it failed).
const STDERR_ROOM: usize = 64 * 1024;

/// Runs `command` (stdin closed) and returns its standard output, once it exited successfully
/// within `limit`; a child past the limit is killed. What it writes to stderr is passed on to
/// this process's stderr, and a failed child's last line of it is the error's reason (the
/// client, which cannot see stderr, reads it in the answer).
///
/// # Errors
/// [`FrontError::Spawn`], [`FrontError::TimedOut`], [`FrontError::Read`] or
/// [`FrontError::Failed`].
pub(crate) fn output_of(
    mut command: Command,
    limit: Duration,
    named: Named<'_>,
) -> Result<Vec<u8>, FrontError> {
    let what = named.what;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| FrontError::Spawn {
            what,
            path: Path::new(command.get_program()).to_path_buf(),
            hint: named.hint.to_owned(),
            source,
        })?;
    let mut stderr = child.stderr.take();
    let mut said = Vec::new();
    let read = match child.stdout.take() {
        Some(mut stdout) => read_within(&mut stdout, stderr.as_mut(), &mut said, limit),
        None => Err(Stop::Io(io::Error::other("no stdout pipe"))),
    };
    if read.is_err() {
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|source| FrontError::Read { what, source });
    // What it wrote last, now that it is gone (without waiting on a descendant holding it).
    if let Some(pipe) = stderr.as_mut() {
        let _ = read_available(pipe, &mut said);
    }
    let said = String::from_utf8_lossy(&said);
    if !said.trim().is_empty() {
        protocol_lite::diag!("{}", said.trim_end());
    }
    let status = status?;
    let output = match read {
        Ok(output) => output,
        Err(Stop::Io(source)) => return Err(FrontError::Read { what, source }),
        Err(Stop::TimedOut) => {
            return Err(FrontError::TimedOut {
                what,
                limit,
                setting: named.limit_setting,
            });
        }
    };
    if !status.success() {
        let reason = said
            .lines()
            .map(str::trim)
            .rfind(|line| !line.is_empty())
            .map(|line| line.chars().take(1000).collect());
        return Err(FrontError::Failed {
            what,
            status,
            reason,
        });
    }
    Ok(output)
}

/// Appends to `kept` what `pipe` holds now (non-blocking), keeping the last [`STDERR_ROOM`]
/// bytes: whether the pipe reached its end.
fn read_available(pipe: &mut ChildStderr, kept: &mut Vec<u8>) -> io::Result<bool> {
    rustix::io::ioctl_fionbio(&*pipe, true)?;
    // Small: an idle session keeps every stack page it ever touched, and a child rarely says much.
    let mut chunk = [0u8; 1024];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => return Ok(true),
            Ok(n) => {
                // The end matters (the reason comes last): keep the last STDERR_ROOM bytes.
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > STDERR_ROOM {
                    kept.drain(..kept.len() - STDERR_ROOM);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
}

/// Why [`read_within`] stopped.
enum Stop {
    Io(io::Error),
    TimedOut,
}

/// Reads `pipe` to its end, failing once `limit` has passed; meanwhile keeps what the child
/// writes to `stderr` in `said` (so that a child with much to say never blocks on it).
fn read_within(
    pipe: &mut ChildStdout,
    mut stderr: Option<&mut ChildStderr>,
    said: &mut Vec<u8>,
    limit: Duration,
) -> Result<Vec<u8>, Stop> {
    let deadline = Instant::now() + limit;
    // Non-blocking, so each read takes what is there and the wait happens in `poll`.
    rustix::io::ioctl_fionbio(&*pipe, true).map_err(|e| Stop::Io(e.into()))?;
    let mut text = Vec::with_capacity(OUTPUT_ROOM);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Stop::TimedOut);
        }
        let timeout = timespec(left);
        let ready = {
            let mut fds = vec![PollFd::new(&*pipe, PollFlags::IN)];
            if let Some(err) = stderr.as_deref() {
                fds.push(PollFd::new(err, PollFlags::IN));
            }
            match poll(&mut fds, Some(&timeout)) {
                Ok(0) => return Err(Stop::TimedOut),
                Ok(_) => fds.get(1).is_some_and(|fd| !fd.revents().is_empty()),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(Stop::Io(e.into())),
            }
        };
        if ready && let Some(err) = stderr.as_deref_mut() {
            // At its end (or failing): stop watching it.
            if read_available(err, said).unwrap_or(true) {
                stderr = None;
            }
        }
        // Appends what is there; "would block" means the child is not done yet.
        match pipe.read_to_end(&mut text) {
            Ok(_) => return Ok(text),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(Stop::Io(e)),
        }
    }
}

/// `duration` as a `poll` timeout.
pub(crate) fn timespec(duration: Duration) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(duration.subsec_nanos()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    const NAMED: Named<'static> = Named {
        what: "test child",
        hint: "install it",
        limit_setting: Some("TEST_LIMIT"),
    };

    #[test]
    fn output_is_read_to_the_end() {
        let out = output_of(
            sh("printf one; sleep 0.1; printf two"),
            Duration::from_secs(10),
            NAMED,
        )
        .unwrap();
        assert_eq!(out, b"onetwo");
    }

    #[test]
    fn failures_say_what_failed() {
        let failed = output_of(sh("exit 3"), Duration::from_secs(10), NAMED).unwrap_err();
        assert!(matches!(failed, FrontError::Failed { .. }), "{failed}");
        assert!(failed.to_string().starts_with("the test child failed ("));

        // Its last line on stderr is the reason, for a client that cannot see stderr; much
        // said before it never blocks the child.
        let script = "head -c 200000 /dev/zero | tr '\\0' x >&2; echo >&2; \
                      echo 'no store: locked' >&2; exit 1";
        let failed = output_of(sh(script), Duration::from_secs(10), NAMED).unwrap_err();
        let text = failed.to_string();
        assert!(text.ends_with("): no store: locked"), "{text}");

        let slow = output_of(sh("exec sleep 30"), Duration::from_millis(200), NAMED).unwrap_err();
        assert_eq!(
            slow.to_string(),
            "the test child did not finish within 200 ms (TEST_LIMIT)"
        );

        let missing = Command::new("/nonexistent/child");
        let err = output_of(missing, Duration::from_secs(1), NAMED).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("cannot run the test child `/nonexistent/child`: ")
                && text.ends_with("; install it"),
            "{text}"
        );
    }
}
