//! The payload as a child process's stdin: what both a condition script and the full binary
//! that a hook hands its event over to ([`crate::open::hand_over`]) read.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

/// An unnamed file holding `text`, positioned at its start, for a child's stdin: a script that
/// never reads its stdin cannot block the hook, and a detached one reads it at leisure.
pub(crate) fn payload_file(text: &str) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    let mut file = File::from(rustix::fs::memfd_create(
        "hooks-mcp-payload",
        rustix::fs::MemfdFlags::CLOEXEC,
    )?);
    #[cfg(not(target_os = "linux"))]
    let mut file = {
        let path = std::env::temp_dir().join(format!(
            "hooks-mcp-payload-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::fs::remove_file(&path)?;
        file
    };
    file.write_all(text.as_bytes())?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file)
}
