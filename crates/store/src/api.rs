//! The domain API: types and one trait per tool category.
//!
//! Timestamps are Unix milliseconds ([`Millis`]); callers pass `now` so that one call sees one
//! instant and tests control time. Every method is one atomic operation: a failure leaves nothing
//! half-written. Every method that changes what callers see takes the [`Actor`] making the
//! change and writes its [`AuditEntry`] in the same transaction: a change without its entry, or
//! an entry without its change, cannot exist.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::StoreError;

/// Unix time in milliseconds.
pub type Millis = i64;

/// Shorthand for store results.
pub type StoreResult<T> = Result<T, StoreError>;

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The lower-case name stored and shown for this value.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        impl FromStr for $name {
            type Err = String;

            /// Parses the lower-case name, ignoring case; the error lists the valid names.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $name::ALL.iter().copied().find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
                    .ok_or_else(|| format!(
                        concat!("unknown ", $what, " `{}`; expected one of: {}"),
                        s,
                        $name::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
                    ))
            }
        }
    };
}

string_enum!(
    /// How insistently a broadcast is delivered.
    Severity, "severity" {
        /// Delivered to each session once.
        Info => "info",
        /// Delivered on every prompt until it expires or the session acknowledges it.
        Alert => "alert",
        /// Delivered on every prompt and before every tool call until expiry or acknowledgement.
        Critical => "critical",
    }
);

/// The moment a hook asks for deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryPoint {
    /// The operator submitted a prompt (`UserPromptSubmit`).
    Prompt,
    /// The agent is about to call a tool (`PreToolUse`).
    ToolCall,
    /// A context starts without the session's earlier deliveries: a subagent starts
    /// (`SubagentStart`), or a session resumes, is cleared or compacted (`SessionStart`). The
    /// `alert` and `critical` messages it has not acknowledged; no `info`.
    Start,
}

impl Severity {
    /// Whether an unexpired message of this severity is delivered to a session at `point`, given
    /// whether it was delivered to that session before and whether the session acknowledged it.
    ///
    /// `info` reaches a session once (at a prompt); `alert` every prompt until acknowledged;
    /// `critical` every prompt and before every tool call until acknowledged; both again when
    /// a context starts without them ([`DeliveryPoint::Start`]).
    pub fn is_due(self, point: DeliveryPoint, delivered_before: bool, acknowledged: bool) -> bool {
        if acknowledged {
            return false;
        }
        match (self, point) {
            (Severity::Info, DeliveryPoint::Prompt) => !delivered_before,
            (Severity::Info, DeliveryPoint::ToolCall | DeliveryPoint::Start) => false,
            (Severity::Alert, DeliveryPoint::Prompt | DeliveryPoint::Start) => true,
            (Severity::Alert, DeliveryPoint::ToolCall) => false,
            (Severity::Critical, _) => true,
        }
    }
}

/// A broadcast to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// Channel name (validated by the caller).
    pub channel: String,
    /// Message text.
    pub body: String,
    /// Delivery severity.
    pub severity: Severity,
    /// Publication time.
    pub created_at: Millis,
    /// After this instant the message is never delivered and may be pruned.
    pub expires_at: Millis,
    /// The one session it is for (`None`: every session subscribed to the channel).
    pub target: Option<String>,
}

/// A stored broadcast.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// Store-assigned id.
    pub id: i64,
    /// Channel name.
    pub channel: String,
    /// Message text.
    pub body: String,
    /// Delivery severity.
    pub severity: Severity,
    /// Publication time.
    pub created_at: Millis,
    /// Expiry time.
    pub expires_at: Millis,
    /// The one session it is for (`None`: a broadcast to the channel's subscribers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A channel and its count of active (unexpired) messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSummary {
    /// Channel name.
    pub channel: String,
    /// Unexpired messages on it.
    pub active: u64,
    /// Publication time of its newest unexpired message.
    pub latest_at: Millis,
}

/// Which active messages to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageQuery {
    /// Only this channel, or every channel.
    pub channel: Option<String>,
    /// Mark (and optionally hide) what this session acknowledged.
    pub session_id: Option<String>,
    /// With a session: include messages it acknowledged.
    pub include_acknowledged: bool,
    /// At most this many, newest first.
    pub limit: u32,
    /// Messages expired at this instant are left out.
    pub now: Millis,
    /// Only messages older than this one (the last of a previous page), for paging.
    pub before: Option<MessageCursor>,
}

/// A place in the newest-first order of messages: a message's publication time and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageCursor {
    /// The message's publication time.
    pub created_at: Millis,
    /// Its id (ties on the time are broken by id).
    pub id: i64,
}

impl From<&Message> for MessageCursor {
    fn from(message: &Message) -> Self {
        MessageCursor {
            created_at: message.created_at,
            id: message.id,
        }
    }
}

/// A message as one session sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageView {
    /// The message.
    pub message: Message,
    /// Whether the query's session acknowledged it (false without a session).
    pub acknowledged: bool,
}

