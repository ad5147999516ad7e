//! The front end's steps: catalogue child, light session, handoff by `exec`.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use catalogue::{
    ALLOWED_TOOLS_ENV, CATEGORIES_ENV, Filter, Listing, MODE_ENV, MODULES_ENV, StartMode,
};
use protocol_lite::handshake::ServerIdentity;
use protocol_lite::light::{Handoff, LightSession, Step};
use protocol_lite::modern::CacheHints;
use protocol_lite::setting::{
    CATALOGUE_BIN_ENV, CATALOGUE_TIMEOUT_ENV, FULL_BIN_ENV, LOG_ENV, REPLAY_FD_ENV,
};
use rustix::event::{PollFd, PollFlags, Timespec, poll};

pub(crate) fn run() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, rest) = match StartMode::parse(
        &args,
        std::env::var(MODE_ENV).ok().as_deref(),
        std::env::var(MODULES_ENV).ok().as_deref(),
    ) {
        Ok(parsed) => parsed,
        Err(e) => {
            protocol_lite::diag!("hooks-mcp: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let transport = std::env::var("MCP_TRANSPORT").unwrap_or_default();
    if !rest.is_empty() || !matches!(transport.trim(), "" | "stdio") {
        // Subcommands and network transports are the full server's: no front end to keep light.
        return exec_full(
            &full_binary(),
            rest.into_iter().map(OsString::from),
            None,
            &mode,
        );
    }
    let (filter, warnings) = Filter::from_env();
    for w in &warnings {
        protocol_lite::diag!("hooks-mcp: warning: {w}");
    }
    // The listing (every tool as MCP JSON text) is filtered and serialized into the one
    // `tools/list` answer, then freed: the session keeps that text and no JSON tree.
    let session = {
        let dump = match generate_listing() {
            Ok(dump) => dump,
            Err(message) => {
                protocol_lite::diag!("hooks-mcp: cannot start: {message}");
                return ExitCode::FAILURE;
            }
        };
        let listing = match Listing::from_json(&dump) {
            Ok(listing) => listing,
            Err(e) => {
                protocol_lite::diag!(
                    "hooks-mcp: cannot start: the catalogue child's output is unusable: {e}"
                );
                return ExitCode::FAILURE;
            }
        };
        let (visible, warnings) = listing.filtered(&filter);
        for w in &warnings {
            protocol_lite::diag!("hooks-mcp: warning: {w}");
        }
        let identity = ServerIdentity {
            instructions: visible.instructions(&mode),
        };
        let tools = visible.tools_list_json(&mode);
        debug(|| format!("light path ready ({mode}): {} tools visible", visible.len()));
        LightSession::new(identity, tools)
            .with_tools_hints(CacheHints::tools_list(mode.has_discovery()))
    };
    serve_light(session, &mode)
}

fn debug(message: impl FnOnce() -> String) {
    if std::env::var(LOG_ENV).is_ok_and(|v| v.to_ascii_lowercase().contains("debug")) {
        protocol_lite::diag!("hooks-mcp: debug: {}", message());
    }
}

/// Answers the light methods until EOF (exit 0) or a handoff (never returns then).
fn serve_light(mut session: LightSession, mode: &StartMode) -> ExitCode {
    // Our own buffer, so the bytes read ahead are ours to forward at a handoff. Small, like the
    // line buffer (both grow or refill as input needs): an idle session's heap is what it
    // touched, and handshake lines are a few hundred bytes.
    let mut reader = BufReader::with_capacity(4 * 1024, io::stdin());
    let mut out = io::stdout().lock();
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return ExitCode::SUCCESS,
            Ok(_) => {}
            Err(e) => {
                protocol_lite::diag!("hooks-mcp: cannot read stdin: {e}");
                return ExitCode::FAILURE;
            }
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        match session.handle(body) {
            Step::Nothing => {}
            Step::Reply(bytes) => {
                if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
                    // The client closed its end: nothing left to serve.
                    return ExitCode::SUCCESS;
                }
            }
            Step::ListTools(id) => {
                let written = session
                    .write_tools_list(&id, &mut out)
                    .and_then(|()| out.flush());
                if written.is_err() {
                    return ExitCode::SUCCESS;
                }
            }
            Step::ListModernTools(id) => {
                let written = session
                    .write_modern_tools_list(&id, &mut out)
                    .and_then(|()| out.flush());
                if written.is_err() {
                    return ExitCode::SUCCESS;
                }
            }
            step @ (Step::Handoff(_) | Step::ListResources(_) | Step::Listen(_)) => {
                debug(|| format!("handing the session to the full server: {step:?}"));
                let handoff = session.handoff(&line, reader.buffer());
                drop(out);
                return exec_full(
                    &stdio_binary(),
                    [OsString::from("serve-stdio")].into_iter(),
                    Some(handoff),
                    mode,
                );
            }
        }
    }
}

fn full_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(FULL_BIN_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    std::env::current_exe()
        .map(|exe| exe.with_file_name("hooks-mcp-full"))
        .unwrap_or_else(|_| PathBuf::from("hooks-mcp-full"))
}

