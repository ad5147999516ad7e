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
/// resolved (flags included), with `handoff`'s replay and environment when a session is handed
/// over. Returns only on failure.
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

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

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
