//! The store model test: random sequences of operations run against a backend and against a
//! plain in-memory model of the API's documented behaviour, which must agree after every step.
//!
//! Operations: publish, deliver at a prompt and at a tool call (everything due, or within a
//! budget of a few messages, the rest counted per channel), read, acknowledge, clear (all,
//! a channel, one id), prune expired, count tool calls, create, cancel and fire schedules, add
//! and clear reminders, put and delete conditions, arm and disarm gates, and advance the clock
//! (times are Unix milliseconds passed in by the caller, so the clock is a variable of the
//! test). After each operation its result (values and error kinds) is compared, then a snapshot
//! of everything observable: every active message with each session's acknowledgements, the
//! channel summaries, each session's tool-call count and gate and its unacknowledged alerts
//! (which record what was shown), every schedule, reminder and condition, the counts and the
//! next firing time. A bounded delivery must equal the model's exactly (what is shown, in
//! delivery order, and the per-channel counts of the rest), and the model checks what it
//! promises whatever the backend: no more than the budget, in order, every due message shown
//! or counted; an `info` message shown or counted is never due for that session again. Ids are compared too: both backends hand
//! out 1, 2, 3, ... in a fresh store and never reuse one.
//!
//! Proptest generates the sequences and shrinks a failing one to a minimal sequence, reported
//! with the operations spelled out (ids resolved) so that it can be kept as a named regression
//! test (see the bottom of this file). 64 cases of up to 40 operations per backend by default;
//! `PROPTEST_CASES=1000` runs more, `HOOKS_MCP_MODEL_OPS=100` makes the sequences longer:
//!
//! ```text
//! PROPTEST_CASES=1000 cargo test -p store --test store_suite model
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use store::{
    AtMost, ChannelSummary, Condition, Counts, Delivery, DeliveryPoint, Firing, Message,
    MessageQuery, MessageScope, MessageView, Millis, NewMessage, NewReminder, NewSchedule,
    NextFire, PutMode, PutOutcome, Reminder, ReminderScope, Schedule, ScheduleStatus,
    ScriptLanguage, Severity, Step, Store, StoreError, Trigger, Unbounded, delivery_order,
};

use super::{Backend, fresh};

/// The clock's start.
const T0: Millis = 1_800_000_000_000;
/// Sessions the operations act for.
const SESSIONS: [&str; 3] = ["s1", "s2", "s-3"];
/// Channels (mixed case and punctuation: summaries are ordered by name, byte-wise).
const CHANNELS: [&str; 4] = ["ops", "Deploys", "global", "a-b"];
/// Message texts (quotes, non-ASCII and SQL-looking text must round-trip unchanged).
const BODIES: [&str; 4] = [
    "deploy at 5",
    "it's \"quoted\"",
    "ünïcödé 📣",
    "x'); DROP TABLE m;--",
];
/// Reminder tags.
const TAGS: [&str; 2] = ["lint", "tests"];
/// Condition names (ordered by name, byte-wise).
const CONDITION_NAMES: [&str; 3] = ["fmt", "Lint", "a_b"];
/// Step of the fake cron plan (the store keeps a cron expression; its caller plans it).
const CRON_STEP_MS: Millis = 1_500;
/// Default cases per backend (raise with `PROPTEST_CASES`).
const DEFAULT_CASES: u32 = 64;
/// Default longest sequence (raise with `HOOKS_MCP_MODEL_OPS`).
const DEFAULT_MAX_OPS: usize = 40;

/// One operation, with every id resolved (what a regression test spells out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Publish on `CHANNELS[channel]`, created now, expiring `ttl_ms` later.
    Publish {
        channel: usize,
        body: usize,
        severity: Severity,
        ttl_ms: Millis,
    },
    /// Deliver to `SESSIONS[session]` on these channels (`None`: every channel): everything
    /// due (`budget: None`), or at most `budget` messages, the rest counted.
    Deliver {
        session: usize,
        channels: Option<Vec<usize>>,
        point: DeliveryPoint,
        budget: Option<usize>,
    },
    /// Read active messages.
    Read {
        channel: Option<usize>,
        session: Option<usize>,
        include_acknowledged: bool,
        limit: u32,
    },
    /// Acknowledge message `id` for `SESSIONS[session]`.
    Acknowledge { id: i64, session: usize },
    /// Delete every message.
    ClearAll,
    /// Delete the messages of `CHANNELS[channel]`.
    ClearChannel { channel: usize },
    /// Delete message `id`.
    ClearId { id: i64 },
    /// Delete expired messages.
    Prune,
    /// Count a tool call of `SESSIONS[session]`.
    CountToolCall { session: usize },
    /// Create a schedule whose first firing is `first_in_ms` from now.
    CreateSchedule {
        kind: TriggerKind,
        channel: usize,
        severity: Severity,
        ttl_seconds: u32,
        first_in_ms: Millis,
        named: bool,
    },
    /// Cancel schedule `id`.
    Cancel { id: i64 },
    /// Fire what is due now.
    FireDue,
    /// Add a reminder.
    AddReminder {
        body: usize,
        cadence: u32,
        tag: Option<usize>,
    },
    /// Delete reminder `id`.
    ClearReminderId { id: i64 },
    /// Delete the reminders tagged `TAGS[tag]`.
    ClearReminderTag { tag: usize },
    /// Put condition `CONDITION_NAMES[name]`, set by `SESSIONS[session]`.
    PutCondition {
        name: usize,
        step: Step,
        language: ScriptLanguage,
        script: usize,
        run_async: bool,
        session: usize,
        replace: bool,
    },
    /// Delete condition `CONDITION_NAMES[name]`.
    DeleteCondition { name: usize },
    /// Open the gate of `SESSIONS[session]` until `for_ms` from now.
    ArmGate { session: usize, for_ms: Millis },
    /// Close the gate of `SESSIONS[session]`.
    DisarmGate { session: usize },
    /// Move the clock forward.
    Advance { ms: Millis },
}

