//! Target `hook_payload`: a hook event's payload through the dispatcher the daemon's HTTP hooks
//! and the command hook share (`hook_dispatch::answer_http`), over a temporary SQLite store.
//!
//! Input: the first byte picks the event (one of the handled events, or a name the dispatcher
//! does not handle); the second byte's bit 0 says whether a subscriptions header comes with
//! it, and the text up to the first new line after it is that header's value; the rest is the
//! payload body. Invariants: never a panic; a body the payload parser accepts is always
//! answered (never refused); a refusal names the event and says why in one line; an answer is
//! either nothing or one JSON object that Claude Code's hook protocol reads (it has
//! `hookSpecificOutput` naming the event, or a top-level `decision`/`continue`/`systemMessage`).

use hook_dispatch::{Event, Payload};
use serde_json::Value;

use crate::runtime;

/// The call's clock: 2026-01-01T00:00:00Z.
const NOW_MS: i64 = 1_767_225_600_000;

/// The input bytes that post `body` for `event` (for seeds).
pub fn encode(event: &str, channels: Option<&str>, body: &str) -> Vec<u8> {
    let pick = Event::ALL
        .iter()
        .position(|e| e.name() == event)
        .unwrap_or(Event::ALL.len());
    let mut data = vec![
        u8::try_from(pick).unwrap_or(u8::MAX),
        u8::from(channels.is_some()),
    ];
    if let Some(channels) = channels {
        data.extend_from_slice(channels.as_bytes());
        data.push(b'\n');
    }
    data.extend_from_slice(body.as_bytes());
    data
}

/// Answers the hook event `data` describes.
pub fn check(data: &[u8]) {
    let (Some(&pick), Some(&flags)) = (data.first(), data.get(1)) else {
        return;
    };
    let event = Event::ALL.get(usize::from(pick) % (Event::ALL.len() + 1));
    let name = event.map_or("Notification", |e| e.name());
    let mut rest = &data[2..];
    let channels = if flags & 1 == 1 {
        let end = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
        let value = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = rest.get(end + 1..).unwrap_or_default();
        Some(value)
    } else {
        None
    };
    let parses = event.is_some_and(|event| {
        std::str::from_utf8(rest).is_ok_and(|text| Payload::parse(*event, text).is_ok())
    });
    let store = runtime::shared_store();
    let outcome =
        hook_dispatch::http::answer_http(name, rest, channels.as_deref(), &*store.handle.0, NOW_MS);
    match outcome {
        Ok(answer) => {
            if let Some(body) = answer.body {
                let value: Value = serde_json::from_slice(&body).unwrap_or_else(|e| {
                    panic!(
                        "{name}: the answer is not JSON ({e}): {}",
                        String::from_utf8_lossy(&body)
                    )
                });
                let object = value
                    .as_object()
                    .unwrap_or_else(|| panic!("{name}: the answer is not an object: {value}"));
                let readable = object
                    .get("hookSpecificOutput")
                    .is_some_and(|h| h["hookEventName"] == Value::String(name.to_owned()))
                    || ["decision", "continue", "systemMessage"]
                        .iter()
                        .any(|k| object.contains_key(*k));
                assert!(
                    readable,
                    "{name}: an answer the client cannot read: {value}"
                );
            }
            for note in &answer.notes {
                assert!(
                    !note.contains('\n'),
                    "{name}: a note of several lines: {note:?}"
                );
            }
        }
        Err(refusal) => {
            assert!(
                !parses,
                "{name}: a payload the parser accepts was refused: {refusal}"
            );
            let line = refusal.to_string();
            assert!(
                line.contains(name) && !line.contains('\n'),
                "{name}: the refusal must name the event in one line: {line:?}"
            );
        }
    }
}
