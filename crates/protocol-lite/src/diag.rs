//! Diagnostics on stderr that can never take a process down or stall it.
//!
//! `eprintln!` panics when stderr cannot be written (a launcher that closed the read end of the
//! pipe, a full disk behind a redirect), and any blocking write waits forever on a pipe that
//! nobody reads. A diagnostic is never worth a crash or a stall: [`diag!`] writes one whole
//! line and ignores every failure, and [`QuietStderr`] is the same for a log subscriber's
//! writer. Both write only what stderr takes at once: before each write of at most
//! `PIPE_BUF` (4096) bytes they `poll` stderr with a zero timeout, and what it cannot take now is
//! dropped (a line cut short is ended by the next one that gets through). stderr itself stays
//! blocking: its open file description is usually shared with the parent or a terminal. A
//! regular file or `/dev/null` is always writable, so it gets every byte.
//!
//! [`diag!`]: crate::diag!

use std::fmt;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// The most written to stderr at a time. A pipe that polls writable has room for this many
/// bytes (POSIX `PIPE_BUF`; Linux reports a pipe writable while a whole page is free), so a
/// write of at most this size after a successful poll never blocks.
const PIPE_BUF: usize = 4096;

/// Whether the last write to stderr was cut short: the next one starts on a new line.
static CUT: AtomicBool = AtomicBool::new(false);

/// Writes one formatted line to stderr, never blocking and ignoring every error (what stderr
/// cannot take at once is dropped).
///
/// Use it wherever `eprintln!` would be used; the workspace's clippy configuration forbids
/// `eprintln!` and `eprint!` in non-test code.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::diag::line(::std::format_args!($($arg)*))
    };
}

/// Writes `args` and a newline to stderr (one write when the line fits in 4096 bytes), never
/// blocking and ignoring every error. Prefer [`diag!`].
///
/// [`diag!`]: crate::diag!
pub fn line(args: fmt::Arguments<'_>) {
    let mut text = args.to_string();
    text.push('\n');
    write_quietly(text.as_bytes());
}

/// A writer to stderr that reports success whatever happens and never blocks, for log
/// subscribers (which otherwise report their own write failures on stderr, and panic doing
/// so). What stderr cannot take at once is dropped.
#[derive(Debug, Default, Clone, Copy)]
pub struct QuietStderr;

impl Write for QuietStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_quietly(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes `bytes` to stderr as far as it takes them now, holding std's lock on stderr so that
/// threads' lines do not interleave.
fn write_quietly(bytes: &[u8]) {
    let stderr = io::stderr().lock();
    if CUT.load(Ordering::Relaxed) {
        if write_now(&stderr, b"\n") == 0 {
            return;
        }
        CUT.store(false, Ordering::Relaxed);
    }
    let written = write_now(&stderr, bytes);
    if written > 0 && written < bytes.len() {
        CUT.store(true, Ordering::Relaxed);
    }
}

/// Writes the start of `bytes` to `fd` in pieces of at most [`PIPE_BUF`] bytes while a poll
/// with a zero timeout says it is writable: how many bytes were written. Never blocks on a
/// pipe nobody drains (one that polls writable has room for `PIPE_BUF` bytes); a socket or a
/// terminal may report itself writable with less room, and then one piece may wait for it.
/// Any error ends the write.
fn write_now(fd: impl AsFd, bytes: &[u8]) -> usize {
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mut written = 0;
    while written < bytes.len() {
        let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
        match poll(&mut fds, Some(&now)) {
            Ok(_) if fds[0].revents().contains(PollFlags::OUT) => {}
            Err(rustix::io::Errno::INTR) => continue,
            // Full, closed, or not a descriptor: the rest is dropped.
            _ => return written,
        }
        let end = bytes.len().min(written + PIPE_BUF);
        match rustix::io::write(&fd, &bytes[written..end]) {
            Ok(0) => return written,
            Ok(n) => written += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return written,
        }
    }
    written
}

/// Makes a write past this process's file-size limit fail with `EFBIG`, which SQLite reports
/// and the store returns as an error (the transaction rolled back, nothing half-written), or
/// which [`diag!`](crate::diag!) drops like any write stderr cannot take, instead of the kernel
/// killing the process with `SIGXFSZ`, its default action, mid-write.
/// Each binary calls it first thing in `main`: a diagnostic written to a file (stderr
/// redirected) is a write like any other.
///
/// A handler that does nothing is installed rather than the signal being ignored: an ignored
/// signal stays ignored in the programs a process starts (condition scripts), while a handler
/// is reset to the default at `exec`, so those programs keep the behaviour they expect.
///
/// # Errors
/// The system's refusal to install the handler (a process can still run without it).
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn survive_file_size_limit() -> std::io::Result<()> {
    extern "C" fn nothing(_: libc::c_int) {}
    // SAFETY: `action` is zeroed (a valid `sigaction`: empty mask, no flags) and then given a
    // handler that touches nothing, which is async-signal-safe; `sigaction` reads `action`
    // and writes nothing back (a null old action).
    let installed = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGXFSZ, &action, std::ptr::null_mut())
    };
    if installed == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Elsewhere there is no such signal: nothing to do.
