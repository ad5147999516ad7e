//! The hook event payload the client sends (on a command hook's stdin, or as an HTTP hook's
//! request body), and the events the dispatcher handles.

use std::fmt;

use serde_json::{Map, Value};

/// Reads the payload of an event with nothing to do, to its end, and drops it: the client
/// writes it whole, and a hook gone before the client finished writing would leave it a broken
/// pipe (a payload over the pipe's 64 KiB), which a client may report as a failed hook.
pub(crate) fn drain_stdin() {
    // Nothing to report: the payload is not needed, and the client closes its end.
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
}

/// A payload's JSON text, parsed. The clients that run on Node write a lone UTF-16 surrogate
/// as its escape (`JSON.stringify` of a string cut inside an emoji gives `"\ud83d"`), which is
/// valid JSON but no Unicode text, and serde_json refuses it; such escapes are read as U+FFFD
/// (as a browser's decoder reads them) instead of the whole event being lost. Anything else
/// serde_json refuses stays refused in its words.
///
/// # Errors
/// serde_json's error for text that is not JSON.
pub fn json_text(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(text).or_else(|e| match lone_surrogates_replaced(text) {
        Some(mended) => serde_json::from_slice(&mended).map_err(|_| e),
        None => Err(e),
    })
}

/// `text` with each `\uXXXX` escape of a lone surrogate, inside a string, written `\ufffd`
/// (the same length, ASCII for ASCII); `None` when it has none.
fn lone_surrogates_replaced(text: &str) -> Option<Vec<u8>> {
    let unit = |bytes: &[u8], at: usize| -> Option<u16> {
        let hex = bytes.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let escape_at = |bytes: &[u8], at: usize| -> Option<u16> {
        (bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u'))
            .then(|| unit(bytes, at + 2))
            .flatten()
    };
    let high = 0xD800..0xDC00;
    let low = 0xDC00..0xE000;
    let mut bytes = text.as_bytes().to_vec();
    let mut changed = false;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match (in_string, bytes[i]) {
            (false, b'"') => in_string = true,
            (false, _) => {}
            (true, b'"') => in_string = false,
            (true, b'\\') => match escape_at(&bytes, i) {
                Some(first) if high.contains(&first) => {
                    if escape_at(&bytes, i + 6).is_some_and(|second| low.contains(&second)) {
                        i += 12;
                    } else {
                        bytes[i + 2..i + 6].copy_from_slice(b"fffd");
                        changed = true;
                        i += 6;
                    }
                    continue;
                }
                Some(first) => {
                    if low.contains(&first) {
                        bytes[i + 2..i + 6].copy_from_slice(b"fffd");
                        changed = true;
                    }
                    i += 6;
                    continue;
                }
                // Any other escape is two bytes (`\"`, `\\`, `\n`...).
                None => i += 1,
            },
            (true, _) => {}
        }
        i += 1;
    }
    changed.then_some(bytes)
}

/// Why a payload is refused: each says what is wrong and what the client should send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// Nothing but white space.
    #[error("the payload is empty; the client writes the event as a JSON object there")]
    Empty,
    /// Not JSON at all.
    #[error("the payload is not valid JSON ({0})")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("the payload is not a JSON object")]
    NotObject,
    /// `hook_event_name` names another event.
    #[error(
        "the payload is for `{named}` but the command was registered for `{event}`; register \
         `hook {named}` for that event"
    )]
    OtherEvent {
        /// The event the payload names.
        named: String,
        /// The event it was sent for.
        event: Event,
    },
    /// No usable `session_id`.
    #[error("the payload has no `session_id` string")]
    NoSession,
    /// A `session_id` no session can be recorded under: why, and the id as shown.
    #[error("the payload's `session_id` `{1}` {0}")]
    BadSession(String, String),
    /// A tool event without a usable `tool_name`.
    #[error("the {0} payload has no `tool_name` string")]
    NoToolName(Event),
    /// A subagent event without a usable `agent_id`.
    #[error("the {0} payload has no `agent_id` string")]
    NoAgentId(Event),
}

