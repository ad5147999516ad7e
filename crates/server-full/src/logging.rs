//! The log subscriber every server process installs: `HOOKS_MCP_LOG` (an `EnvFilter`) or a
//! default, written to stderr only (stdout carries the protocol), never failing the process.

pub use protocol_lite::setting::LOG_ENV;

/// Installs the subscriber with `default` as the filter when `HOOKS_MCP_LOG` is unset (or
/// unparsable: then `warn`). A closed or full stderr drops the line: the writer ignores write
/// errors, and the subscriber does not report its own failures (it would do so on the same
/// stderr, with a panicking `eprintln!`).
pub fn init(default: &str) {
    let filter = std::env::var(LOG_ENV).unwrap_or_else(|_| default.into());
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| protocol_lite::diag::QuietStderr)
        .log_internal_errors(false)
        .with_ansi(false)
        .with_target(false)
        .try_init();
}
