//! The store's part of a hook event's answer, and the session's channel subscriptions: what
//! the command hook computes over the store it opens, and what the daemon computes for a hook
//! that forwarded its event ([`crate::forward`]) or for an HTTP hook ([`crate::http`]).

use store::{Condition, DeliveryPoint, Sighting, Step, Store, StoreError, Subscribed, Transport};

use crate::payload::{Event, Payload};

/// The token budget of one event's broadcasts (docs/hooks.md, "The delivery budget").
pub use tools_channels::DeliveryBudget;

/// The channels a session receives besides `global`: comma separated; unset or blank means
/// every channel.
pub use tools_channels::SUBSCRIPTIONS_ENV as CHANNELS_ENV;

/// What the store contributes to one event's answer: computed by this process over the store
/// it opens, or by the daemon it forwarded the event to. Scripts are not run here: the
/// conditions to run come back, and the hook process runs them.
#[derive(Debug, Default, PartialEq)]
pub struct StorePart {
    /// Context blocks for the agent, in order (never blank).
    pub context: Vec<String>,
    /// Whole lines for the hook's stderr, in order: what could not be done.
    pub errors: Vec<String>,
    /// The conditions that match the tool call, in the order they run.
    pub conditions: Vec<Condition>,
}

impl StorePart {
    fn add_context(&mut self, text: String) {
        if !text.trim().is_empty() {
            self.context.push(text);
        }
    }

    fn report(&mut self, event: Event, what: &str, e: StoreError) {
        self.errors
            .push(format!("hooks-mcp hook {event}: cannot {what}: {e}"));
    }
}

/// The settings the store's part of an answer depends on, read once per hook (or per request
/// in the daemon).
#[derive(Debug, Clone, Copy)]
pub struct PartSettings<'a> {
    /// The session's channels.
    pub subscriptions: &'a Subscriptions,
    /// Whether the conditions gate is enforced.
    pub gate_enforced: bool,
    /// The delivery budget (docs/hooks.md, "The delivery budget").
    pub budget: DeliveryBudget,
    /// Whether a `Stop` may be blocked ([`STOP_BLOCK_ENV`]).
    pub stop_block: bool,
}

/// What `store` contributes to the answer to `event` at `now`, for a session with `settings`:
/// fires due schedules, delivers broadcasts within the budget, counts the tool call and its
/// due reminders, arms the gate, and finds the matching conditions. The same function runs in
/// the hook process and in the daemon.
///
/// The calls of one event run as one unit ([`store::StoreAdmin::in_one_transaction`]): on
/// SQLite, `PreToolUse` (which always counts the call) takes the write lock once and commits
/// once, and `UserPromptSubmit` reads in one transaction, writing only when something is new
/// to record.
pub fn store_part(
    event: Event,
    payload: &Payload,
    settings: &PartSettings<'_>,
    store: &dyn Store,
    now: i64,
) -> StorePart {
    let PartSettings {
        subscriptions,
        gate_enforced,
        budget,
        stop_block,
    } = *settings;
    let mut part = StorePart::default();
    let writes = matches!(
        event,
        Event::PreToolUse | Event::SubagentStart | Event::SubagentStop | Event::SessionEnd
    );
    let inputs = Inputs {
        event,
        payload,
        subscriptions,
        gate_enforced,
        budget,
        stop_block,
        now,
    };
    let unit = store.in_one_transaction(writes, &mut || {
        event_calls(&inputs, store, &mut part);
    });
    if let Err(e) = unit {
        part.report(event, "record this event in the store", e);
    }
    part
}

/// What one event's store calls work from.
struct Inputs<'a> {
    event: Event,
    payload: &'a Payload,
    subscriptions: &'a Subscriptions,
    gate_enforced: bool,
    budget: DeliveryBudget,
    stop_block: bool,
    now: i64,
}

