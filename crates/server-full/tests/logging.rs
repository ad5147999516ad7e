//! The log subscriber's `ClientGone` layer in a subscriber: which of rmcp's events reach the
//! writer.

use std::io::Write;
use std::sync::{Arc, Mutex};

use server_full::logging::ClientGone;
use tracing_subscriber::layer::SubscriberExt;

/// A writer into a shared buffer.
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut lines) = self.0.lock() {
            lines.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `emit` logs through a subscriber with the `ClientGone` layer, as text.
fn captured(emit: impl FnOnce()) -> String {
    let lines = Arc::new(Mutex::new(Vec::<u8>::new()));
    let sink = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || Capture(sink.clone()))
        .with_ansi(false)
        .finish()
        .with(ClientGone);
    tracing::subscriber::with_default(subscriber, emit);
    lines
        .lock()
        .map(|l| String::from_utf8_lossy(&l).into_owned())
        .unwrap_or_default()
}

#[test]
fn only_an_unsent_reply_to_a_client_that_left_is_dropped() {
    let text = captured(|| {
        let closed = "channel closed";
        let pipe = "Broken pipe (os error 32)";
        let other = "serialization failed";
        // Dropped: a reply rmcp could not send because the client left.
        tracing::error!(target: "rmcp::service", error = %closed, "failed to send pending response during drain");
        tracing::error!(target: "rmcp::service", error = %pipe, "fail to response message");
        // Kept: another failure to send, another message, another crate's line.
        tracing::error!(target: "rmcp::service", error = %other, "fail to send rejection error");
        tracing::error!(target: "rmcp::service", error = %closed, "fail to close sink");
        tracing::error!(target: "server_full", error = %closed, "fail to response message");
    });
    assert!(!text.contains("during drain"), "{text}");
    assert!(!text.contains("Broken pipe"), "{text}");
    assert!(text.contains("serialization failed"), "{text}");
    assert!(text.contains("fail to close sink"), "{text}");
    assert!(text.contains("fail to response message"), "{text}");
}

#[test]
fn a_json_rpc_error_answered_to_a_client_is_logged_only_when_internal() {
    let answered = |code: i32, text: &str| {
        rmcp::ErrorData::new(rmcp::model::ErrorCode(code), text.to_owned(), None)
    };
    let text = captured(|| {
        // Dropped: the client's own mistakes, which it receives as its answer.
        let params = answered(-32602, "missing field `uri`");
        tracing::warn!(target: "rmcp::service", id = 7, error = ?params, "response error");
        let method = answered(-32601, "no method resources/nope");
        tracing::warn!(target: "rmcp::service", id = 8, error = ?method, "response error");
        // Kept: the server's own fault, another warning, another crate's line.
        let internal = answered(-32603, "the store failed");
        tracing::warn!(target: "rmcp::service", id = 9, error = ?internal, "response error");
        let other = answered(-32602, "kept elsewhere");
        tracing::warn!(target: "rmcp::service", error = ?other, "something else");
        tracing::warn!(target: "server_full", error = ?other, "response error");
    });
    assert!(!text.contains("missing field"), "{text}");
    assert!(!text.contains("no method"), "{text}");
    assert!(text.contains("the store failed"), "{text}");
    assert!(text.contains("something else"), "{text}");
    assert_eq!(text.matches("response error").count(), 2, "{text}");
}
