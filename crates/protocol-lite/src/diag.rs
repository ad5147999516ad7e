//! Diagnostics on stderr that can never take a process down.
//!
//! `eprintln!` panics when stderr cannot be written (a launcher that closed the read end of the
//! pipe, a full disk behind a redirect). A diagnostic is never worth a crash: [`diag!`] writes
//! one whole line with a single `write_all` and ignores every failure, and [`QuietStderr`] is
//! the same for a log subscriber's writer.
//!
//! [`diag!`]: crate::diag!

use std::fmt;
use std::io::{self, Write};

/// Writes one formatted line to stderr, ignoring every error (the diagnostic is dropped).
///
/// Use it wherever `eprintln!` would be used; the workspace's clippy configuration forbids
/// `eprintln!` and `eprint!` in non-test code.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::diag::line(::std::format_args!($($arg)*))
    };
}

/// Writes `args` and a newline to stderr as one write, ignoring every error. Prefer [`diag!`].
///
/// [`diag!`]: crate::diag!
pub fn line(args: fmt::Arguments<'_>) {
    let mut text = args.to_string();
    text.push('\n');
    let _ = io::stderr().lock().write_all(text.as_bytes());
}

/// A writer to stderr that reports success whatever happens, for log subscribers (which
/// otherwise report their own write failures on stderr, and panic doing so).
#[derive(Debug, Default, Clone, Copy)]
pub struct QuietStderr;

impl Write for QuietStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = io::stderr().lock().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_stderr_reports_every_byte_written() {
        let mut w = QuietStderr;
        assert_eq!(w.write(b"x").unwrap(), 1);
        assert!(w.flush().is_ok());
        crate::diag!("a diagnostic {}", 1);
    }
}
