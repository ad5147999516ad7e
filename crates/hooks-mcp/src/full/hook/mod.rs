//! `hooks-mcp hook <event>`: delivers what the store holds into an agent session.
//!
//! The agent client runs this command on its lifecycle events, with the event's JSON payload on
//! stdin, and reads the answer from stdout (Claude Code's hook protocol, see [`output`]). It runs
//! twice around every tool call, so it stays on plain std, the store and the tools crates' hook
//! functions: no async runtime, no MCP SDK, and it never reads the transcript.
//!
//! A broken hook must never block the agent: a malformed or unknown payload, a missing or
//! unreadable store, a failing script, each gets a message on stderr and exit 0 with no effect
//! on the call. Only a condition denies a call, on purpose.

mod conditions;
mod output;
mod payload;

use std::io::{self, Read, Write};
use std::process::ExitCode;

use store::{DeliveryPoint, Step, Store, StoreError};

use crate::open;

use self::output::Response;
pub(crate) use self::payload::Event;
use self::payload::Payload;

/// The channels a session receives besides `global`: comma separated; unset or blank means
/// every channel.
pub(crate) use tools_channels::SUBSCRIPTIONS_ENV as CHANNELS_ENV;

/// Runs `hook <event>` when the command line is exactly that, before any other start-up work
/// (logging, argument parsing); `None` for every other command line (including `hook --help`).
pub(crate) fn run_from_args() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let (Some(command), Some(event), None) = (args.next(), args.next(), args.next()) else {
        return None;
    };
    let event = event.to_str()?;
    (command == "hook" && !event.starts_with('-')).then(|| run(event))
}

/// Runs the hook for the event named `event`; always exits 0 (see the module documentation).
pub(crate) fn run(event: &str) -> ExitCode {
    let Some(event) = Event::parse(event) else {
        let known: Vec<&str> = Event::ALL.iter().map(|e| e.name()).collect();
        eprintln!(
            "hooks-mcp hook: unknown event `{event}`; this command handles {}. Nothing was done.",
            known.join(", ")
        );
        return ExitCode::SUCCESS;
    };
    let mut text = String::new();
    if let Err(e) = io::stdin().read_to_string(&mut text) {
        eprintln!(
            "hooks-mcp hook {event}: cannot read the payload on stdin ({e}). Nothing was done."
        );
        return ExitCode::SUCCESS;
    }
    let payload = match Payload::parse(event, &text) {
        Ok(p) => p,
        Err(why) => {
            eprintln!("hooks-mcp hook {event}: {why}. Nothing was done.");
            return ExitCode::SUCCESS;
        }
    };
    let response = handle(event, &payload, open::now_ms());
    if let Some(answer) = response.to_json(event, &payload.tool_name) {
        let mut out = io::stdout().lock();
        let written = serde_json::to_writer(&mut out, &answer)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            eprintln!("hooks-mcp hook {event}: cannot write the answer on stdout ({e})");
        }
    }
    ExitCode::SUCCESS
}

/// The answer to one event at `now`.
fn handle(event: Event, payload: &Payload, now: i64) -> Response {
    let mut response = Response::default();
    let subscriptions = Subscriptions::from_env();
    if event == Event::SessionStart {
        response.add_context(banner(&payload.session_id, &subscriptions));
    }
    let store = match open::store_from_env(false) {
        Ok((store, _)) => store,
        // No store yet: nothing was ever published, so there is nothing to deliver.
        Err(StoreError::Missing { .. }) => return response,
        Err(e) => {
            eprintln!("hooks-mcp hook {event}: cannot open the store: {e}");
            return response;
        }
    };
    let store = &*store;
    let session = payload.session_id.as_str();
    let channels = subscriptions.channels.as_deref();
    let report = |what: &str, e: StoreError| {
        eprintln!("hooks-mcp hook {event}: cannot {what}: {e}");
    };
    match event {
        Event::SessionStart => fire_schedules(store, now, event),
        Event::UserPromptSubmit => {
            fire_schedules(store, now, event);
            if tools_conditions::gate_setting_from_env().enforced {
                match tools_conditions::arm_gate_for_prompt(store, session, payload.prompt(), now) {
                    Ok(true) => response.add_context(format!(
                        "hooks-mcp: the operator's prompt opened the conditions gate for this \
                         session for {} minutes (condition_set, condition_clear).",
                        tools_conditions::GATE_WINDOW_MS / 60_000
                    )),
                    Ok(false) => {}
                    Err(e) => report("arm the conditions gate", e),
                }
            }
            match store.deliver(session, channels, DeliveryPoint::Prompt, now) {
                Ok(messages) => response.add_context(tools_channels::render_delivery(&messages)),
                Err(e) => report("deliver broadcasts", e),
            }
        }
        Event::PreToolUse => {
            fire_schedules(store, now, event);
            match store.deliver(session, channels, DeliveryPoint::ToolCall, now) {
                Ok(messages) => response.add_context(tools_channels::render_delivery(&messages)),
                Err(e) => report("deliver critical broadcasts", e),
            }
            match tools_enforcement::due_reminders(store, session, now) {
                Ok((_, due)) => {
                    let lines: Vec<String> = due
                        .iter()
                        .map(|r| format!("[REMINDER #{}] {}", r.id, r.message))
                        .collect();
                    response.add_context(lines.join("\n"));
                }
                Err(e) => report("count the tool call", e),
            }
            run_conditions(store, Step::Pre, payload, &mut response);
        }
        Event::PostToolUse => run_conditions(store, Step::Post, payload, &mut response),
    }
    response
}

