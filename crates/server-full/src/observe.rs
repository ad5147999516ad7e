//! What a server reports of each `tools/call` to whoever counts them (the daemon's metrics),
//! without this crate knowing how they are counted.

use std::time::Duration;

/// How a `tools/call` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true` (bad arguments, a refusal, a store failure...).
    ToolError,
    /// A JSON-RPC error (an unknown or unloaded tool).
    ProtocolError,
}

impl CallOutcome {
    /// Every outcome, in label order.
    pub const ALL: [CallOutcome; 3] = [
        CallOutcome::Ok,
        CallOutcome::ToolError,
        CallOutcome::ProtocolError,
    ];

    /// The outcome's label in metrics: `ok`, `tool_error` or `protocol_error`.
    pub fn label(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::ToolError => "tool_error",
            CallOutcome::ProtocolError => "protocol_error",
        }
    }
}

/// Told of every `tools/call` a [`crate::HooksServer`] answers (see
/// [`crate::HooksServer::observe_calls`]). Called on the request's task: keep it cheap.
pub trait CallObserver: Send + Sync + std::fmt::Debug {
    /// One call of `tool` ended with `outcome` after `elapsed`.
    fn record(&self, tool: &str, outcome: CallOutcome, elapsed: Duration);
}
