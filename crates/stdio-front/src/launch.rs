//! The companion binaries (where they are) and the handoff: replacing this process with the
//! full server by `exec`, the replay in an anonymous file it inherits.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use catalogue::StartMode;
use protocol_lite::light::Handoff;
use protocol_lite::setting::{CATALOGUE_BIN_ENV, FULL_BIN_ENV, REPLAY_FD_ENV};

/// `hooks-mcp-full`: [`FULL_BIN_ENV`], else beside this binary.
pub(crate) fn full_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(FULL_BIN_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    std::env::current_exe()
        .map(|exe| exe.with_file_name("hooks-mcp-full"))
        .unwrap_or_else(|_| PathBuf::from("hooks-mcp-full"))
}

/// The stdio server a session is handed over to, and the store's listing child:
/// `hooks-mcp-stdio` beside the full server (the MCP server without the daemon or the operator
/// commands, so it keeps less memory).
pub(crate) fn stdio_binary() -> PathBuf {
    full_binary().with_file_name("hooks-mcp-stdio")
}

/// The catalogue child: [`CATALOGUE_BIN_ENV`], else `hooks-mcp-catalogue` beside the full
/// server (they are built and installed together).
pub(crate) fn catalogue_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(CATALOGUE_BIN_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    full_binary().with_file_name("hooks-mcp-catalogue")
}

/// Replaces this process with the full server at `path`, in the start mode this front end
/// resolved (flags included), with `handoff`'s replay file and environment when a session is
/// handed over. Returns only on failure, after answering every request handed over (but the
/// `initialize` the light path answered) with an internal error saying why: the client learns
/// the reason instead of seeing its call unanswered and the process gone.
pub(crate) fn exec(
    path: &Path,
    args: impl Iterator<Item = OsString>,
    handoff: Option<Handoff>,
    mode: &StartMode,
) -> ExitCode {
    let mut command = Command::new(path);
    if handoff.is_none()
        && let Some(arg0) = std::env::args_os().next()
    {
        // The name the user typed: clap's usage lines then say `hooks-mcp channel …`, the
        // command they ran, not the companion binary's name.
        command.arg0(arg0);
    }
    command.args(args);
    command.envs(mode.to_env());
    // Kept open until exec: the full server reads it through /dev/fd.
    let mut _replay_file = None;
    if let Some(handoff) = &handoff {
        // The ids to suppress travel in the file: an id may be longer than the environment
        // takes.
        match replay_file(&handoff.file()) {
            Ok(file) => {
                command.env(REPLAY_FD_ENV, file.as_raw_fd().to_string());
                _replay_file = Some(file);
            }
            Err(e) => {
                let why = format!("cannot hand the session to the full server: {e}");
                return failed(&why, handoff);
            }
        }
        command.envs(handoff.environment());
    }
    let error = command.exec();
    let why = match error.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => format!(
            "cannot start the full server `{}`: {error}; {}",
            path.display(),
            install_hint()
        ),
        _ => format!("cannot start the full server `{}`: {error}", path.display()),
    };
    match &handoff {
        Some(handoff) => failed(&why, handoff),
        None => {
            protocol_lite::diag!("hooks-mcp: {why}");
            ExitCode::FAILURE
        }
    }
}

/// How to put the companion binaries where the front end finds them.
fn install_hint() -> String {
    format!(
        "it is built and installed beside hooks-mcp (cargo build), or set {FULL_BIN_ENV} to the \
         path of hooks-mcp-full (hooks-mcp-stdio lies beside it)"
    )
}

/// Says `why` on stderr and answers each request `handoff` holds with it; the exit status.
fn failed(why: &str, handoff: &Handoff) -> ExitCode {
    protocol_lite::diag!("hooks-mcp: {why}");
    let message = format!("hooks-mcp cannot serve this session: {why}");
    let replies = protocol_lite::jsonrpc::internal_errors_for(
        &handoff.replay,
        handoff.answered().as_ref(),
        &message,
    );
    // Nothing more to do when the client is gone.
    // Waiting for room when the client left stdout non-blocking.
    let _ = protocol_lite::fdio::Waiting(io::stdout()).write_all(&replies);
    ExitCode::FAILURE
}

/// Checks at start-up that `path` names a program `exec` can run (a file with an execute
/// permission, looked up in `PATH` when it is a bare name, as `exec` does), so that a missing
/// companion stops the front end before it answers anything rather than at a session's first
/// tool call.
///
/// # Errors
/// What is wrong with `path`, and how to fix it.
pub(crate) fn check_runnable(path: &Path, what: &str) -> Result<(), String> {
    let found = if path.components().count() == 1 && !path.is_absolute() {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(path))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| "not found in PATH".to_owned())
    } else {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => Ok(path.to_path_buf()),
            Ok(_) => Err("not a file".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    };
    let problem = match found {
        Ok(file) => {
            use std::os::unix::fs::PermissionsExt as _;
            match std::fs::metadata(&file) {
                Ok(meta) if meta.permissions().mode() & 0o111 != 0 => return Ok(()),
                Ok(_) => "not executable".to_owned(),
                Err(e) => e.to_string(),
            }
        }
        Err(problem) => problem,
    };
    Err(format!(
        "the {what} `{}` cannot be run ({problem}); {}",
        path.display(),
        install_hint()
    ))
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

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn a_companion_must_be_an_executable_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hooks-mcp-stdio");
        let missing = check_runnable(&file, "stdio server").unwrap_err();
        assert!(missing.contains("hooks-mcp-stdio") && missing.contains(FULL_BIN_ENV));
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let plain = check_runnable(&file, "stdio server").unwrap_err();
        assert!(plain.contains("not executable"), "{plain}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        check_runnable(&file, "stdio server").unwrap();
        assert!(check_runnable(dir.path(), "stdio server").is_err());
        // A bare name is looked up in PATH, as exec does.
        check_runnable(Path::new("sh"), "shell").unwrap();
    }

    #[test]
    fn the_replay_file_holds_the_bytes_and_survives_exec() {
        let mut file = replay_file(b"one\ntwo\n").unwrap();
        let flags = rustix::io::fcntl_getfd(&file).unwrap();
        assert!(!flags.contains(rustix::io::FdFlags::CLOEXEC));
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "one\ntwo\n");
    }
}
