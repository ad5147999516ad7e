//! Where the workspace and cargo's build output are, computed in one place.

use std::path::{Path, PathBuf};

/// The workspace root: the folder above the xtask crate.
pub(crate) fn workspace_root() -> &'static Path {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask)
}

/// `path` (relative to the workspace root) as an absolute path.
pub(crate) fn in_workspace(path: impl AsRef<Path>) -> PathBuf {
    workspace_root().join(path)
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set and not empty, else `<root>/target`.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().join("target"),
    }
}