/// The stdio server a session is handed over to: `hooks-mcp-stdio` beside the full server
/// (the MCP server without the daemon or the operator commands, so it keeps less memory).
fn stdio_binary() -> PathBuf {
    full_binary().with_file_name("hooks-mcp-stdio")
}

/// The catalogue child: [`CATALOGUE_BIN_ENV`], else `hooks-mcp-catalogue` beside the full
/// server (they are built and installed together).
fn catalogue_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(CATALOGUE_BIN_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    full_binary().with_file_name("hooks-mcp-catalogue")
}

/// Replaces this process with the full server at `path`. Returns only on failure.
fn exec_full(
    path: &std::path::Path,
    args: impl Iterator<Item = OsString>,
    handoff: Option<Handoff>,
    mode: &StartMode,
) -> ExitCode {
    let mut command = Command::new(path);
    command.args(args);
    // The full server starts in the mode this front end resolved (flags included).
    command.envs(mode.to_env());
    // Kept open until exec: the full server reads it through /dev/fd.
    let mut _replay_file = None;
    if let Some(handoff) = handoff {
        match replay_file(&handoff.replay) {
            Ok(file) => {
                command.env(REPLAY_FD_ENV, file.as_raw_fd().to_string());
                _replay_file = Some(file);
            }
            Err(e) => {
                protocol_lite::diag!("hooks-mcp: cannot hand the session to the full server: {e}");
                return ExitCode::FAILURE;
            }
        }
        command.envs(handoff.env);
    }
    let error = command.exec();
    protocol_lite::diag!(
        "hooks-mcp: cannot start the full server `{}`: {error}; it is built and installed \
         beside hooks-mcp (cargo build), or set {FULL_BIN_ENV} to the path of hooks-mcp-full \
         (hooks-mcp-stdio lies beside it)",
        path.display()
    );
    ExitCode::FAILURE
}

/// An anonymous file holding `bytes`, inherited across `exec` (not close-on-exec).
fn replay_file(bytes: &[u8]) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    let mut file = File::from(rustix::fs::memfd_create(
        "hooks-mcp-replay",
        rustix::fs::MemfdFlags::empty(),
    )?);
    #[cfg(not(target_os = "linux"))]
    let mut file = {
        let path = std::env::temp_dir().join(format!("hooks-mcp-replay-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::fs::remove_file(&path)?;
        rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::empty())?;
        file
    };
    file.write_all(bytes)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file)
}

/// Runs `hooks-mcp-catalogue` with the filters cleared and returns its listing dump.
///
/// The child's output is read on this thread with `poll` (no reader thread: a thread would
/// leave its stack and malloc arena behind in an idle session), within the time limit.
fn generate_listing() -> Result<String, String> {
    let path = catalogue_binary();
    let mut child = Command::new(&path)
        .env_remove(CATEGORIES_ENV)
        .env_remove(ALLOWED_TOOLS_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| {
            format!(
                "cannot run the catalogue child `{}`: {e}; it is built and installed beside \
                 hooks-mcp-full, or set {CATALOGUE_BIN_ENV} to its path",
                path.display()
            )
        })?;
    let limit = std::env::var(CATALOGUE_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(30_000);
    let read = match child.stdout.take() {
        Some(mut stdout) => read_within(&mut stdout, Duration::from_millis(limit)),
        None => Err(ReadError::Io(io::Error::other("no stdout pipe"))),
    };
    if read.is_err() {
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for the catalogue child: {e}"))?;
    let text = match read {
        Ok(text) => text,
        Err(ReadError::Io(e)) => {
            return Err(format!("cannot read the catalogue child's output: {e}"));
        }
        Err(ReadError::TimedOut) => {
            return Err(format!(
                "the catalogue child did not finish within {limit} ms ({CATALOGUE_TIMEOUT_ENV})"
            ));
        }
    };
    if !status.success() {
        return Err(format!(
            "the catalogue child failed ({status}); see its message above"
        ));
    }
    String::from_utf8(text).map_err(|e| format!("the catalogue child's output is not UTF-8: {e}"))
}

/// Why [`read_within`] stopped.
enum ReadError {
    Io(io::Error),
    TimedOut,
}

/// Room reserved for the child's dump (about 9 KiB today): more than glibc's threshold for
/// mapping an allocation on its own, so the buffer is unmapped when dropped and the start-up's
/// largest allocation leaves nothing behind in an idle session's heap. Only the pages the dump
/// fills are ever touched.
const DUMP_ROOM: usize = 256 * 1024;

/// Reads `pipe` to its end, failing once `limit` has passed.
fn read_within(pipe: &mut ChildStdout, limit: Duration) -> Result<Vec<u8>, ReadError> {
    let deadline = Instant::now() + limit;
    // Non-blocking, so each read takes what is there and the wait happens in `poll`.
    rustix::io::ioctl_fionbio(&*pipe, true).map_err(|e| ReadError::Io(e.into()))?;
    let mut text = Vec::with_capacity(DUMP_ROOM);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadError::TimedOut);
        }
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [PollFd::new(&*pipe, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => return Err(ReadError::TimedOut),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(ReadError::Io(e.into())),
        }
        // Appends what is there; "would block" means the child is not done yet.
        match pipe.read_to_end(&mut text) {
            Ok(_) => return Ok(text),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(ReadError::Io(e)),
        }
    }
}
