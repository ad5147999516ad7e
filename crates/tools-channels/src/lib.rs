//! The channels tools: broadcast messages to agent sessions.
//!
//! # What this crate owns
//!
//! - The tools `channel_publish`, `channel_list`, `channel_read`, `channel_acknowledge` and
//!   `channel_clear`, registered with the catalogue (linking this crate is what makes them
//!   exist).
//! - [`render_delivery`] and [`render_bounded`], the compact text the prompt and tool-call
//!   hooks inject for the messages the store delivers, and the delivery budget
//!   ([`DeliveryBudget`], `HOOKS_MCP_DELIVERY_BUDGET`) that bounds it: one event's broadcasts
//!   fill the budget by severity, newest first, and one summary line names what is left out
//!   ([`summary_line`]). The same budget bounds a channel resource's text
//!   ([`fit_channel_resource`]).
//! - Which channels reach a session: [`subscribed_channels`] (`HOOKS_MCP_CHANNELS`, the hooks'
//!   rule) and [`push_channels`] (those allowed to push into it, `HOOKS_MCP_PUSH_CHANNELS`).
//!
//! # What it must not depend on
//!
//! No MCP SDK, no async runtime, no SQL and no other tools crate: it speaks to persistence only
//! through the `store` crate's domain API.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use catalogue::{Annotations, CallContext, ToolError};
use store::rules::{
    TTL_DEFAULT_SECONDS, check_channel_name, check_message, check_ttl, ttl_out_of_range,
};
use store::{Message, MessageQuery, MessageScope, NewMessage, Severity, StoreHandle};

mod budget;
mod subscriptions;
#[cfg(test)]
mod tests;

pub use budget::{
    BYTES_PER_TOKEN, DEFAULT_BUDGET_TOKENS, DELIVERY_BUDGET_ENV, DeliveryBudget, EventBudget,
    MIN_BUDGET_TOKENS, SUMMARY_MAX_BYTES, estimate_tokens, fit_channel_resource, render_bounded,
    render_line, summary_line,
};
pub use subscriptions::{PUSH_CHANNELS_ENV, push_channels, subscribed_channels};

/// Environment variable of the hook command: the channels a session receives broadcasts from.
pub const SUBSCRIPTIONS_ENV: &str = "HOOKS_MCP_CHANNELS";

/// The settings of this category, for the generated configuration reference.
pub const SETTINGS: &[catalogue::Setting] = &[
    catalogue::Setting {
        env: SUBSCRIPTIONS_ENV,
        flag: "",
        default: "every channel",
        effect: "Hook command: comma-separated channels a session receives broadcasts from; \
                 `global` always arrives. Unset, blank, `all` or `*` mean every channel.",
    },
    catalogue::Setting {
        env: DELIVERY_BUDGET_ENV,
        flag: "",
        default: "2000",
        effect: "Hook command (and the daemon, for HTTP hooks and channel resources): the \
                 tokens of broadcasts one event injects, estimated as bytes / 4; at least \
                 200. Filled by severity, newest first; one summary line names what is left \
                 out (docs/hooks.md, \"The delivery budget\").",
    },
];

/// Most messages `channel_read` returns at once.
pub const READ_LIMIT_MAX: u32 = 200;
/// Messages `channel_read` returns when no limit is given.
pub const READ_LIMIT_DEFAULT: u32 = 20;

/// The hook text for delivered messages: one line each, e.g.
/// `[ALERT #12 deploys] db is down (ack: channel_acknowledge message_id=12)`. Messages that
/// repeat until acknowledged (alert, critical) say how to acknowledge; `info` ones are shown
/// once and do not. Empty for no messages.
pub fn render_delivery(messages: &[Message]) -> String {
    let lines: Vec<String> = messages.iter().map(render_line).collect();
    lines.join("\n")
}

fn invalid(field: &str, problem: impl std::fmt::Display) -> ToolError {
    ToolError::InvalidArguments(format!("{field}: {problem}"))
}

fn channel_arg(field: &str, name: &str) -> Result<(), ToolError> {
    check_channel_name(name).map_err(|e| invalid(field, e))
}

/// Severity as the tools accept it.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum SeverityArg {
    #[default]
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

