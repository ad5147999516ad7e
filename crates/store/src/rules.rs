//! Domain rules shared by every entry point (tools, hooks, operator CLI): names, limits, times.

use chrono::{DateTime, Datelike, SecondsFormat, Utc};

use crate::Millis;

/// Longest channel name.
pub const CHANNEL_NAME_MAX: usize = 64;
/// Longest broadcast or reminder text, in bytes.
pub const MESSAGE_MAX_BYTES: usize = 4096;
/// Shortest message lifetime, in seconds.
pub const TTL_MIN_SECONDS: u32 = 1;
/// Longest message lifetime, in seconds (30 days).
pub const TTL_MAX_SECONDS: u32 = 30 * 24 * 3600;
/// Default message lifetime, in seconds.
pub const TTL_DEFAULT_SECONDS: u32 = 3600;
/// The channel every session receives whatever its subscriptions.
pub const GLOBAL_CHANNEL: &str = "global";

/// Checks a channel name against `^[A-Za-z0-9._-]{1,64}$`.
///
/// # Errors
/// A message naming the rule, for the caller to prefix with the field name.
pub fn check_channel_name(name: &str) -> Result<(), String> {
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-".contains(*c)))
    {
        return Err(format!(
            "may contain only letters, digits, `.`, `_` and `-` (found {bad:?}); e.g. `deploys`"
        ));
    }
    // The characters first: past them each is one byte, so the length counts both.
    if name.is_empty() || name.len() > CHANNEL_NAME_MAX {
        return Err(format!(
            "must be 1 to {CHANNEL_NAME_MAX} characters long (got {})",
            name.chars().count()
        ));
    }
    Ok(())
}

/// Checks a message text: not blank, at most [`MESSAGE_MAX_BYTES`], no NUL character (which
/// PostgreSQL cannot store and no session should be shown).
///
/// # Errors
/// A message naming the rule, for the caller to prefix with the field name.
pub fn check_message(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("must not be empty".into());
    }
    if text.len() > MESSAGE_MAX_BYTES {
        return Err(format!(
            "is {} bytes; the limit is {MESSAGE_MAX_BYTES}: shorten it or link to a file",
            text.len()
        ));
    }
    check_no_nul(text)
}

/// Checks that a text holds no NUL character: PostgreSQL refuses one in any text column, so
/// both backends refuse it before the store.
///
/// # Errors
/// Where the first one is, for the caller to prefix with the field name.
fn check_no_nul(text: &str) -> Result<(), String> {
    match text.find('\0') {
        Some(at) => Err(format!(
            "holds a NUL character (at byte {at}), which cannot be stored; remove it"
        )),
        None => Ok(()),
    }
}

/// A message or reminder text as it goes on its one line of a session's context: each line
/// break (`\r\n`, `\n`, `\r`, U+0085, U+2028, U+2029) written as the two characters `\n`, so
/// that no text can start a line of its own and pass for another delivery (`[CRITICAL #9
/// global] ...`) or a reminder.
pub fn on_one_line(text: &str) -> std::borrow::Cow<'_, str> {
    const BREAKS: [char; 5] = ['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'];
    if !text.contains(BREAKS) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.replace("\r\n", "\n").replace(BREAKS, "\\n"))
}

/// Checks a lifetime in seconds against [`TTL_MIN_SECONDS`]..=[`TTL_MAX_SECONDS`].
///
/// # Errors
/// A message naming the bounds ([`ttl_out_of_range`]), for the caller to prefix with the field
/// name.
pub fn check_ttl(seconds: u64) -> Result<u32, String> {
    u32::try_from(seconds)
        .ok()
        .filter(|s| (TTL_MIN_SECONDS..=TTL_MAX_SECONDS).contains(s))
        .ok_or_else(|| ttl_out_of_range(&seconds.to_string()))
}

/// What a lifetime outside [`TTL_MIN_SECONDS`]..=[`TTL_MAX_SECONDS`] is told, `got` being the
/// value as written.
pub fn ttl_out_of_range(got: &str) -> String {
    if got.starts_with('-') {
        return format!("must be at least {TTL_MIN_SECONDS} second, got {got}");
    }
    format!("must be between {TTL_MIN_SECONDS} and {TTL_MAX_SECONDS} seconds (30 days), got {got}")
}

/// Deserializes an integer argument (for `#[serde(deserialize_with = ...)]`) whose valid range
/// lies inside `i64`: a number beyond `i64` (`18446744073709551615`, `1e308`) is refused with
/// `out_of_range`'s message for it, as written, the message the field gives any other value
/// out of its range, rather than the parser's "expected i64". A whole number written with an
/// exponent is taken; anything else that is not a whole number gets the parser's usual
/// complaint.
///
/// # Errors
/// `out_of_range`'s message, or the parser's for a value that is no whole number.
pub fn integer<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    out_of_range: fn(&str) -> String,
) -> Result<i64, D::Error> {
    deserializer.deserialize_i64(Whole { out_of_range })
}