/// Runs the conditions of `step` that match the payload's tool call.
fn run_conditions(store: &dyn Store, step: Step, payload: &Payload, response: &mut Response) {
    let input = payload.tool_input();
    let matching =
        match tools_conditions::matching_conditions(store, step, &payload.tool_name, &input) {
            Ok(found) => found,
            Err(e) => {
                eprintln!("hooks-mcp hook: cannot read the conditions: {e}");
                return;
            }
        };
    if matching.is_empty() {
        return;
    }
    let timeout = conditions::timeout_from_env();
    match step {
        Step::Pre => conditions::run_pre(&matching, payload, timeout, response),
        Step::Post => conditions::run_post(&matching, payload, timeout, response),
    }
}

/// Fires the schedules due at `now`. Every process may call this: each occurrence fires exactly
/// once whoever gets there first (a daemon's scheduler or any hook), so schedules fire with or
/// without a daemon.
fn fire_schedules(store: &dyn Store, now: i64, event: Event) {
    if let Err(e) = tools_scheduler::fire_due(store, now) {
        eprintln!("hooks-mcp hook {event}: cannot fire due schedules: {e}");
    }
}

/// The session's channel subscriptions.
#[derive(Debug)]
struct Subscriptions {
    /// The channels to deliver from, `global` included; `None` for every channel.
    channels: Option<Vec<String>>,
}

impl Subscriptions {
    /// Reads [`CHANNELS_ENV`]; invalid names are reported on stderr and skipped.
    fn from_env() -> Subscriptions {
        let value = std::env::var(CHANNELS_ENV).unwrap_or_default();
        Subscriptions::parse(&value, |bad| eprintln!("hooks-mcp hook: {bad}"))
    }

    fn parse(value: &str, mut warn: impl FnMut(String)) -> Subscriptions {
        let names: Vec<&str> = value
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty()
            || names
                .iter()
                .any(|n| *n == "*" || n.eq_ignore_ascii_case("all"))
        {
            return Subscriptions { channels: None };
        }
        let mut channels = vec![store::rules::GLOBAL_CHANNEL.to_owned()];
        for name in names {
            match store::rules::check_channel_name(name) {
                Ok(()) if !channels.iter().any(|c| c == name) => channels.push(name.to_owned()),
                Ok(()) => {}
                Err(e) => warn(format!(
                    "{CHANNELS_ENV}: channel `{name}` {e}; it is skipped"
                )),
            }
        }
        Subscriptions {
            channels: Some(channels),
        }
    }
}

/// The `SessionStart` banner: the session id (agents pass it as `session_id` to tools of a
/// network server) and the subscriptions.
fn banner(session_id: &str, subscriptions: &Subscriptions) -> String {
    let channels = match &subscriptions.channels {
        None => format!("all channels ({CHANNELS_ENV} is unset)"),
        Some(list) => list.join(", "),
    };
    format!(
        "hooks-mcp: this session's id is `{session_id}` (pass it as session_id to hooks-mcp \
         tools that ask for one). Broadcasts reach it from: {channels}."
    )
}

#[cfg(test)]
mod tests {
    use super::Subscriptions;

    #[test]
    fn subscriptions_add_global_and_skip_invalid_names() {
        let mut warnings = Vec::new();
        let subs = Subscriptions::parse(" deploys, ci ,bad name,deploys,", |w| warnings.push(w));
        assert_eq!(
            subs.channels.as_deref(),
            Some(&["global".to_owned(), "deploys".to_owned(), "ci".to_owned()][..])
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("`bad name`"), "{warnings:?}");
    }

    #[test]
    fn unset_blank_or_all_subscribes_to_every_channel() {
        for value in ["", " , ", "all", "ci,*"] {
            let subs = Subscriptions::parse(value, |w| panic!("unexpected warning {w}"));
            assert_eq!(subs.channels, None, "{value:?}");
        }
    }
}
