//! The command hook (`hooks-mcp-hook hook <event>`): the payload on stdin, the answer on stdout,
//! what could not be done on stderr, always exit 0; and the pieces it shares with the daemon's
//! HTTP hooks: the banner, and the completion of an answer from the store's part
//! ([`crate::part`]) with the conditions' scripts.

use std::io::{self, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use store::StoreError;

use crate::output::{Response, answer_bytes};
use crate::part::{
    CHANNELS_ENV, DeliveryBudget, PartSettings, StorePart, Subscriptions, may_block_stop,
    stop_block_from_env, store_part,
};
use crate::payload::{Event, Payload};
use crate::{conditions, forward, open};

/// Runs `hook <event>` when the command line is exactly that, before any other start-up work
/// (logging, argument parsing); `None` for every other command line (including `hook --help`).
/// The store is opened in this process, either backend ([`open::any_backend`]).
pub fn run_from_args() -> Option<ExitCode> {
    run_from_args_with(open::any_backend)
}

/// [`run_from_args`], opening the store with `open` when no local daemon answers for it (the
/// hook binary passes [`open::sqlite_or_hand_over`]).
pub fn run_from_args_with(open: open::Opener) -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let (Some(command), Some(event), None) = (args.next(), args.next(), args.next()) else {
        // Another client's hook: `hook --client <name> <event>` (docs/clients.md).
        return crate::clients::run_from_args(open);
    };
    let event = event.to_str()?;
    (command == "hook" && !event.starts_with('-')).then(|| run_with(event, open))
}

/// Runs the command hook for the event named `event`; always exits 0 (a broken hook never
/// blocks the agent). The store is opened in this process, either backend.
pub fn run(event: &str) -> ExitCode {
    run_with(event, open::any_backend)
}

/// [`run`], opening the store with `open` when no local daemon answers for it.
pub fn run_with(event: &str, open: open::Opener) -> ExitCode {
    let Some(event) = Event::parse(event) else {
        if let Some(name) = crate::payload::quiet_event(event) {
            // A Claude Code event with nothing to do: no output, counted.
            crate::clients::quiet::record(name, open::now_ms());
            crate::payload::drain_stdin();
            return ExitCode::SUCCESS;
        }
        protocol_lite::diag!("{}", unknown_event(event));
        crate::clients::unplaced::record("claude", event, "unknown event", open::now_ms());
        crate::payload::drain_stdin();
        return ExitCode::SUCCESS;
    };
    let mut text = String::new();
    if let Err(e) = io::stdin().read_to_string(&mut text) {
        protocol_lite::diag!(
            "hooks-mcp hook {event}: cannot read the payload on stdin ({e}). Nothing was done."
        );
        return ExitCode::SUCCESS;
    }
    let payload = match Payload::parse(event, &text) {
        Ok(p) => p,
        // Another client's payload sent to this Claude Code hook (VS Code, Cursor), or none.
        Err(why) => return crate::clients::recover(event, &text, &why, open),
    };
    // Adapted for another client by the hook that handed this event over.
    if payload.raw.contains_key(crate::clients::MARKER) {
        return crate::clients::run_marked(payload, open);
    }
    // A hook that handed its event over to this process printed the settings' warnings and
    // asked the local daemon already.
    let handed_over = open::handed_over();
    let (stop_block, stop_warning) = stop_block_from_env();
    if let Some(line) = stop_warning.filter(|_| !handed_over) {
        protocol_lite::diag!("hooks-mcp hook: {line}");
    }
    if !needs_store(event, &payload, stop_block) {
        return ExitCode::SUCCESS;
    }
    let now = open::now_ms();
    let subscriptions = Subscriptions::from_env(|bad| {
        if !handed_over {
            protocol_lite::diag!("hooks-mcp hook: {bad}")
        }
    });
    let gate = tools_conditions::gate_setting_from_env().enforced;
    let (budget, warning) = DeliveryBudget::from_env();
    if let Some(line) = warning.filter(|_| !handed_over) {
        protocol_lite::diag!("hooks-mcp hook: {line}");
    }
    let settings = PartSettings {
        subscriptions: &subscriptions,
        gate_enforced: gate,
        budget,
        stop_block,
    };
    // A local daemon that shares this store answers from its pooled connections; otherwise
    // (or when it does not answer) the hook opens the store itself. Same answer either way.
    let forwarded = if handed_over {
        None
    } else {
        forward::via_daemon(event, &text, &settings)
    };
    let part = forwarded.unwrap_or_else(|| direct(event, &payload, &text, &settings, now, open));
    let response = complete(
        event,
        &payload,
        &subscriptions,
        part,
        conditions::timeout_from_env,
    );
    for line in &response.notes {
        protocol_lite::diag!("{line}");
    }
    if let Some(answer) = response.to_json(event, &payload.tool_name) {
        let mut out = io::stdout().lock();
        let written = out
            .write_all(&answer_bytes(&answer))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            protocol_lite::diag!("hooks-mcp hook {event}: cannot write the answer on stdout ({e})");
        }
    }
    ExitCode::SUCCESS
}

