//! How long the audit trail and session records are kept, and when a session counts as live.

use crate::{Millis, Store, StoreError, StoreResult};

/// Environment variable: days the audit trail keeps an entry (default 90).
pub const AUDIT_RETENTION_ENV: &str = "HOOKS_MCP_AUDIT_RETENTION_DAYS";
/// Environment variable: days a session's record is kept after it was last seen (default 7).
pub const SESSION_RETENTION_ENV: &str = "HOOKS_MCP_SESSION_RETENTION_DAYS";
/// Environment variable: minutes after its last sighting a session still counts as live
/// (default 10).
pub const SESSION_LIVE_ENV: &str = "HOOKS_MCP_SESSION_LIVE_MINUTES";

const DAY_MS: i64 = 24 * 3600 * 1000;
const MINUTE_MS: i64 = 60 * 1000;

/// The retention settings, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// How long an audit entry is kept.
    pub audit_ms: Millis,
    /// How long a session's record is kept after its last sighting.
    pub sessions_ms: Millis,
    /// How long after its last sighting a session is live.
    pub live_ms: Millis,
}

impl Default for Retention {
    /// 90 days, 7 days, 10 minutes.
    fn default() -> Self {
        Retention {
            audit_ms: 90 * DAY_MS,
            sessions_ms: 7 * DAY_MS,
            live_ms: 10 * MINUTE_MS,
        }
    }
}

/// What [`housekeeping`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Audit entries past their retention.
    pub audit: u64,
    /// Session records past their retention.
    pub sessions: u64,
}

impl Retention {
    /// Reads the settings from the environment.
    ///
    /// # Errors
    /// [`StoreError::InvalidSetting`] naming the setting that is not a positive whole number.
    pub fn from_env() -> Result<Retention, StoreError> {
        Retention::from_lookup(|k| std::env::var(k).ok())
    }

    /// [`Retention::from_env`] with the lookup given (for tests).
    ///
    /// # Errors
    /// As [`Retention::from_env`].
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Retention, StoreError> {
        let defaults = Retention::default();
        let read = |name: &'static str, unit: &str, scale: i64, default: Millis| {
            let Some(text) = var(name).filter(|v| !v.trim().is_empty()) else {
                return Ok(default);
            };
            match text.trim().parse::<u32>() {
                Ok(n) if n > 0 => Ok(i64::from(n) * scale),
                _ => Err(StoreError::InvalidSetting {
                    name,
                    problem: format!("must be a positive whole number of {unit}, got `{text}`"),
                }),
            }
        };
        Ok(Retention {
            audit_ms: read(AUDIT_RETENTION_ENV, "days", DAY_MS, defaults.audit_ms)?,
            sessions_ms: read(SESSION_RETENTION_ENV, "days", DAY_MS, defaults.sessions_ms)?,
            live_ms: read(SESSION_LIVE_ENV, "minutes", MINUTE_MS, defaults.live_ms)?,
        })
    }

    /// The instant from which a session seen at or after it is live, at `now`.
    pub fn live_since(&self, now: Millis) -> Millis {
        now.saturating_sub(self.live_ms)
    }
}

/// Deletes audit entries and session records past their retention at `now`: what the daemon's
/// tick and the `SessionStart` hook run.
///
/// # Errors
/// The store's error (the audit trail is pruned first; a failure leaves each part whole).
pub fn housekeeping(store: &dyn Store, now: Millis, retention: &Retention) -> StoreResult<Pruned> {
    Ok(Pruned {
        audit: store.prune_audit(now.saturating_sub(retention.audit_ms))?,
        sessions: store.prune_sessions(now.saturating_sub(retention.sessions_ms))?,
    })
}