/// Text from the payload as a refusal shows it: control characters escaped and at most 64
/// characters, so that the refusal stays one short line (it goes to stderr, a log or an HTTP
/// answer's one-line reason).
fn shown(text: &str) -> String {
    const MOST: usize = 64;
    let mut out: String = text
        .chars()
        .take(MOST)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(MOST).is_some() {
        out.push('…');
    }
    out
}

/// A lifecycle event the hook command handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A session started, resumed, was cleared or compacted: the banner, and after all but
    /// a start the alert and critical messages and the reminders again.
    SessionStart,
    /// The operator submitted a prompt: broadcasts, and the conditions gate.
    UserPromptSubmit,
    /// A tool is about to run: critical broadcasts, reminders, `pre` conditions.
    PreToolUse,
    /// A tool ran: `post` conditions.
    PostToolUse,
    /// The agent finished its turn: an alert or critical message published during the turn
    /// and not shown blocks the stop once, with the message as the reason.
    Stop,
    /// A subagent starts: the alert and critical messages, for it as its own recipient.
    SubagentStart,
    /// A subagent finished: its recipient ends.
    SubagentStop,
    /// The session ended: recorded, so it is no longer counted as live.
    SessionEnd,
}

/// Claude Code's hook events the dispatcher has nothing to do on: answered with nothing
/// (exit 0, no output) and counted, so that registering them never breaks the client
/// (code.claude.com/docs/en/hooks, "Hook lifecycle").
pub const QUIET_EVENTS: [&str; 23] = [
    "Setup",
    "UserPromptExpansion",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "MessageDisplay",
    "TaskCreated",
    "TaskCompleted",
    "StopFailure",
    "TeammateIdle",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "PreCompact",
    "PostCompact",
    "Elicitation",
    "ElicitationResult",
];

/// The client's spelling of a quiet event ([`QUIET_EVENTS`]) named `name` (ignoring case),
/// or `None`.
pub fn quiet_event(name: &str) -> Option<&'static str> {
    QUIET_EVENTS
        .into_iter()
        .find(|known| known.eq_ignore_ascii_case(name.trim()))
}