/// The store calls of one event, in order, each reporting its own failure into `part`.
fn event_calls(inputs: &Inputs<'_>, store: &dyn Store, part: &mut StorePart) {
    let Inputs {
        event,
        payload,
        subscriptions,
        gate_enforced,
        budget,
        stop_block,
        now,
    } = *inputs;
    let session = payload.session_id.as_str();
    let channels = subscriptions.channels.as_deref();
    let sighting = sighting(event, payload, subscriptions, now);
    match event {
        Event::SessionStart => {
            // A compaction, resume, clear or fork continues work whose start pruned and
            // fired already: it spends its time on what the context lost instead, and
            // schedules that fall due meanwhile fire at its next prompt or tool call.
            let redelivering = redelivers(payload.source());
            if !redelivering {
                fire_schedules(store, session, now, event, part);
            }
            // A compaction happens mid-work in a live session that its last prompt or tool
            // call recorded moments ago: it reads only. (A clear or resume may follow the
            // session's end, which its sighting undoes.)
            let compacting = payload.source().trim().eq_ignore_ascii_case("compact");
            if !compacting && let Err(e) = store.record_sighting(&sighting) {
                part.report(event, "record the session", e);
            }
            if redelivering {
                redeliver(store, session, channels, budget, now, part);
            } else {
                housekeeping(store, now, event, part);
            }
        }
        Event::SubagentStart => {
            // No schedules here: the parent's tool call that starts the subagent (its
            // `PreToolUse`) fired them a moment before.
            let recipient = payload.subagent_recipient();
            let seen = Sighting {
                session_id: recipient.clone(),
                ..sighting
            };
            if let Err(e) = store.record_subagent(&seen, session) {
                part.report(event, "record the subagent", e);
            }
            let mut admission = budget.for_event();
            match store.deliver_within(
                &recipient,
                channels,
                DeliveryPoint::Start,
                now,
                &mut admission,
            ) {
                Ok(delivery) => part.add_context(tools_channels::render_bounded(&delivery)),
                Err(e) => part.report(event, "deliver broadcasts to the subagent", e),
            }
        }
        Event::SubagentStop => {
            if let Err(e) = store.end_session(&payload.subagent_recipient(), now) {
                part.report(event, "record the subagent's end", e);
            }
        }
        Event::Stop => {
            // Off by the setting, or the client says a stop hook already made the agent go on
            // (never again this turn): every path to the store passes here.
            if !may_block_stop(payload, stop_block) {
                return;
            }
            fire_schedules(store, session, now, event, part);
            let mut admission = budget.for_event();
            match store.deliver_at_stop(session, channels, now, &mut admission) {
                Ok(delivery) => part.add_context(tools_channels::render_bounded(&delivery)),
                Err(e) => part.report(event, "look for messages published during the turn", e),
            }
        }
        Event::SessionEnd => {
            if let Err(e) = store.end_session(session, now) {
                part.report(event, "record the session's end", e);
            }
        }
        Event::UserPromptSubmit => {
            fire_schedules(store, session, now, event, part);
            if let Err(e) = store.record_sighting(&sighting) {
                part.report(event, "record the session", e);
            }
            if gate_enforced {
                match tools_conditions::arm_gate_for_prompt(store, session, payload.prompt(), now) {
                    Ok(true) => part.add_context(format!(
                        "hooks-mcp: the operator's prompt opened the conditions gate for this \
                         session for {} minutes (condition_set, condition_clear).",
                        tools_conditions::GATE_WINDOW_MS / 60_000
                    )),
                    Ok(false) => {}
                    Err(e) => part.report(event, "arm the conditions gate", e),
                }
            }
            let mut admission = budget.for_event();
            match store.deliver_within(
                session,
                channels,
                DeliveryPoint::Prompt,
                now,
                &mut admission,
            ) {
                Ok(delivery) => part.add_context(tools_channels::render_bounded(&delivery)),
                Err(e) => part.report(event, "deliver broadcasts", e),
            }
        }
        Event::PreToolUse => {
            // Counted first: the same call reported again (a client running two of hooks-mcp's
            // hook registrations, by its `tool_use_id`) delivers nothing a second time; its
            // conditions still run, each registration's answer stands on its own.
            let (first_report, due) =
                match tools_enforcement::due_reminders(store, &sighting, payload.call_id()) {
                    Ok((count, due)) => (count.first_report, Ok(due)),
                    Err(e) => (true, Err(e)),
                };
            if first_report {
                fire_schedules(store, session, now, event, part);
                let mut admission = budget.for_event();
                match store.deliver_within(
                    session,
                    channels,
                    DeliveryPoint::ToolCall,
                    now,
                    &mut admission,
                ) {
                    Ok(delivery) => part.add_context(tools_channels::render_bounded(&delivery)),
                    Err(e) => part.report(event, "deliver critical broadcasts", e),
                }
            }
            match due {
                Ok(due) => {
                    let lines: Vec<String> = due
                        .iter()
                        .map(|r| {
                            let text = store::rules::on_one_line(&r.message);
                            format!("[REMINDER #{}] {text}", r.id)
                        })
                        .collect();
                    part.add_context(lines.join("\n"));
                }
                Err(e) => part.report(event, "count the tool call", e),
            }
            matching_conditions(store, Step::Pre, payload, part);
        }
        Event::PostToolUse => matching_conditions(store, Step::Post, payload, part),
    }
}

