//! The process's file-size limit (`ulimit -f`, `RLIMIT_FSIZE`) named when a write fails: a
//! write past it fails as a full disk's does (each binary answers `SIGXFSZ` with
//! `protocol_lite::diag::survive_file_size_limit`, so it is an error, not a killed process).

/// What to do about a failed write: raise the process's file-size limit when one is set (a
/// write past it fails as a full disk's does), else free space on a full or failing disk.
pub(crate) fn disk_advice() -> String {
    const DISK: &str = "the disk holding it may be full or failing: free space there (or set \
                        HOOKS_MCP_HOME to a directory on another disk)";
    match file_size_limit() {
        Some(bytes) => format!(
            "this process may write files of at most {bytes} bytes (`ulimit -f`, RLIMIT_FSIZE): \
             raise or remove that limit where the process is started; otherwise {DISK}"
        ),
        None => DISK.to_owned(),
    }
}

/// The process's file-size limit in bytes, when it has one.
#[cfg(unix)]
fn file_size_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Fsize).current
}

/// Elsewhere: none known.
#[cfg(not(unix))]
fn file_size_limit() -> Option<u64> {
    None
}