/// Which messages to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageScope {
    /// Every message.
    All,
    /// Every message of one channel.
    Channel(String),
    /// One message.
    Id(i64),
}

/// Broadcast messages.
pub trait ChannelStore {
    /// Stores a message and returns it with its id.
    fn publish(&self, message: &NewMessage, actor: &Actor) -> StoreResult<Message>;
    /// Channels with at least one active message at `now`, by name.
    fn channels(&self, now: Millis) -> StoreResult<Vec<ChannelSummary>>;
    /// Active messages, newest first.
    fn read_messages(&self, query: &MessageQuery) -> StoreResult<Vec<MessageView>>;
    /// One message by id, unless it expired at `now` (or never existed).
    fn message(&self, id: i64, now: Millis) -> StoreResult<Option<Message>>;
    /// Records that `session_id` acknowledged the message, so it is no longer delivered to that
    /// session. Acknowledging twice is fine.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] when no active message has that id.
    fn acknowledge(
        &self,
        message_id: i64,
        session_id: &str,
        now: Millis,
        actor: &Actor,
    ) -> StoreResult<Message>;
    /// Deletes messages (with their acknowledgements and delivery records); returns how many
    /// of them were unexpired at `now` (expired ones, which no other call shows, go uncounted).
    fn clear_messages(&self, scope: &MessageScope, actor: &Actor, now: Millis) -> StoreResult<u64>;
    /// Deletes messages expired at `now`; returns how many.
    fn prune_expired(&self, now: Millis) -> StoreResult<u64>;
    /// When the next message expires after `now` (`None`: no message is unexpired): what the
    /// channels' resources show changes then without any write (one index probe).
    fn next_expiry(&self, now: Millis) -> StoreResult<Option<Millis>>;
    /// Every message due for `session_id` at `point` on `channels` (`None`: every channel),
    /// oldest first, by [`Severity::is_due`]: [`ChannelStore::deliver_within`] admitting
    /// everything.
    fn deliver(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        point: DeliveryPoint,
        now: Millis,
    ) -> StoreResult<Vec<Message>> {
        let delivery =
            self.deliver_within(session_id, channels, point, now, &mut crate::Unbounded)?;
        let mut shown = delivery.shown;
        shown.sort_by_key(|m| (m.created_at, m.id));
        Ok(shown)
    }
    /// The messages due for `session_id` at `point` on `channels` (`None`: every channel), by
    /// [`Severity::is_due`], bounded by `admission`: they are offered to it in delivery order
    /// ([`crate::delivery_order`]) and the run it admits is shown; the rest is counted per
    /// channel ([`crate::Delivery`]). An `info` message left out is not due again for the
    /// session, as if it had been shown. Records the shown messages' deliveries (and which
    /// `info` messages the session was shown or told of) in the same transaction, so concurrent
    /// hooks of one session deliver an `info` message once.
    ///
    /// Its cost follows what is new for the session, not the store's size: a session that was
    /// shown everything reads the per-channel counters, its marks and its unacknowledged
    /// `alert` and `critical` messages, and writes nothing; a new session reads its channels'
    /// newest messages as far as the admission takes them, and the counters for the rest.
    fn deliver_within(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        point: DeliveryPoint,
        now: Millis,
        admission: &mut dyn crate::Admission,
    ) -> StoreResult<crate::Delivery>;
    /// What a session's `Stop` shows it: the unexpired `alert` and `critical` messages for it
    /// (on `channels`, or to it alone) published after its current turn started (its last
    /// prompt, else its first sighting), that it was never shown and did not acknowledge;
    /// bounded by `admission` as [`ChannelStore::deliver_within`]. The shown ones are recorded
    /// as delivered in the same transaction, so a message is shown at a `Stop` once at most.
    /// A session the store never saw gets nothing. Reads only, unless something is shown.
    fn deliver_at_stop(
        &self,
        session_id: &str,
        channels: Option<&[String]>,
        now: Millis,
        admission: &mut dyn crate::Admission,
    ) -> StoreResult<crate::Delivery>;
}

/// A recurring reminder to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReminder {
    /// Reminder text.
    pub message: String,
    /// Due on calls `cadence`, `2 * cadence`, ... of each session (at least 1).
    pub cadence: u32,
    /// Optional label for clearing a group.
    pub tag: Option<String>,
    /// Creation time.
    pub created_at: Millis,
}

/// A stored reminder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reminder {
    /// Store-assigned id.
    pub id: i64,
    /// Reminder text.
    pub message: String,
    /// Cadence in tool calls.
    pub cadence: u32,
    /// Optional label.
    pub tag: Option<String>,
    /// Creation time.
    pub created_at: Millis,
}

impl Reminder {
    /// Whether the reminder is due on a session's `call_number`-th tool call (1-based).
    pub fn is_due_on(&self, call_number: u64) -> bool {
        self.cadence > 0 && call_number > 0 && call_number.is_multiple_of(u64::from(self.cadence))
    }
}

/// Which reminders to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReminderScope {
    /// One reminder.
    Id(i64),
    /// Every reminder with this tag.
    Tag(String),
}