/// A schedule's trigger, before the clock turns it into a [`Trigger`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TriggerKind {
    /// Once (at the first firing time).
    At,
    /// Every this many seconds.
    Every(u32),
    /// A cron expression (planned as every [`CRON_STEP_MS`]).
    Cron,
}

/// An operation as generated: ids are picks among the ids handed out so far (plus one never
/// handed out), resolved against the model when the operation runs.
#[derive(Debug, Clone)]
enum GenOp {
    Ready(Op),
    Acknowledge { pick: Index, session: usize },
    ClearId { pick: Index },
    Cancel { pick: Index },
    ClearReminderId { pick: Index },
}

impl GenOp {
    fn resolve(&self, model: &Model) -> Op {
        // Every id handed out so far, and one that never was.
        let pick = |pick: &Index, next: i64| {
            let n = usize::try_from(next).unwrap_or(1);
            let i = pick.index(n);
            if i + 1 == n {
                next + 7
            } else {
                i64::try_from(i).unwrap_or(0) + 1
            }
        };
        match self {
            GenOp::Ready(op) => op.clone(),
            GenOp::Acknowledge { pick: p, session } => Op::Acknowledge {
                id: pick(p, model.next_message_id),
                session: *session,
            },
            GenOp::ClearId { pick: p } => Op::ClearId {
                id: pick(p, model.next_message_id),
            },
            GenOp::Cancel { pick: p } => Op::Cancel {
                id: pick(p, model.next_schedule_id),
            },
            GenOp::ClearReminderId { pick: p } => Op::ClearReminderId {
                id: pick(p, model.next_reminder_id),
            },
        }
    }
}

fn severity() -> impl Strategy<Value = Severity> {
    select(Severity::ALL)
}

fn gen_op() -> impl Strategy<Value = GenOp> {
    let session = 0..SESSIONS.len();
    let channel = 0..CHANNELS.len();
    let point = prop_oneof![Just(DeliveryPoint::Prompt), Just(DeliveryPoint::ToolCall)];
    let publish = (
        channel.clone(),
        0..BODIES.len(),
        severity(),
        select(&[0, 250, 500, 1_000, 1_500, 3_000, 10_000][..]),
    )
        .prop_map(|(channel, body, severity, ttl_ms)| {
            GenOp::Ready(Op::Publish {
                channel,
                body,
                severity,
                ttl_ms,
            })
        });
    let deliver = (
        session.clone(),
        proptest::option::of(proptest::collection::btree_set(channel.clone(), 0..=2)),
        point,
        proptest::option::of(0_usize..=3),
    )
        .prop_map(|(session, channels, point, budget)| {
            GenOp::Ready(Op::Deliver {
                session,
                channels: channels.map(|c| c.into_iter().collect()),
                point,
                budget,
            })
        });
    let read = (
        proptest::option::of(channel.clone()),
        proptest::option::of(session.clone()),
        any::<bool>(),
        select(&[0_u32, 1, 2, 5, 100][..]),
    )
        .prop_map(|(channel, session, include_acknowledged, limit)| {
            GenOp::Ready(Op::Read {
                channel,
                session,
                include_acknowledged,
                limit,
            })
        });
    let acknowledge = (any::<Index>(), session.clone())
        .prop_map(|(pick, session)| GenOp::Acknowledge { pick, session });
    let clear = prop_oneof![
        1 => Just(GenOp::Ready(Op::ClearAll)),
        2 => channel.clone().prop_map(|channel| GenOp::Ready(Op::ClearChannel { channel })),
        3 => any::<Index>().prop_map(|pick| GenOp::ClearId { pick }),
    ];
    let kind = prop_oneof![
        2 => Just(TriggerKind::At),
        2 => (1_u32..=2).prop_map(TriggerKind::Every),
        1 => Just(TriggerKind::Cron),
    ];
    let create = (
        kind,
        channel,
        severity(),
        1_u32..=2,
        select(&[-500, 0, 250, 1_000, 2_500][..]),
        any::<bool>(),
    )
        .prop_map(
            |(kind, channel, severity, ttl_seconds, first_in_ms, named)| {
                GenOp::Ready(Op::CreateSchedule {
                    kind,
                    channel,
                    severity,
                    ttl_seconds,
                    first_in_ms,
                    named,
                })
            },
        );
    let reminder = prop_oneof![
        3 => (0..BODIES.len(), 1_u32..=3, proptest::option::of(0..TAGS.len())).prop_map(
            |(body, cadence, tag)| GenOp::Ready(Op::AddReminder { body, cadence, tag })
        ),
        1 => any::<Index>().prop_map(|pick| GenOp::ClearReminderId { pick }),
        1 => (0..TAGS.len()).prop_map(|tag| GenOp::Ready(Op::ClearReminderTag { tag })),
    ];
    let condition = prop_oneof![
        3 => (
            0..CONDITION_NAMES.len(),
            select(Step::ALL),
            select(ScriptLanguage::ALL),
            0..BODIES.len(),
            any::<bool>(),
            0..SESSIONS.len(),
            any::<bool>(),
        )
            .prop_map(|(name, step, language, script, run_async, session, replace)| {
                GenOp::Ready(Op::PutCondition {
                    name,
                    step,
                    language,
                    script,
                    run_async,
                    session,
                    replace,
                })
            }),
        1 => (0..CONDITION_NAMES.len())
            .prop_map(|name| GenOp::Ready(Op::DeleteCondition { name })),
        2 => (0..SESSIONS.len(), select(&[0, 250, 1_000, 2_000][..]))
            .prop_map(|(session, for_ms)| GenOp::Ready(Op::ArmGate { session, for_ms })),
        1 => (0..SESSIONS.len()).prop_map(|session| GenOp::Ready(Op::DisarmGate { session })),
    ];
    prop_oneof![
        2 => reminder,
        2 => condition,
        4 => publish,
        4 => deliver,
        2 => read,
        3 => acknowledge,
        1 => clear,
        1 => Just(GenOp::Ready(Op::Prune)),
        2 => session.prop_map(|session| GenOp::Ready(Op::CountToolCall { session })),
        2 => create,
        1 => any::<Index>().prop_map(|pick| GenOp::Cancel { pick }),
        2 => Just(GenOp::Ready(Op::FireDue)),
        3 => select(&[0, 250, 500, 1_000, 2_000][..]).prop_map(|ms| GenOp::Ready(Op::Advance { ms })),
    ]
}