/// Whether this `Stop` may be blocked: the setting (`stop_block`) is on and the client does
/// not say a stop hook already made the agent go on.
pub(crate) fn may_block_stop(payload: &Payload, stop_block: bool) -> bool {
    stop_block && !payload.stop_hook_active()
}

/// The setting that turns off blocking a `Stop` for a message published during the turn.
pub const STOP_BLOCK_ENV: &str = "HOOKS_MCP_STOP_BLOCK";

/// The settings of the lifecycle events, for the generated configuration reference.
pub const SETTINGS: &[protocol_lite::setting::Setting] = &[protocol_lite::setting::Setting {
    env: STOP_BLOCK_ENV,
    flag: "",
    default: "on",
    effect: "Hook command (and the daemon, for HTTP hooks): `off` (or `0`, `false`, `no`) \
             lets a session stop although an alert or critical message it was not shown was \
             published during its turn; otherwise its `Stop` is blocked once with that \
             message as the reason (docs/hooks.md, \"Lifecycle events\").",
}];

/// Whether a `Stop` may be blocked ([`STOP_BLOCK_ENV`], read as
/// [`protocol_lite::setting::switch`]): on unless set to off; with a warning to show when the
/// value is neither (it stays on).
pub fn stop_block_from_env() -> (bool, Option<String>) {
    let value = std::env::var(STOP_BLOCK_ENV).unwrap_or_default();
    match protocol_lite::setting::switch(&value) {
        Some(on) => (on, None),
        None if value.trim().is_empty() => (true, None),
        None => (
            true,
            Some(format!(
                "{STOP_BLOCK_ENV}: `{}` is neither on nor off; blocking a Stop stays on (set \
                 it to `on` or `off`)",
                value.trim()
            )),
        ),
    }
}

/// Whether a `SessionStart` of this `source` starts a context without what the session was
/// shown before: a resumed, cleared or compacted session (and a fork, which older clients
/// reported as a resume). A new session (`startup`) gets the banner only.
pub(crate) fn redelivers(source: &str) -> bool {
    ["compact", "resume", "clear", "fork"]
        .iter()
        .any(|s| s.eq_ignore_ascii_case(source.trim()))
}

/// The alert and critical messages the session has not acknowledged, and the active
/// reminders, within the delivery budget: a context that lost them gets them again.
fn redeliver(
    store: &dyn Store,
    session: &str,
    channels: Option<&[String]>,
    budget: DeliveryBudget,
    now: i64,
    part: &mut StorePart,
) {
    let event = Event::SessionStart;
    let mut admission = budget.for_event();
    let mut used = 0;
    match store.deliver_within(session, channels, DeliveryPoint::Start, now, &mut admission) {
        Ok(delivery) => {
            let text = tools_channels::render_bounded(&delivery);
            used = text.len();
            part.add_context(text);
        }
        Err(e) => part.report(event, "deliver the unacknowledged messages again", e),
    }
    match store.reminders() {
        Ok(reminders) => part.add_context(reminder_lines(&reminders, budget.bytes(), used)),
        Err(e) => part.report(event, "read the reminders", e),
    }
}