// Arguments of `channel_publish`. Argument structs carry no doc comment of their own: it would
// become a schema description that every session pays for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PublishArgs {
    /// Letters, digits, `.`, `_`, `-` (max 64); `global` reaches every session.
    channel: String,
    /// Max 4096 bytes.
    message: String,
    /// info (default): shown once; alert: every prompt until acknowledged; critical: also
    /// before every tool call.
    severity: Option<SeverityArg>,
    /// Seconds, 1-2592000 (default 3600).
    #[serde(default, deserialize_with = "ttl_arg")]
    ttl_seconds: Option<i64>,
    /// Only this session id.
    to: Option<String>,
}

/// `ttl_seconds`, with numbers beyond `i64` told its range.
fn ttl_arg<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    store::rules::optional_integer(d, store::rules::ttl_out_of_range)
}

/// The longest session id a message can be addressed to.
pub const TARGET_MAX_BYTES: usize = catalogue::SESSION_ID_MAX_BYTES;

/// Checks a session id a message is addressed to (`channel_publish`'s `to`) by the rule of
/// every session id ([`catalogue::check_session_id`]); returns it trimmed.
///
/// # Errors
/// What is wrong with it, for the caller to name the field.
pub fn check_target(to: &str) -> Result<String, String> {
    if to.trim().is_empty() {
        return Err("is blank; give the session id of the one session the message is for".into());
    }
    catalogue::check_session_id(to).map(str::to_owned)
}

fn publish(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: PublishArgs = catalogue::parse_args(args)?;
    channel_arg("channel", &args.channel)?;
    check_message(&args.message).map_err(|e| invalid("message", e))?;
    let ttl = match args.ttl_seconds {
        None => TTL_DEFAULT_SECONDS,
        Some(s) => u64::try_from(s)
            .map_err(|_| ttl_out_of_range(&s.to_string()))
            .and_then(check_ttl)
            .map_err(|e| invalid("ttl_seconds", e))?,
    };
    let target = args
        .to
        .as_deref()
        .map(check_target)
        .transpose()
        .map_err(|e| invalid("to", e))?;
    let store = ctx.service::<StoreHandle>()?;
    let now = ctx.now_ms();
    // Opportunistic housekeeping: one indexed DELETE keeps expired messages from piling up.
    store.prune_expired(now)?;
    let message = store.publish(
        &NewMessage {
            channel: args.channel,
            body: args.message,
            severity: args.severity.unwrap_or_default().into(),
            created_at: now,
            expires_at: now + i64::from(ttl) * 1000,
            target,
        },
        &store::Actor::of_call(ctx, None),
    )?;
    let mut answer = json!({
        "id": message.id,
        "channel": message.channel,
        "severity": message.severity.as_str(),
        "expires_at": store::to_rfc3339(message.expires_at),
    });
    if let Some(to) = &message.target {
        answer["to"] = json!(to);
    }
    Ok(answer)
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "channel_publish",
        category: catalogue::Category::Channels,
        title: "Publish a broadcast",
        description: "Broadcast a message to agent sessions until it expires.",
        input_schema: catalogue::schema_of::<PublishArgs>,
        output_schema: None,
        annotations: Annotations::ADDITIVE,
        handler: publish,
    }
}

// Arguments of `channel_list` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {}

fn list(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let ListArgs {} = catalogue::parse_args(args)?;
    let store = ctx.service::<StoreHandle>()?;
    let channels = store.channels(ctx.now_ms())?;
    let total: u64 = channels.iter().map(|c| c.active).sum();
    let channels: Vec<Value> = channels
        .iter()
        .map(|c| {
            json!({
                "channel": c.channel,
                "active": c.active,
                "latest_at": store::to_rfc3339(c.latest_at),
            })
        })
        .collect();
    Ok(json!({ "channels": channels, "total_active": total }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "channel_list",
        category: catalogue::Category::Channels,
        title: "List channels",
        description: "List channels that have unexpired messages.",
        input_schema: catalogue::schema_of::<ListArgs>,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        handler: list,
    }
}

// Arguments of `channel_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// Only this channel (default: all).
    channel: Option<String>,
    /// Whose acknowledgements apply (default: this session if known, else none).
    session_id: Option<String>,
    /// Include messages that session acknowledged.
    #[serde(default)]
    include_acknowledged: bool,
    /// 1-200 (default 20).
    #[serde(default, deserialize_with = "limit_arg")]
    limit: Option<i64>,
}