/// Recurring reminders and per-session tool-call counters.
pub trait EnforcementStore {
    /// Stores a reminder.
    fn add_reminder(&self, reminder: &NewReminder, actor: &Actor) -> StoreResult<Reminder>;
    /// Every reminder, by id.
    fn reminders(&self) -> StoreResult<Vec<Reminder>>;
    /// Deletes reminders; returns how many.
    fn clear_reminders(
        &self,
        scope: &ReminderScope,
        actor: &Actor,
        now: Millis,
    ) -> StoreResult<u64>;
    /// Counts one tool call of `session_id` and returns its number (1 for the first call).
    /// Atomic: concurrent calls get distinct numbers.
    fn count_tool_call(&self, session_id: &str, now: Millis) -> StoreResult<u64>;
    /// How many tool calls `session_id` made so far.
    fn tool_calls(&self, session_id: &str) -> StoreResult<u64>;
}

string_enum!(
    /// When a condition runs relative to the tool call.
    Step, "step" {
        /// Before the call (may deny or rewrite it).
        Pre => "pre",
        /// After the call (may add context or replace the output).
        Post => "post",
    }
);

string_enum!(
    /// The interpreter of a condition's script.
    ScriptLanguage, "language" {
        /// `bash -c`.
        Bash => "bash",
        /// `python3 -c`.
        Python => "python",
    }
);

/// An operator script run on matching tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// Unique name, `^[A-Za-z0-9_]+$`.
    pub name: String,
    /// Before or after the call.
    pub step: Step,
    /// Which calls it runs on (validated by the caller).
    pub matcher: String,
    /// The script text.
    pub script: String,
    /// Its interpreter.
    pub language: ScriptLanguage,
    /// Run detached, without waiting for the result.
    pub run_async: bool,
    /// The session that set it.
    pub session_id: String,
    /// First creation time.
    pub created_at: Millis,
    /// Last replacement time.
    pub updated_at: Millis,
}

/// Whether [`ConditionStore::put_condition`] may overwrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMode {
    /// Fail with [`StoreError::Conflict`] if the name exists.
    CreateOnly,
    /// Replace an existing condition of that name (keeping its `created_at`).
    Replace,
}

/// What [`ConditionStore::put_condition`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// A new condition.
    Created,
    /// An existing one was replaced.
    Replaced,
}

/// Conditions and the per-session gate that guards changing them.
pub trait ConditionStore {
    /// Stores a condition.
    fn put_condition(
        &self,
        condition: &Condition,
        mode: PutMode,
        actor: &Actor,
    ) -> StoreResult<PutOutcome>;
    /// Every condition, by name.
    fn conditions(&self) -> StoreResult<Vec<Condition>>;
    /// The condition with this name.
    fn condition(&self, name: &str) -> StoreResult<Option<Condition>>;
    /// Deletes a condition; `false` if there was none.
    fn delete_condition(&self, name: &str, actor: &Actor, now: Millis) -> StoreResult<bool>;
    /// Opens the gate for `session_id` until `until`.
    fn arm_gate(
        &self,
        session_id: &str,
        until: Millis,
        actor: &Actor,
        now: Millis,
    ) -> StoreResult<()>;
    /// Closes the gate for `session_id`.
    fn disarm_gate(&self, session_id: &str) -> StoreResult<()>;
    /// When the gate of `session_id` closes, if it is open at `now`.
    fn gate_open_until(&self, session_id: &str, now: Millis) -> StoreResult<Option<Millis>>;
}

/// When a schedule fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// Once, at this instant.
    At(Millis),
    /// Every this many seconds.
    Every(u32),
    /// On a 5-field cron expression, in UTC.
    Cron(String),
}

string_enum!(
    /// Whether a schedule still fires.
    ScheduleStatus, "status" {
        /// Will fire at `next_fire_at`.
        Active => "active",
        /// A one-shot that fired.
        Completed => "completed",
        /// Cancelled by a caller.
        Cancelled => "cancelled",
    }
);

/// A schedule to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    /// Optional label.
    pub name: Option<String>,
    /// Channel to publish to.
    pub channel: String,
    /// Message to publish.
    pub message: String,
    /// Severity of each publication.
    pub severity: Severity,
    /// Lifetime of each publication.
    pub ttl_seconds: u32,
    /// When it fires.
    pub trigger: Trigger,
    /// Its first firing time.
    pub next_fire_at: Millis,
    /// Creation time.
    pub created_at: Millis,
}

/// A stored schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Store-assigned id.
    pub id: i64,
    /// Optional label.
    pub name: Option<String>,
    /// Channel to publish to.
    pub channel: String,
    /// Message to publish.
    pub message: String,
    /// Severity of each publication.
    pub severity: Severity,
    /// Lifetime of each publication.
    pub ttl_seconds: u32,
    /// When it fires.
    pub trigger: Trigger,
    /// Next firing time (`None` once completed or cancelled).
    pub next_fire_at: Option<Millis>,
    /// Last time it fired.
    pub last_fired_at: Option<Millis>,
    /// How many times it fired.
    pub fire_count: u64,
    /// Occurrences skipped because the process was down (recurring schedules fire once after
    /// downtime, never a burst of catch-up).
    pub skipped_count: u64,
    /// Whether it still fires.
    pub status: ScheduleStatus,
    /// Creation time.
    pub created_at: Millis,
}