/// The caller's plan after a firing: a one-shot completes; a recurring schedule moves to its
/// first occurrence after `now`, skipping the ones in between.
fn plan(schedule: &Schedule, now: Millis) -> NextFire {
    let step = match &schedule.trigger {
        Trigger::At(_) => {
            return NextFire {
                next_fire_at: None,
                skipped: 0,
            };
        }
        Trigger::Every(seconds) => Millis::from(*seconds) * 1_000,
        Trigger::Cron(_) => CRON_STEP_MS,
    };
    let mut next = schedule.next_fire_at.unwrap_or(now) + step;
    let mut skipped = 0;
    while next <= now {
        next += step;
        skipped += 1;
    }
    NextFire {
        next_fire_at: Some(next),
        skipped,
    }
}

/// An error, by kind: what the API documents callers may rely on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    NotFound(&'static str),
    Conflict,
    /// Anything else: never expected, so never equal to the model's answer.
    Unexpected(String),
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { what, .. } => Failure::NotFound(what),
            StoreError::Conflict(_) => Failure::Conflict,
            other => Failure::Unexpected(format!("{other} ({other:?})")),
        }
    }
}

/// What one operation returned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Message(Result<Message, Failure>),
    Messages(Result<Vec<Message>, Failure>),
    Delivery(Result<Delivery, Failure>),
    Views(Result<Vec<MessageView>, Failure>),
    Count(Result<u64, Failure>),
    Schedule(Result<Schedule, Failure>),
    Firings(Result<Vec<Firing>, Failure>),
    Reminder(Result<Reminder, Failure>),
    Put(Result<PutOutcome, Failure>),
    Deleted(Result<bool, Failure>),
    Done(Result<(), Failure>),
    Clock,
}

/// Everything observable about the store at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    /// Every active message, newest first (no session).
    messages: Vec<MessageView>,
    /// Every active message as each session sees it (acknowledgements marked).
    per_session: Vec<Vec<MessageView>>,
    channels: Vec<ChannelSummary>,
    tool_calls: Vec<u64>,
    schedules: Vec<Schedule>,
    reminders: Vec<Reminder>,
    conditions: Vec<Condition>,
    /// Each of `CONDITION_NAMES` looked up by name.
    condition_by_name: Vec<Option<Condition>>,
    /// When each session's gate closes, if open.
    gates: Vec<Option<Millis>>,
    /// Each session's unexpired alert and critical messages shown to it and not acknowledged.
    unacknowledged: Vec<(String, u64)>,
    counts: Counts,
    next_fire_after: Option<Millis>,
}

fn all_query(session: Option<&str>, now: Millis) -> MessageQuery {
    MessageQuery {
        channel: None,
        session_id: session.map(str::to_owned),
        include_acknowledged: true,
        limit: 10_000,
        now,
        before: None,
    }
}

/// The model: the API's documentation as plain data structures.
#[derive(Debug, Clone)]
struct Model {
    now: Millis,
    next_message_id: i64,
    messages: BTreeMap<i64, Message>,
    acks: BTreeSet<(i64, String)>,
    /// Messages shown to a session (its delivery records).
    deliveries: BTreeSet<(i64, String)>,
    /// Info messages a session was shown or told of in a summary: never due for it again.
    handled: BTreeSet<(i64, String)>,
    tool_calls: BTreeMap<String, u64>,
    next_schedule_id: i64,
    schedules: BTreeMap<i64, Schedule>,
    firings: BTreeSet<(i64, Millis)>,
    next_reminder_id: i64,
    reminders: BTreeMap<i64, Reminder>,
    /// By name (a `&str`-ordered map orders byte-wise, as "by name" does).
    conditions: BTreeMap<String, Condition>,
    gates: BTreeMap<String, Millis>,
}

impl Model {
    fn new() -> Self {
        Model {
            now: T0,
            next_message_id: 1,
            messages: BTreeMap::new(),
            acks: BTreeSet::new(),
            deliveries: BTreeSet::new(),
            handled: BTreeSet::new(),
            tool_calls: BTreeMap::new(),
            next_schedule_id: 1,
            schedules: BTreeMap::new(),
            firings: BTreeSet::new(),
            next_reminder_id: 1,
            reminders: BTreeMap::new(),
            conditions: BTreeMap::new(),
            gates: BTreeMap::new(),
        }
    }

