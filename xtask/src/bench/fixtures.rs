//! A seeded store for tool benchmarks, and realistic valid arguments for every registered tool.

use std::sync::Arc;

use anyhow::{Context, bail};
use catalogue::{CallContext, Extensions, SessionPolicy};
use serde_json::{Value, json};
use store::{
    Condition, Millis, NewMessage, NewReminder, NewSchedule, PutMode, ScriptLanguage, Severity,
    SqliteStore, Step, StoreHandle, Trigger,
};
use tools_conditions::GateSetting;

/// The session benchmark calls act for.
pub(crate) const SESSION: &str = "bench-session";

/// Channels the seeded broadcasts use.
const CHANNELS: &[&str] = &["deploys", "reviews", "ci", "global"];

/// A fresh store in a temporary directory, seeded with a typical fleet's state (20 broadcasts
/// on 4 channels, 5 conditions, 10 reminders, 10 schedules), and the tool-call services: the
/// store, and the conditions gate switched off (as `HOOKS_MCP_CONDITIONS_GATE=off` does).
#[derive(Debug)]
pub(crate) struct ToolBench {
    _dir: tempfile::TempDir,
    store: StoreHandle,
    ext: Extensions,
    session: SessionPolicy,
}

impl ToolBench {
    /// Creates and seeds the store at `now`.
    pub(crate) fn new(now: Millis) -> anyhow::Result<ToolBench> {
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        let sqlite = SqliteStore::create(dir.path().join("state.db"))?;
        let store = StoreHandle(Arc::new(sqlite));
        seed(&store, now)?;
        let mut ext = Extensions::new();
        ext.insert(store.clone());
        ext.insert(GateSetting { enforced: false });
        Ok(ToolBench {
            _dir: dir,
            store,
            ext,
            session: SessionPolicy::Fallback(Some(SESSION.into())),
        })
    }

    /// A call context at `now` acting for [`SESSION`].
    pub(crate) fn context(&self, now: Millis) -> CallContext<'_> {
        CallContext::new(now, &self.session, &self.ext)
    }

    /// Valid arguments for iteration `i` of `tool`, creating (outside the timed call) what the
    /// call consumes: a fresh message to acknowledge or delete, a fresh condition, reminder or
    /// schedule to remove or cancel.
    ///
    /// # Errors
    /// When `tool` has no benchmark arguments yet (a new tool: add it here), or the store fails.
    pub(crate) fn args(&self, tool: &str, i: usize, now: Millis) -> anyhow::Result<Value> {
        let store = &self.store;
        Ok(match tool {
            "channel_publish" => json!({
                "channel": "deploys",
                "message": "Deploy freeze starts at 17:00 UTC; hold merges to main until then.",
                "severity": "alert",
                "ttl_seconds": 7200,
            }),
            "channel_list" => json!({}),
            "channel_read" => json!({ "limit": 20 }),
            "channel_acknowledge" | "channel_clear" => {
                let message =
                    store.publish(&message(i, Severity::Alert, now), &store::Actor::Daemon)?;
                json!({ "message_id": message.id })
            }
            "condition_set" => json!({
                "name": format!("guard_push_{i}"),
                "step": "pre",
                "matcher": "bash.git",
                "script": "case \"$TOOL_INPUT\" in *'push --force'*) echo 'no force pushes'; exit 2;; esac",
                "language": "bash",
            }),
            "condition_list" => json!({}),
            "condition_show" => json!({ "name": "baseline_0" }),
            "condition_clear" => {
                let name = format!("to_clear_{i}");
                store.put_condition(
                    &condition(&name, now),
                    PutMode::CreateOnly,
                    &store::Actor::Daemon,
                )?;
                json!({ "name": name })
            }
            "enforcement_set" => json!({
                "message": "Run the test suite before you commit.",
                "cadence": 20,
                "tag": "bench",
            }),
            "enforcement_list" => json!({}),
            "enforcement_clear" => {
                let reminder = store.add_reminder(&reminder(i, now), &store::Actor::Daemon)?;
                json!({ "enforcement_id": reminder.id })
            }
            "schedule_create" => json!({
                "channel": "standup",
                "message": "Post your status: done, next, blocked.",
                "cron": "0 9 * * 1-5",
                "name": "standup",
            }),
            "schedule_list" => json!({}),
            "schedule_cancel" => {
                let schedule = store.create_schedule(&schedule(i, now), &store::Actor::Daemon)?;
                json!({ "schedule_id": schedule.id })
            }
            other => bail!(
                "the benchmark has no arguments for tool `{other}`; add them to \
                 ToolBench::args in xtask/src/bench/fixtures.rs"
            ),
        })
    }
}

/// 20 broadcasts on 4 channels (severities in turn), 5 conditions, 10 reminders, 10 schedules.
fn seed(store: &StoreHandle, now: Millis) -> anyhow::Result<()> {
    const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Alert, Severity::Critical];
    for i in 0..20 {
        store.publish(&message(i, SEVERITIES[i % 3], now), &store::Actor::Daemon)?;
    }
    for i in 0..5 {
        store.put_condition(
            &condition(&format!("baseline_{i}"), now),
            PutMode::CreateOnly,
            &store::Actor::Daemon,
        )?;
    }
    for i in 0..10 {
        store.add_reminder(&reminder(i, now), &store::Actor::Daemon)?;
    }
    for i in 0..10 {
        store.create_schedule(&schedule(i, now), &store::Actor::Daemon)?;
    }
    Ok(())
}

/// A one-hour broadcast of `severity`, on channel `i` of [`CHANNELS`] in turn.
pub(crate) fn message(i: usize, severity: Severity, now: Millis) -> NewMessage {
    NewMessage {
        channel: CHANNELS[i % CHANNELS.len()].into(),
        body: format!("Build {i} is red on main: fix or revert before merging anything else."),
        severity,
        created_at: now,
        expires_at: now + 3_600_000,
        target: None,
    }
}

fn condition(name: &str, now: Millis) -> Condition {
    Condition {
        name: name.into(),
        step: Step::Pre,
        matcher: "bash.git".into(),
        script: "echo checked".into(),
        language: ScriptLanguage::Bash,
        run_async: false,
        session_id: SESSION.into(),
        created_at: now,
        updated_at: now,
    }
}

fn reminder(i: usize, now: Millis) -> NewReminder {
    NewReminder {
        message: format!("Reminder {i}: keep commits small and the tests green."),
        cadence: 10 + (i % 5) as u32 * 10,
        tag: Some("baseline".into()),
        created_at: now,
    }
}

fn schedule(i: usize, now: Millis) -> NewSchedule {
    NewSchedule {
        name: Some(format!("hourly-{i}")),
        channel: "ci".into(),
        message: "Hourly: check the nightly build status.".into(),
        severity: Severity::Info,
        ttl_seconds: 3600,
        trigger: Trigger::Every(3600),
        next_fire_at: now + 3_600_000,
        created_at: now,
    }
}