/// The plan for a schedule after it fires: computed by the caller (who knows cron).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextFire {
    /// The next firing time after `now`; `None` completes the schedule.
    pub next_fire_at: Option<Millis>,
    /// Occurrences between the one fired and `now` that are skipped.
    pub skipped: u64,
}

/// One recorded firing of a schedule, as [`ScheduleStore::recent_firings`] lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FiringRecord {
    /// The schedule that fired.
    pub schedule_id: i64,
    /// The occurrence it fired for.
    pub scheduled_for: Millis,
    /// When it fired (later than `scheduled_for` by the scheduler's lag).
    pub fired_at: Millis,
    /// The message it published (`None` once that message was cleared or pruned).
    pub message_id: Option<i64>,
    /// Occurrences skipped in this firing.
    pub skipped: u64,
}

/// One publication made by [`ScheduleStore::fire_due`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Firing {
    /// The schedule that fired.
    pub schedule_id: i64,
    /// The occurrence it fired for.
    pub scheduled_for: Millis,
    /// The message it published.
    pub message: Message,
    /// Occurrences skipped in this firing.
    pub skipped: u64,
}

/// Timed publications.
pub trait ScheduleStore {
    /// Stores a schedule.
    fn create_schedule(&self, schedule: &NewSchedule, actor: &Actor) -> StoreResult<Schedule>;
    /// Every schedule, by id.
    fn schedules(&self) -> StoreResult<Vec<Schedule>>;
    /// Cancels an active schedule and returns it.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown id; [`StoreError::Conflict`] when it is not
    /// active.
    fn cancel_schedule(&self, id: i64, now: Millis, actor: &Actor) -> StoreResult<Schedule>;
    /// Fires every active schedule whose `next_fire_at <= now`: publishes its message and
    /// advances it by `plan`, all in one transaction that claims the schedules first, so each
    /// occurrence fires exactly once even when several processes call this at the same moment.
    fn fire_due(
        &self,
        now: Millis,
        plan: &dyn Fn(&Schedule, Millis) -> NextFire,
        actor: &Actor,
    ) -> StoreResult<Vec<Firing>>;
    /// The most recent firings (skips included), newest first: of one schedule, or of all.
    fn recent_firings(
        &self,
        schedule_id: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<FiringRecord>>;
    /// The earliest `next_fire_at` later than `now` among active schedules: when a process
    /// that waits for changes (the daemon) next has something to fire. The default reads every
    /// schedule; a backend answers from its index.
    fn next_fire_after(&self, now: Millis) -> StoreResult<Option<Millis>> {
        Ok(self
            .schedules()?
            .iter()
            .filter(|s| s.status == ScheduleStatus::Active)
            .filter_map(|s| s.next_fire_at)
            .filter(|&at| at > now)
            .min())
    }
}

/// What [`StoreAdmin::verify`] checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// The schema version found.
    pub schema_version: u32,
    /// The tables found present.
    pub tables: Vec<&'static str>,
}

/// Counts of live records, for `/health?level=full` and `status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Unexpired broadcasts.
    pub active_messages: u64,
    /// Reminders.
    pub reminders: u64,
    /// Conditions.
    pub conditions: u64,
    /// Active schedules.
    pub active_schedules: u64,
}

/// A change another process made, as a [`ChangeFeed`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A broadcast was published (by a caller or by a schedule firing), with its id.
    Message(i64),
    /// A schedule was created or cancelled, with its id.
    Schedule(i64),
    /// Broadcasts were cleared or pruned, with how many.
    Cleared(i64),
    /// Something was committed, not said what (SQLite: its files were written and its data
    /// version moved): anything may have changed.
    Written,
}

/// Changes pushed by the database, so that a long-running process (the daemon) waits for them
/// instead of polling. A hint only: whoever reacts reads the store for the truth.
pub trait ChangeFeed: Send {
    /// Waits up to `timeout` for the next change; `None` when none arrived in time.
    ///
    /// # Errors
    /// Any error means the feed is lost: open a new one ([`StoreError::Unavailable`] when
    /// PostgreSQL's connection dropped; on SQLite, [`StoreError::Io`] when the watch ended or
    /// the database file was replaced, else what SQLite said).
    fn wait(&mut self, timeout: std::time::Duration) -> StoreResult<Option<Change>>;
}

