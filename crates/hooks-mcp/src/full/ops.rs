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
    let extensions = server_full::Settings::extensions(store);
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
                human(tool, &answer)
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

/// Writes the answer on stdout (the operator's terminal: no MCP stream here).
pub(crate) fn print_out(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// A string field, or "" when absent.
fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A field as text, whatever its type ("" when absent or null).
fn t(v: &Value, key: &str) -> String {
    match v.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// The items of an array field.
fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The answer as text for people.
fn human(tool: &str, v: &Value) -> String {
    let lines: Vec<String> = match tool {
        "channel_publish" => vec![format!(
            "published #{} on {} ({}), expires {}",
            t(v, "id"),
            s(v, "channel"),
            s(v, "severity"),
            s(v, "expires_at")
        )],
        "channel_list" => {
            let rows = items(v, "channels");
            if rows.is_empty() {
                vec!["no channel has unexpired messages".into()]
            } else {
                rows.iter()
                    .map(|c| {
                        format!(
                            "{:<24} {:>4} active, latest {}",
                            s(c, "channel"),
                            t(c, "active"),
                            s(c, "latest_at")
                        )
                    })
                    .collect()
            }
        }
        "channel_read" => {
            let rows = items(v, "messages");
            if rows.is_empty() {
                vec!["no unexpired messages".into()]
            } else {
                rows.iter()
                    .map(|m| {
                        let ack = if m.get("acknowledged") == Some(&Value::Bool(true)) {
                            " (acknowledged)"
                        } else {
                            ""
                        };
                        format!(
                            "#{} [{}] {} {}: {}{ack}",
                            t(m, "id"),
                            s(m, "severity"),
                            s(m, "channel"),
                            s(m, "created_at"),
                            s(m, "message")
                        )
                    })
                    .collect()
            }
        }
        "channel_acknowledge" => vec![format!(
            "acknowledged #{} for session {}",
            t(v, "acknowledged"),
            s(v, "session_id")
        )],
        "channel_clear" => vec![format!("removed {} message(s)", t(v, "removed"))],
        "enforcement_set" => vec![format!(
            "added reminder #{} (every {} tool calls{})",
            t(v, "id"),
            t(v, "cadence"),
            match s(v, "tag") {
                "" => String::new(),
                tag => format!(", tag {tag}"),
            }
        )],
        "enforcement_list" => {
            let rows = items(v, "reminders");
            if rows.is_empty() {
                vec!["no reminders".into()]
            } else {
                rows.iter()
                    .map(|r| {
                        format!(
                            "#{} every {} calls{}: {}",
                            t(r, "id"),
                            t(r, "cadence"),
                            match s(r, "tag") {
                                "" => String::new(),
                                tag => format!(" [{tag}]"),
                            },
                            s(r, "message")
                        )
                    })
                    .collect()
            }
        }
        "enforcement_clear" => vec![format!("removed {} reminder(s)", t(v, "removed"))],
        "condition_list" => {
            let rows = items(v, "conditions");
            if rows.is_empty() {
                vec!["no conditions".into()]
            } else {
                rows.iter()
                    .map(|c| {
                        format!(
                            "{:<24} {:<4} {:<24} {}{}",
                            s(c, "name"),
                            s(c, "step"),
                            s(c, "matcher"),
                            s(c, "language"),
                            if c.get("run_async") == Some(&Value::Bool(true)) {
                                " async"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect()
            }
        }
        "condition_show" => vec![
            format!("name:     {}", s(v, "name")),
            format!("step:     {}", s(v, "step")),
            format!("matcher:  {}", s(v, "matcher")),
            format!("language: {}", s(v, "language")),
            format!("async:    {}", t(v, "run_async")),
            format!("set by:   {}", s(v, "session_id")),
            format!("updated:  {}", s(v, "updated_at")),
            "script:".into(),
            s(v, "script").to_owned(),
        ],
        "condition_clear" => vec![format!("removed condition {}", s(v, "removed"))],
        "schedule_create" => vec![format!(
            "scheduled #{}, first firing at {}",
            t(v, "id"),
            s(v, "next_fire_at")
        )],
        "schedule_list" => {
            let rows = items(v, "schedules");
            if rows.is_empty() {
                vec!["no schedules".into()]
            } else {
                rows.iter().map(schedule_line).collect()
            }
        }
        "schedule_cancel" => vec![format!("cancelled {}", schedule_line(v))],
        _ => vec![serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())],
    };
    lines.join("\n")
}

fn schedule_line(v: &Value) -> String {
    let trigger = v
        .get("trigger")
        .and_then(Value::as_object)
        .and_then(|o| o.iter().next())
        .map(|(k, val)| match val {
            Value::String(text) => format!("{k} {text}"),
            other => format!("{k} {other}"),
        })
        .unwrap_or_default();
    let name = match s(v, "name") {
        "" => String::new(),
        name => format!(" ({name})"),
    };
    let next = match s(v, "next_fire_at") {
        "" => String::new(),
        next => format!(", next {next}"),
    };
    format!(
        "#{}{name} {} -> {} [{trigger}], fired {}{next}",
        t(v, "id"),
        s(v, "status"),
        s(v, "channel"),
        t(v, "fire_count"),
    )
}
