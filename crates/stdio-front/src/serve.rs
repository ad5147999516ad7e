//! The light session's loop: one thread `poll`ing stdin and, while a subscription asks for
//! resource list changes or push is on, the watches on the store. It answers what the light
//! session answers, fetches the store's listing (or the messages to push) from a child when it
//! must, and hands the session to the full server by `exec` on the first request it cannot
//! serve.

use std::io::{self, BufWriter, Stdout, Write};
use std::ops::Range;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use catalogue::StartMode;
use protocol_lite::fdio::Waiting;
use protocol_lite::light::{LightSession, Step};
use protocol_lite::modern::{self, Listen};
use protocol_lite::setting::PUSH_CURSOR_ENV;
use rustix::event::{PollFd, PollFlags, poll};

use crate::child::timespec;
use crate::error::{FrontError, debug};
use crate::launch;
use crate::push::Pushing;
use crate::resources;
use crate::watch::{Pacer, StoreWatch};

/// How much stdin is read at a time.
const CHUNK: usize = 4 * 1024;

/// The buffer in front of stdout (what std's own stdout buffer holds): the pieces of a
/// `tools/list` reply go out in few writes.
const OUT_BUFFER: usize = 1024;

/// The session's input: stdin read into a buffer of our own (never through std's buffered
/// `Stdin`), so the bytes read ahead of a handoff are ours to forward.
struct Input {
    buf: Vec<u8>,
    /// Where the next unhandled line starts.
    start: usize,
    /// How far past `start` the buffer is known to hold no newline: a long line is scanned
    /// once as it arrives, not again from its start after every read.
    scanned: usize,
    eof: bool,
}

impl Input {
    fn new() -> Input {
        // Small, like the handshake lines: an idle session's heap is what it touched.
        Input {
            buf: Vec::with_capacity(CHUNK),
            start: 0,
            scanned: 0,
            eof: false,
        }
    }

    /// The next line (its newline included), or at the end of input what is left.
    fn next_line(&mut self) -> Option<Range<usize>> {
        let from = self.scanned.clamp(self.start, self.buf.len());
        match self.buf[from..].iter().position(|&b| b == b'\n') {
            Some(at) => {
                self.scanned = from + at + 1;
                Some(self.start..self.scanned)
            }
            None => {
                self.scanned = self.buf.len();
                (self.eof && self.start < self.buf.len()).then_some(self.start..self.buf.len())
            }
        }
    }