    fn active(&self) -> impl Iterator<Item = &Message> {
        self.messages.values().filter(|m| m.expires_at > self.now)
    }

    fn insert_message(&mut self, new: &NewMessage) -> Message {
        let message = Message {
            id: self.next_message_id,
            channel: new.channel.clone(),
            body: new.body.clone(),
            severity: new.severity,
            created_at: new.created_at,
            expires_at: new.expires_at,
            target: new.target.clone(),
        };
        self.next_message_id += 1;
        self.messages.insert(message.id, message.clone());
        message
    }

    fn remove_messages(&mut self, doomed: impl Fn(&Message) -> bool) -> u64 {
        let ids: Vec<i64> = self
            .messages
            .values()
            .filter(|m| doomed(m))
            .map(|m| m.id)
            .collect();
        for id in &ids {
            self.messages.remove(id);
        }
        self.acks.retain(|(id, _)| !ids.contains(id));
        self.deliveries.retain(|(id, _)| !ids.contains(id));
        self.handled.retain(|(id, _)| !ids.contains(id));
        ids.len() as u64
    }

    /// Removes the messages `doomed` selects; answers how many of them were unexpired at `now`.
    fn clear_messages(&mut self, now: Millis, doomed: impl Fn(&Message) -> bool) -> u64 {
        let live = self
            .messages
            .values()
            .filter(|m| doomed(m) && m.expires_at > now)
            .count() as u64;
        self.remove_messages(doomed);
        live
    }

    fn read(&self, query: &MessageQuery) -> Vec<MessageView> {
        let mut views: Vec<MessageView> = self
            .messages
            .values()
            .filter(|m| m.expires_at > query.now)
            .filter(|m| query.channel.as_ref().is_none_or(|c| &m.channel == c))
            .map(|m| MessageView {
                message: m.clone(),
                acknowledged: query
                    .session_id
                    .as_ref()
                    .is_some_and(|s| self.acks.contains(&(m.id, s.clone()))),
            })
            .filter(|v| query.include_acknowledged || !v.acknowledged)
            .collect();
        views.sort_by_key(|v| std::cmp::Reverse((v.message.created_at, v.message.id)));
        views.truncate(query.limit as usize);
        views
    }

