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

/// `hooks-mcp channel ...`
#[derive(Debug, Args)]
pub(crate) struct ChannelArgs {
    #[command(subcommand)]
    command: ChannelCmd,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Subcommand)]
enum ChannelCmd {
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
    Clear {
        /// Delete every message of this channel.
        #[arg(long)]
        channel: Option<String>,
        /// Delete this message.
        #[arg(long = "id")]
        message_id: Option<i64>,
    },
}

/// `hooks-mcp enforcement ...`
#[derive(Debug, Args)]
pub(crate) struct EnforcementArgs {
    #[command(subcommand)]
    command: EnforcementCmd,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Subcommand)]
enum EnforcementCmd {
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
    Clear {
        /// Remove the reminder with this id.
        #[arg(long = "id")]
        enforcement_id: Option<i64>,
        /// Remove every reminder with this tag.
        #[arg(long)]
        tag: Option<String>,
    },
}

/// `hooks-mcp condition ...`
#[derive(Debug, Args)]
pub(crate) struct ConditionArgs {
    #[command(subcommand)]
    command: ConditionCmd,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Subcommand)]
enum ConditionCmd {
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

/// `hooks-mcp schedule ...`
#[derive(Debug, Args)]
pub(crate) struct ScheduleArgs {
    #[command(subcommand)]
    command: ScheduleCmd,
    #[command(flatten)]
    common: Common,
}

#[derive(Debug, Subcommand)]
enum ScheduleCmd {
    /// Schedule a publication (schedule_create); pass exactly one of --at, --every-seconds,
    /// --cron.
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

/// Builds a tool's arguments from the options given (absent ones are left out).
#[derive(Debug, Default)]
struct ToolArgs(Map<String, Value>);

impl ToolArgs {
    fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    fn opt<T: Into<Value>>(self, key: &str, value: Option<T>) -> Self {
        match value {
            Some(v) => self.set(key, v),
            None => self,
        }
    }

    fn flag(self, key: &str, on: bool) -> Self {
        if on { self.set(key, true) } else { self }
    }
}

/// Runs `hooks-mcp channel ...`.
pub(crate) fn channel(args: ChannelArgs) -> ExitCode {
    let (tool, call) = match args.command {
        ChannelCmd::Status { message_id } => {
            return crate::fleet::channel_status(message_id, args.common.json);
        }
        ChannelCmd::Publish {
            channel,
            message,
            severity,
            ttl_seconds,
        } => (
            "channel_publish",
            ToolArgs::default()
                .set("channel", channel)
                .set("message", message)
                .opt("severity", severity)
                .opt("ttl_seconds", ttl_seconds),
        ),
        ChannelCmd::List => ("channel_list", ToolArgs::default()),
        ChannelCmd::Read {
            channel,
            session_id,
            include_acknowledged,
            limit,
        } => (
            "channel_read",
            ToolArgs::default()
                .opt("channel", channel)
                .opt("session_id", session_id)
                .flag("include_acknowledged", include_acknowledged)
                .opt("limit", limit),
        ),
        ChannelCmd::Ack {
            message_id,
            session_id,
        } => (
            "channel_acknowledge",
            ToolArgs::default()
                .set("message_id", message_id)
                .opt("session_id", session_id),
        ),
        ChannelCmd::Clear {
            channel,
            message_id,
        } => (
            "channel_clear",
            ToolArgs::default()
                .opt("channel", channel)
                .opt("message_id", message_id),
        ),
    };
    execute(tool, call, &args.common)
}

/// Runs `hooks-mcp enforcement ...`.
pub(crate) fn enforcement(args: EnforcementArgs) -> ExitCode {
    let (tool, call) = match args.command {
        EnforcementCmd::Set {
            message,
            cadence,
            tag,
        } => (
            "enforcement_set",
            ToolArgs::default()
                .set("message", message)
                .set("cadence", cadence)
                .opt("tag", tag),
        ),
        EnforcementCmd::List => ("enforcement_list", ToolArgs::default()),
        EnforcementCmd::Clear {
            enforcement_id,
            tag,
        } => (
            "enforcement_clear",
            ToolArgs::default()
                .opt("enforcement_id", enforcement_id)
                .opt("tag", tag),
        ),
    };
    execute(tool, call, &args.common)
}

/// Runs `hooks-mcp condition ...`.
pub(crate) fn condition(args: ConditionArgs) -> ExitCode {
    let (tool, call) = match args.command {
        ConditionCmd::List => ("condition_list", ToolArgs::default()),
        ConditionCmd::Show { name } => ("condition_show", ToolArgs::default().set("name", name)),
        ConditionCmd::Clear { name, session_id } => (
            "condition_clear",
            ToolArgs::default()
                .set("name", name)
                .opt("session_id", session_id),
        ),
    };
    execute(tool, call, &args.common)
}

/// Runs `hooks-mcp schedule ...`.
pub(crate) fn schedule(args: ScheduleArgs) -> ExitCode {
    let (tool, call) = match args.command {
        ScheduleCmd::Create {
            channel,
            message,
            at,
            every_seconds,
            cron,
            severity,
            ttl_seconds,
            name,
        } => (
            "schedule_create",
            ToolArgs::default()
                .set("channel", channel)
                .set("message", message)
                .opt("at", at)
                .opt("every_seconds", every_seconds)
                .opt("cron", cron)
                .opt("severity", severity)
                .opt("ttl_seconds", ttl_seconds)
                .opt("name", name),
        ),
        ScheduleCmd::List => ("schedule_list", ToolArgs::default()),
        ScheduleCmd::Cancel { schedule_id } => (
            "schedule_cancel",
            ToolArgs::default().set("schedule_id", schedule_id),
        ),
    };
    execute(tool, call, &args.common)
}

/// Calls `tool` through the catalogue and prints the answer; exit 1 on a tool error (its message
/// on stderr) or when the store cannot be opened.
fn execute(tool: &str, args: ToolArgs, common: &Common) -> ExitCode {
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
    match catalogue::call(tool, &ctx, Value::Object(args.0)) {
        Ok(answer) => {
            let text = if common.json {
                serde_json::to_string_pretty(&answer).unwrap_or_else(|_| answer.to_string())
            } else {
                operator::human(tool, &answer)
            };
            print_out(&text);
            ExitCode::SUCCESS
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

/// Writes the answer on stdout (the operator's terminal: no MCP stream here).
pub(crate) fn print_out(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}
