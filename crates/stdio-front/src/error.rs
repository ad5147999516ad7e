//! What can go wrong in the front end, each saying what failed and how to fix it, and the
//! debug diagnostics `HOOKS_MCP_LOG=debug` asks for.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use protocol_lite::setting::LOG_ENV;

/// Writes `message()` to stderr when [`LOG_ENV`] asks for debug output (`message` runs only
/// then).
pub(crate) fn debug(message: impl FnOnce() -> String) {
    if std::env::var(LOG_ENV).is_ok_and(|v| v.to_ascii_lowercase().contains("debug")) {
        protocol_lite::diag!("hooks-mcp: debug: {}", message());
    }
}

/// Why a step of the front end failed.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum FrontError {
    /// A companion binary could not be started.
    Spawn {
        /// What it is, as messages name it ("catalogue child").
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
        /// How to make it found.
        hint: String,
        /// What starting it said.
        source: io::Error,
    },
    /// A child did not finish within its time limit (and was killed).
    TimedOut {
        /// What it is.
        what: &'static str,
        /// The limit.
        limit: Duration,
        /// The setting that changes the limit, if any.
        setting: Option<&'static str>,
    },
    /// A child exited unsuccessfully (its own message went to stderr).
    Failed {
        /// What it is.
        what: &'static str,
        /// How it exited.
        status: ExitStatus,
        /// The last line it wrote to stderr, if any: why.
        reason: Option<String>,
    },
    /// A child's output could not be read, or it could not be waited for.
    Read {
        /// What it is.
        what: &'static str,
        /// What reading said.
        source: io::Error,
    },
    /// A child printed something the front end cannot use.
    Unusable {
        /// What it is.
        what: &'static str,
        /// What was wrong with it.
        problem: String,
    },
    /// The store's directory could not be watched.
    Watch {
        /// The directory.
        dir: PathBuf,
        /// What resolving, creating or watching it said.
        source: store_files::WatchError,
    },
}

impl fmt::Display for FrontError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrontError::Spawn {
                what,
                path,
                hint,
                source,
            } => write!(
                f,
                "cannot run the {what} `{}`: {source}; {hint}",
                path.display()
            ),
            FrontError::TimedOut {
                what,
                limit,
                setting,
            } => {
                write!(
                    f,
                    "the {what} did not finish within {} ms",
                    limit.as_millis()
                )?;
                match setting {
                    Some(setting) => write!(f, " ({setting})"),
                    None => Ok(()),
                }
            }
            FrontError::Failed {
                what,
                status,
                reason: Some(reason),
            } => write!(f, "the {what} failed ({status}): {reason}"),
            FrontError::Failed { what, status, .. } => {
                write!(f, "the {what} failed ({status}) without saying why")
            }
            FrontError::Read { what, source } => {
                write!(f, "cannot read the {what}'s output: {source}")
            }
            FrontError::Unusable { what, problem } => {
                write!(f, "the {what}'s output is unusable: {problem}")
            }
            FrontError::Watch { dir, source } => write!(
                f,
                "cannot watch the store's directory `{}`: {source}; check that it can be \
                 created and read (HOOKS_MCP_HOME)",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for FrontError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrontError::Spawn { source, .. } | FrontError::Read { source, .. } => Some(source),
            FrontError::Watch { source, .. } => Some(source),
            _ => None,
        }
    }
}