/// Checks and statistics over the whole store.
pub trait StoreAdmin {
    /// Checks the schema version, the required tables and the database's integrity.
    ///
    /// # Errors
    /// [`StoreError::NewerSchema`], [`StoreError::MissingTable`] or [`StoreError::Corrupt`],
    /// each saying how to repair.
    fn verify(&self) -> StoreResult<VerifyReport>;
    /// A cheap round trip to the database.
    fn ping(&self) -> StoreResult<()>;
    /// Counts of live records at `now`.
    fn counts(&self, now: Millis) -> StoreResult<Counts>;
    /// Where the store is, for logs (a path or a URL; never credentials).
    fn describe(&self) -> String;
    /// A feed of the changes other processes make, where the backend can wake a waiting caller
    /// (PostgreSQL's LISTEN/NOTIFY; SQLite's files watched on Linux); `None` where callers
    /// must poll (the default).
    ///
    /// # Errors
    /// [`StoreError::NoWatch`] where a feed exists but cannot be had now (callers poll); any
    /// other error may pass (callers retry).
    fn changes(&self) -> StoreResult<Option<Box<dyn ChangeFeed>>> {
        Ok(None)
    }
    /// A number that changes whenever the store's contents may have changed (any connection's
    /// commit, this process's included), read without touching a table: SQLite's
    /// `PRAGMA data_version` on a connection of its own; PostgreSQL: a count of the
    /// notifications (publications, clears, schedule changes) a listening connection of its
    /// own received, opened on the first call, and `None` while that connection is down.
    /// `None` where the backend has none (the default): watchers then use a timer.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the database cannot be reached.
    fn change_version(&self) -> StoreResult<Option<u64>> {
        Ok(None)
    }
    /// Whether reads can be answered inside [`crate::no_wait::try_without_waiting`] (SQLite);
    /// where not (PostgreSQL, the default), callers need not try.
    fn reads_without_waiting(&self) -> bool {
        false
    }
    /// Runs `work`, which makes several store calls in a row (a hook event), as one unit: on
    /// SQLite the calls it makes on this thread share one transaction, immediate when `writes`
    /// (the write lock taken once, one commit; each write still atomic on its own, in a
    /// savepoint), else deferred (one snapshot for the reads; the first write ends it and runs
    /// as it would outside the unit). Other threads' calls wait for the unit to end. Where the
    /// backend has no such unit (PostgreSQL, the default) the calls simply run. Every call
    /// answers as it would outside a unit; when the unit cannot begin (the write lock stays
    /// taken past the busy timeout) the calls run one by one.
    ///
    /// # Errors
    /// The unit's commit failed: the writes made in it are undone.
    fn in_one_transaction(&self, writes: bool, work: &mut dyn FnMut()) -> StoreResult<()> {
        let _ = writes;
        work();
        Ok(())
    }
    /// What closing the store does that outlives the process, for a process about to exit
    /// without closing it ([`StoreHandle::close_at_exit`]): on SQLite, a long WAL is
    /// checkpointed and truncated; nothing where closing leaves nothing behind (the default).
    fn prepare_exit(&self) {}
}

/// Who made a change, as the audit trail records it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Actor {
    /// An agent session (tools and hooks), by its session id.
    Session(String),
    /// The operator's terminal commands, by the operator's user name.
    Operator(String),
    /// A client of the HTTP API, by the label of its token.
    Token(String),
    /// The network daemon's own work (its scheduler tick).
    Daemon,
    /// A tool call that named no session (a network client that passed no `session_id`).
    Unknown,
}

impl Actor {
    /// The kind, as stored: `session`, `operator`, `token`, `daemon` or `unknown`.
    pub fn kind(&self) -> &'static str {
        match self {
            Actor::Session(_) => "session",
            Actor::Operator(_) => "operator",
            Actor::Token(_) => "token",
            Actor::Daemon => "daemon",
            Actor::Unknown => "unknown",
        }
    }

    /// The name within the kind (empty for `daemon` and `unknown`).
    pub fn name(&self) -> &str {
        match self {
            Actor::Session(n) | Actor::Operator(n) | Actor::Token(n) => n,
            Actor::Daemon | Actor::Unknown => "",
        }
    }

    /// The actor stored as `kind` and `name`.
    ///
    /// # Errors
    /// [`StoreError::InvalidData`] for an unknown kind.
    pub fn from_parts(kind: &str, name: String) -> StoreResult<Actor> {
        Ok(match kind {
            "session" => Actor::Session(name),
            "operator" => Actor::Operator(name),
            "token" => Actor::Token(name),
            "daemon" => Actor::Daemon,
            "unknown" => Actor::Unknown,
            other => {
                return Err(StoreError::InvalidData(format!(
                    "unknown audit actor kind `{other}`"
                )));
            }
        })
    }
}

impl Actor {
    /// The actor of a tool call: the one the caller put in the call's extensions (the operator
    /// CLI, the HTTP API), else the acting session (`explicit`, else the session policy's
    /// fallback), else [`Actor::Unknown`].
    pub fn of_call(ctx: &catalogue::CallContext<'_>, explicit: Option<&str>) -> Actor {
        if let Ok(actor) = ctx.service::<Actor>() {
            return actor.clone();
        }
        match ctx.session_id(explicit) {
            Ok(id) => Actor::Session(id),
            Err(_) => Actor::Unknown,
        }
    }
}