    fn apply(&mut self, op: &Op) -> Outcome {
        let now = self.now;
        match op {
            Op::Publish { .. } => Outcome::Message(Ok(self.insert_message(&new_message(op, now)))),
            Op::Deliver {
                session,
                channels,
                point,
                budget,
            } => {
                let session = SESSIONS[*session].to_owned();
                let channels = channel_list(channels.as_deref());
                let due: Vec<Message> = self
                    .active()
                    .filter(|m| channels.as_ref().is_none_or(|c| c.contains(&m.channel)))
                    .filter(|m| !self.acks.contains(&(m.id, session.clone())))
                    .filter(|m| {
                        let before = self.handled.contains(&(m.id, session.clone()));
                        m.severity.is_due(*point, before, false)
                    })
                    .cloned()
                    .collect();
                // Every due info message is shown or counted: either way it is handled.
                for m in due.iter().filter(|m| m.severity == Severity::Info) {
                    self.handled.insert((m.id, session.clone()));
                }
                let delivery = match budget {
                    None => Delivery::select(due, &mut Unbounded),
                    Some(n) => Delivery::select(due, &mut AtMost(*n)),
                };
                for m in &delivery.shown {
                    self.deliveries.insert((m.id, session.clone()));
                }
                self.check_budget_invariants(&delivery, *budget);
                match budget {
                    None => {
                        let mut shown = delivery.shown;
                        shown.sort_by_key(|m| (m.created_at, m.id));
                        Outcome::Messages(Ok(shown))
                    }
                    Some(_) => Outcome::Delivery(Ok(delivery)),
                }
            }
            Op::Read { .. } => Outcome::Views(Ok(self.read(&read_query(op, now)))),
            Op::Acknowledge { id, session } => {
                let found = self.active().find(|m| m.id == *id).cloned();
                Outcome::Message(match found {
                    Some(m) => {
                        self.acks.insert((m.id, SESSIONS[*session].to_owned()));
                        Ok(m)
                    }
                    None => Err(Failure::NotFound("message")),
                })
            }
            // A clear deletes expired messages too but counts only the unexpired ones.
            Op::ClearAll => Outcome::Count(Ok(self.clear_messages(now, |_| true))),
            Op::ClearChannel { channel } => Outcome::Count(Ok(
                self.clear_messages(now, |m| m.channel == CHANNELS[*channel])
            )),
            Op::ClearId { id } => Outcome::Count(Ok(self.clear_messages(now, |m| m.id == *id))),
            Op::Prune => Outcome::Count(Ok(self.remove_messages(|m| m.expires_at <= now))),
            Op::CountToolCall { session } => {
                let n = self
                    .tool_calls
                    .entry(SESSIONS[*session].to_owned())
                    .or_insert(0);
                *n += 1;
                Outcome::Count(Ok(*n))
            }
            Op::CreateSchedule { .. } => {
                let new = new_schedule(op, now);
                let schedule = Schedule {
                    id: self.next_schedule_id,
                    name: new.name,
                    channel: new.channel,
                    message: new.message,
                    severity: new.severity,
                    ttl_seconds: new.ttl_seconds,
                    trigger: new.trigger,
                    next_fire_at: Some(new.next_fire_at),
                    last_fired_at: None,
                    fire_count: 0,
                    skipped_count: 0,
                    status: ScheduleStatus::Active,
                    created_at: new.created_at,
                };
                self.next_schedule_id += 1;
                self.schedules.insert(schedule.id, schedule.clone());
                Outcome::Schedule(Ok(schedule))
            }
            Op::Cancel { id } => Outcome::Schedule(match self.schedules.get_mut(id) {
                None => Err(Failure::NotFound("schedule")),
                Some(s) if s.status != ScheduleStatus::Active => Err(Failure::Conflict),
                Some(s) => {
                    s.status = ScheduleStatus::Cancelled;
                    s.next_fire_at = None;
                    Ok(s.clone())
                }
            }),
            Op::FireDue => {
                let mut due: Vec<Schedule> = self
                    .schedules
                    .values()
                    .filter(|s| s.status == ScheduleStatus::Active)
                    .filter(|s| s.next_fire_at.is_some_and(|at| at <= now))
                    .cloned()
                    .collect();
                due.sort_by_key(|s| (s.next_fire_at, s.id));
                let mut firings = Vec::new();
                for schedule in due {
                    let Some(scheduled_for) = schedule.next_fire_at else {
                        continue;
                    };
                    let next = plan(&schedule, now);
                    let claimed = self.firings.insert((schedule.id, scheduled_for));
                    if claimed {
                        let message = self.insert_message(&NewMessage {
                            channel: schedule.channel.clone(),
                            body: schedule.message.clone(),
                            severity: schedule.severity,
                            created_at: now,
                            expires_at: now + Millis::from(schedule.ttl_seconds) * 1_000,
                            target: None,
                        });
                        firings.push(Firing {
                            schedule_id: schedule.id,
                            scheduled_for,
                            message,
                            skipped: next.skipped,
                        });
                    }
                    let Some(stored) = self.schedules.get_mut(&schedule.id) else {
                        continue;
                    };
                    if claimed {
                        stored.fire_count += 1;
                        stored.skipped_count += next.skipped;
                        stored.last_fired_at = Some(now);
                    }
                    stored.next_fire_at = next.next_fire_at;
                    stored.status = if next.next_fire_at.is_some() {
                        ScheduleStatus::Active
                    } else {
                        ScheduleStatus::Completed
                    };
                }
                Outcome::Firings(Ok(firings))
            }
            Op::AddReminder { .. } => {
                let new = new_reminder(op, now);
                let reminder = Reminder {
                    id: self.next_reminder_id,
                    message: new.message,
                    cadence: new.cadence,
                    tag: new.tag,
                    created_at: new.created_at,
                };
                self.next_reminder_id += 1;
                self.reminders.insert(reminder.id, reminder.clone());
                Outcome::Reminder(Ok(reminder))
            }
            Op::ClearReminderId { id } => {
                Outcome::Count(Ok(u64::from(self.reminders.remove(id).is_some())))
            }
            Op::ClearReminderTag { tag } => {
                let before = self.reminders.len();
                self.reminders
                    .retain(|_, r| r.tag.as_deref() != Some(TAGS[*tag]));
                Outcome::Count(Ok((before - self.reminders.len()) as u64))
            }
            Op::PutCondition { replace, .. } => {
                let new = new_condition(op, now);
                Outcome::Put(match self.conditions.get_mut(&new.name) {
                    None => {
                        self.conditions.insert(new.name.clone(), new);
                        Ok(PutOutcome::Created)
                    }
                    Some(_) if !replace => Err(Failure::Conflict),
                    Some(old) => {
                        *old = Condition {
                            created_at: old.created_at,
                            ..new
                        };
                        Ok(PutOutcome::Replaced)
                    }
                })
            }
            Op::DeleteCondition { name } => {
                Outcome::Deleted(Ok(self.conditions.remove(CONDITION_NAMES[*name]).is_some()))
            }
            Op::ArmGate { session, for_ms } => {
                self.gates
                    .insert(SESSIONS[*session].to_owned(), now + for_ms);
                Outcome::Done(Ok(()))
            }
            Op::DisarmGate { session } => {
                self.gates.remove(SESSIONS[*session]);
                Outcome::Done(Ok(()))
            }
            Op::Advance { ms } => {
                self.now += ms;
                Outcome::Clock
            }
        }
    }

    /// What a bounded delivery promises whatever the store: at most the budget is shown, in
    /// delivery order, and what is counted is exactly what was due and not shown.
    fn check_budget_invariants(&self, delivery: &Delivery, budget: Option<usize>) {
        if let Some(n) = budget {
            assert!(
                delivery.shown.len() <= n,
                "the model showed more than its budget"
            );
        }
        assert!(
            delivery
                .shown
                .windows(2)
                .all(|w| delivery_order(&w[0], &w[1]).is_lt()),
            "the model's delivery is out of order"
        );
        assert!(delivery.unshown.iter().all(|b| b.total() > 0));
    }

