//! The conditions tools: operator scripts run on matching tool calls.
//!
//! # What this crate owns
//!
//! - The tools `condition_set`, `condition_list`, `condition_show` and `condition_clear`,
//!   registered with the catalogue (linking this crate is what makes them exist).
//! - The matcher grammar ([`Matcher`]) and [`matching_conditions`], which the tool-call hooks
//!   use to find the conditions to run.
//! - The gate ([`GateSetting`], [`arm_gate_for_prompt`]): changing a condition installs code
//!   that runs on every matching call, so it needs the operator's own request.
//!
//! # What it must not depend on
//!
//! No MCP SDK, no async runtime, no SQL and no other tools crate: it speaks to persistence only
//! through the `store` crate's domain API. It never runs scripts; the hooks do.

mod gate;
mod matcher;

#[cfg(test)]
mod matcher_tests;
#[cfg(test)]
mod tests;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use catalogue::{CallContext, ToolError};
use store::{
    Condition, PutMode, PutOutcome, ScriptLanguage, Step, StoreError, StoreHandle, to_rfc3339,
};

pub use gate::{
    GATE_ENV, GATE_WINDOW_MS, GateSetting, SCRIPT_TIMEOUT_ENV, SETTINGS, arm_gate_for_prompt,
    gate_setting_from_env, prompt_requests_condition_change,
};
pub use matcher::{MatchTerm, Matcher};

/// Longest condition name.
pub const NAME_MAX: usize = 64;
/// Longest matcher, in bytes: room for dozens of alternatives, and a bound on what every
/// tool-call hook parses.
pub const MATCHER_MAX_BYTES: usize = 1024;
/// Largest script, in bytes (64 KiB).
pub const SCRIPT_MAX_BYTES: usize = 64 * 1024;

/// The conditions of `step` whose matcher matches a call of `tool_name` with `tool_input`, by
/// name. A stored matcher that no longer parses matches nothing (the tools store only valid
/// ones).
///
/// # Errors
/// The store's error when reading fails.
pub fn matching_conditions(
    store: &dyn store::Store,
    step: Step,
    tool_name: &str,
    tool_input: &Value,
) -> Result<Vec<Condition>, StoreError> {
    Ok(store
        .conditions()?
        .into_iter()
        .filter(|c| {
            c.step == step
                && Matcher::parse(&c.matcher).is_ok_and(|m| m.matches(tool_name, tool_input))
        })
        .collect())
}

/// Checks a condition name against `^[A-Za-z0-9_]{1,64}$`.
fn check_name(name: &str) -> Result<(), ToolError> {
    let len = name.chars().count();
    if len == 0 || len > NAME_MAX {
        return Err(ToolError::InvalidArguments(format!(
            "name: must be 1 to {NAME_MAX} characters long (got {len})"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        return Err(ToolError::InvalidArguments(format!(
            "name: may contain only letters, digits and `_` (found {bad:?}); e.g. `no_force_push`"
        )));
    }
    Ok(())
}

fn check_script(script: &str) -> Result<(), ToolError> {
    if script.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "script: must not be empty".into(),
        ));
    }
    if script.len() > SCRIPT_MAX_BYTES {
        return Err(ToolError::InvalidArguments(format!(
            "script: is {} bytes; the limit is {SCRIPT_MAX_BYTES} (64 KiB): keep the logic in a \
             file and make the script call it",
            script.len()
        )));
    }
    if let Some(at) = script.find('\0') {
        // A program's arguments cannot hold one: the script could never start, and a guard
        // would silently guard nothing.
        return Err(ToolError::InvalidArguments(format!(
            "script: holds a NUL character (at byte {at}), which no interpreter can be given; \
             remove it"
        )));
    }
    Ok(())
}

/// Refuses unless the gate is off in configuration or open for `session_id` now.
fn check_gate(
    ctx: &CallContext<'_>,
    store: &StoreHandle,
    session_id: &str,
) -> Result<(), ToolError> {
    let enforced = ctx.service::<GateSetting>().map_or(true, |g| g.enforced);
    if !enforced || store.gate_open_until(session_id, ctx.now_ms())?.is_some() {
        return Ok(());
    }
    Err(ToolError::Refused(format!(
        "changing conditions is gated and the gate is closed for session `{session_id}`: the \
         operator must ask for it in their own prompt (the prompt hook then opens the gate for \
         this session for {} minutes), or set {GATE_ENV}=off",
        GATE_WINDOW_MS / 60_000
    )))
}

fn not_found(name: &str) -> ToolError {
    ToolError::NotFound(format!(
        "name: no condition is named `{name}`; condition_list shows the names"
    ))
}

/// `step` as the tools accept it.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum StepArg {
    Pre,
    Post,
}

impl From<StepArg> for Step {
    fn from(s: StepArg) -> Step {
        match s {
            StepArg::Pre => Step::Pre,
            StepArg::Post => Step::Post,
        }
    }
}

/// `language` as the tools accept it.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum LanguageArg {
    #[default]
    Bash,
    Python,
}

impl From<LanguageArg> for ScriptLanguage {
    fn from(l: LanguageArg) -> ScriptLanguage {
        match l {
            LanguageArg::Bash => ScriptLanguage::Bash,
            LanguageArg::Python => ScriptLanguage::Python,
        }
    }
}

