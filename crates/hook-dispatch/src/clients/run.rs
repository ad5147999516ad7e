//! The command hook for another client's event: the payload adapted, the store's work of its
//! [`Route`] (through the local daemon when it answers, else the store opened here), the
//! answer completed with the conditions' scripts as for Claude Code, then rendered in the
//! client's format. Always exit 0.

use std::io::{self, Read, Write};
use std::process::ExitCode;

use serde_json::Value;
use store::{Step as ScriptStep, Store, StoreError};

use super::adapt::{MARKER, adapt, detect, marked};
use super::render::render;
use super::unplaced;
use super::{Client, Route, Step};
use crate::output::answer_bytes;
use crate::part::{
    DeliveryBudget, PartSettings, StorePart, Subscriptions, stop_block_from_env, store_part,
};
use crate::payload::{Event, Payload, PayloadError};
use crate::{complete, conditions, forward, open};

/// Runs the hook registered as `hook --client <client> <client_event>`: reads the payload on
/// stdin and answers in the client's format. A payload or event it cannot place gets no answer,
/// a line on stderr and a count in the [`unplaced`] record.
pub fn run(client: Client, client_event: &str, open: open::Opener) -> ExitCode {
    let Some(route) = client.route(client_event) else {
        crate::payload::drain_stdin();
        let known = client.handled_events().join(", ");
        return unplaced_answer(
            client.name(),
            client_event,
            &format!(
                "{} has no event `{client_event}` that hooks-mcp handles (those it does: {known})",
                client.title()
            ),
        );
    };
    let mut text = String::new();
    if let Err(e) = io::stdin().read_to_string(&mut text) {
        return unplaced_answer(
            client.name(),
            client_event,
            &format!("cannot read the payload on stdin ({e})"),
        );
    }
    let value = match parse_json(&text) {
        Ok(value) => value,
        Err(why) => return unplaced_answer(client.name(), client_event, &why.to_string()),
    };
    match adapt(client, client_event, route, value) {
        Ok(raw) => answer(client, client_event, route, raw, open),
        Err(why) => unplaced_answer(client.name(), client_event, &why),
    }
}

/// Runs `hook --client <name> <event>` (or `--client=<name>`) when the command line is that,
/// before any other start-up work; `None` for every other command line.
pub fn run_from_args(open: open::Opener) -> Option<ExitCode> {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string().ok())
        .collect::<Option<_>>()?;
    let (name, event): (&str, &str) = match args.as_slice() {
        [hook, flag, name, event] if hook == "hook" && flag == "--client" => (name, event),
        [hook, flag, event] if hook == "hook" => (flag.strip_prefix("--client=")?, event),
        _ => return None,
    };
    if event.starts_with('-') {
        return None;
    }
    Some(match Client::parse(name) {
        Some(client) => run(client, event, open),
        None => {
            crate::payload::drain_stdin();
            unplaced_answer(
                "unknown",
                event,
                &format!(
                    "unknown client `{name}`; use one of {}",
                    Client::ALL.map(Client::name).join(", ")
                ),
            )
        }
    })
}

/// Answers an adapted payload (one that names its client under [`MARKER`]) that reached a
/// Claude Code hook: what a hook that handed its event over to the full binary replays.
pub fn run_marked(payload: Payload, open: open::Opener) -> ExitCode {
    let Some((client, client_event)) = marked(&payload.raw) else {
        return unplaced_answer("unknown", "?", "the payload's client is not readable");
    };
    match client.route(&client_event) {
        Some(route) => answer(client, &client_event, route, payload.raw, open),
        None => unplaced_answer(
            client.name(),
            &client_event,
            &format!("{} has no event `{client_event}`", client.title()),
        ),
    }
}

/// A Claude Code hook (`hook <event>`) whose payload Claude Code's checks refused (`why`):
/// answered for the client its fields name (VS Code, Cursor, Copilot CLI: they run Claude
/// Code's hooks with their own payloads), in Claude Code's format, which they read; otherwise
/// refused as before, and counted.
pub fn recover(event: Event, text: &str, why: &PayloadError, open: open::Opener) -> ExitCode {
    let refused = |client: &str| unplaced_answer(client, event.name(), &why.to_string());
    let Ok(Value::Object(raw)) = crate::payload::json_text(text) else {
        return refused("claude");
    };
    let Some(client) = detect(&raw).filter(|c| *c != Client::Claude) else {
        return refused("claude");
    };
    let route = Route::whole(event);
    match adapt(client, event.name(), route, Value::Object(raw)) {
        Ok(mut raw) => {
            // Answered as Claude Code's hook, also by a process this one hands over to.
            raw.insert(
                MARKER.into(),
                serde_json::json!({ "client": "claude", "event": event.name(), "detected": client.name() }),
            );
            answer(Client::Claude, event.name(), route, raw, open)
        }
        Err(reason) => unplaced_answer(client.name(), event.name(), &reason),
    }
}

/// The payload's text as JSON.
fn parse_json(text: &str) -> Result<Value, PayloadError> {
    if text.trim().is_empty() {
        return Err(PayloadError::Empty);
    }
    crate::payload::json_text(text).map_err(|e| PayloadError::NotJson(e.to_string()))
}

/// No answer: the reason on stderr, and the payload counted.
fn unplaced_answer(client: &str, event: &str, reason: &str) -> ExitCode {
    protocol_lite::diag!("hooks-mcp hook {event} ({client}): {reason}. Nothing was done.");
    unplaced::record(client, event, reason, open::now_ms());
    ExitCode::SUCCESS
}