    fn snapshot(&self) -> Snapshot {
        let mut channels: BTreeMap<&str, ChannelSummary> = BTreeMap::new();
        for m in self.active() {
            let summary = channels
                .entry(m.channel.as_str())
                .or_insert_with(|| ChannelSummary {
                    channel: m.channel.clone(),
                    active: 0,
                    latest_at: m.created_at,
                });
            summary.active += 1;
            summary.latest_at = summary.latest_at.max(m.created_at);
        }
        let active_schedules = self
            .schedules
            .values()
            .filter(|s| s.status == ScheduleStatus::Active);
        Snapshot {
            messages: self.read(&all_query(None, self.now)),
            per_session: SESSIONS
                .iter()
                .map(|s| self.read(&all_query(Some(s), self.now)))
                .collect(),
            // A `BTreeMap<&str, _>` orders by bytes, as the API's "by name" does.
            channels: channels.into_values().collect(),
            tool_calls: SESSIONS
                .iter()
                .map(|s| self.tool_calls.get(*s).copied().unwrap_or(0))
                .collect(),
            schedules: self.schedules.values().cloned().collect(),
            reminders: self.reminders.values().cloned().collect(),
            conditions: self.conditions.values().cloned().collect(),
            condition_by_name: CONDITION_NAMES
                .iter()
                .map(|n| self.conditions.get(*n).cloned())
                .collect(),
            gates: SESSIONS
                .iter()
                .map(|s| {
                    self.gates
                        .get(*s)
                        .copied()
                        .filter(|&until| until > self.now)
                })
                .collect(),
            unacknowledged: SESSIONS
                .iter()
                .filter_map(|s| {
                    let n = self
                        .active()
                        .filter(|m| m.severity != Severity::Info)
                        .filter(|m| self.deliveries.contains(&(m.id, (*s).to_owned())))
                        .filter(|m| !self.acks.contains(&(m.id, (*s).to_owned())))
                        .count() as u64;
                    (n > 0).then(|| ((*s).to_owned(), n))
                })
                .collect::<BTreeMap<_, _>>()
                .into_iter()
                .collect(),
            counts: Counts {
                active_messages: self.active().count() as u64,
                reminders: self.reminders.len() as u64,
                conditions: self.conditions.len() as u64,
                active_schedules: active_schedules.clone().count() as u64,
            },
            next_fire_after: active_schedules
                .filter_map(|s| s.next_fire_at)
                .filter(|&at| at > self.now)
                .min(),
        }
    }
}

fn channel_list(channels: Option<&[usize]>) -> Option<Vec<String>> {
    channels.map(|list| list.iter().map(|&c| CHANNELS[c].to_owned()).collect())
}

fn new_message(op: &Op, now: Millis) -> NewMessage {
    let Op::Publish {
        channel,
        body,
        severity,
        ttl_ms,
    } = op
    else {
        unreachable!("not a publication: {op:?}");
    };
    NewMessage {
        channel: CHANNELS[*channel].to_owned(),
        body: BODIES[*body].to_owned(),
        severity: *severity,
        created_at: now,
        expires_at: now + ttl_ms,
        target: None,
    }
}

fn read_query(op: &Op, now: Millis) -> MessageQuery {
    let Op::Read {
        channel,
        session,
        include_acknowledged,
        limit,
    } = op
    else {
        unreachable!("not a read: {op:?}");
    };
    MessageQuery {
        channel: channel.map(|c| CHANNELS[c].to_owned()),
        session_id: session.map(|s| SESSIONS[s].to_owned()),
        include_acknowledged: *include_acknowledged,
        limit: *limit,
        now,
        before: None,
    }
}

fn new_schedule(op: &Op, now: Millis) -> NewSchedule {
    let Op::CreateSchedule {
        kind,
        channel,
        severity,
        ttl_seconds,
        first_in_ms,
        named,
    } = op
    else {
        unreachable!("not a schedule: {op:?}");
    };
    let first = now + first_in_ms;
    NewSchedule {
        name: named.then(|| format!("sched-{first}")),
        channel: CHANNELS[*channel].to_owned(),
        message: format!("fired on {}", CHANNELS[*channel]),
        severity: *severity,
        ttl_seconds: *ttl_seconds,
        trigger: match kind {
            TriggerKind::At => Trigger::At(first),
            TriggerKind::Every(seconds) => Trigger::Every(*seconds),
            TriggerKind::Cron => Trigger::Cron("*/5 * * * *".into()),
        },
        next_fire_at: first,
        created_at: now,
    }
}

fn new_reminder(op: &Op, now: Millis) -> NewReminder {
    let Op::AddReminder { body, cadence, tag } = op else {
        unreachable!("not a reminder: {op:?}");
    };
    NewReminder {
        message: BODIES[*body].to_owned(),
        cadence: *cadence,
        tag: tag.map(|t| TAGS[t].to_owned()),
        created_at: now,
    }
}

fn new_condition(op: &Op, now: Millis) -> Condition {
    let Op::PutCondition {
        name,
        step,
        language,
        script,
        run_async,
        session,
        ..
    } = op
    else {
        unreachable!("not a condition: {op:?}");
    };
    Condition {
        name: CONDITION_NAMES[*name].to_owned(),
        step: *step,
        matcher: format!("Bash({script}*)"),
        script: BODIES[*script].to_owned(),
        language: *language,
        run_async: *run_async,
        session_id: SESSIONS[*session].to_owned(),
        created_at: now,
        updated_at: now,
    }
}