/// The reminders as context lines, within what is left of `budget_bytes` after `used`; those
/// that do not fit are counted on one last line.
fn reminder_lines(reminders: &[store::Reminder], budget_bytes: usize, used: usize) -> String {
    const MORE_ROOM: usize = 64;
    let mut left = budget_bytes.saturating_sub(used + MORE_ROOM);
    let mut lines = Vec::new();
    for (i, r) in reminders.iter().enumerate() {
        let line = format!(
            "[REMINDER #{}] {} (every {} tool calls)",
            r.id,
            store::rules::on_one_line(&r.message),
            r.cadence
        );
        if line.len() + 1 > left {
            lines.push(format!(
                "[MORE] {} more reminders: see enforcement_list",
                reminders.len() - i
            ));
            break;
        }
        left -= line.len() + 1;
        lines.push(line);
    }
    lines.join("\n")
}

/// What the store records of the session for this event: the payload's working directory and
/// the hook's subscriptions come with it.
fn sighting(event: Event, payload: &Payload, subscriptions: &Subscriptions, now: i64) -> Sighting {
    Sighting {
        session_id: payload.session_id.clone(),
        at: now,
        event: event.name().to_owned(),
        transport: Transport::Hook,
        cwd: payload
            .raw
            .get("cwd")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        subscriptions: Some(match &subscriptions.channels {
            None => Subscribed::All,
            Some(list) => Subscribed::Channels(list.clone()),
        }),
    }
}

/// Prunes audit entries and session records past their retention (a session starts rarely
/// enough to carry this).
fn housekeeping(store: &dyn Store, now: i64, event: Event, part: &mut StorePart) {
    let pruned = store::Retention::from_env()
        .and_then(|retention| store::housekeeping(store, now, &retention));
    if let Err(e) = pruned {
        part.report(event, "prune the audit trail and old sessions", e);
    }
}

/// Finds the conditions of `step` that match the payload's tool call.
fn matching_conditions(store: &dyn Store, step: Step, payload: &Payload, part: &mut StorePart) {
    let input = payload.tool_input();
    match tools_conditions::matching_conditions(store, step, &payload.tool_name, &input) {
        Ok(found) => part.conditions = found,
        Err(e) => part
            .errors
            .push(format!("hooks-mcp hook: cannot read the conditions: {e}")),
    }
}

/// Fires the schedules due at `now`. Every process may call this: each occurrence fires exactly
/// once whoever gets there first (a daemon's scheduler or any hook), so schedules fire with or
/// without a daemon.
fn fire_schedules(store: &dyn Store, session: &str, now: i64, event: Event, part: &mut StorePart) {
    if let Err(e) =
        tools_scheduler::fire_due(store, now, &store::Actor::Session(session.to_owned()))
    {
        part.report(event, "fire due schedules", e);
    }
}

/// The session's channel subscriptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscriptions {
    /// The channels to deliver from, `global` included; `None` for every channel.
    pub channels: Option<Vec<String>>,
}

impl Subscriptions {
    /// Reads [`CHANNELS_ENV`]; invalid names go to `warn` and are skipped.
    pub fn from_env(warn: impl FnMut(String)) -> Subscriptions {
        let value = std::env::var(CHANNELS_ENV).unwrap_or_default();
        Subscriptions::parse(&value, warn)
    }