#[cfg(not(unix))]
pub fn survive_file_size_limit() -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    #[test]
    fn quiet_stderr_reports_every_byte_written() {
        let mut w = QuietStderr;
        assert_eq!(w.write(b"x").unwrap(), 1);
        assert!(w.flush().is_ok());
        crate::diag!("a diagnostic {}", 1);
    }

    #[test]
    fn a_regular_file_gets_every_byte() {
        let mut file = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(write_now(&file, &bytes), bytes.len());
        let mut back = Vec::new();
        std::io::Seek::rewind(&mut file).unwrap();
        file.read_to_end(&mut back).unwrap();
        assert_eq!(back, bytes);
    }

    #[test]
    fn a_pipe_nobody_reads_takes_what_fits_and_the_rest_is_dropped() {
        let (mut reader, writer) = std::io::pipe().unwrap();
        let line = [b'a'; 1000];
        let mut total = 0;
        // Far more than any pipe holds: each call returns at once with what fitted.
        for _ in 0..2000 {
            total += write_now(&writer, &line);
        }
        assert!(total > 0 && total < 2000 * line.len(), "{total}");
        assert_eq!(write_now(&writer, &line), 0, "a full pipe takes nothing");
        // Once read, it is writable again.
        let mut drained = vec![0u8; total];
        reader.read_exact(&mut drained).unwrap();
        assert_eq!(write_now(&writer, &line), line.len());
        drop(reader);
        assert_eq!(write_now(&writer, &line), 0, "a closed pipe takes nothing");
    }

    /// Set by the test below for the child it runs.
    const FLOOD: &str = "PROTOCOL_LITE_TEST_FLOOD_STDERR";

    /// The child of the test below, with stderr a pipe nobody reads; run on its own, it does
    /// nothing (12 MB of output is no use on a terminal).
    #[test]
    fn diag_floods_stderr() {
        if std::env::var_os(FLOOD).is_none() {
            return;
        }
        let long = "x".repeat(3 * PIPE_BUF);
        // Some 12 MB: far more than a pipe holds.
        for i in 0..2_000 {
            crate::diag!("diagnostic {i}: {}", &long[..i % long.len()]);
            let _ = QuietStderr.write(b"a log record\n");
        }
        println!("flooded stderr");
    }

    #[test]
    fn diag_never_blocks_on_a_stderr_pipe_nobody_reads() {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "diag::tests::diag_floods_stderr",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(FLOOD, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Held open and never read.
        let _stderr = child.stderr.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the child is blocked writing to stderr");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut report = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut report)
            .unwrap();
        assert!(status.success(), "{status}: {report}");
        assert!(
            report.contains("1 passed") && report.contains("flooded stderr"),
            "the flood did not run: {report}"
        );
    }
}