/// The hook's settings the store's work depends on.
struct Settings {
    subscriptions: Subscriptions,
    gate: bool,
    budget: DeliveryBudget,
    stop_block: bool,
    now: i64,
}

impl Settings {
    /// What the store's part depends on.
    fn part(&self) -> PartSettings<'_> {
        PartSettings {
            subscriptions: &self.subscriptions,
            gate_enforced: self.gate,
            budget: self.budget,
            stop_block: self.stop_block,
        }
    }
}

/// Completes and prints the answer to an adapted payload.
fn answer(
    client: Client,
    client_event: &str,
    route: Route,
    raw: serde_json::Map<String, Value>,
    open: open::Opener,
) -> ExitCode {
    let payload = match Payload::from_value(route.event, Value::Object(raw)) {
        Ok(payload) => payload,
        Err(why) => return unplaced_answer(client.name(), client_event, &why.to_string()),
    };
    let handed_over = open::handed_over();
    let subscriptions = Subscriptions::from_env(|bad| {
        if !handed_over {
            protocol_lite::diag!("hooks-mcp hook: {bad}")
        }
    });
    let (budget, warning) = DeliveryBudget::from_env();
    let (stop_block, stop_warning) = stop_block_from_env();
    for line in [warning, stop_warning].into_iter().flatten() {
        if !handed_over {
            protocol_lite::diag!("hooks-mcp hook: {line}");
        }
    }
    let settings = Settings {
        subscriptions,
        gate: tools_conditions::gate_setting_from_env().enforced,
        budget,
        stop_block,
        now: open::now_ms(),
    };
    let part = store_work(route, &payload, &settings, handed_over, open);
    let response = complete(
        route.event,
        &payload,
        &settings.subscriptions,
        part,
        conditions::timeout_from_env,
    );
    for line in &response.notes {
        protocol_lite::diag!("{line}");
    }
    let (answer, notes) = render(client, client_event, route, &response, &payload.tool_name);
    for line in &notes {
        protocol_lite::diag!("{line}");
    }
    if let Some(answer) = answer {
        let mut out = io::stdout().lock();
        let written = out
            .write_all(&answer_bytes(&answer))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            protocol_lite::diag!(
                "hooks-mcp hook {client_event}: cannot write the answer on stdout ({e})"
            );
        }
    }
    ExitCode::SUCCESS
}

/// The store's work of `route`, joined: each step the local daemon answers (on PostgreSQL),
/// the rest over the store this process opens (with `open`, which on PostgreSQL may hand the
/// event over to the full binary, replaying the adapted payload).
fn store_work(
    route: Route,
    payload: &Payload,
    settings: &Settings,
    handed_over: bool,
    open: open::Opener,
) -> StorePart {
    let text = Value::Object(payload.raw.clone()).to_string();
    let mut joined = StorePart::default();
    let mut remaining: &[Step] = route.steps;
    if !handed_over {
        while let Some((step, rest)) = remaining.split_first() {
            let (Step::Part(event) | Step::Deliveries(event)) = *step else {
                break;
            };
            let Some(part) = forward::via_daemon(event, &text, &settings.part()) else {
                break;
            };
            join(&mut joined, *step, part);
            remaining = rest;
        }
    }
    if remaining.is_empty() {
        return joined;
    }
    match open(route.event, &text) {
        Ok(store) => {
            for step in remaining {
                let part = step_part(route, *step, payload, settings, &*store);
                join(&mut joined, *step, part);
            }
            // This process exits once it has answered.
            store.close_at_exit();
        }
        // No store yet: nothing was ever published.
        Err(open::OpenError::Store(StoreError::Missing { .. })) => {}
        Err(e) => joined.errors.push(format!(
            "hooks-mcp hook {}: cannot open the store: {e}",
            route.event
        )),
    }
    joined
}

/// Adds one step's part: its context and errors, and its conditions unless the step is for
/// deliveries only.
fn join(joined: &mut StorePart, step: Step, part: StorePart) {
    joined.context.extend(part.context);
    joined.errors.extend(part.errors);
    if !matches!(step, Step::Deliveries(_)) {
        joined.conditions.extend(part.conditions);
    }
}

/// One step over an open store.
fn step_part(
    route: Route,
    step: Step,
    payload: &Payload,
    settings: &Settings,
    store: &dyn Store,
) -> StorePart {
    match step {
        Step::Part(event) | Step::Deliveries(event) => {
            store_part(event, payload, &settings.part(), store, settings.now)
        }
        Step::Conditions => {
            let which = if route.event == Event::PostToolUse {
                ScriptStep::Post
            } else {
                ScriptStep::Pre
            };
            let input = payload.tool_input();
            match tools_conditions::matching_conditions(store, which, &payload.tool_name, &input) {
                Ok(conditions) => StorePart {
                    conditions,
                    ..StorePart::default()
                },
                Err(e) => StorePart {
                    errors: vec![format!("hooks-mcp hook: cannot read the conditions: {e}")],
                    ..StorePart::default()
                },
            }
        }
        Step::Gate => {
            let mut part = StorePart::default();
            if settings.gate {
                match tools_conditions::arm_gate_for_prompt(
                    store,
                    &payload.session_id,
                    payload.prompt(),
                    settings.now,
                ) {
                    Ok(true) => part.context.push(format!(
                        "hooks-mcp: the operator's prompt opened the conditions gate for this \
                         session for {} minutes (condition_set, condition_clear).",
                        tools_conditions::GATE_WINDOW_MS / 60_000
                    )),
                    Ok(false) => {}
                    Err(e) => part.errors.push(format!(
                        "hooks-mcp hook {}: cannot arm the conditions gate: {e}",
                        route.event
                    )),
                }
            }
            part
        }
    }
}
