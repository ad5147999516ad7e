//! The scheduler tools: one-shot, interval and cron publications to channels.
//!
//! # What this crate owns
//!
//! - The tools `schedule_create`, `schedule_list` and `schedule_cancel`, registered with the
//!   catalogue.
//! - [`plan_next`]: when a schedule fires next after a firing, and how many occurrences downtime
//!   skipped (cron is evaluated here, in UTC, with croner).
//! - [`fire_due`]: the firing entry point the daemon tick and the hooks call.
//!
//! # What it must not depend on
//!
//! No MCP SDK, no async runtime, no other tools crate, no clock: handlers take the time from the
//! call context and the store does the persistence (exactly once per occurrence).

mod plan;
#[cfg(test)]
mod tests;

use catalogue::{Annotations, CallContext, Category, ToolError, ToolRegistration};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use store::rules::{self, TTL_DEFAULT_SECONDS};
use store::{Millis, NewSchedule, Schedule, Severity, StoreHandle, Trigger, to_rfc3339};

pub use plan::{SKIP_COUNT_CAP, fire_due, plan_next};

/// Shortest interval of an `every_seconds` schedule.
pub const EVERY_MIN_SECONDS: u64 = 60;
/// Longest interval of an `every_seconds` schedule (30 days).
pub const EVERY_MAX_SECONDS: u64 = 30 * 24 * 3600;
/// Longest schedule name.
pub const NAME_MAX: usize = 64;

/// Delivery severity, as the tools spell it.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum SeverityArg {
    Info,
    Alert,
    Critical,
}

impl From<SeverityArg> for Severity {
    fn from(s: SeverityArg) -> Self {
        match s {
            SeverityArg::Info => Severity::Info,
            SeverityArg::Alert => Severity::Alert,
            SeverityArg::Critical => Severity::Critical,
        }
    }
}

// Arguments of `schedule_create`. Argument structs carry no doc comment of their own: it would
// become a schema description that every session pays for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    /// Target channel.
    channel: String,
    /// Max 4096 bytes.
    message: String,
    /// Default info.
    severity: Option<SeverityArg>,
    /// Message lifetime, 1-2592000 (default 3600).
    #[serde(default, deserialize_with = "ttl_arg")]
    ttl_seconds: Option<i64>,
    /// Fire once, at this RFC 3339 time.
    at: Option<String>,
    /// Interval, 60-2592000.
    #[serde(default, deserialize_with = "every_arg")]
    every_seconds: Option<i64>,
    /// 5-field cron, UTC.
    cron: Option<String>,
    /// Optional label.
    name: Option<String>,
}

/// `ttl_seconds`, with numbers beyond `i64` told its range.
fn ttl_arg<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    rules::optional_integer(d, rules::ttl_out_of_range)
}

/// What an interval outside [`EVERY_MIN_SECONDS`]..=[`EVERY_MAX_SECONDS`] is told, `got` being
/// the value as written.
fn every_out_of_range(got: &str) -> String {
    format!("must be between {EVERY_MIN_SECONDS} and {EVERY_MAX_SECONDS} (30 days), got {got}")
}

/// `every_seconds`, with numbers beyond `i64` told its range.
fn every_arg<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    rules::optional_integer(d, every_out_of_range)
}

// Arguments of `schedule_list` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {}

// Arguments of `schedule_cancel`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CancelArgs {
    /// Id from schedule_create or schedule_list.
    schedule_id: i64,
}

catalogue::submit! {
    ToolRegistration {
        name: "schedule_create",
        category: Category::Scheduler,
        title: "Schedule a publication",
        description: "Publish a message to a channel later. Pass exactly one trigger: at, \
                      every_seconds or cron. After downtime it fires once, never a burst.",
        input_schema: catalogue::schema_of::<CreateArgs>,
        output_schema: None,
        annotations: Annotations::ADDITIVE,
        handler: schedule_create,
    }
}

catalogue::submit! {
    ToolRegistration {
        name: "schedule_list",
        category: Category::Scheduler,
        title: "List schedules",
        description: "List every schedule with its trigger, next firing and status.",
        input_schema: catalogue::schema_of::<ListArgs>,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        handler: schedule_list,
    }
}

catalogue::submit! {
    ToolRegistration {
        name: "schedule_cancel",
        category: Category::Scheduler,
        title: "Cancel a schedule",
        description: "Cancel an active schedule; it never fires again.",
        input_schema: catalogue::schema_of::<CancelArgs>,
        output_schema: None,
        annotations: Annotations::DESTRUCTIVE,
        handler: schedule_cancel,
    }
}

fn invalid(field: &str, problem: impl std::fmt::Display) -> ToolError {
    ToolError::InvalidArguments(format!("{field}: {problem}"))
}

/// Checks a schedule name against `^[A-Za-z0-9._-]{1,64}$`.
fn check_name(name: &str) -> Result<(), ToolError> {
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-".contains(*c)))
    {
        return Err(invalid(
            "name",
            format!(
                "may contain only letters, digits, `.`, `_` and `-` (found {bad:?}); \
                 e.g. `nightly-report`"
            ),
        ));
    }
    if name.is_empty() || name.len() > NAME_MAX {
        return Err(invalid(
            "name",
            format!(
                "must be 1 to {NAME_MAX} characters long (got {})",
                name.chars().count()
            ),
        ));
    }
    Ok(())
}

