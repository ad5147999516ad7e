//! A pipe handed over with `O_NONBLOCK`: read and written as if it blocked.
//!
//! A client may give a stdio server pipes it set non-blocking. That flag belongs to the open
//! file description the client shares, so it is left as found; a read or write that would
//! block waits in `poll` until the descriptor is ready instead, and only a real error (the
//! client closed its end) fails. Both halves of a stdio session use it: the light front end
//! on its own thread, the full server on its blocking pool.

use std::io::{self, Read, Write};
use std::os::fd::AsFd;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// `fd` read and written through [`Read`] and [`Write`], waiting for readiness whenever the
/// descriptor says a call would block (no buffer of its own).
#[derive(Debug)]
pub struct Waiting<F>(pub F);

impl<F: AsFd> Waiting<F> {
    /// Runs `op` until it neither would block (then waits for `ready`) nor was interrupted.
    fn again<T>(
        &self,
        ready: PollFlags,
        mut op: impl FnMut(&F) -> rustix::io::Result<T>,
    ) -> io::Result<T> {
        loop {
            match op(&self.0) {
                Ok(done) => return Ok(done),
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => {
                    wait_for(&self.0, ready, None)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl<F: AsFd> Read for Waiting<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.again(PollFlags::IN, |fd| rustix::io::read(fd, &mut *buf))
    }
}

impl<F: AsFd> Write for Waiting<F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.again(PollFlags::OUT, |fd| rustix::io::write(fd, buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Waits until `fd` is ready for `events` (or reports an error or a hang-up, which the next
/// call on it returns), at most `limit` (`None`: as long as it takes); the events that came.
///
/// # Errors
/// `poll`'s own failure.
pub fn wait_for(
    fd: &impl AsFd,
    events: PollFlags,
    limit: Option<&Timespec>,
) -> io::Result<PollFlags> {
    let mut fds = [PollFd::new(fd, events)];
    loop {
        match poll(&mut fds, limit) {
            Ok(_) => return Ok(fds[0].revents()),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Whether the reader of `fd` is gone (a pipe whose read end was closed, a socket or terminal
/// hung up): nothing written to it can arrive. Does not wait.
pub fn hung_up(fd: &impl AsFd) -> bool {
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    wait_for(fd, PollFlags::empty(), Some(&now))
        .is_ok_and(|came| came.intersects(PollFlags::ERR | PollFlags::HUP))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    use std::time::Duration;

    fn non_blocking(fd: &impl AsFd) {
        fcntl_setfl(fd, fcntl_getfl(fd).unwrap() | OFlags::NONBLOCK).unwrap();
    }

    #[test]
    fn a_non_blocking_pipe_read_slowly_gets_every_byte_and_a_reader_waits() {
        let (reader, writer) = io::pipe().unwrap();
        non_blocking(&writer);
        non_blocking(&reader);
        // Far more than the pipe holds, so that writes would block.
        let sent: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
        let expected = sent.clone();
        let slow = std::thread::spawn(move || {
            let mut reader = Waiting(reader);
            let mut got = Vec::new();
            let mut chunk = [0u8; 8192];
            loop {
                std::thread::sleep(Duration::from_micros(100));
                match reader.read(&mut chunk).unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&chunk[..n]),
                }
            }
        });
        let mut out = Waiting(writer);
        out.write_all(&sent).unwrap();
        drop(out);
        assert!(slow.join().unwrap() == expected, "every byte, in order");
    }

    #[test]
    fn a_closed_reader_fails_the_write_and_is_seen_hung_up() {
        let (reader, writer) = io::pipe().unwrap();
        assert!(!hung_up(&writer));
        drop(reader);
        assert!(hung_up(&writer));
        let err = Waiting(writer).write_all(b"{}\n").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