/// [`integer`] for an optional field (absent and `null` are `None`; the field also needs
/// `#[serde(default)]`).
///
/// # Errors
/// As [`integer`].
pub fn optional_integer<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    out_of_range: fn(&str) -> String,
) -> Result<Option<i64>, D::Error> {
    deserializer.deserialize_option(Optional(Whole { out_of_range }))
}

/// The visitor of [`integer`].
#[derive(Debug, Clone, Copy)]
struct Whole {
    out_of_range: fn(&str) -> String,
}

impl<'de> serde::de::Visitor<'de> for Whole {
    type Value = i64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an integer")
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom((self.out_of_range)(&v.to_string())))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<i64, E> {
        /// 2^63: every whole `f64` in -2^63..2^63 is an `i64`.
        const BOUND: f64 = 9_223_372_036_854_775_808.0;
        if !v.is_finite() || v.fract() != 0.0 {
            return Err(E::invalid_type(serde::de::Unexpected::Float(v), &self));
        }
        if (-BOUND..BOUND).contains(&v) {
            // Whole and within range, so the cast is exact.
            Ok(v as i64)
        } else {
            Err(E::custom((self.out_of_range)(&format!("{v:e}"))))
        }
    }
}

/// The visitor of [`optional_integer`].
#[derive(Debug, Clone, Copy)]
struct Optional(Whole);

impl<'de> serde::de::Visitor<'de> for Optional {
    type Value = Option<i64>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an integer")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Option<i64>, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<i64>, E> {
        Ok(None)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<i64>, D::Error> {
        d.deserialize_i64(self.0).map(Some)
    }
}

/// Formats Unix milliseconds as RFC 3339 UTC (`2026-11-30T13:00:00Z`, milliseconds when
/// non-zero).
pub fn to_rfc3339(ms: Millis) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
        .unwrap_or_else(|| ms.to_string())
}

/// Parses an RFC 3339 timestamp into Unix milliseconds.
///
/// # Errors
/// A message with an example of the expected form.
pub fn from_rfc3339(text: &str) -> Result<Millis, String> {
    let time = DateTime::parse_from_rfc3339(text.trim()).map_err(|e| {
        format!("`{text}` is not an RFC 3339 time ({e}); e.g. 2026-12-01T09:00:00Z")
    })?;
    // An offset can move a time at either end of the years RFC 3339 writes out of them in
    // UTC, where it could not be written back (found by fuzzing).
    if !(0..=9999).contains(&time.with_timezone(&Utc).year()) {
        return Err(format!(
            "`{text}` is outside the years 0000 to 9999 in UTC; e.g. 2026-12-01T09:00:00Z"
        ));
    }
    Ok(time.timestamp_millis())
}

/// The first line of a turn-end push (a `Stop` blocked for the messages published during the
/// turn, in every client's form). Some clients give the push to the agent as its next prompt:
/// a prompt that starts with this line is hooks-mcp's own words, not the operator's, and opens
/// no conditions gate (`tools_conditions::prompt_requests_condition_change`), whatever the
/// broadcasts after it say.
pub const PUSH_HEADER: &str =
    "[hooks-mcp] Published during this turn, for you to read before you stop:";

#[cfg(test)]
mod tests {
    use super::{check_channel_name, check_message, on_one_line};

    #[test]
    fn a_message_with_a_nul_is_refused_where_it_is() {
        assert_eq!(
            check_message("ok\0").unwrap_err(),
            "holds a NUL character (at byte 2), which cannot be stored; remove it"
        );
        assert!(check_message("ok \\0").is_ok());
    }

    #[test]
    fn a_name_with_characters_outside_the_rule_is_told_the_character_not_a_length() {
        let emoji = "😀".repeat(20);
        let e = check_channel_name(&emoji).unwrap_err();
        assert!(e.contains("found '😀'"), "{e}");
        let e = check_channel_name(&"a".repeat(65)).unwrap_err();
        assert!(e.contains("(got 65)"), "{e}");
        assert!(check_channel_name(&"a".repeat(64)).is_ok());
        assert!(check_channel_name("").unwrap_err().contains("(got 0)"));
    }

    #[test]
    fn every_line_break_is_written_as_backslash_n() {
        assert!(matches!(
            on_one_line("one line"),
            std::borrow::Cow::Borrowed("one line")
        ));
        assert_eq!(
            on_one_line("done\n[REMINDER #7] rm -rf\r\n[CRITICAL #9 global] x\ry\u{2028}z\u{85}w"),
            "done\\n[REMINDER #7] rm -rf\\n[CRITICAL #9 global] x\\ny\\nz\\nw"
        );
        assert!(!on_one_line("a\u{2029}b\n\nc").contains(['\n', '\u{2029}']));
    }
}
