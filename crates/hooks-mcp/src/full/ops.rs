//! The operator subcommands: `channel`, `enforcement`, `condition` and `schedule`.
//!
//! Each one is a tool call: the arguments become the tool's JSON arguments (only those given)
//! and go through `catalogue::call` with the same services a server provides, so the CLI and
//! the tools share one code path and one validation. The answer is printed for people, or as
//! the tool's JSON with `--json`.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Map, Value};

use catalogue::{CallContext, SessionPolicy};

use hook_dispatch::open;

/// Environment variables naming the acting session when `--session-id` is not given.
const SESSION_ENV: [&str; 2] = ["HOOKS_MCP_SESSION_ID", "CLAUDE_CODE_SESSION_ID"];

/// Options every operator subcommand takes.
#[derive(Debug, Args)]
pub(crate) struct Common {
    /// Print the tool's JSON answer instead of text.
    #[arg(long, global = true)]
    json: bool,
}

/// `hooks-mcp channel|enforcement|condition|schedule ...`: the subcommand `C` and the options
/// every one takes.
#[derive(Debug, Args)]
pub(crate) struct Group<C: Subcommand> {
    #[command(subcommand)]
    command: C,
    #[command(flatten)]
    common: Common,
}

/// `hooks-mcp channel ...`
pub(crate) type ChannelArgs = Group<ChannelCmd>;
/// `hooks-mcp enforcement ...`
pub(crate) type EnforcementArgs = Group<EnforcementCmd>;
/// `hooks-mcp condition ...`
pub(crate) type ConditionArgs = Group<ConditionCmd>;
/// `hooks-mcp schedule ...`
pub(crate) type ScheduleArgs = Group<ScheduleCmd>;

/// The `channel` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ChannelCmd {
    /// Publish a broadcast (channel_publish).
    Publish {
        /// Channel: letters, digits, `.`, `_`, `-`; `global` reaches every session.
        channel: String,
        /// The message text.
        message: String,
        /// info (shown once), alert (every prompt until acknowledged) or critical (also before
        /// every tool call).
        #[arg(long)]
        severity: Option<String>,
        /// Lifetime in seconds (default 3600).
        #[arg(long)]
        ttl_seconds: Option<i64>,
        /// Deliver it to this one session only (its id), whatever its subscriptions.
        #[arg(long)]
        to: Option<String>,
    },
    /// List channels with unexpired messages (channel_list).
    List,
    /// Read unexpired messages, newest first (channel_read).
    Read {
        /// Only this channel.
        #[arg(long)]
        channel: Option<String>,
        /// Whose acknowledgements apply.
        #[arg(long)]
        session_id: Option<String>,
        /// Include messages that session acknowledged.
        #[arg(long)]
        include_acknowledged: bool,
        /// At most this many (1-200, default 20).
        #[arg(long)]
        limit: Option<i64>,
    },
    /// Stop delivering an alert or critical message to a session (channel_acknowledge).
    Ack {
        /// The message's id.
        message_id: i64,
        /// The acknowledging session (default: HOOKS_MCP_SESSION_ID).
        #[arg(long)]
        session_id: Option<String>,
    },
    /// Who received a message: deliveries and acknowledgements against the live sessions
    /// subscribed to its channel.
    Status {
        /// The message's id.
        message_id: i64,
    },
    /// Delete one message or every message of a channel (channel_clear).
    #[command(group(clap::ArgGroup::new("which").required(true).args(["channel", "message_id"])))]
    Clear {
        /// Delete every message of this channel.
        #[arg(long)]
        channel: Option<String>,
        /// Delete this message.
        #[arg(long = "id")]
        message_id: Option<i64>,
    },
}

/// The `enforcement` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum EnforcementCmd {
    /// Add a reminder shown to each session every N tool calls (enforcement_set).
    Set {
        /// The reminder text.
        message: String,
        /// N, in tool calls (1-10000).
        #[arg(long)]
        cadence: i64,
        /// A label to clear a group by.
        #[arg(long)]
        tag: Option<String>,
    },
    /// List the reminders (enforcement_list).
    List,
    /// Remove one reminder or a tagged group (enforcement_clear).
    #[command(group(clap::ArgGroup::new("which").required(true).args(["enforcement_id", "tag"])))]
    Clear {
        /// Remove the reminder with this id.
        #[arg(long = "id")]
        enforcement_id: Option<i64>,
        /// Remove every reminder with this tag.
        #[arg(long)]
        tag: Option<String>,
    },
}

/// The `condition` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ConditionCmd {
    /// List the conditions (condition_list).
    List,
    /// Show one condition with its script (condition_show).
    Show {
        /// The condition's name.
        name: String,
    },
    /// Remove a condition (condition_clear; gated like the tool).
    Clear {
        /// The condition's name.
        name: String,
        /// The acting session (default: HOOKS_MCP_SESSION_ID).
        #[arg(long)]
        session_id: Option<String>,
    },
}