/// Runs `op` on the store at `now`.
fn apply_store(store: &dyn Store, op: &Op, now: Millis) -> Outcome {
    let fail = |e: StoreError| Failure::from(e);
    match op {
        Op::Publish { .. } => Outcome::Message(
            store
                .publish(&new_message(op, now), &store::Actor::Daemon)
                .map_err(fail),
        ),
        Op::Deliver {
            session,
            channels,
            point,
            budget,
        } => {
            let channels = channel_list(channels.as_deref());
            match budget {
                None => Outcome::Messages(
                    store
                        .deliver(SESSIONS[*session], channels.as_deref(), *point, now)
                        .map_err(fail),
                ),
                Some(n) => Outcome::Delivery(
                    store
                        .deliver_within(
                            SESSIONS[*session],
                            channels.as_deref(),
                            *point,
                            now,
                            &mut AtMost(*n),
                        )
                        .map_err(fail),
                ),
            }
        }
        Op::Read { .. } => Outcome::Views(store.read_messages(&read_query(op, now)).map_err(fail)),
        Op::Acknowledge { id, session } => Outcome::Message(
            store
                .acknowledge(*id, SESSIONS[*session], now, &store::Actor::Daemon)
                .map_err(fail),
        ),
        Op::ClearAll => Outcome::Count(
            store
                .clear_messages(&MessageScope::All, &store::Actor::Daemon, now)
                .map_err(fail),
        ),
        Op::ClearChannel { channel } => Outcome::Count(
            store
                .clear_messages(
                    &MessageScope::Channel(CHANNELS[*channel].to_owned()),
                    &store::Actor::Daemon,
                    now,
                )
                .map_err(fail),
        ),
        Op::ClearId { id } => Outcome::Count(
            store
                .clear_messages(&MessageScope::Id(*id), &store::Actor::Daemon, now)
                .map_err(fail),
        ),
        Op::Prune => Outcome::Count(store.prune_expired(now).map_err(fail)),
        Op::CountToolCall { session } => {
            Outcome::Count(store.count_tool_call(SESSIONS[*session], now).map_err(fail))
        }
        Op::CreateSchedule { .. } => Outcome::Schedule(
            store
                .create_schedule(&new_schedule(op, now), &store::Actor::Daemon)
                .map_err(fail),
        ),
        Op::Cancel { id } => Outcome::Schedule(
            store
                .cancel_schedule(*id, now, &store::Actor::Daemon)
                .map_err(fail),
        ),
        Op::FireDue => Outcome::Firings(
            store
                .fire_due(now, &plan, &store::Actor::Daemon)
                .map_err(fail),
        ),
        Op::AddReminder { .. } => Outcome::Reminder(
            store
                .add_reminder(&new_reminder(op, now), &store::Actor::Daemon)
                .map_err(fail),
        ),
        Op::ClearReminderId { id } => Outcome::Count(
            store
                .clear_reminders(&ReminderScope::Id(*id), &store::Actor::Daemon, 0)
                .map_err(fail),
        ),
        Op::ClearReminderTag { tag } => Outcome::Count(
            store
                .clear_reminders(
                    &ReminderScope::Tag(TAGS[*tag].to_owned()),
                    &store::Actor::Daemon,
                    0,
                )
                .map_err(fail),
        ),
        Op::PutCondition { replace, .. } => {
            let mode = if *replace {
                PutMode::Replace
            } else {
                PutMode::CreateOnly
            };
            Outcome::Put(
                store
                    .put_condition(&new_condition(op, now), mode, &store::Actor::Daemon)
                    .map_err(fail),
            )
        }
        Op::DeleteCondition { name } => Outcome::Deleted(
            store
                .delete_condition(CONDITION_NAMES[*name], &store::Actor::Daemon, 0)
                .map_err(fail),
        ),
        Op::ArmGate { session, for_ms } => Outcome::Done(
            store
                .arm_gate(SESSIONS[*session], now + for_ms, &store::Actor::Daemon, 0)
                .map_err(fail),
        ),
        Op::DisarmGate { session } => {
            Outcome::Done(store.disarm_gate(SESSIONS[*session]).map_err(fail))
        }
        Op::Advance { .. } => Outcome::Clock,
    }
}

/// The store's snapshot at `now` (a read that fails is reported as the mismatch it is).
fn store_snapshot(store: &dyn Store, now: Millis) -> Result<Snapshot, StoreError> {
    Ok(Snapshot {
        messages: store.read_messages(&all_query(None, now))?,
        per_session: SESSIONS
            .iter()
            .map(|s| store.read_messages(&all_query(Some(s), now)))
            .collect::<Result<_, _>>()?,
        channels: store.channels(now)?,
        tool_calls: SESSIONS
            .iter()
            .map(|s| store.tool_calls(s))
            .collect::<Result<_, _>>()?,
        schedules: store.schedules()?,
        reminders: store.reminders()?,
        conditions: store.conditions()?,
        condition_by_name: CONDITION_NAMES
            .iter()
            .map(|n| store.condition(n))
            .collect::<Result<_, _>>()?,
        gates: SESSIONS
            .iter()
            .map(|s| store.gate_open_until(s, now))
            .collect::<Result<_, _>>()?,
        unacknowledged: store.unacknowledged_alerts(&SESSIONS.map(str::to_owned), now)?,
        counts: store.counts(now)?,
        next_fire_after: store.next_fire_after(now)?,
    })
}

/// Runs `ops` (resolving generated ids against the model) on a fresh store of `backend` and
/// on the model; the first disagreement is returned with the operations so far.
fn check(backend: &dyn Backend, ops: &[GenOp]) -> Result<(), String> {
    let fixture = fresh(backend);
    let mut model = Model::new();
    let mut trace = Vec::with_capacity(ops.len());
    for generated in ops {
        let op = generated.resolve(&model);
        trace.push(op.clone());
        let now = model.now;
        let expected = model.apply(&op);
        let got = apply_store(&*fixture.store, &op, now);
        if got != expected {
            return Err(report(backend, &trace, "result", &expected, &got));
        }
        let expected = model.snapshot();
        match store_snapshot(&*fixture.store, model.now) {
            Ok(got) if got == expected => {}
            Ok(got) => return Err(report(backend, &trace, "state", &expected, &got)),
            Err(e) => {
                return Err(report(
                    backend,
                    &trace,
                    "state",
                    &expected,
                    &Failure::from(e),
                ));
            }
        }
    }
    Ok(())
}

