//! Where the store lives: the one rule every program that opens or watches it follows.

use std::path::{Path, PathBuf};

/// Environment variable naming the directory that holds `state.db`.
pub const HOME_ENV: &str = "HOOKS_MCP_HOME";

/// The database file's location and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLocation {
    /// The database file.
    pub path: PathBuf,
    /// Which setting chose it, for logs: `HOOKS_MCP_HOME`, `XDG_STATE_HOME` or `HOME`.
    pub source: &'static str,
}

impl StoreLocation {
    /// A database file at an explicit path.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        StoreLocation {
            path: path.into(),
            source: "explicit path",
        }
    }

    /// `$HOOKS_MCP_HOME/state.db`, else `$XDG_STATE_HOME/hooks-mcp/state.db`, else
    /// `$HOME/.local/state/hooks-mcp/state.db`. Blank variables count as unset.
    pub fn from_env() -> Option<Self> {
        Self::resolve(|k| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// [`StoreLocation::from_env`] over any variable lookup (for tests).
    pub fn resolve(var: impl Fn(&str) -> Option<PathBuf>) -> Option<Self> {
        if let Some(home) = var(HOME_ENV) {
            return Some(StoreLocation {
                path: home.join("state.db"),
                source: HOME_ENV,
            });
        }
        if let Some(state) = var("XDG_STATE_HOME") {
            return Some(StoreLocation {
                path: state.join("hooks-mcp").join("state.db"),
                source: "XDG_STATE_HOME",
            });
        }
        var("HOME").map(|home| StoreLocation {
            path: Path::new(&home).join(".local/state/hooks-mcp/state.db"),
            source: "HOME",
        })
    }

    /// The directory holding the database (lock files and backups go beside it).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}
