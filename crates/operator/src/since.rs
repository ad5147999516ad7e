//! `--since`: an instant, or a span of time back from now, as an operator types it.

use std::fmt;

/// A `--since` value (Unix milliseconds): an instant, or a span back from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// This instant.
    At(i64),
    /// This many milliseconds before now.
    Ago(i64),
}

/// A `--since` value that is neither an RFC 3339 time nor a duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinceError(String);

impl fmt::Display for SinceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is neither an RFC 3339 time (2026-01-01T09:00:00Z) nor a duration such as \
             90s, 30m, 1h or 7d",
            self.0
        )
    }
}

impl std::error::Error for SinceError {}

impl Since {
    /// Reads `90s`, `30m`, `1h`, `7d`, or else a time that `rfc3339` reads (`None`: not one).
    ///
    /// # Errors
    /// When `text` is neither.
    pub fn parse(
        text: &str,
        rfc3339: impl FnOnce(&str) -> Option<i64>,
    ) -> Result<Since, SinceError> {
        let text = text.trim();
        let unit = |c: char| match c {
            's' => Some(1_000),
            'm' => Some(60_000),
            'h' => Some(3_600_000),
            'd' => Some(86_400_000),
            _ => None,
        };
        if let Some(last) = text.chars().last()
            && let Some(scale) = unit(last)
            && let Ok(n) = text[..text.len() - 1].parse::<u32>()
        {
            return Ok(Since::Ago(i64::from(n) * scale));
        }
        rfc3339(text)
            .map(Since::At)
            .ok_or_else(|| SinceError(text.to_owned()))
    }

    /// The instant this value names at `now`.
    pub fn instant(self, now: i64) -> i64 {
        match self {
            Since::At(at) => at,
            Since::Ago(ms) => now.saturating_sub(ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Since;

    /// Reads only the Unix epoch's first second, as the store's reader would.
    fn rfc3339(text: &str) -> Option<i64> {
        (text == "1970-01-01T00:00:01Z").then_some(1_000)
    }

    #[test]
    fn since_reads_durations_and_rfc3339() {
        assert_eq!(Since::parse("90s", rfc3339), Ok(Since::Ago(90_000)));
        assert_eq!(Since::parse(" 2h ", rfc3339), Ok(Since::Ago(7_200_000)));
        assert_eq!(Since::parse("7d", rfc3339), Ok(Since::Ago(604_800_000)));
        assert_eq!(
            Since::parse("1970-01-01T00:00:01Z", rfc3339),
            Ok(Since::At(1_000))
        );
        let refused = Since::parse("yesterday", rfc3339).unwrap_err().to_string();
        assert_eq!(
            refused,
            "`yesterday` is neither an RFC 3339 time (2026-01-01T09:00:00Z) nor a duration \
             such as 90s, 30m, 1h or 7d"
        );
        assert!(Since::parse("h", rfc3339).is_err());
        assert!(Since::parse("-5m", rfc3339).is_err());
    }

    #[test]
    fn an_instant_is_itself_and_a_span_counts_back_from_now() {
        assert_eq!(Since::At(5).instant(1_000), 5);
        assert_eq!(Since::Ago(300).instant(1_000), 700);
        assert_eq!(Since::Ago(i64::MAX).instant(i64::MIN), i64::MIN);
    }
}
