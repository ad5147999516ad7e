//! Target `channel_rules`: the channel rules every entry point shares (`store::rules`).
//!
//! Input: text, read as a comma-separated subscription list (the form of
//! `HOOKS_MCP_CHANNELS`), as a message text, and as an RFC 3339 time. Invariants: a channel
//! name is accepted exactly when it matches `^[A-Za-z0-9._-]{1,64}$` (checked against a
//! regular expression, not the code's own loop); a message is accepted exactly when it is not
//! blank, at most the byte limit and free of NUL characters (which cannot be stored); a time
//! that parses formats back to text that parses to the same instant; no rule panics or gives
//! an empty complaint.

use std::sync::OnceLock;

use regex_lite::Regex;
use store::rules::{
    MESSAGE_MAX_BYTES, check_channel_name, check_message, check_ttl, from_rfc3339, to_rfc3339,
};

fn channel_name() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\A[A-Za-z0-9._-]{1,64}\z").expect("a valid expression"))
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for name in text.split(',').map(str::trim).chain([text.as_ref()]) {
        let verdict = check_channel_name(name);
        assert_eq!(
            verdict.is_ok(),
            channel_name().is_match(name),
            "channel name {name:?}: {verdict:?}"
        );
        if let Err(why) = verdict {
            assert!(!why.is_empty());
        }
    }
    let message = check_message(&text);
    assert_eq!(
        message.is_ok(),
        !text.trim().is_empty() && text.len() <= MESSAGE_MAX_BYTES && !text.contains('\0'),
        "message of {} bytes: {message:?}",
        text.len()
    );
    if let Some(bytes) = data.get(..8) {
        let seconds = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
        if let Ok(ttl) = check_ttl(seconds) {
            assert_eq!(u64::from(ttl), seconds);
        }
    }
    if let Ok(ms) = from_rfc3339(&text) {
        let formatted = to_rfc3339(ms);
        assert_eq!(
            from_rfc3339(&formatted),
            Ok(ms),
            "{text:?} parsed to {ms} ms, formatted as {formatted:?}"
        );
    }
}
