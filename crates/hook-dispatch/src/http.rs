//! Claude Code's HTTP hooks: the daemon's answer to `POST /hooks/{Event}`, whose body is the
//! event's payload exactly as a command hook reads it on stdin.
//!
//! The answer is the bytes `hooks-mcp-hook hook {Event}` prints for the same payload and store
//! state, or nothing where it prints nothing. The differences are where things run: the store's
//! part runs over the daemon's store, and the conditions' scripts run on the daemon's host, in
//! the payload's `cwd`, with the daemon's environment and the same time limit and process-group
//! kill. The session's subscriptions come from the [`CHANNELS_HEADER`] header (the client fills
//! it from its own `HOOKS_MCP_CHANNELS`), or, without that header, from the daemon's
//! environment; the conditions gate, the delivery budget and the time limit from the daemon's
//! environment.
//!
//! Blocking: scripts run to completion on the calling thread, so the daemon calls this on a
//! blocking thread, never on its async runtime's threads.

use crate::conditions;
use crate::dispatch;
use crate::output::answer_bytes;
use crate::part::{DeliveryBudget, PartSettings, Subscriptions, store_part};
use crate::payload::{Event, Payload, PayloadError};

/// The request header carrying the session's subscriptions (a `HOOKS_MCP_CHANNELS` value).
pub const CHANNELS_HEADER: &str = "x-hooks-mcp-channels";

/// The daemon's answer to one HTTP hook.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HttpAnswer {
    /// The response body: `None` when the command hook would print nothing (an empty 2xx,
    /// which the client takes as success with nothing to add).
    pub body: Option<Vec<u8>>,
    /// Lines for the daemon's log: what a command hook would have written on its stderr.
    pub notes: Vec<String>,
    /// The event is one of Claude Code's that the dispatcher has nothing to do on
    /// ([`crate::QUIET_EVENTS`]): answered with nothing, for the daemon to count.
    pub quiet: bool,
}

/// Why the daemon cannot answer an HTTP hook (a non-2xx status with this one-line reason, which
/// the client treats as a non-blocking error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpHookError {
    /// The body is not a payload of the event.
    #[error("hooks-mcp: the {event} payload is refused: {source}")]
    Payload {
        /// The event of the route.
        event: Event,
        /// What is wrong with it.
        #[source]
        source: PayloadError,
    },
    /// The route names no event this dispatcher handles nor one of Claude Code's others: a
    /// hook URL mistyped or mangled (the command hook says the same on stderr and exits 0).
    #[error(
        "hooks-mcp: no hook event `{0}`; post to /hooks/<Event> with one of {events}, or \
         another Claude Code event (answered with nothing)",
        events = Event::ALL.map(|e| e.name()).join(", ")
    )]
    UnknownEvent(String),
}

/// Answers the HTTP hook for the event named `event` with the payload `body`, over `store` at
/// `now`; `channels` is the [`CHANNELS_HEADER`] value when the request has one. Runs the
/// matching conditions' scripts (blocking).
///
/// # Errors
/// [`HttpHookError::Payload`] when the body is not a valid payload of a handled event;
/// [`HttpHookError::UnknownEvent`] for a name that is no Claude Code event. One of Claude
/// Code's other events ([`crate::QUIET_EVENTS`]) is answered with nothing, as the command hook
/// does, marked [`HttpAnswer::quiet`].
pub fn answer_http(
    event: &str,
    body: &[u8],
    channels: Option<&str>,
    store: &dyn store::Store,
    now: i64,
) -> Result<HttpAnswer, HttpHookError> {
    let Some(event) = Event::parse(event) else {
        if crate::payload::quiet_event(event).is_none() {
            return Err(HttpHookError::UnknownEvent(event.to_owned()));
        }
        return Ok(HttpAnswer {
            body: None,
            notes: Vec::new(),
            quiet: true,
        });
    };
    let refused = |source| HttpHookError::Payload { event, source };
    let text = std::str::from_utf8(body)
        .map_err(|e| refused(PayloadError::NotJson(format!("not UTF-8: {e}"))))?;
    let payload = Payload::parse(event, text).map_err(refused)?;
    let mut notes = Vec::new();
    let (stop_block, stop_warning) = crate::part::stop_block_from_env();
    notes.extend(stop_warning.map(|line| format!("hooks-mcp hook: {line}")));
    if !dispatch::needs_store(event, &payload, stop_block) {
        return Ok(HttpAnswer {
            notes,
            ..HttpAnswer::default()
        });
    }
    let warn = |bad: String| notes.push(format!("hooks-mcp hook: {bad}"));
    let subscriptions = match channels {
        Some(value) => Subscriptions::parse(value, warn),
        None => Subscriptions::from_env(warn),
    };
    let gate = tools_conditions::gate_setting_from_env().enforced;
    let (budget, warning) = DeliveryBudget::from_env();
    notes.extend(warning.map(|line| format!("hooks-mcp hook: {line}")));
    let settings = PartSettings {
        subscriptions: &subscriptions,
        gate_enforced: gate,
        budget,
        stop_block,
    };
    let part = store_part(event, &payload, &settings, store, now);
    let response = dispatch::complete(
        event,
        &payload,
        &subscriptions,
        part,
        conditions::timeout_from_env,
    );
    notes.extend(response.notes.iter().cloned());
    Ok(HttpAnswer {
        body: response
            .to_json(event, &payload.tool_name)
            .map(|answer| answer_bytes(&answer)),
        notes,
        quiet: false,
    })
}
