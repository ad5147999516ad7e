//! When a schedule fires next: cron parsing and the plan [`store::ScheduleStore::fire_due`]
//! applies after each firing.

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use store::{Millis, NextFire, Schedule, Trigger};

/// Counting cron occurrences missed during downtime stops here (about 70 days of a
/// once-a-minute expression), so one firing never spends more than a fraction of a second
/// counting inside the store's write transaction; the recorded `skipped` then understates.
pub const SKIP_COUNT_CAP: u64 = 100_000;

/// Parses a 5-field cron expression (minute hour day-of-month month day-of-week, in UTC) and
/// returns it with its fields joined by single spaces, as it is stored.
///
/// # Errors
/// A message for the caller to prefix with the field name: wrong field count (seconds, years and
/// `@` nicknames are refused), or what croner found invalid.
pub(crate) fn parse_cron(expr: &str) -> Result<(String, Cron), String> {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    if fields.len() != 5 {
        let hint = match fields.len() {
            6 | 7 => " (seconds and years are not supported)",
            1 if expr.trim_start().starts_with('@') => " (`@` nicknames are not supported)",
            _ => "",
        };
        return Err(format!(
            "must have 5 fields (minute hour day-of-month month day-of-week, UTC), got {}{hint}; \
             e.g. `*/15 * * * *`",
            fields.len()
        ));
    }
    // croner reads `0,,5` as `0,5`: an empty list element is a typo to point out, not skip.
    const NAMES: [&str; 5] = ["minute", "hour", "day-of-month", "month", "day-of-week"];
    if let Some((name, field)) = NAMES
        .iter()
        .zip(&fields)
        .find(|(_, f)| f.split(',').any(str::is_empty))
    {
        return Err(format!(
            "the {name} field `{field}` has an empty list element (a comma too many); e.g. \
             `0,30` for two values"
        ));
    }
    let normalized = fields.join(" ");
    let cron = compile_cron(&normalized).map_err(|e| {
        format!("`{normalized}` is not a valid cron expression ({e}); e.g. `0 9 * * 1-5`")
    })?;
    Ok((normalized, cron))
}

/// A stored expression compiled as croner reads it, without [`parse_cron`]'s stricter checks
/// of new input (a schedule stored before a check was added keeps firing as it did).
fn compile_cron(normalized: &str) -> Result<Cron, croner::errors::CronError> {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(normalized)
}

/// The first occurrence of `cron` strictly after `after`, or `None` when there is none within
/// croner's search horizon (or the time is out of range).
pub(crate) fn cron_next(cron: &Cron, after: Millis) -> Option<Millis> {
    let start = DateTime::<Utc>::from_timestamp_millis(after)?;
    cron.find_next_occurrence(&start, false)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// What happens after `schedule` fires at `now` for its due occurrence (`next_fire_at`).
///
/// - `At`: completes (`next_fire_at: None`).
/// - `Every(s)`: the first occurrence strictly after `now` on the grid `next_fire_at + k*s`.
/// - `Cron`: the first occurrence strictly after `now`.
///
/// `skipped` counts the recurring occurrences after the fired one up to and including `now`:
/// after downtime a schedule fires once and records what it missed, never a burst. Cron counting
/// stops at [`SKIP_COUNT_CAP`]. A stored cron expression that no longer parses, or that has no
/// further occurrence, completes the schedule instead of failing every tick.
pub fn plan_next(schedule: &Schedule, now: Millis) -> NextFire {
    const DONE: NextFire = NextFire {
        next_fire_at: None,
        skipped: 0,
    };
    let fired = schedule.next_fire_at.unwrap_or(now);
    match &schedule.trigger {
        Trigger::At(_) => DONE,
        Trigger::Every(seconds) => {
            let period = i64::from(*seconds).saturating_mul(1000);
            if period <= 0 {
                return DONE;
            }
            // Occurrences fired + k*period for k = 1..=late are at or before `now`.
            let late = now.saturating_sub(fired).max(0) / period;
            let next = late
                .checked_add(1)
                .and_then(|k| k.checked_mul(period))
                .and_then(|d| fired.checked_add(d));
            NextFire {
                next_fire_at: next,
                skipped: u64::try_from(late).unwrap_or(0),
            }
        }
        Trigger::Cron(expr) => {
            let Ok(cron) = compile_cron(&expr.split_whitespace().collect::<Vec<_>>().join(" "))
            else {
                return DONE;
            };
            let mut skipped = 0;
            let mut cursor = fired;
            while skipped < SKIP_COUNT_CAP {
                match cron_next(&cron, cursor) {
                    Some(t) if t <= now => {
                        skipped += 1;
                        cursor = t;
                    }
                    _ => break,
                }
            }
            NextFire {
                next_fire_at: cron_next(&cron, now),
                skipped,
            }
        }
    }
}

/// Fires every due schedule of `store` at `now` with [`plan_next`]: what the daemon tick and the
/// hooks call; `actor` (the daemon, or the hook's session) is recorded with each firing.
///
/// # Errors
/// The store's error; nothing is fired then.
pub fn fire_due(
    store: &dyn store::Store,
    now: Millis,
    actor: &store::Actor,
) -> Result<Vec<store::Firing>, store::StoreError> {
    store.fire_due(now, &plan_next, actor)
}
