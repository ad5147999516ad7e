//! The enforcement tools: recurring reminders re-injected into each agent session every N tool
//! calls.
//!
//! # What this crate owns
//!
//! - The tools `enforcement_set`, `enforcement_list` and `enforcement_clear`, registered with the
//!   catalogue (linking this crate is what makes them exist).
//! - [`due_reminders`], which the tool-call hook uses to count a session's call and pick the
//!   reminders due on it.
//!
//! # What it must not depend on
//!
//! No MCP SDK, no async runtime, no SQL and no other tools crate: it speaks to persistence only
//! through the `store` crate's domain API.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use catalogue::{CallContext, ToolError};
use store::{NewReminder, Reminder, ReminderScope, StoreError, StoreHandle};

#[cfg(test)]
mod tests;

/// Smallest cadence, in tool calls.
pub const CADENCE_MIN: u32 = 1;
/// Largest cadence, in tool calls.
pub const CADENCE_MAX: u32 = 10_000;
/// Longest tag.
pub const TAG_MAX: usize = 64;

/// Counts one tool call of the sighting's session (recording the sighting in the same
/// transaction) and returns its number (1 for the session's first call) with the reminders due
/// on it: a reminder of cadence N is due on calls N, 2N, 3N... `call_id`, the client's id of
/// the tool call, makes a second report of the same call count nothing: it returns the count
/// as it stands and no reminder (they were due on the first report).
///
/// # Errors
/// The store's error when counting or reading fails.
pub fn due_reminders(
    store: &dyn store::Store,
    sighting: &store::Sighting,
    call_id: Option<&str>,
) -> Result<(store::CallCount, Vec<Reminder>), StoreError> {
    let count = store.count_sighted_call(sighting, call_id)?;
    if !count.first_report {
        return Ok((count, Vec::new()));
    }
    let due = store
        .reminders()?
        .into_iter()
        .filter(|r| r.is_due_on(count.calls))
        .collect();
    Ok((count, due))
}

/// Checks a tag against `^[A-Za-z0-9._-]{1,64}$`.
fn check_tag(tag: &str) -> Result<(), ToolError> {
    let len = tag.chars().count();
    if len == 0 || len > TAG_MAX {
        return Err(ToolError::InvalidArguments(format!(
            "tag: must be 1 to {TAG_MAX} characters long (got {len})"
        )));
    }
    if let Some(bad) = tag
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "._-".contains(*c)))
    {
        return Err(ToolError::InvalidArguments(format!(
            "tag: may contain only letters, digits, `.`, `_` and `-` (found {bad:?}); e.g. `tests`"
        )));
    }
    Ok(())
}

fn reminder_json(r: &Reminder) -> Value {
    json!({
        "id": r.id,
        "message": r.message,
        "cadence": r.cadence,
        "tag": r.tag,
        "created_at": store::to_rfc3339(r.created_at),
    })
}

// Arguments of `enforcement_set`.
// Argument structs carry no doc comment: schemars would turn it into a schema description
// that every session pays for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SetArgs {
    /// Reminder text (max 4096 bytes).
    message: String,
    /// N, in tool calls (1-10000).
    #[serde(deserialize_with = "cadence_arg")]
    cadence: i64,
    /// Label to clear a group by: letters, digits, `._-` (max 64).
    tag: Option<String>,
}

/// What a cadence outside [`CADENCE_MIN`]..=[`CADENCE_MAX`] is told, `got` being the value as
/// written.
fn cadence_out_of_range(got: &str) -> String {
    format!("must be between {CADENCE_MIN} and {CADENCE_MAX} tool calls, got {got}")
}

/// `cadence`, with numbers beyond `i64` told its range.
fn cadence_arg<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    store::rules::integer(d, cadence_out_of_range)
}

fn set(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: SetArgs = catalogue::parse_args(args)?;
    store::rules::check_message(&args.message)
        .map_err(|e| ToolError::InvalidArguments(format!("message: {e}")))?;
    let cadence = u32::try_from(args.cadence)
        .ok()
        .filter(|c| (CADENCE_MIN..=CADENCE_MAX).contains(c))
        .ok_or_else(|| {
            ToolError::InvalidArguments(format!(
                "cadence: {}",
                cadence_out_of_range(&args.cadence.to_string())
            ))
        })?;
    if let Some(tag) = &args.tag {
        check_tag(tag)?;
    }
    let store = ctx.service::<StoreHandle>()?;
    let reminder = store.add_reminder(
        &NewReminder {
            message: args.message,
            cadence,
            tag: args.tag,
            created_at: ctx.now_ms(),
        },
        &store::Actor::of_call(ctx, None),
    )?;
    Ok(json!({ "id": reminder.id, "cadence": reminder.cadence, "tag": reminder.tag }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "enforcement_set",
        category: catalogue::Category::Enforcement,
        title: "Add a recurring reminder",
        description: "Add a reminder shown to each agent session on every Nth tool call it \
                      makes.",
        input_schema: catalogue::schema_of::<SetArgs>,
        output_schema: None,
        annotations: catalogue::Annotations::ADDITIVE,
        handler: set,
    }
}

// Arguments of `enforcement_list` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {}

fn list(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let ListArgs {} = catalogue::parse_args(args)?;
    let store = ctx.service::<StoreHandle>()?;
    let reminders: Vec<Value> = store.reminders()?.iter().map(reminder_json).collect();
    Ok(json!({ "reminders": reminders }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "enforcement_list",
        category: catalogue::Category::Enforcement,
        title: "List recurring reminders",
        description: "List the recurring reminders with their ids, cadences and tags.",
        input_schema: catalogue::schema_of::<ListArgs>,
        output_schema: None,
        annotations: catalogue::Annotations::READ_ONLY,
        handler: list,
    }
}

// Arguments of `enforcement_clear`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ClearArgs {
    /// Remove the reminder with this id.
    enforcement_id: Option<i64>,
    /// Remove every reminder with this tag.
    tag: Option<String>,
}

fn clear(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: ClearArgs = catalogue::parse_args(args)?;
    let scope = match (args.enforcement_id, args.tag) {
        (Some(_), Some(_)) => {
            return Err(ToolError::InvalidArguments(
                "enforcement_id, tag: pass only one of them (an id removes one reminder, a tag \
                 its whole group)"
                    .into(),
            ));
        }
        (None, None) => {
            return Err(ToolError::InvalidArguments(
                "enforcement_id, tag: pass one of them; clearing every reminder at once is not \
                 offered (enforcement_list shows the ids and tags)"
                    .into(),
            ));
        }
        (Some(id), None) => ReminderScope::Id(id),
        (None, Some(tag)) => {
            check_tag(&tag)?;
            ReminderScope::Tag(tag)
        }
    };
    let store = ctx.service::<StoreHandle>()?;
    let removed = store.clear_reminders(&scope, &store::Actor::of_call(ctx, None), ctx.now_ms())?;
    if let (ReminderScope::Id(id), 0) = (&scope, removed) {
        return Err(ToolError::NotFound(format!(
            "enforcement_id: no reminder has id {id}; enforcement_list shows the ids"
        )));
    }
    Ok(json!({ "removed": removed }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "enforcement_clear",
        category: catalogue::Category::Enforcement,
        title: "Remove recurring reminders",
        description: "Remove one reminder by enforcement_id, or every reminder with a tag.",
        input_schema: catalogue::schema_of::<ClearArgs>,
        output_schema: None,
        annotations: catalogue::Annotations::DESTRUCTIVE,
        handler: clear,
    }
}