impl fmt::Display for Actor {
    /// `session:abc`, `operator:alice`, `token:ci`, `daemon`, `unknown`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Daemon | Actor::Unknown => f.write_str(self.kind()),
            _ => write!(f, "{}:{}", self.kind(), self.name()),
        }
    }
}

string_enum!(
    /// What an audit entry records.
    AuditAction, "audit action" {
        /// A broadcast was published (subject: the message id).
        Publish => "publish",
        /// Broadcasts were deleted (subject: `all`, `channel:NAME` or `id:N`).
        Clear => "clear",
        /// A session acknowledged a broadcast (subject: the message id).
        Acknowledge => "acknowledge",
        /// A reminder was set (subject: its id).
        ReminderSet => "reminder_set",
        /// Reminders were cleared (subject: `id:N` or `tag:TAG`).
        ReminderClear => "reminder_clear",
        /// A condition was set or replaced (subject: its name; the script's hash, and the old
        /// one on replace).
        ConditionSet => "condition_set",
        /// A condition was removed (subject: its name).
        ConditionClear => "condition_clear",
        /// A schedule was created (subject: its id).
        ScheduleCreate => "schedule_create",
        /// A schedule was cancelled (subject: its id).
        ScheduleCancel => "schedule_cancel",
        /// A schedule fired and published (subject: its id; the message id in the detail).
        ScheduleFire => "schedule_fire",
        /// The conditions gate was opened for a session (subject: the session id).
        GateOpen => "gate_open",
    }
);

/// One recorded change.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AuditEntry {
    /// Store-assigned, increasing: the cursor for paging ([`AuditQuery::after_id`]).
    pub id: i64,
    /// When the change was made.
    pub at: Millis,
    /// Who made it.
    pub actor: Actor,
    /// What kind of change.
    pub action: AuditAction,
    /// What it changed (see [`AuditAction`]).
    pub subject: String,
    /// The change's particulars, a JSON object (channel, severity, script hashes...).
    pub detail: serde_json::Value,
}

/// Which audit entries to read: oldest first, one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AuditQuery {
    /// Only entries made at or after this instant.
    pub since: Option<Millis>,
    /// Only entries after this id: the last id of the previous page.
    pub after_id: Option<i64>,
    /// At most this many.
    pub limit: u32,
}

/// The audit trail: every change, with who made it and when.
pub trait AuditStore {
    /// One page of entries, oldest first (by id).
    fn audit(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>>;
    /// At most `limit` entries older than `before_id` (every entry when `None`), newest first.
    fn recent_audit(&self, before_id: Option<i64>, limit: u32) -> StoreResult<Vec<AuditEntry>>;
    /// Deletes entries made before `before`; returns how many.
    fn prune_audit(&self, before: Millis) -> StoreResult<u64>;
}

/// The SHA-256 of a condition's script, in lower-case hex, as audit entries record it.
pub fn script_hash(script: &str) -> String {
    use sha2::Digest;
    use std::fmt::Write;
    let digest = sha2::Sha256::digest(script.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

string_enum!(
    /// How a session last reached the store.
    Transport, "transport" {
        /// An MCP tool call over stdio (one server process per session).
        Stdio => "stdio",
        /// An MCP tool call over streamable HTTP (the network daemon).
        StreamableHttp => "streamable-http",
        /// An MCP tool call over the legacy SSE transport (the network daemon).
        Sse => "sse",
        /// A hook event (command or HTTP hook).
        Hook => "hook",
    }
);

/// The channels a session receives, as its hooks report them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subscribed {
    /// Every channel.
    All,
    /// These channels (`global` included).
    Channels(Vec<String>),
}

impl Subscribed {
    /// Whether a session with these subscriptions receives `channel`.
    pub fn receives(&self, channel: &str) -> bool {
        match self {
            Subscribed::All => true,
            Subscribed::Channels(list) => {
                channel == crate::rules::GLOBAL_CHANNEL || list.iter().any(|c| c == channel)
            }
        }
    }
}

/// What the store heard of a session at one moment: recorded by the hook and by tool calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// The session.
    pub session_id: String,
    /// When.
    pub at: Millis,
    /// The event (`SessionStart`, `PreToolUse`...) or `tools/call`.
    pub event: String,
    /// How it reached the store.
    pub transport: Transport,
    /// Its working directory, when the event said (hook payloads do).
    pub cwd: Option<String>,
    /// Its subscriptions, when the caller knows them (`None` keeps what was recorded).
    pub subscriptions: Option<Subscribed>,
}

/// A session's tool-call count after [`SessionStore::count_sighted_call`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallCount {
    /// The session's tool calls, this one included.
    pub calls: u64,
    /// Whether this report counted the call: `false` for the same call reported again.
    pub first_report: bool,
}

/// A session the store heard of.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionRecord {
    /// The session id.
    pub session_id: String,
    /// When it was first seen.
    pub first_seen: Millis,
    /// When it was last seen.
    pub last_seen: Millis,
    /// The last event seen.
    pub last_event: String,
    /// How it was last reached.
    pub transport: Transport,
    /// Its working directory, from the last hook payload that had one.
    pub cwd: Option<String>,
    /// Its subscriptions, if a hook reported them.
    pub subscriptions: Option<Subscribed>,
    /// The tool calls its hooks counted.
    pub tool_calls: u64,
    /// When it ended (`SessionEnd`), unless an event came after.
    #[serde(default)]
    pub ended_at: Option<Millis>,
    /// The session it works for, when it is a subagent's recipient.
    #[serde(default)]
    pub parent_id: Option<String>,
}