    /// Parses a [`CHANNELS_ENV`] value: comma separated names, `global` always included;
    /// blank, `all` or `*` for every channel. Invalid names go to `warn` and are skipped.
    pub fn parse(value: &str, warn: impl FnMut(String)) -> Subscriptions {
        Subscriptions {
            channels: tools_channels::subscribed_channels(value, warn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{DeliveryBudget, PartSettings, Subscriptions, store_part};
    use crate::payload::{Event, Payload};
    use store::{Actor, ChannelStore, NewMessage, Severity, SqliteStore};

    const NOW: i64 = 1_800_000_000_000;

    fn payload(event: Event, session: &str) -> Payload {
        let text = match event {
            Event::PreToolUse => format!(
                r#"{{"session_id":"{session}","tool_name":"Bash","tool_input":{{"command":"ls"}}}}"#
            ),
            _ => format!(r#"{{"session_id":"{session}","prompt":"go on"}}"#),
        };
        Payload::parse(event, &text).unwrap()
    }

    #[test]
    fn a_stop_is_blocked_only_when_the_setting_it_is_given_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::create(dir.path().join("state.db")).unwrap();
        let all = Subscriptions { channels: None };
        let settings = |stop_block| PartSettings {
            subscriptions: &all,
            gate_enforced: false,
            budget: DeliveryBudget::of_tokens(400).unwrap(),
            stop_block,
        };
        let prompt = store_part(
            Event::UserPromptSubmit,
            &payload(Event::UserPromptSubmit, "s1"),
            &settings(true),
            &store,
            NOW,
        );
        assert!(prompt.errors.is_empty(), "{:?}", prompt.errors);
        store
            .publish(
                &NewMessage {
                    channel: "ops".into(),
                    body: "the build is red".into(),
                    severity: Severity::Alert,
                    created_at: NOW + 10,
                    expires_at: NOW + 3_600_000,
                    target: None,
                },
                &Actor::Daemon,
            )
            .unwrap();
        let stop = |stop_block| {
            store_part(
                Event::Stop,
                &payload(Event::Stop, "s1"),
                &settings(stop_block),
                &store,
                NOW + 20,
            )
        };
        // Off: the alert published during the turn does not hold the session.
        assert!(stop(false).context.is_empty());
        let blocked = stop(true).context.join("\n");
        assert!(blocked.contains("the build is red"), "{blocked}");
    }

    #[test]
    fn an_event_injects_its_budget_of_broadcasts_and_names_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::create(dir.path().join("state.db")).unwrap();
        let mut critical = 0;
        for i in 0..300_i64 {
            let severity = if i == 5 {
                Severity::Critical
            } else {
                Severity::Info
            };
            let m = store
                .publish(
                    &NewMessage {
                        channel: format!("ch-{}", i % 4),
                        body: format!("broadcast number {i}, about as long as a real one"),
                        severity,
                        created_at: NOW + i,
                        expires_at: NOW + 3_600_000,
                        target: None,
                    },
                    &Actor::Daemon,
                )
                .unwrap();
            if i == 5 {
                critical = m.id;
            }
        }
        let all = Subscriptions { channels: None };
        let budget = DeliveryBudget::of_tokens(400).unwrap();
        let settings = PartSettings {
            subscriptions: &all,
            gate_enforced: false,
            budget,
            stop_block: true,
        };
        let now = NOW + 1_000;
        let prompt = |session: &str| {
            let part = store_part(
                Event::UserPromptSubmit,
                &payload(Event::UserPromptSubmit, session),
                &settings,
                &store,
                now,
            );
            assert!(part.errors.is_empty(), "{:?}", part.errors);
            part.context.join("\n")
        };
        let first = prompt("s1");
        assert!(first.len() <= budget.bytes(), "{} bytes", first.len());
        assert!(
            first.starts_with(&format!("[CRITICAL #{critical} ch-1]")),
            "critical first: {first}"
        );
        assert!(
            first.contains("broadcast number 299"),
            "newest info: {first}"
        );
        let summary = first.lines().last().unwrap();
        assert!(summary.starts_with("[MORE] "), "{first}");
        for channel in ["ch-0", "ch-1", "ch-2", "ch-3"] {
            assert!(summary.contains(channel), "{summary}");
        }
        // The info left out was counted once: the next prompt repeats the critical only.
        let second = prompt("s1");
        assert_eq!(
            second.lines().count(),
            1,
            "only the critical repeats: {second}"
        );
        assert!(second.starts_with(&format!("[CRITICAL #{critical}")));
        // A tool call: the critical only, within the budget.
        let tool = store_part(
            Event::PreToolUse,
            &payload(Event::PreToolUse, "s1"),
            &settings,
            &store,
            now,
        );
        assert_eq!(tool.context.len(), 1, "{:?}", tool.context);
        assert!(tool.context[0].starts_with(&format!("[CRITICAL #{critical}")));
    }

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