fn report(
    backend: &dyn Backend,
    trace: &[Op],
    what: &str,
    expected: &dyn std::fmt::Debug,
    got: &dyn std::fmt::Debug,
) -> String {
    let mut text = format!(
        "the {} store and the model disagree on the {what} after these operations \
         (clock from T0 = {T0}):\n",
        backend.name()
    );
    for op in trace {
        let _ = writeln!(text, "    Op::{op:?},");
    }
    let _ = write!(text, "model:   {expected:#?}\nbackend: {got:#?}");
    text
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Proptest: random sequences of operations, shrunk to a minimal one on disagreement.
pub(crate) fn operations_agree_with_the_model(backend: &dyn Backend) {
    let config = Config {
        cases: env_number("PROPTEST_CASES", DEFAULT_CASES),
        failure_persistence: None,
        max_shrink_iters: 512,
        ..Config::default()
    };
    let max_ops = env_number("HOOKS_MCP_MODEL_OPS", DEFAULT_MAX_OPS).max(1);
    let mut runner = TestRunner::new(config);
    let strategy = proptest::collection::vec(gen_op(), 1..=max_ops);
    match runner.run(&strategy, |ops| {
        check(backend, &ops).map_err(TestCaseError::fail)
    }) {
        Ok(()) => {}
        Err(TestError::Fail(reason, _)) => panic!("{reason}"),
        Err(e) => panic!("{e}"),
    }
}

/// Runs a fixed sequence (a shrunk case kept as a regression test).
pub(crate) fn run_ops(backend: &dyn Backend, ops: &[Op]) {
    let generated: Vec<GenOp> = ops.iter().cloned().map(GenOp::Ready).collect();
    if let Err(reason) = check(backend, &generated) {
        panic!("{reason}");
    }
}

// --- Regression cases ----------------------------------------------------------------------
//
// Sequences the model test found or that pin a boundary it relies on; each runs on both
// backends (listed in `store_suite.rs`). A failure report's operations paste in verbatim below
// these imports.
#[allow(unused_imports)]
use self::regression_names::*;

/// The variant names a failure report prints, in scope for pasting.
mod regression_names {
    #![allow(unused_imports)]
    pub(crate) use super::TriggerKind::*;
    pub(crate) use store::DeliveryPoint::*;
    pub(crate) use store::ScriptLanguage::*;
    pub(crate) use store::Severity::*;
    pub(crate) use store::Step::*;
}

/// A message whose expiry equals the clock is expired: never read, delivered or acknowledged,
/// and pruned; a schedule due exactly now fires now.
pub(crate) fn model_boundaries_at_the_instant_of_expiry(b: &dyn Backend) {
    run_ops(
        b,
        &[
            Op::Publish {
                channel: 0,
                body: 0,
                severity: Critical,
                ttl_ms: 500,
            },
            Op::Publish {
                channel: 1,
                body: 2,
                severity: Info,
                ttl_ms: 0,
            },
            Op::CreateSchedule {
                kind: Every(1),
                channel: 2,
                severity: Alert,
                ttl_seconds: 1,
                first_in_ms: 500,
                named: true,
            },
            Op::Advance { ms: 500 },
            Op::Deliver {
                session: 0,
                channels: None,
                point: ToolCall,
                budget: None,
            },
            Op::Acknowledge { id: 1, session: 0 },
            Op::FireDue,
            Op::Advance { ms: 2_000 },
            Op::FireDue,
            Op::Prune,
        ],
    );
}

/// A busy channel: a bounded delivery reads a session's info messages a page at a time and
/// counts the rest, from the counters for a session new to the channel and above its mark for
/// one that was there before; a refusal during the urgent messages counts every channel.
pub(crate) fn model_pages_and_counts_a_busy_channel(b: &dyn Backend) {
    let info = |channel| Op::Publish {
        channel,
        body: 1,
        severity: Info,
        ttl_ms: 10_000,
    };
    let mut ops: Vec<Op> = (0..40).map(|i| info(i % 2)).collect();
    ops.insert(
        17,
        Op::Publish {
            channel: 0,
            body: 0,
            severity: Alert,
            ttl_ms: 10_000,
        },
    );
    ops.push(Op::Acknowledge { id: 3, session: 0 });
    ops.push(Op::Deliver {
        session: 0,
        channels: None,
        point: Prompt,
        budget: Some(25),
    });
    ops.extend((0..30).map(|_| info(0)));
    ops.push(Op::Publish {
        channel: 1,
        body: 2,
        severity: Critical,
        ttl_ms: 500,
    });
    ops.push(Op::Deliver {
        session: 0,
        channels: None,
        point: Prompt,
        budget: Some(19),
    });
    ops.push(Op::Deliver {
        session: 1,
        channels: Some(vec![0, 1]),
        point: Prompt,
        budget: Some(1),
    });
    ops.push(Op::Advance { ms: 1_000 });
    ops.push(Op::Deliver {
        session: 1,
        channels: None,
        point: Prompt,
        budget: Some(0),
    });
    ops.push(Op::Deliver {
        session: 2,
        channels: None,
        point: ToolCall,
        budget: Some(3),
    });
    run_ops(b, &ops);
}