/// The trigger the arguments select and its first firing time.
fn trigger_of(args: &CreateArgs, now: Millis) -> Result<(Trigger, Millis), ToolError> {
    let given: Vec<&str> = [
        ("at", args.at.is_some()),
        ("every_seconds", args.every_seconds.is_some()),
        ("cron", args.cron.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, present)| present.then_some(field))
    .collect();
    if given.len() != 1 {
        let got = if given.is_empty() {
            "none".to_owned()
        } else {
            given.join(" and ")
        };
        return Err(ToolError::InvalidArguments(format!(
            "at, every_seconds, cron: pass exactly one trigger (got {got}); e.g. \
             `\"every_seconds\": 3600` or `\"cron\": \"0 9 * * 1-5\"`"
        )));
    }
    if let Some(text) = &args.at {
        let at = rules::from_rfc3339(text).map_err(|e| invalid("at", e))?;
        if at <= now {
            return Err(invalid(
                "at",
                format!(
                    "{} is not in the future (now is {}); pass a later time",
                    to_rfc3339(at),
                    to_rfc3339(now)
                ),
            ));
        }
        return Ok((Trigger::At(at), at));
    }
    if let Some(seconds) = args.every_seconds {
        let valid = u32::try_from(seconds)
            .ok()
            .filter(|s| (EVERY_MIN_SECONDS..=EVERY_MAX_SECONDS).contains(&u64::from(*s)));
        let Some(seconds) = valid else {
            return Err(invalid(
                "every_seconds",
                every_out_of_range(&seconds.to_string()),
            ));
        };
        let first = now.saturating_add(i64::from(seconds) * 1000);
        return Ok((Trigger::Every(seconds), first));
    }
    let expr = args.cron.as_deref().unwrap_or_default();
    let (normalized, cron) = plan::parse_cron(expr).map_err(|e| invalid("cron", e))?;
    let first = plan::cron_next(&cron, now).ok_or_else(|| {
        invalid(
            "cron",
            format!("`{normalized}` never matches a future time; check the day and month"),
        )
    })?;
    Ok((Trigger::Cron(normalized), first))
}

/// The trigger as a JSON object spelled like the `schedule_create` arguments.
fn trigger_json(trigger: &Trigger) -> Value {
    match trigger {
        Trigger::At(at) => json!({ "at": to_rfc3339(*at) }),
        Trigger::Every(seconds) => json!({ "every_seconds": seconds }),
        Trigger::Cron(expr) => json!({ "cron": expr }),
    }
}

/// A schedule as `schedule_list` and `schedule_cancel` show it.
fn summary(s: &Schedule) -> Value {
    json!({
        "id": s.id,
        "name": s.name,
        "channel": s.channel,
        "trigger": trigger_json(&s.trigger),
        "next_fire_at": s.next_fire_at.map(to_rfc3339),
        "last_fired_at": s.last_fired_at.map(to_rfc3339),
        "fire_count": s.fire_count,
        "skipped_count": s.skipped_count,
        "status": s.status.as_str(),
    })
}

fn schedule_create(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: CreateArgs = catalogue::parse_args(args)?;
    rules::check_channel_name(&args.channel).map_err(|e| invalid("channel", e))?;
    rules::check_message(&args.message).map_err(|e| invalid("message", e))?;
    let ttl_seconds = match args.ttl_seconds {
        None => TTL_DEFAULT_SECONDS,
        Some(s) => u64::try_from(s)
            .map_err(|_| rules::ttl_out_of_range(&s.to_string()))
            .and_then(rules::check_ttl)
            .map_err(|e| invalid("ttl_seconds", e))?,
    };
    if let Some(name) = &args.name {
        check_name(name)?;
    }
    let now = ctx.now_ms();
    let (trigger, next_fire_at) = trigger_of(&args, now)?;
    let store = ctx.service::<StoreHandle>()?;
    let schedule = store.create_schedule(
        &NewSchedule {
            name: args.name,
            channel: args.channel,
            message: args.message,
            severity: args.severity.map_or(Severity::Info, Severity::from),
            ttl_seconds,
            trigger,
            next_fire_at,
            created_at: now,
        },
        &store::Actor::of_call(ctx, None),
    )?;
    Ok(json!({
        "id": schedule.id,
        "next_fire_at": to_rfc3339(next_fire_at),
        "trigger": trigger_json(&schedule.trigger),
    }))
}

fn schedule_list(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let ListArgs {} = catalogue::parse_args(args)?;
    let store = ctx.service::<StoreHandle>()?;
    let schedules: Vec<Value> = store.schedules()?.iter().map(summary).collect();
    Ok(json!({ "schedules": schedules }))
}

fn schedule_cancel(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: CancelArgs = catalogue::parse_args(args)?;
    let store = ctx.service::<StoreHandle>()?;
    let schedule = store.cancel_schedule(
        args.schedule_id,
        ctx.now_ms(),
        &store::Actor::of_call(ctx, None),
    )?;
    Ok(summary(&schedule))
}