// Arguments of `condition_set`.
// Argument structs carry no doc comment: schemars would turn it into a schema description
// that every session pays for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SetArgs {
    /// `pre`: before the call; `post`: after it.
    step: StepArg,
    /// Which calls it runs on, e.g. `edit+write` or `bash.git`.
    matcher: String,
    /// Unique name: letters, digits, `_` (max 64).
    name: String,
    /// Script text (max 64 KiB).
    script: String,
    /// Acting session id; defaults to this session.
    session_id: Option<String>,
    /// Interpreter.
    #[serde(default)]
    language: LanguageArg,
    /// Run detached, not waiting for it.
    #[serde(default)]
    run_async: bool,
    /// Overwrite a condition of the same name.
    #[serde(default)]
    replace: bool,
}

fn set(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: SetArgs = catalogue::parse_args(args)?;
    check_name(&args.name)?;
    if args.matcher.len() > MATCHER_MAX_BYTES {
        return Err(ToolError::InvalidArguments(format!(
            "matcher: is {} bytes; the limit is {MATCHER_MAX_BYTES}: join fewer alternatives \
             (`any` or `mcp__<server>` cover many tools at once)",
            args.matcher.len()
        )));
    }
    let matcher = Matcher::parse(&args.matcher)
        .map_err(|e| ToolError::InvalidArguments(format!("matcher: {e}")))?;
    check_script(&args.script)?;
    let session_id = ctx.session_id(args.session_id.as_deref())?;
    let store = ctx.service::<StoreHandle>()?;
    check_gate(ctx, store, &session_id)?;
    let now = ctx.now_ms();
    let condition = Condition {
        name: args.name,
        step: args.step.into(),
        matcher: matcher.to_string(),
        script: args.script,
        language: args.language.into(),
        run_async: args.run_async,
        session_id,
        created_at: now,
        updated_at: now,
    };
    let mode = if args.replace {
        PutMode::Replace
    } else {
        PutMode::CreateOnly
    };
    let actor = store::Actor::of_call(ctx, Some(&condition.session_id));
    let outcome = store.put_condition(&condition, mode, &actor)?;
    Ok(json!({
        "name": condition.name,
        "status": match outcome { PutOutcome::Created => "created", PutOutcome::Replaced => "replaced" },
        "step": condition.step.as_str(),
        "matcher": condition.matcher,
    }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "condition_set",
        category: catalogue::Category::Conditions,
        title: "Install a condition script",
        description: "Install a script run on matching tool calls; allowed only after the \
                      operator asks for it in their own prompt. matcher: `any`, a tool name, \
                      `mcp`, `mcp__<server>[__<tool>]` or `bash.<cli>`; join with `+`. The \
                      script gets the hook payload on stdin; exit 2 denies, stderr the reason.",
        input_schema: catalogue::schema_of::<SetArgs>,
        output_schema: None,
        // It may overwrite (replace=true), and repeating a create fails.
        annotations: catalogue::Annotations { read_only: false, destructive: true, idempotent: false },
        handler: set,
    }
}

// Arguments of `condition_list` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {}

fn list(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let ListArgs {} = catalogue::parse_args(args)?;
    let store = ctx.service::<StoreHandle>()?;
    let conditions: Vec<Value> = store
        .conditions()?
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "step": c.step.as_str(),
                "matcher": c.matcher,
                "language": c.language.as_str(),
                "run_async": c.run_async,
                "session_id": c.session_id,
            })
        })
        .collect();
    Ok(json!({ "conditions": conditions }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "condition_list",
        category: catalogue::Category::Conditions,
        title: "List conditions",
        description: "List the conditions without their scripts (condition_show has them).",
        input_schema: catalogue::schema_of::<ListArgs>,
        output_schema: None,
        annotations: catalogue::Annotations::READ_ONLY,
        handler: list,
    }
}

// Arguments of `condition_show`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShowArgs {
    /// The condition's name.
    name: String,
}

fn show(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: ShowArgs = catalogue::parse_args(args)?;
    check_name(&args.name)?;
    let store = ctx.service::<StoreHandle>()?;
    let c = store
        .condition(&args.name)?
        .ok_or_else(|| not_found(&args.name))?;
    Ok(json!({
        "name": c.name,
        "step": c.step.as_str(),
        "matcher": c.matcher,
        "language": c.language.as_str(),
        "run_async": c.run_async,
        "session_id": c.session_id,
        "script": c.script,
        "created_at": to_rfc3339(c.created_at),
        "updated_at": to_rfc3339(c.updated_at),
    }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "condition_show",
        category: catalogue::Category::Conditions,
        title: "Show a condition",
        description: "Show one condition in full, with its script.",
        input_schema: catalogue::schema_of::<ShowArgs>,
        output_schema: None,
        annotations: catalogue::Annotations::READ_ONLY,
        handler: show,
    }
}

// Arguments of `condition_clear`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ClearArgs {
    /// The condition's name.
    name: String,
    /// Acting session id; defaults to this session.
    session_id: Option<String>,
}

fn clear(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: ClearArgs = catalogue::parse_args(args)?;
    check_name(&args.name)?;
    let session_id = ctx.session_id(args.session_id.as_deref())?;
    let store = ctx.service::<StoreHandle>()?;
    check_gate(ctx, store, &session_id)?;
    let actor = store::Actor::of_call(ctx, Some(&session_id));
    if !store.delete_condition(&args.name, &actor, ctx.now_ms())? {
        return Err(not_found(&args.name));
    }
    Ok(json!({ "removed": args.name }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "condition_clear",
        category: catalogue::Category::Conditions,
        title: "Remove a condition",
        description: "Remove a condition by name. Gated like condition_set.",
        input_schema: catalogue::schema_of::<ClearArgs>,
        output_schema: None,
        annotations: catalogue::Annotations::DESTRUCTIVE,
        handler: clear,
    }
}
