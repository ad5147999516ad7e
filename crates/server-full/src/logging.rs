//! The log subscriber every server process installs: `HOOKS_MCP_LOG` (an `EnvFilter`) or a
//! default, written to stderr only (stdout carries the protocol), never failing the process.
//!
//! A client that goes away is an ordinary condition, not an error: rmcp logs a reply it could
//! not send to a peer that left (a listen stream or a request whose HTTP client closed the
//! connection, a stdio client that closed its end) at `ERROR`; those lines are dropped here
//! ([`ClientGone`]), and the server says at `debug` when a listen stream ends by its client.
//! Nor is a client's own mistake: rmcp logs every JSON-RPC error it answers at `WARN`
//! (`response error`: unknown method, invalid parameters, a resource that does not exist),
//! which the client already receives; those lines are dropped too, but for an internal error
//! (-32603), the server's own fault.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

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
        .finish()
        .with(ClientGone)
        .try_init();
}

/// rmcp's messages for a reply its transport could not send (rmcp 3.11's `service.rs`).
const UNSENT_REPLY: [&str; 3] = [
    "failed to send pending response during drain",
    "fail to response message",
    "fail to send rejection error",
];

/// How a transport's failure reads when its peer left: the HTTP reply's channel closed, or a
/// stdio client's pipe broken.
const PEER_LEFT: [&str; 3] = ["channel closed", "Broken pipe", "connection reset"];

/// rmcp's message for a JSON-RPC error it answers (rmcp 3.11's `service.rs`, at `WARN`).
const ERROR_ANSWERED: &str = "response error";

/// How an internal error's code reads in that line (rmcp's `ErrorCode` debug form).
const INTERNAL_ERROR: &str = "ErrorCode(-32603)";

/// A layer that drops rmcp's `ERROR` lines for a reply that could not be sent because the
/// client left, and its `WARN` lines for a JSON-RPC error answered to a client but for an
/// internal one (see the module's doc); every other event passes.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientGone;

impl<S: Subscriber> Layer<S> for ClientGone {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        let meta = event.metadata();
        let level = *meta.level();
        if (level != Level::ERROR && level != Level::WARN) || !meta.target().starts_with("rmcp") {
            return true;
        }
        let mut seen = Seen::default();
        event.record(&mut seen);
        if level == Level::WARN {
            return !is_clients_mistake(&seen.message, &seen.error);
        }
        !is_client_gone(&seen.message, &seen.error)
    }
}

/// Whether an rmcp event with `message` and `error` is a JSON-RPC error answered to the
/// client for its own request (anything but an internal error).
fn is_clients_mistake(message: &str, error: &str) -> bool {
    message == ERROR_ANSWERED && !error.contains(INTERNAL_ERROR)
}

/// Whether an rmcp event with `message` and `error` says a reply went unsent because the
/// client left.
fn is_client_gone(message: &str, error: &str) -> bool {
    UNSENT_REPLY.contains(&message) && PEER_LEFT.iter().any(|left| error.contains(left))
}

/// The `message` and `error` fields of an event.
#[derive(Default)]
struct Seen {
    message: String,
    error: String,
}

impl Visit for Seen {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        use std::fmt::Write as _;
        let into = match field.name() {
            "message" => &mut self.message,
            "error" => &mut self.error,
            _ => return,
        };
        let _ = write!(into, "{value:?}");
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message.push_str(value),
            "error" => self.error.push_str(value),
            _ => {}
        }
    }
}