/// The line for an event name this dispatcher does not handle (it answers nothing).
pub(crate) fn unknown_event(name: &str) -> String {
    let known: Vec<&str> = Event::ALL.iter().map(|e| e.name()).collect();
    format!(
        "hooks-mcp hook: unknown event `{name}`; this command handles {}. Nothing was done.",
        known.join(", ")
    )
}

/// Whether `event` has anything to ask the store: not a `Stop` that a stop hook already
/// continued (`stop_hook_active`), nor any `Stop` with blocking turned off (`stop_block`,
/// [`crate::STOP_BLOCK_ENV`]).
pub(crate) fn needs_store(event: Event, payload: &Payload, stop_block: bool) -> bool {
    event != Event::Stop || may_block_stop(payload, stop_block)
}

/// The store's part when this process opens the store itself, with `open` (given the
/// payload's `text`, for a hand-over).
fn direct(
    event: Event,
    payload: &Payload,
    text: &str,
    settings: &PartSettings<'_>,
    now: i64,
    open: open::Opener,
) -> StorePart {
    match open(event, text) {
        Ok(store) => {
            let part = store_part(event, payload, settings, &*store, now);
            // This process exits once it has answered: closing the store would only free
            // memory the exit frees anyway.
            store.close_at_exit();
            part
        }
        // No store yet, and the operator's prompt asks to change conditions: the gate it
        // opens is written down, in a store made for it (what the tool will check).
        Err(open::OpenError::Store(StoreError::Missing { .. }))
            if event == Event::UserPromptSubmit
                && settings.gate_enforced
                && tools_conditions::prompt_requests_condition_change(payload.prompt()) =>
        {
            match store::open_sqlite_from_env(true) {
                Ok(Some((store, _))) => {
                    let part = store_part(event, payload, settings, &*store, now);
                    store.close_at_exit();
                    part
                }
                Ok(None) => StorePart::default(),
                Err(e) => StorePart {
                    errors: vec![format!(
                        "hooks-mcp hook {event}: cannot create the store to open the conditions \
                         gate: {e}"
                    )],
                    ..StorePart::default()
                },
            }
        }
        // No store yet: nothing was ever published, so there is nothing to deliver.
        Err(open::OpenError::Store(StoreError::Missing { .. })) => StorePart::default(),
        Err(e) => StorePart {
            errors: vec![format!(
                "hooks-mcp hook {event}: cannot open the store: {e}"
            )],
            ..StorePart::default()
        },
    }
}

/// The answer to one event, from the store's part: the banner, the store's part (its errors
/// become [`Response::notes`]), then the matching conditions' scripts, run by this process in
/// the payload's `cwd` with the limit `timeout` gives (asked only when a script runs, with a
/// line for the operator when the setting was invalid, as [`conditions::timeout_from_env`]).
pub fn complete(
    event: Event,
    payload: &Payload,
    subscriptions: &Subscriptions,
    part: StorePart,
    timeout: impl FnOnce() -> (Duration, Option<String>),
) -> Response {
    let mut response = Response::default();
    if event == Event::SessionStart {
        response.add_context(banner(&payload.session_id, subscriptions));
    }
    response.notes.extend(part.errors);
    if event == Event::Stop {
        // What the turn did not show goes back to the agent as the reason to go on.
        response.block_reasons = part.context;
    } else {
        for block in part.context {
            response.add_context(block);
        }
    }
    if !part.conditions.is_empty() {
        let (timeout, warning) = timeout();
        response.notes.extend(warning);
        match event {
            Event::PreToolUse => {
                conditions::run_pre(&part.conditions, payload, timeout, &mut response)
            }
            Event::PostToolUse => {
                conditions::run_post(&part.conditions, payload, timeout, &mut response)
            }
            _ => {}
        }
    }
    response
}

/// The `SessionStart` banner: the session id (agents pass it as `session_id` to tools of a
/// network server) and the subscriptions.
pub fn banner(session_id: &str, subscriptions: &Subscriptions) -> String {
    let channels = match &subscriptions.channels {
        None => format!("all channels ({CHANNELS_ENV} is unset)"),
        Some(list) => list.join(", "),
    };
    format!(
        "hooks-mcp: this session's id is `{session_id}` (pass it as session_id to hooks-mcp \
         tools that ask for one). Broadcasts reach it from: {channels}."
    )
}