    /// Reads once from `stdin` (what is there, up to [`CHUNK`] bytes; nothing when a
    /// non-blocking stdin has nothing after all).
    fn fill(&mut self, stdin: impl AsFd) -> io::Result<()> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scanned = self.scanned.saturating_sub(self.start);
            self.start = 0;
        }
        let mut chunk = [0u8; CHUNK];
        loop {
            match rustix::io::read(&stdin, &mut chunk[..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(rustix::io::Errno::INTR) => {}
                // Non-blocking stdin (a parent's pipe) with nothing there after all: the loop
                // polls again.
                Err(rustix::io::Errno::AGAIN) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// A watch on the store for the held `resourcesListChanged` subscriptions, with the URIs the
/// store listed last.
struct Watching {
    watch: StoreWatch,
    pacer: Pacer,
    uris: Vec<String>,
    /// When the store's next message expires, as the last listing said: the list may change
    /// then with nothing written, so the loop wakes the pacer at that time.
    expiry: Option<Instant>,
}

/// How long after a message's expiry the listing runs, so that the child's clock has passed it.
const EXPIRY_MARGIN: Duration = Duration::from_millis(20);

/// The instant `at` (milliseconds since the epoch, as the store keeps times) falls on, seen
/// from `now`, with [`EXPIRY_MARGIN`] after it.
fn instant_of(at: Option<i64>, now: Instant) -> Option<Instant> {
    let epoch_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let after = u64::try_from(at?.saturating_sub(epoch_ms)).unwrap_or(0);
    Some(now + Duration::from_millis(after) + EXPIRY_MARGIN)
}

impl Watching {
    /// Watches the store at `db`, then takes the baseline listing (so no change after it is
    /// missed).
    fn start(db: &Path, stdio: &Path) -> Result<Watching, FrontError> {
        let mut watch = StoreWatch::open(db).map_err(|source| FrontError::Watch {
            dir: db.parent().unwrap_or(Path::new(".")).to_path_buf(),
            source,
        })?;
        let baseline = resources::list(stdio)?;
        let mut pacer = Pacer::default();
        let now = Instant::now();
        pacer.baseline(now, watch.drain());
        Ok(Watching {
            watch,
            pacer,
            uris: baseline.uris,
            expiry: instant_of(baseline.next_expiry, now),
        })
    }

    /// How long until the listing should run (`Some(ZERO)`: now): when the store was written,
    /// as the pacer says, or once the next message has expired.
    fn wait(&mut self, now: Instant) -> Option<Duration> {
        if self.expiry.is_some_and(|at| at <= now) {
            self.expiry = None;
            self.pacer.woken(now);
        }
        let expiry = self.expiry.map(|at| at.saturating_duration_since(now));
        match (self.pacer.wait(now), expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Lists the store's resources again: whether the URIs changed since the last listing.
    fn check(&mut self, stdio: &Path) -> Result<bool, FrontError> {
        let follow_up = self.pacer.start();
        // Wakes queued before this run are what it answers.
        self.watch.drain();
        let listed = resources::list(stdio);
        let events = self.watch.drain();
        let changed = listed.as_ref().is_ok_and(|l| l.uris != self.uris);
        let now = Instant::now();
        self.pacer.ran(now, follow_up, changed, events);
        let listing = listed?;
        self.expiry = instant_of(listing.next_expiry, now);
        if changed {
            self.uris = listing.uris;
        }
        Ok(changed)
    }
}

/// Whether to go on serving.
enum Flow {
    Continue,
    Exit(ExitCode),
}

/// The loop's state.
struct Front<'a> {
    session: LightSession,
    /// stdout, written straight to its descriptor behind a small buffer: a write that would
    /// block (a parent's non-blocking pipe) waits, and only a real error (`EPIPE`) fails.
    out: BufWriter<Waiting<Stdout>>,
    mode: &'a StartMode,
    /// The SQLite store's database file, when a watch on it is possible.
    store: Option<PathBuf>,
    /// `hooks-mcp-stdio`: the listing child and the handoff's target.
    stdio: PathBuf,
    watching: Option<Watching>,
    /// Pushing urgent messages into the session, when push is on.
    pushing: Option<Pushing>,
}

/// Serves `session` until stdin ends (exit 0) or a handoff (which does not return unless the
/// full server cannot be started). `store`: the SQLite database to watch for held
/// `resourcesListChanged` subscriptions (the session hands those off without one); `pushing`:
/// the watch that pushes urgent messages, when push is on.
pub(crate) fn serve(
    session: LightSession,
    mode: &StartMode,
    store: Option<PathBuf>,
    pushing: Option<Pushing>,
) -> ExitCode {
    let stdin = io::stdin();
    let mut input = Input::new();
    let mut front = Front {
        session,
        out: BufWriter::with_capacity(OUT_BUFFER, Waiting(io::stdout())),
        mode,
        store,
        stdio: launch::stdio_binary(),
        watching: None,
        pushing,
    };
    loop {
        while let Some(line) = input.next_line() {
            let flow = front.step(&input.buf[line.clone()], &input.buf[line.end..]);
            input.start = line.end;
            if let Flow::Exit(code) = flow {
                return code;
            }
        }
        if input.eof {
            return ExitCode::SUCCESS;
        }
        let now = Instant::now();
        let wait = front.watching.as_mut().and_then(|w| w.wait(now));
        if wait == Some(Duration::ZERO) {
            if let Flow::Exit(code) = front.check_resources() {
                return code;
            }
            continue;
        }
        // Nothing is pushed before the client opened the session.
        let push_wait = match &front.pushing {
            Some(p) if front.session.is_open() => p.wait(now),
            _ => None,
        };
        if push_wait == Some(Duration::ZERO) {
            if let Flow::Exit(code) = front.push() {
                return code;
            }
            continue;
        }
        let wait = match (wait, push_wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let (readable, woken, pushed) = {
            let watch_fd = front.watching.as_ref().map(|w| w.watch.fd());
            let push_fd = front.pushing.as_ref().map(Pushing::fd);
            // stdin, then the watches there are (the unused places are never polled).
            let mut fds = [
                PollFd::new(&stdin, PollFlags::IN),
                PollFd::new(&stdin, PollFlags::IN),
                PollFd::new(&stdin, PollFlags::IN),
            ];
            let mut polled = 1;
            let mut places = [None, None];
            for (fd, place) in [watch_fd, push_fd].into_iter().zip(&mut places) {
                if let Some(fd) = fd {
                    fds[polled] = PollFd::from_borrowed_fd(fd, PollFlags::IN);
                    *place = Some(polled);
                    polled += 1;
                }
            }
            let [watch_at, push_at] = places;
            let timeout = wait.map(timespec);
            match poll(&mut fds[..polled], timeout.as_ref()) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    protocol_lite::diag!("hooks-mcp: cannot wait for stdin: {e}");
                    return ExitCode::FAILURE;
                }
            }
            let ready = PollFlags::IN | PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL;
            let is_ready = |at: Option<usize>| {
                at.and_then(|i| fds.get(i))
                    .is_some_and(|f| f.revents().intersects(ready))
            };
            (is_ready(Some(0)), is_ready(watch_at), is_ready(push_at))
        };
        if woken
            && let Some(watching) = &mut front.watching
            && watching.watch.drain()
        {
            watching.pacer.woken(Instant::now());
        }
        if pushed && let Some(pushing) = &mut front.pushing {
            pushing.woken();
        }
        if readable && let Err(e) = input.fill(&stdin) {
            protocol_lite::diag!("hooks-mcp: cannot read stdin: {e}");
            return ExitCode::FAILURE;
        }
    }
}

impl Front<'_> {
    /// Handles the line `raw` (as read, newline included unless it ended the input);
    /// `read_ahead` is what followed it.
    fn step(&mut self, raw: &[u8], read_ahead: &[u8]) -> Flow {
        let body = raw.strip_suffix(b"\n").unwrap_or(raw);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let flow = match self.session.handle(body) {
            Step::Nothing => Flow::Continue,
            Step::Reply(bytes) => self.write(&bytes),
            Step::ListTools(id) => {
                let written = self.session.write_tools_list(&id, &mut self.out);
                self.flushed(written)
            }
            Step::ListModernTools(id) => {
                let written = self.session.write_modern_tools_list(&id, &mut self.out);
                self.flushed(written)
            }
            Step::ListResources(id) => {
                let line = match resources::list(&self.stdio) {
                    Ok(listing) => modern::raw_result_line(&id, &listing.result),
                    Err(e) => modern::internal_error(
                        &id,
                        format!("Internal error: the front end cannot list the resources: {e}"),
                    )
                    .to_line(),
                };
                self.write(&line)
            }
            Step::Listen(listen) => self.listen(raw, body, read_ahead, listen),
            Step::Handoff(reason) => Flow::Exit(self.handoff(raw, read_ahead, &reason)),
        };
        // A cancelled subscription may have been the last that asked for resource changes.
        if self.watching.is_some() && self.session.resource_listeners().next().is_none() {
            debug(|| "no subscription asks for resource list changes: watch closed".into());
            self.watching = None;
        }
        flow
    }

    /// Holds the subscription `listen` (the request `body`), watching the store first when it
    /// asks for resource list changes; hands off when it cannot.
    fn listen(&mut self, raw: &[u8], body: &[u8], read_ahead: &[u8], listen: Listen) -> Flow {
        if listen.resources_list_changed && self.watching.is_none() {
            let Some(store) = &self.store else {
                return Flow::Exit(self.handoff(raw, read_ahead, "no store to watch"));
            };
            match Watching::start(store, &self.stdio) {
                Ok(watching) => self.watching = Some(watching),
                Err(e) => {
                    let reason = format!("cannot watch the store's resources: {e}");
                    return Flow::Exit(self.handoff(raw, read_ahead, &reason));
                }
            }
        }
        let ack = self.session.hold(body, listen);
        self.write(&ack)
    }

    /// Runs the push child and writes what it found.
    fn push(&mut self) -> Flow {
        let Some(pushing) = &mut self.pushing else {
            return Flow::Continue;
        };
        let lines = pushing.run(&self.stdio);
        let mut flow = Flow::Continue;
        for line in lines {
            flow = self.write(&line);
            if matches!(flow, Flow::Exit(_)) {
                break;
            }
        }
        flow
    }

    /// Runs the listing child for the watch and tells every subscription that asked when the
    /// list changed.
    fn check_resources(&mut self) -> Flow {
        let Some(watching) = &mut self.watching else {
            return Flow::Continue;
        };
        match watching.check(&self.stdio) {
            Ok(false) => Flow::Continue,
            Ok(true) => {
                let lines: Vec<Vec<u8>> = self
                    .session
                    .resource_listeners()
                    .map(modern::resources_list_changed_line)
                    .collect();
                debug(|| format!("resource list changed: {} subscriptions told", lines.len()));
                let mut flow = Flow::Continue;
                for line in lines {
                    flow = self.write(&line);
                    if matches!(flow, Flow::Exit(_)) {
                        break;
                    }
                }
                flow
            }
            Err(e) => {
                protocol_lite::diag!("hooks-mcp: cannot list the store's resources: {e}");
                Flow::Continue
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Flow {
        let written = self.out.write_all(bytes);
        self.flushed(written)
    }

    /// Flushes after a write; a failure means the client closed its end (a write that would
    /// block waits instead): nothing left to serve.
    fn flushed(&mut self, written: io::Result<()>) -> Flow {
        match written.and_then(|()| self.out.flush()) {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Exit(ExitCode::SUCCESS),
        }
    }

    /// Hands the session to the full server: `raw` is the trigger, `read_ahead` what followed.
    fn handoff(&mut self, raw: &[u8], read_ahead: &[u8], reason: &str) -> ExitCode {
        debug(|| format!("handing the session to the full server: {reason}"));
        let mut handoff = self.session.handoff(raw, read_ahead);
        if let Some(pushing) = &self.pushing {
            handoff
                .env
                .push((PUSH_CURSOR_ENV, pushing.cursor().to_string()));
        }
        let _ = self.out.flush();
        launch::exec(
            &self.stdio,
            [std::ffi::OsString::from("serve-stdio")].into_iter(),
            Some(handoff),
            self.mode,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(bytes: &[u8], eof: bool) -> Input {
        Input {
            buf: bytes.to_vec(),
            start: 0,
            scanned: 0,
            eof,
        }
    }

    #[test]
    fn a_non_blocking_pipe_read_slowly_gets_every_byte() {
        use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
        use std::io::Read;

        let (mut reader, writer) = io::pipe().unwrap();
        fcntl_setfl(&writer, fcntl_getfl(&writer).unwrap() | OFlags::NONBLOCK).unwrap();
        // Lines far longer than the pipe holds, so that writes would block.
        let lines: Vec<Vec<u8>> = (0..20u8)
            .map(|i| {
                let mut line = vec![b'a' + i; 100_000 + usize::from(i)];
                line.push(b'\n');
                line
            })
            .collect();
        let expected = lines.concat();
        let slow = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut chunk = [0u8; 8192];
            loop {
                std::thread::sleep(Duration::from_micros(200));
                match reader.read(&mut chunk).unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&chunk[..n]),
                }
            }
        });
        let mut out = BufWriter::with_capacity(OUT_BUFFER, Waiting(writer));
        for line in &lines {
            out.write_all(line).unwrap();
            out.flush().unwrap();
        }
        drop(out);
        assert!(
            slow.join().unwrap() == expected,
            "every line whole and in order"
        );
    }

    #[test]
    fn a_non_blocking_stdin_with_nothing_there_is_read_again_later() {
        use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};

        let (reader, mut writer) = io::pipe().unwrap();
        fcntl_setfl(&reader, fcntl_getfl(&reader).unwrap() | OFlags::NONBLOCK).unwrap();
        let mut i = input(b"", false);
        i.fill(&reader).unwrap();
        assert!(!i.eof && i.buf.is_empty());
        writer.write_all(b"{}\n").unwrap();
        i.fill(&reader).unwrap();
        assert_eq!(i.buf, b"{}\n");
        drop(writer);
        i.fill(&reader).unwrap();
        assert!(i.eof);
    }

    #[test]
    fn lines_are_cut_at_newlines_and_the_last_at_the_end_of_input() {
        let mut i = input(b"one\r\ntwo\nthr", false);
        let first = i.next_line().unwrap();
        assert_eq!(&i.buf[first.clone()], b"one\r\n");
        i.start = first.end;
        let second = i.next_line().unwrap();
        assert_eq!(&i.buf[second.clone()], b"two\n");
        assert_eq!(&i.buf[second.end..], b"thr", "what a handoff forwards");
        i.start = second.end;
        assert_eq!(i.next_line(), None, "a partial line waits for more");
        i.eof = true;
        let last = i.next_line().unwrap();
        assert_eq!(&i.buf[last.clone()], b"thr");
        i.start = last.end;
        assert_eq!(i.next_line(), None);
        assert_eq!(input(b"", true).next_line(), None);
    }

    #[test]
    fn a_line_arriving_in_pieces_is_found_whole() {
        let mut i = input(b"", false);
        let mut lines = Vec::new();
        for piece in [&b"{\"a\":"[..], b"1", b"}\n{\"b\"", b":2}\n"] {
            i.buf.extend_from_slice(piece);
            while let Some(line) = i.next_line() {
                lines.push(i.buf[line.clone()].to_vec());
                i.start = line.end;
            }
        }
        assert_eq!(lines, [&b"{\"a\":1}\n"[..], b"{\"b\":2}\n"]);
        assert_eq!(i.next_line(), None);
    }
}
