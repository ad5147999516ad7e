//! Pushing urgent messages into a session (Claude Code's channels): whether a stdio process
//! pushes, the notification's shape, the cursor that says what was pushed, and the batch the
//! store's child prints for the front end. Defined once here for the front end (which writes
//! the lines) and the full server (which builds the batches and, after a handoff, pushes).
//!
//! The contract (Claude Code's "Channels reference"): a stdio server that declares
//! `capabilities.experimental["claude/channel"] = {}` may send `notifications/claude/channel`
//! with `{"content": string, "meta": {string: string}}`; each `meta` key becomes an attribute
//! of the `<channel>` tag the model sees, and keys other than letters, digits and underscores
//! are dropped.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::setting::{PUSH_ENV, SESSION_ENV};

/// The method of a pushed message.
pub const CHANNEL_METHOD: &str = "notifications/claude/channel";
/// Most messages one batch carries; the rest follow in the next.
pub const BATCH_LIMIT: u32 = 20;

/// Whether this process pushes, from its environment (`var` looks a variable up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// [`PUSH_ENV`] is on and the session is known: declare the capability and push.
    On {
        /// The session pushed into.
        session: String,
    },
    /// Off (the default).
    Off,
    /// Asked for but impossible, or a value not understood: off, with this warning.
    Refused(String),
}

impl Decision {
    /// Reads [`PUSH_ENV`] and the session ([`SESSION_ENV`], the first that is set and not
    /// blank).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Decision {
        let value = var(PUSH_ENV).unwrap_or_default();
        match crate::setting::switch(&value) {
            Some(true) => {}
            Some(false) => return Decision::Off,
            None if value.trim().is_empty() => return Decision::Off,
            None => {
                return Decision::Refused(format!(
                    "{PUSH_ENV}: `{}` is neither on nor off; push stays off (set it to `on` or \
                     `off`)",
                    value.trim()
                ));
            }
        }
        match SESSION_ENV
            .iter()
            .find_map(|k| var(k).filter(|v| !v.trim().is_empty()))
        {
            Some(session) => Decision::On {
                session: session.trim().to_owned(),
            },
            None => Decision::Refused(format!(
                "{PUSH_ENV} is on but no session id is known: push stays off (set {} or start \
                 the server from Claude Code, which sets {})",
                SESSION_ENV[0], SESSION_ENV[1]
            )),
        }
    }
}

/// Where a process's pushes stand: messages published before `since_ms` (the process's start,
/// or the front end's) are never pushed, nor those up to `after_id` (the last pushed or passed
/// over). Its text is `since_ms:after_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Publication time (Unix milliseconds) from which messages count.
    pub since_ms: i64,
    /// The highest message id already handled.
    pub after_id: i64,
}

impl Cursor {
    /// A cursor that starts at `since_ms` with nothing handled yet.
    pub fn starting(since_ms: i64) -> Cursor {
        Cursor {
            since_ms,
            after_id: 0,
        }
    }

    /// Reads `since_ms:after_id`.
    ///
    /// # Errors
    /// A message naming the expected form.
    pub fn parse(text: &str) -> Result<Cursor, String> {
        let bad = || format!("push cursor `{text}` is not `since_ms:after_id` (two integers)");
        let (since, after) = text.trim().split_once(':').ok_or_else(bad)?;
        Ok(Cursor {
            since_ms: since.parse().map_err(|_| bad())?,
            after_id: after.parse().map_err(|_| bad())?,
        })
    }

    /// Moves past `id` (never back).
    pub fn passed(&mut self, id: i64) {
        self.after_id = self.after_id.max(id);
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.since_ms, self.after_id)
    }
}

/// What the store's child prints for the front end: the notifications' params to write, in
/// order, the cursor past them, and whether more are waiting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// The cursor's text after these pushes ([`Cursor`]).
    pub cursor: String,
    /// Whether more messages wait beyond [`BATCH_LIMIT`].
    pub more: bool,
    /// Each notification's `params` ([`channel_params`]).
    pub pushes: Vec<Value>,
}

/// The `params` of one pushed message: its rendered text as `content`; its channel, severity
/// and id (as strings) in `meta`.
pub fn channel_params(content: &str, channel: &str, severity: &str, message_id: i64) -> Value {
    json!({
        "content": content,
        "meta": {
            "channel": channel,
            "severity": severity,
            "message_id": message_id.to_string(),
        },
    })
}

/// One `notifications/claude/channel` line carrying `params`.
pub fn notification_line(params: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "method": CHANNEL_METHOD,
        "params": params,
    }))
    // A `Value` always serializes.
    .unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(table: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            table
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn push_is_off_by_default_and_needs_a_session() {
        assert_eq!(Decision::from_vars(vars(&[])), Decision::Off);
        assert_eq!(
            Decision::from_vars(vars(&[(PUSH_ENV, "off"), (SESSION_ENV[1], "s")])),
            Decision::Off
        );
        let on = Decision::from_vars(vars(&[(PUSH_ENV, " On "), (SESSION_ENV[1], "claude")]));
        assert_eq!(
            on,
            Decision::On {
                session: "claude".into()
            }
        );
        let ours = Decision::from_vars(vars(&[
            (PUSH_ENV, "1"),
            (SESSION_ENV[0], "ours"),
            (SESSION_ENV[1], "claude"),
        ]));
        assert_eq!(
            ours,
            Decision::On {
                session: "ours".into()
            }
        );
        let Decision::Refused(why) = Decision::from_vars(vars(&[(PUSH_ENV, "on")])) else {
            panic!("push without a session");
        };
        assert!(why.contains("no session id"), "{why}");
        let Decision::Refused(why) = Decision::from_vars(vars(&[(PUSH_ENV, "maybe")])) else {
            panic!("an unknown value");
        };
        assert!(why.contains("`maybe` is neither on nor off"), "{why}");
    }

    #[test]
    fn cursors_round_trip_and_only_move_forward() {
        let mut c = Cursor::starting(1_700_000_000_000);
        assert_eq!(c.to_string(), "1700000000000:0");
        c.passed(12);
        c.passed(7);
        assert_eq!(Cursor::parse(&c.to_string()), Ok(c));
        assert_eq!(c.after_id, 12);
        for bad in ["", "12", "a:1", "1:b", "1:2:3"] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_push_is_one_line_whose_meta_keys_claude_code_keeps() {
        let params = channel_params("[ALERT #3 ops] db down", "ops", "alert", 3);
        let line = notification_line(&params);
        assert!(line.ends_with(b"\n"));
        let value: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["method"], CHANNEL_METHOD);
        assert_eq!(value["params"]["content"], "[ALERT #3 ops] db down");
        let meta = value["params"]["meta"].as_object().unwrap();
        assert_eq!(meta["message_id"], "3");
        for (key, value) in meta {
            assert!(
                key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{key}"
            );
            assert!(value.is_string(), "{key}: meta values are strings");
        }
    }
}