/// The `schedule` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ScheduleCmd {
    /// Schedule a publication (schedule_create); pass exactly one of --at, --every-seconds,
    /// --cron.
    #[command(group(clap::ArgGroup::new("when").required(true).args(["at", "every_seconds", "cron"])))]
    Create {
        /// Target channel.
        channel: String,
        /// The message text.
        message: String,
        /// Fire once, at this RFC 3339 time.
        #[arg(long)]
        at: Option<String>,
        /// Fire every this many seconds (60-2592000).
        #[arg(long)]
        every_seconds: Option<i64>,
        /// Fire on this 5-field cron expression, in UTC.
        #[arg(long)]
        cron: Option<String>,
        /// Severity of each publication (default info).
        #[arg(long)]
        severity: Option<String>,
        /// Lifetime of each publication in seconds (default 3600).
        #[arg(long)]
        ttl_seconds: Option<i64>,
        /// A label.
        #[arg(long)]
        name: Option<String>,
    },
    /// List the schedules (schedule_list).
    List,
    /// Cancel an active schedule (schedule_cancel).
    Cancel {
        /// The schedule's id.
        schedule_id: i64,
    },
}

/// Matches a subcommand to its tool and the tool's arguments: each option listed, under its
/// field's name (the tool's parameter; the pattern must list every field, so none is
/// forgotten). Arms after `;` run instead of a tool call.
macro_rules! tool_call {
    ($cmd:expr, $enum:ident: $($variant:ident { $($field:ident),* } => $tool:literal),+
        $(; $($other:pat => $done:expr),+)?) => {
        match $cmd {
            $($enum::$variant { $($field),* } => ($tool, given(vec![
                $((stringify!($field), serde_json::to_value($field).unwrap_or(Value::Null))),*
            ])),)+
            $($($other => $done,)+)?
        }
    };
}

/// The options given: those left out (`None`) and the flags left off (`false`) are no
/// arguments of the tool.
fn given(options: Vec<(&str, Value)>) -> Map<String, Value> {
    options
        .into_iter()
        .filter(|(_, v)| !matches!(v, Value::Null | Value::Bool(false)))
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// Runs `hooks-mcp channel ...`.
pub(crate) fn channel(args: ChannelArgs) -> ExitCode {
    let (tool, call) = tool_call!(args.command, ChannelCmd:
        Publish { channel, message, severity, ttl_seconds, to } => "channel_publish",
        List {} => "channel_list",
        Read { channel, session_id, include_acknowledged, limit } => "channel_read",
        Ack { message_id, session_id } => "channel_acknowledge",
        Clear { channel, message_id } => "channel_clear";
        ChannelCmd::Status { message_id } => {
            return crate::fleet::channel_status(message_id, args.common.json);
        }
    );
    execute(tool, call, &args.common)
}

/// Runs `hooks-mcp enforcement ...`.
pub(crate) fn enforcement(args: EnforcementArgs) -> ExitCode {
    let (tool, call) = tool_call!(args.command, EnforcementCmd:
        Set { message, cadence, tag } => "enforcement_set",
        List {} => "enforcement_list",
        Clear { enforcement_id, tag } => "enforcement_clear"
    );
    execute(tool, call, &args.common)
}

/// Runs `hooks-mcp condition ...`.
pub(crate) fn condition(args: ConditionArgs) -> ExitCode {
    let (tool, call) = tool_call!(args.command, ConditionCmd:
        List {} => "condition_list",
        Show { name } => "condition_show",
        Clear { name, session_id } => "condition_clear"
    );
    execute(tool, call, &args.common)
}

/// Runs `hooks-mcp schedule ...`.
pub(crate) fn schedule(args: ScheduleArgs) -> ExitCode {
    let (tool, call) = tool_call!(args.command, ScheduleCmd:
        Create { channel, message, at, every_seconds, cron, severity, ttl_seconds, name }
            => "schedule_create",
        List {} => "schedule_list",
        Cancel { schedule_id } => "schedule_cancel"
    );
    execute(tool, call, &args.common)
}

/// Calls `tool` through the catalogue and prints the answer; exit 1 on a tool error (its message
/// on stderr) or when the store cannot be opened.
fn execute(tool: &str, args: Map<String, Value>, common: &Common) -> ExitCode {
    let store = match open::store_from_env(true) {
        Ok((store, opened)) => {
            if opened == store::Opened::Created {
                protocol_lite::diag!("hooks-mcp: created a new store at {}", store.describe());
            }
            store
        }
        Err(e) => {
            protocol_lite::diag!("hooks-mcp: cannot open the store: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut extensions = server_full::Settings::extensions(store);
    extensions.insert(operator_actor());
    let session = SessionPolicy::Fallback(
        SESSION_ENV
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty())),
    );
    let ctx = CallContext::new(open::now_ms(), &session, &extensions);
    match catalogue::call(tool, &ctx, Value::Object(args)) {
        Ok(answer) => {
            let text = operator::render(&answer, common.json, |v| operator::human(tool, v));
            crate::fleet::print_out(&text)
        }
        Err(catalogue::ToolError::InvalidArguments(why))
            if why.starts_with("session_id: required") =>
        {
            // The tool's words are for an MCP client; here the session is a flag.
            protocol_lite::diag!(
                "hooks-mcp: {tool}: which session? pass --session-id ID, or set \
                 HOOKS_MCP_SESSION_ID (or CLAUDE_CODE_SESSION_ID)"
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            protocol_lite::diag!("hooks-mcp: {tool}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The operator, as the audit trail records the changes these commands make: `$USER`, else
/// `$LOGNAME`, else the user id.
pub(crate) fn operator_actor() -> store::Actor {
    let name = ["USER", "LOGNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| format!("uid {}", rustix::process::getuid().as_raw()));
    store::Actor::Operator(name)
}
