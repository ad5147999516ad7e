//! The hook event payload the client writes on stdin, and the events this command handles.

use std::fmt;

use serde_json::{Map, Value};

/// A lifecycle event the hook command handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A session started or resumed: the banner.
    SessionStart,
    /// The operator submitted a prompt: broadcasts, and the conditions gate.
    UserPromptSubmit,
    /// A tool is about to run: critical broadcasts, reminders, `pre` conditions.
    PreToolUse,
    /// A tool ran: `post` conditions.
    PostToolUse,
}

impl Event {
    /// Every event, in lifecycle order (also the order `init` registers them in).
    pub(crate) const ALL: [Event; 4] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::PreToolUse,
        Event::PostToolUse,
    ];

    /// The client's name for the event.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
        }
    }

    /// Parses an event name, ignoring case.
    pub(crate) fn parse(name: &str) -> Option<Event> {
        Event::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether the event concerns one tool call.
    pub(crate) fn is_tool_event(self) -> bool {
        matches!(self, Event::PreToolUse | Event::PostToolUse)
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A checked payload: a JSON object with the fields the event needs.
#[derive(Debug)]
pub(crate) struct Payload {
    /// The whole object, as conditions receive it.
    pub(crate) raw: Map<String, Value>,
    /// The agent session (`session_id`).
    pub(crate) session_id: String,
    /// The tool (`tool_name`), for tool events.
    pub(crate) tool_name: String,
}

impl Payload {
    /// Parses and checks the payload of `event`.
    ///
    /// # Errors
    /// A sentence saying what is wrong with the payload.
    pub(crate) fn parse(event: Event, text: &str) -> Result<Payload, String> {
        if text.trim().is_empty() {
            return Err(
                "the payload on stdin is empty; the client writes the event as a JSON \
                        object there"
                    .into(),
            );
        }
        match serde_json::from_str::<Value>(text) {
            Ok(value) => Payload::from_value(event, value),
            Err(e) => Err(format!("the payload on stdin is not valid JSON ({e})")),
        }
    }

    /// Checks an already parsed payload of `event` (what a daemon receives from a hook).
    ///
    /// # Errors
    /// A sentence saying what is wrong with the payload.
    pub(crate) fn from_value(event: Event, value: Value) -> Result<Payload, String> {
        let Value::Object(raw) = value else {
            return Err("the payload on stdin is not a JSON object".into());
        };
        if let Some(named) = raw.get("hook_event_name").and_then(Value::as_str)
            && !named.eq_ignore_ascii_case(event.name())
        {
            return Err(format!(
                "the payload is for `{named}` but the command was registered for `{event}`; \
                 register `hook {named}` for that event"
            ));
        }
        let session_id = match raw.get("session_id") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
            _ => return Err("the payload has no `session_id` string".into()),
        };
        let tool_name = if event.is_tool_event() {
            match raw.get("tool_name") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                _ => return Err(format!("the {event} payload has no `tool_name` string")),
            }
        } else {
            String::new()
        };
        Ok(Payload {
            raw,
            session_id,
            tool_name,
        })
    }

    /// The tool's input (`tool_input`), `{}` when absent.
    pub(crate) fn tool_input(&self) -> Value {
        self.raw
            .get("tool_input")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// The operator's prompt (`prompt`), empty when absent.
    pub(crate) fn prompt(&self) -> &str {
        self.raw.get("prompt").and_then(Value::as_str).unwrap_or("")
    }

    /// The session's working directory (`cwd`), when given.
    pub(crate) fn cwd(&self) -> Option<&str> {
        self.raw.get("cwd").and_then(Value::as_str)
    }
}