/// Which sessions to list: most recently seen first, one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionQuery {
    /// Only sessions seen at or after this instant (`None`: every recorded session).
    pub seen_since: Option<Millis>,
    /// Sessions that ended too (else only those that did not).
    #[serde(default)]
    pub include_ended: bool,
    /// Skip this many (the rows of the previous pages).
    pub offset: u32,
    /// At most this many.
    pub limit: u32,
}

/// One session in a [`DeliveryReport`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionDelivery {
    /// The session.
    pub session_id: String,
    /// When the message was first delivered to it.
    pub delivered_at: Option<Millis>,
    /// When it acknowledged the message.
    pub acknowledged_at: Option<Millis>,
    /// Whether it is live (seen within the report's window).
    pub live: bool,
    /// Whether its recorded subscriptions include the message's channel (`false` when unknown).
    pub subscribed: bool,
}

/// Who received one message: deliveries and acknowledgements against the live sessions
/// subscribed to its channel.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeliveryReport {
    /// The message.
    pub message: Message,
    /// Live sessions subscribed to its channel.
    pub live_subscribed: u64,
    /// Of those, how many it was delivered to.
    pub delivered_live: u64,
    /// Sessions it was delivered to, live or not.
    pub delivered: u64,
    /// Sessions that acknowledged it.
    pub acknowledged: u64,
    /// Of the live subscribed sessions, how many acknowledged it.
    pub acknowledged_live: u64,
    /// One page of the sessions concerned (delivered, acknowledged, or live and subscribed),
    /// by session id.
    pub sessions: Vec<SessionDelivery>,
}

/// Which report to build.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReportQuery {
    /// The message.
    pub message_id: i64,
    /// Sessions seen at or after this instant are live.
    pub live_since: Millis,
    /// Only sessions after this id in the page (the last id of the previous page).
    pub after_session: Option<String>,
    /// At most this many sessions in the page.
    pub limit: u32,
}

/// The sessions the store hears of, and who received what.
pub trait SessionStore {
    /// Records a sighting outside a hook's counted tool call (`SessionStart`, a prompt, an MCP
    /// tool call): first seen on the first one, last seen, event and transport on every one,
    /// the working directory and subscriptions when given. A sighting later than a session's
    /// end revives it (one from before the end, recorded late, does not), and a
    /// `UserPromptSubmit` one starts its turn (see
    /// [`ChannelStore::deliver_at_stop`]).
    fn record_sighting(&self, sighting: &Sighting) -> StoreResult<()>;
    /// Counts one tool call of the sighting's session, as
    /// [`EnforcementStore::count_tool_call`], and records the sighting in the same transaction;
    /// returns the session's count. A `call_id` (the client's id of the tool call) among those
    /// of the session's recent counted calls (some twenty) is the same call reported again (a
    /// client running two of hooks-mcp's hook registrations, the reports of parallel calls
    /// interleaved): it is not counted twice, and the answer says so
    /// ([`CallCount::first_report`]). An id with white space in it is not remembered.
    fn count_sighted_call(
        &self,
        sighting: &Sighting,
        call_id: Option<&str>,
    ) -> StoreResult<CallCount>;
    /// One page of sessions, most recently seen first.
    fn sessions(&self, query: &SessionQuery) -> StoreResult<Vec<SessionRecord>>;
    /// How many sessions were seen at or after `seen_since` and did not end.
    fn count_sessions(&self, seen_since: Millis) -> StoreResult<u64>;
    /// Records that `session_id` ended at `at` (`SessionEnd`), and with it the subagents'
    /// recipients that work for it; a session never seen is recorded as ended. A later
    /// sighting of the session revives it. Whether the session was live until now.
    fn end_session(&self, session_id: &str, at: Millis) -> StoreResult<bool>;
    /// Records a sighting of a subagent's recipient, `sighting.session_id`, working for
    /// `parent_id` (as [`SessionStore::record_sighting`], the parent noted).
    fn record_subagent(&self, sighting: &Sighting, parent_id: &str) -> StoreResult<()>;
    /// Deletes the records of sessions last seen before `before`; returns how many.
    fn prune_sessions(&self, before: Millis) -> StoreResult<u64>;
    /// Who received a message; `None` when no message has that id.
    fn delivery_report(&self, query: &ReportQuery) -> StoreResult<Option<DeliveryReport>>;
    /// For each of `session_ids`, how many unexpired alert and critical messages were delivered
    /// to it and not acknowledged by it at `now`; sessions with none are left out.
    fn unacknowledged_alerts(
        &self,
        session_ids: &[String],
        now: Millis,
    ) -> StoreResult<Vec<(String, u64)>>;
}