/// What a `limit` outside 1..=[`READ_LIMIT_MAX`] is told, `got` being the value as written.
fn limit_out_of_range(got: &str) -> String {
    format!("must be 1 to {READ_LIMIT_MAX}, got {got}")
}

/// `limit`, with numbers beyond `i64` told its range.
fn limit_arg<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    store::rules::optional_integer(d, limit_out_of_range)
}

fn read(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let views = read_views(ctx, args)?;
    let messages: Vec<Value> = views.iter().map(budget::view_json).collect();
    Ok(json!({ "messages": messages }))
}

/// The messages `channel_read` answers with for `args`.
fn read_views(ctx: &CallContext<'_>, args: Value) -> Result<Vec<store::MessageView>, ToolError> {
    let args: ReadArgs = catalogue::parse_args(args)?;
    if let Some(channel) = &args.channel {
        channel_arg("channel", channel)?;
    }
    let limit = match args.limit {
        None => READ_LIMIT_DEFAULT,
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|n| (1..=READ_LIMIT_MAX).contains(n))
            .ok_or_else(|| invalid("limit", limit_out_of_range(&n.to_string())))?,
    };
    // Reading is useful without a session too: then nothing is marked or hidden as
    // acknowledged, rather than failing. An id given (not blank) must be valid, though: read
    // as no session, it would show what that session acknowledged as unacknowledged.
    let session_id = match args.session_id.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(explicit) => Some(ctx.session_id(Some(explicit))?),
        None => ctx.session_id(None).ok(),
    };
    let store = ctx.service::<StoreHandle>()?;
    let views = store.read_messages(&MessageQuery {
        channel: args.channel,
        session_id,
        include_acknowledged: args.include_acknowledged,
        limit,
        now: ctx.now_ms(),
        before: None,
    })?;
    Ok(views)
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "channel_read",
        category: catalogue::Category::Channels,
        title: "Read broadcasts",
        description: "Read unexpired messages, newest first.",
        input_schema: catalogue::schema_of::<ReadArgs>,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        handler: read,
    }
}

// Arguments of `channel_acknowledge`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AcknowledgeArgs {
    /// The message's id.
    message_id: i64,
    /// Acknowledging session (default: this session).
    session_id: Option<String>,
}

fn acknowledge(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: AcknowledgeArgs = catalogue::parse_args(args)?;
    let session_id = ctx.session_id(args.session_id.as_deref())?;
    let store = ctx.service::<StoreHandle>()?;
    let message = store
        .acknowledge(
            args.message_id,
            &session_id,
            ctx.now_ms(),
            &store::Actor::of_call(ctx, Some(&session_id)),
        )
        .map_err(|e| match e {
            store::StoreError::NotFound { .. } => ToolError::NotFound(format!(
                "message_id: no unexpired message has id {}; channel_read lists them",
                args.message_id
            )),
            other => other.into(),
        })?;
    Ok(json!({ "acknowledged": message.id, "session_id": session_id }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "channel_acknowledge",
        category: catalogue::Category::Channels,
        title: "Acknowledge a broadcast",
        description: "Stop delivering an alert or critical message to a session.",
        input_schema: catalogue::schema_of::<AcknowledgeArgs>,
        output_schema: None,
        // Acknowledging twice changes nothing more.
        annotations: Annotations { idempotent: true, ..Annotations::ADDITIVE },
        handler: acknowledge,
    }
}

// Arguments of `channel_clear`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ClearArgs {
    /// Delete every message of this channel.
    channel: Option<String>,
    /// Delete this message.
    message_id: Option<i64>,
}