impl Event {
    /// Every event, in lifecycle order (also the order `init` registers them in).
    pub const ALL: [Event; 8] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::PreToolUse,
        Event::PostToolUse,
        Event::SubagentStart,
        Event::SubagentStop,
        Event::Stop,
        Event::SessionEnd,
    ];

    /// The events every client's hooks map onto (the others are Claude Code's alone).
    pub const CORE: [Event; 4] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::PreToolUse,
        Event::PostToolUse,
    ];

    /// The client's name for the event.
    pub fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::Stop => "Stop",
            Event::SubagentStart => "SubagentStart",
            Event::SubagentStop => "SubagentStop",
            Event::SessionEnd => "SessionEnd",
        }
    }

    /// Parses an event name, ignoring case.
    pub fn parse(name: &str) -> Option<Event> {
        Event::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether the event concerns one tool call.
    pub fn is_tool_event(self) -> bool {
        matches!(self, Event::PreToolUse | Event::PostToolUse)
    }

    /// Whether the event concerns one subagent (its payload names it in `agent_id`).
    pub fn is_subagent_event(self) -> bool {
        matches!(self, Event::SubagentStart | Event::SubagentStop)
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A checked payload: a JSON object with the fields the event needs.
#[derive(Debug)]
pub struct Payload {
    /// The whole object, as conditions receive it.
    pub raw: Map<String, Value>,
    /// The agent session (`session_id`).
    pub session_id: String,
    /// The tool (`tool_name`), for tool events.
    pub tool_name: String,
}

impl Payload {
    /// Parses and checks the payload of `event`.
    ///
    /// # Errors
    /// [`PayloadError`] saying what is wrong with the payload.
    pub fn parse(event: Event, text: &str) -> Result<Payload, PayloadError> {
        if text.trim().is_empty() {
            return Err(PayloadError::Empty);
        }
        match json_text(text) {
            Ok(value) => Payload::from_value(event, value),
            Err(e) => Err(PayloadError::NotJson(e.to_string())),
        }
    }

    /// Checks an already parsed payload of `event` (what a daemon receives from a hook).
    ///
    /// # Errors
    /// [`PayloadError`] saying what is wrong with the payload.
    pub fn from_value(event: Event, value: Value) -> Result<Payload, PayloadError> {
        let Value::Object(raw) = value else {
            return Err(PayloadError::NotObject);
        };
        if let Some(named) = raw.get("hook_event_name").and_then(Value::as_str)
            && !named.eq_ignore_ascii_case(event.name())
        {
            return Err(PayloadError::OtherEvent {
                named: shown(named),
                event,
            });
        }
        let session_id = match raw.get("session_id") {
            Some(Value::String(s)) if !s.trim().is_empty() => catalogue::check_session_id(s)
                .map_err(|why| PayloadError::BadSession(why, shown(s)))?
                .to_owned(),
            _ => return Err(PayloadError::NoSession),
        };
        let tool_name = if event.is_tool_event() {
            match raw.get("tool_name") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                _ => return Err(PayloadError::NoToolName(event)),
            }
        } else {
            String::new()
        };
        if event.is_subagent_event() {
            match raw.get("agent_id") {
                Some(Value::String(s)) if !s.trim().is_empty() => {}
                _ => return Err(PayloadError::NoAgentId(event)),
            }
        }
        Ok(Payload {
            raw,
            session_id,
            tool_name,
        })
    }

    /// The tool's input (`tool_input`), `{}` when absent.
    pub fn tool_input(&self) -> Value {
        self.raw
            .get("tool_input")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// The operator's prompt (`prompt`), empty when absent.
    pub fn prompt(&self) -> &str {
        self.raw.get("prompt").and_then(Value::as_str).unwrap_or("")
    }

    /// The client's id of the tool call (`tool_use_id`, or `toolUseId`), when given and not
    /// blank: the same call reported twice carries the same id.
    pub fn call_id(&self) -> Option<&str> {
        ["tool_use_id", "toolUseId"]
            .iter()
            .find_map(|k| self.raw.get(*k).and_then(Value::as_str))
            .map(str::trim)
            .filter(|id| !id.is_empty())
    }

    /// The session's working directory (`cwd`), when given.
    pub fn cwd(&self) -> Option<&str> {
        self.raw.get("cwd").and_then(Value::as_str)
    }

    /// Why a session started (`source` of `SessionStart`: `startup`, `resume`, `clear`,
    /// `compact`, `fork`), empty when absent.
    pub fn source(&self) -> &str {
        self.raw.get("source").and_then(Value::as_str).unwrap_or("")
    }

    /// Whether a `Stop` hook already made the agent go on in this turn (`stop_hook_active`).
    pub fn stop_hook_active(&self) -> bool {
        self.raw
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The recipient of a subagent event: `<session_id>/<agent_id>` (empty for other events).
    pub fn subagent_recipient(&self) -> String {
        match self.raw.get("agent_id").and_then(Value::as_str) {
            Some(agent) => format!("{}/{}", self.session_id, agent.trim()),
            None => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_are_read_as_the_replacement_character() {
        let read = |text: &str| json_text(text).map(|v| v["s"].clone());
        // Node's JSON.stringify of a string cut inside an emoji, and of a stray low half.
        assert_eq!(read(r#"{"s":"a\ud83d"}"#).unwrap(), "a\u{fffd}");
        assert_eq!(read(r#"{"s":"\ude00b"}"#).unwrap(), "\u{fffd}b");
        assert_eq!(read(r#"{"s":"\ud83d\ud83d\ude00"}"#).unwrap(), "\u{fffd}😀");
        assert_eq!(read(r#"{"s":"\ud83d\n"}"#).unwrap(), "\u{fffd}\n");
        // A pair stays a pair; an escaped backslash before `ud83d` is no escape.
        assert_eq!(read(r#"{"s":"\ud83d\ude00"}"#).unwrap(), "😀");
        assert_eq!(read(r#"{"s":"\\ud83d"}"#).unwrap(), "\\ud83d");
        // Keys too; text outside strings is never touched.
        assert_eq!(
            json_text(r#"{"k\udc00":1}"#).unwrap(),
            serde_json::json!({"k\u{fffd}": 1})
        );
        // What is not JSON stays refused, in serde_json's words.
        assert!(json_text(r#"{"s":"\ud83d"#).is_err());
        assert!(json_text(r#"{"s":"\ud8"}"#).is_err());
        let payload = Payload::parse(
            Event::PreToolUse,
            r#"{"session_id":"s","tool_name":"Bash","tool_input":{"command":"echo \ud83d"}}"#,
        )
        .unwrap();
        assert_eq!(payload.raw["tool_input"]["command"], "echo \u{fffd}");
    }

    #[test]
    fn payloads_are_checked_for_their_event() {
        let ok = Payload::parse(
            Event::PreToolUse,
            r#"{"session_id":" s1 ","tool_name":"Bash","hook_event_name":"pretooluse"}"#,
        );
        let ok = ok.map(|p| (p.session_id, p.tool_name));
        assert_eq!(ok, Ok(("s1".to_owned(), "Bash".to_owned())));
        let cases = [
            (Event::SessionStart, " \n", PayloadError::Empty),
            (Event::SessionStart, "[1]", PayloadError::NotObject),
            (Event::SessionStart, "{}", PayloadError::NoSession),
            (
                Event::SessionStart,
                r#"{"session_id":"a\u001b[31mb"}"#,
                PayloadError::BadSession(
                    "contains control characters; give a session id".into(),
                    "a\\u{1b}[31mb".into(),
                ),
            ),
            (
                Event::PostToolUse,
                r#"{"session_id":"s"}"#,
                PayloadError::NoToolName(Event::PostToolUse),
            ),
            (
                Event::SessionStart,
                r#"{"session_id":"s","hook_event_name":"Stop"}"#,
                PayloadError::OtherEvent {
                    named: "Stop".into(),
                    event: Event::SessionStart,
                },
            ),
        ];
        for (event, text, expected) in cases {
            assert_eq!(Payload::parse(event, text).err(), Some(expected), "{text}");
        }
        assert!(matches!(
            Payload::parse(Event::SessionStart, "{"),
            Err(PayloadError::NotJson(_))
        ));
    }

    #[test]
    fn lifecycle_payloads_name_their_subagent_and_quiet_events_are_known() {
        let start = Payload::parse(
            Event::SubagentStart,
            r#"{"session_id":"s","agent_id":" agent-1 ","agent_type":"Explore"}"#,
        )
        .unwrap();
        assert_eq!(start.subagent_recipient(), "s/agent-1");
        assert_eq!(
            Payload::parse(Event::SubagentStop, r#"{"session_id":"s"}"#).err(),
            Some(PayloadError::NoAgentId(Event::SubagentStop))
        );
        let stop = Payload::parse(Event::Stop, r#"{"session_id":"s","stop_hook_active":true}"#);
        assert!(stop.unwrap().stop_hook_active());
        assert_eq!(Event::parse("sessionend"), Some(Event::SessionEnd));
        assert_eq!(quiet_event(" precompact "), Some("PreCompact"));
        assert_eq!(quiet_event("Stop"), None, "handled, not quiet");
        assert_eq!(quiet_event("Stopp"), None);
        for name in QUIET_EVENTS {
            assert!(Event::parse(name).is_none(), "{name}");
        }
    }

    #[test]
    fn a_refusal_quoting_the_payload_stays_one_short_line() {
        let long = format!("Stop\nforged log line{}", "x".repeat(500));
        let text = serde_json::json!({ "session_id": "s", "hook_event_name": long }).to_string();
        let refusal = Payload::parse(Event::SessionStart, &text)
            .unwrap_err()
            .to_string();
        assert!(!refusal.contains('\n'), "{refusal}");
        assert!(refusal.contains("Stop\\nforged"), "{refusal}");
        assert!(refusal.len() < 400, "{} bytes: {refusal}", refusal.len());
    }
}