/// A key that signs what any daemon of one store hands out and every other must accept (the
/// operator console's session cookies). Its secret never shows in `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    /// The key's id (increasing: a newer key has a larger id).
    pub id: i64,
    /// The secret bytes.
    pub secret: Vec<u8>,
    /// When it was made.
    pub created_at: Millis,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("id", &self.id)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// What [`DaemonStateStore::signing_keys`] reads and, when due, rotates.
#[derive(Clone, Copy)]
pub struct KeyRequest<'a> {
    /// What the keys sign (`console-session`).
    pub purpose: &'a str,
    /// The secret stored as the new key when one is due (drawn by the caller from the
    /// system's random source).
    pub candidate: &'a [u8],
    /// Now.
    pub now: Millis,
    /// A new key is due when the newest was made before this (or there is none).
    pub rotate_before: Millis,
    /// Keys superseded (a newer one made) before this are deleted: nothing they signed is
    /// still valid.
    pub keep_since: Millis,
}

impl fmt::Debug for KeyRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRequest")
            .field("purpose", &self.purpose)
            .field("now", &self.now)
            .field("rotate_before", &self.rotate_before)
            .field("keep_since", &self.keep_since)
            .finish_non_exhaustive()
    }
}

/// A store-wide lease that one process holds at a time, from
/// [`DaemonStateStore::try_lease`]. Dropping it gives the lease up; so does the end of the
/// process (PostgreSQL: an advisory lock on a connection of its own; SQLite: a lock on a file
/// beside the database), so a holder that dies frees it at once and no clock is involved.
pub trait Lease: Send {
    /// Whether this process still holds the lease: false once what holds it was lost (the
    /// connection to the server broke). A lease that is lost stays lost: take a new one.
    fn still_held(&mut self) -> bool;
}

/// What the network daemons of one store share besides the domain: signing keys, the
/// Streamable HTTP sessions of the 2025 revisions (so that any daemon can resume one another
/// daemon opened), and leases (so that one daemon at a time does what the store needs done
/// once, such as reporting its fleet-wide metrics). Not audited: nothing here is an
/// operator's or a session's change.
pub trait DaemonStateStore {
    /// Takes the store-wide lease `name` unless another process holds it (`None` then). It is
    /// held until the value is dropped or the process ends; at most one process of the store
    /// holds it at any time.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when what holds the lease cannot be set up (no connection
    /// to the server, the lock file cannot be opened).
    fn try_lease(&self, name: &str) -> StoreResult<Option<Box<dyn Lease>>>;
    /// The keys of `request.purpose`, newest first. In one transaction, and the same for
    /// concurrent callers: when the newest key was made before `rotate_before` (or there is
    /// none), `candidate` becomes the newest key; keys superseded before `keep_since` are
    /// deleted (so the newest is always kept).
    fn signing_keys(&self, request: &KeyRequest<'_>) -> StoreResult<Vec<SigningKey>>;
    /// Records (or replaces) what resuming session `session_id` takes (`state`, JSON).
    fn save_http_session(&self, session_id: &str, state: &str, now: Millis) -> StoreResult<()>;
    /// What resuming session `session_id` takes, if it is kept; marks it seen at `now`.
    fn http_session(&self, session_id: &str, now: Millis) -> StoreResult<Option<String>>;
    /// Forgets session `session_id` (it was ended); whether it was kept.
    fn delete_http_session(&self, session_id: &str) -> StoreResult<bool>;
    /// Forgets the sessions last seen (saved or resumed) before `before`; how many.
    fn prune_http_sessions(&self, before: Millis) -> StoreResult<u64>;
}

/// Everything a backend provides.
pub trait Store:
    ChannelStore
    + EnforcementStore
    + ConditionStore
    + ScheduleStore
    + AuditStore
    + SessionStore
    + DaemonStateStore
    + crate::PushStore
    + StoreAdmin
    + Send
    + Sync
{
}

impl<T> Store for T where
    T: ChannelStore
        + EnforcementStore
        + ConditionStore
        + ScheduleStore
        + AuditStore
        + SessionStore
        + DaemonStateStore
        + crate::PushStore
        + StoreAdmin
        + Send
        + Sync
{
}

/// A shared handle to the store, as servers put it in a tool call's extensions.
#[derive(Clone)]
pub struct StoreHandle(pub Arc<dyn Store>);

impl fmt::Debug for StoreHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StoreHandle")
            .field(&self.0.describe())
            .finish()
    }
}

impl StoreHandle {
    /// For a process about to exit (a hook): does what closing the store does that outlives
    /// the process ([`StoreAdmin::prepare_exit`]), and leaves the rest to the exit. Closing an
    /// SQLite connection frees its statements, schema and page cache one by one, which the
    /// exit does at once; the operating system releases its files and locks either way, and
    /// every commit is already written. Other handles to the same store stay usable.
    pub fn close_at_exit(self) {
        self.0.prepare_exit();
        std::mem::forget(self);
    }
}

impl std::ops::Deref for StoreHandle {
    type Target = dyn Store;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}