fn clear(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: ClearArgs = catalogue::parse_args(args)?;
    let scope = match (args.channel, args.message_id) {
        (Some(channel), None) => {
            channel_arg("channel", &channel)?;
            MessageScope::Channel(channel)
        }
        (None, Some(id)) => MessageScope::Id(id),
        (Some(_), Some(_)) => {
            return Err(invalid(
                "channel",
                "cannot be combined with message_id; pass only one of them",
            ));
        }
        (None, None) => {
            return Err(invalid(
                "channel",
                "pass `channel` to clear a channel or `message_id` to delete one message \
                 (clearing every channel at once is not offered)",
            ));
        }
    };
    let store = ctx.service::<StoreHandle>()?;
    let removed = store.clear_messages(&scope, &store::Actor::of_call(ctx, None), ctx.now_ms())?;
    Ok(json!({ "removed": removed }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "channel_clear",
        category: catalogue::Category::Channels,
        title: "Delete broadcasts",
        description: "Delete one message, or every message of a channel. Pass exactly one of \
                      channel, message_id.",
        input_schema: catalogue::schema_of::<ClearArgs>,
        output_schema: None,
        annotations: Annotations::DESTRUCTIVE,
        handler: clear,
    }
}

/// The URI template of channel resources: `hooks://channels/{channel}`.
pub const CHANNEL_URI_TEMPLATE: &str = "hooks://channels/{channel}";
/// The fixed part of every channel resource URI.
pub const CHANNEL_URI_PREFIX: &str = "hooks://channels/";

/// The resource URI of channel `name` (channel names need no escaping).
pub fn channel_uri(name: &str) -> String {
    format!("{CHANNEL_URI_PREFIX}{name}")
}

/// The channels with unexpired messages, as resources.
fn list_channel_resources(
    ctx: &CallContext<'_>,
) -> Result<Vec<catalogue::ResourceEntry>, ToolError> {
    let store = ctx.service::<StoreHandle>()?;
    Ok(store
        .channels(ctx.now_ms())?
        .into_iter()
        .map(|c| catalogue::ResourceEntry {
            uri: channel_uri(&c.channel),
            description: Some(format!("{} unexpired message(s)", c.active)),
            name: c.channel,
        })
        .collect())
}

/// Reads a channel resource: what `channel_read` answers for that channel (the session's
/// acknowledgements applied when the session is known), as JSON text within the delivery
/// budget ([`fit_channel_resource`]): the [`DeliveryBudget`] in the call's extensions when the
/// server put one there, else [`DeliveryBudget::from_env`].
fn read_channel_resource(
    ctx: &CallContext<'_>,
    uri: &str,
    vars: &catalogue::UriVariables,
) -> Result<Vec<catalogue::ResourceContents>, ToolError> {
    let channel = vars.get("channel").unwrap_or_default();
    check_channel_name(channel).map_err(|e| {
        ToolError::InvalidArguments(format!(
            "`{uri}` names no valid channel ({e}); a channel resource URI looks like \
             {CHANNEL_URI_PREFIX}deploys"
        ))
    })?;
    let views = read_views(ctx, json!({ "channel": channel, "limit": READ_LIMIT_MAX }))?;
    let budget = match ctx.service::<DeliveryBudget>() {
        Ok(budget) => *budget,
        Err(_) => DeliveryBudget::from_env().0,
    };
    Ok(vec![catalogue::ResourceContents::text(
        uri,
        "application/json",
        fit_channel_resource(channel, &views, budget),
    )])
}

/// Channel names that start with `prefix`, most recently published first (the template's one
/// argument is `channel`; other arguments complete to nothing).
fn complete_channel(
    ctx: &CallContext<'_>,
    argument: &str,
    prefix: &str,
) -> Result<Vec<String>, ToolError> {
    if argument != "channel" {
        return Ok(Vec::new());
    }
    let store = ctx.service::<StoreHandle>()?;
    let mut channels = store.channels(ctx.now_ms())?;
    channels.retain(|c| c.channel.starts_with(prefix));
    channels.sort_by(|a, b| {
        b.latest_at
            .cmp(&a.latest_at)
            .then(a.channel.cmp(&b.channel))
    });
    Ok(channels.into_iter().map(|c| c.channel).collect())
}

catalogue::submit! {
    catalogue::ResourceRegistration {
        uri: CHANNEL_URI_TEMPLATE,
        name: "channel",
        title: "Channel messages",
        description: "A channel's unexpired messages, newest first (as channel_read returns \
                      them); subscribe to be told when they change.",
        mime_type: "application/json",
        list: Some(list_channel_resources),
        read: read_channel_resource,
        complete: Some(complete_channel),
    }
}
