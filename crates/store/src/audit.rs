//! What each change writes to the audit trail: one place for both backends, so their entries
//! cannot drift apart.

use serde_json::{Value, json};

use crate::{
    AuditAction, Condition, Message, MessageScope, NewMessage, NewSchedule, Reminder,
    ReminderScope, Trigger, script_hash,
};

/// An audit entry before the store gives it an id (the backend adds actor and time).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub(crate) action: AuditAction,
    pub(crate) subject: String,
    pub(crate) detail: Value,
}

impl Record {
    fn new(action: AuditAction, subject: impl Into<String>, detail: Value) -> Record {
        Record {
            action,
            subject: subject.into(),
            detail,
        }
    }

    /// The detail as stored (JSON text).
    pub(crate) fn detail_text(&self) -> String {
        self.detail.to_string()
    }
}

pub(crate) fn publish(message: &Message, new: &NewMessage) -> Record {
    Record::new(
        AuditAction::Publish,
        message.id.to_string(),
        json!({
            "channel": new.channel,
            "severity": new.severity.as_str(),
            "expires_at": new.expires_at,
            "body": new.body,
        }),
    )
}

pub(crate) fn clear(scope: &MessageScope, removed: u64) -> Record {
    let subject = match scope {
        MessageScope::All => "all".to_owned(),
        MessageScope::Channel(c) => format!("channel:{c}"),
        MessageScope::Id(id) => format!("id:{id}"),
    };
    Record::new(AuditAction::Clear, subject, json!({ "removed": removed }))
}

pub(crate) fn acknowledge(message: &Message, session_id: &str) -> Record {
    Record::new(
        AuditAction::Acknowledge,
        message.id.to_string(),
        json!({ "session_id": session_id, "channel": message.channel }),
    )
}

pub(crate) fn reminder_set(reminder: &Reminder) -> Record {
    Record::new(
        AuditAction::ReminderSet,
        reminder.id.to_string(),
        json!({
            "message": reminder.message,
            "cadence": reminder.cadence,
            "tag": reminder.tag,
        }),
    )
}

pub(crate) fn reminder_clear(scope: &ReminderScope, removed: u64) -> Record {
    let subject = match scope {
        ReminderScope::Id(id) => format!("id:{id}"),
        ReminderScope::Tag(tag) => format!("tag:{tag}"),
    };
    Record::new(
        AuditAction::ReminderClear,
        subject,
        json!({ "removed": removed }),
    )
}

/// `old_script`: the script replaced, if any.
pub(crate) fn condition_set(condition: &Condition, old_script: Option<&str>) -> Record {
    let mut detail = json!({
        "step": condition.step.as_str(),
        "matcher": condition.matcher,
        "language": condition.language.as_str(),
        "hash": script_hash(&condition.script),
    });
    if let (Some(old), Some(map)) = (old_script, detail.as_object_mut()) {
        map.insert("old_hash".into(), Value::from(script_hash(old)));
    }
    Record::new(AuditAction::ConditionSet, condition.name.clone(), detail)
}

pub(crate) fn condition_clear(name: &str, script: &str) -> Record {
    Record::new(
        AuditAction::ConditionClear,
        name,
        json!({ "hash": script_hash(script) }),
    )
}

pub(crate) fn schedule_create(id: i64, schedule: &NewSchedule) -> Record {
    let trigger = match &schedule.trigger {
        Trigger::At(at) => json!({ "at": at }),
        Trigger::Every(s) => json!({ "every_seconds": s }),
        Trigger::Cron(expr) => json!({ "cron": expr }),
    };
    Record::new(
        AuditAction::ScheduleCreate,
        id.to_string(),
        json!({
            "channel": schedule.channel,
            "severity": schedule.severity.as_str(),
            "trigger": trigger,
            "name": schedule.name,
        }),
    )
}

pub(crate) fn schedule_cancel(id: i64) -> Record {
    Record::new(AuditAction::ScheduleCancel, id.to_string(), json!({}))
}

pub(crate) fn schedule_fire(
    schedule_id: i64,
    scheduled_for: i64,
    message: &Message,
    skipped: u64,
) -> Record {
    Record::new(
        AuditAction::ScheduleFire,
        schedule_id.to_string(),
        json!({
            "message_id": message.id,
            "channel": message.channel,
            "scheduled_for": scheduled_for,
            "skipped": skipped,
        }),
    )
}

pub(crate) fn gate_open(session_id: &str, until: i64) -> Record {
    Record::new(AuditAction::GateOpen, session_id, json!({ "until": until }))
}
