//! Handing an event to the local daemon instead of opening the store (the hook's fast path on
//! PostgreSQL), and the daemon's side of it.
//!
//! With `HOOKS_MCP_DATABASE_URL` set, opening the store costs the hook a database connection
//! (milliseconds). A network daemon on this machine already holds a pool, so the hook first
//! POSTs the event to it (`POST /hook/<Event>`, see `protocol_lite::local_daemon`):
//!
//! ```json
//! {"v":1,"store":"postgres://hooks@db:5432/hooks","channels":["global","ci"],"gate":true,
//!  "budget":2000,"payload":{...the payload exactly as read on stdin...}}
//! ```
//!
//! The daemon checks that it serves the same store (`store`: the database, role and options of
//! the URL, never the password), runs [`crate::store_part`] over its pool with the hook's
//! subscriptions, gate setting and delivery budget (`budget`, in tokens; a request without it,
//! from an older hook, gets the daemon's own), and answers the store's part:
//!
//! ```json
//! {"v":1,"context":["[ALERT #12 deploys] ..."],"errors":[],"conditions":[{"name":...}]}
//! ```
//!
//! The hook prints the errors on its stderr and runs the conditions' scripts itself, in the
//! agent's environment and working directory, exactly as when it opened the store. Anything
//! else (no daemon, refused, late, another store, another version) and the hook opens the store
//! itself: only the speed differs.

use serde_json::{Map, Value, json};
use store::{Condition, ScriptLanguage, Step};

use crate::part::{DeliveryBudget, PartSettings, StorePart, Subscriptions};
use crate::payload::{Event, Payload};

/// The version of the exchange; both sides refuse any other.
const VERSION: u64 = 1;

/// The store's part from the local daemon, or `None` when the hook must open the store itself:
/// the store is not PostgreSQL, forwarding is off, no daemon on this machine answers, or it
/// answers anything but a valid part for the same store.
pub fn via_daemon(event: Event, text: &str, settings: &PartSettings<'_>) -> Option<StorePart> {
    // SQLite opens in a fraction of a millisecond: the fast path is for PostgreSQL only.
    let identity = store::identity_from_env().ok()??;
    match protocol_lite::local_daemon::forwarding_from_env() {
        Ok(true) => {}
        Ok(false) => return None,
        Err(why) => {
            protocol_lite::diag!("hooks-mcp hook: {why}");
            return None;
        }
    }
    let daemon = protocol_lite::local_daemon::LocalDaemon::from_env()?;
    let body = request_body(&identity, settings, text);
    let answer = daemon
        .post(&format!("/hook/{}", event.name()), body.as_bytes())
        .ok()?;
    parse_answer(&answer)
}

/// The request: the payload's text goes in unchanged (it was checked as JSON already).
fn request_body(identity: &str, settings: &PartSettings<'_>, text: &str) -> String {
    let channels = match &settings.subscriptions.channels {
        Some(list) => Value::from(list.clone()),
        None => Value::Null,
    };
    format!(
        concat!(
            r#"{{"v":{v},"store":{store},"channels":{channels},"gate":{gate},"#,
            r#""budget":{budget},"stop_block":{stop_block},"payload":{payload}}}"#
        ),
        v = VERSION,
        store = Value::from(identity),
        channels = channels,
        gate = settings.gate_enforced,
        budget = settings.budget.tokens(),
        stop_block = settings.stop_block,
        payload = text.trim()
    )
}

/// The daemon's side: the answer to a hook's request for `event` over `store` at `now`.
///
/// # Errors
/// [`Refused`], saying why (the hook then opens the store itself): an unknown event, a
/// malformed request or payload, another version, or another store than the one this process
/// serves.
pub fn answer_forwarded(
    event: &str,
    request: &[u8],
    store: &dyn store::Store,
    now: i64,
) -> Result<Vec<u8>, Refused> {
    answer(event, request, store, now).map_err(Refused)
}

/// Why the daemon does not answer a forwarded event (a sentence; 422 to the hook).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

fn answer(
    event: &str,
    request: &[u8],
    store: &dyn store::Store,
    now: i64,
) -> Result<Vec<u8>, String> {
    let event = Event::parse(event).ok_or_else(|| format!("unknown hook event `{event}`"))?;
    let mut request: Map<String, Value> = serde_json::from_slice(request)
        .map_err(|e| format!("the request is not a JSON object ({e})"))?;
    if request.get("v").and_then(Value::as_u64) != Some(VERSION) {
        return Err(format!(
            "the request is not version {VERSION} of the exchange; use a hook of the daemon's \
             release"
        ));
    }
    let ours = store::identity_from_env()
        .map_err(|e| e.to_string())?
        .ok_or("this daemon serves an SQLite store: hooks open it themselves")?;
    if request.get("store").and_then(Value::as_str) != Some(ours.as_str()) {
        return Err("the hook uses another store than this daemon".into());
    }
    let channels = match request.get("channels") {
        Some(Value::Null) | None => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .map(|c| {
                    c.as_str()
                        .filter(|c| store::rules::check_channel_name(c).is_ok())
                        .map(str::to_owned)
                        .ok_or("`channels` holds an invalid channel name")
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err("`channels` must be an array of names or null".into()),
    };
    let gate = request
        .get("gate")
        .and_then(Value::as_bool)
        .ok_or("`gate` must be true or false")?;
    let budget = match request.get("budget") {
        None | Some(Value::Null) => DeliveryBudget::from_env().0,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| "`budget` must be a whole number of tokens".to_owned())
            .and_then(DeliveryBudget::of_tokens)?,
    };
    // A hook of an earlier release sends none: the daemon's own setting then.
    let stop_block = match request.get("stop_block") {
        None | Some(Value::Null) => crate::part::stop_block_from_env().0,
        Some(v) => v.as_bool().ok_or("`stop_block` must be true or false")?,
    };
    let payload = Payload::from_value(event, request.remove("payload").unwrap_or(Value::Null))
        .map_err(|e| e.to_string())?;
    let settings = PartSettings {
        subscriptions: &Subscriptions { channels },
        gate_enforced: gate,
        budget,
        stop_block,
    };
    let part = crate::part::store_part(event, &payload, &settings, store, now);
    Ok(answer_body(&part).into_bytes())
}

fn answer_body(part: &StorePart) -> String {
    json!({
        "v": VERSION,
        "context": part.context,
        "errors": part.errors,
        "conditions": part.conditions.iter().map(condition_json).collect::<Vec<_>>(),
    })
    .to_string()
}

fn parse_answer(bytes: &[u8]) -> Option<StorePart> {
    let answer: Map<String, Value> = serde_json::from_slice(bytes).ok()?;
    if answer.get("v").and_then(Value::as_u64) != Some(VERSION) {
        return None;
    }
    let strings = |key: &str| -> Option<Vec<String>> {
        answer
            .get(key)?
            .as_array()?
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let conditions = answer
        .get("conditions")?
        .as_array()?
        .iter()
        .map(condition_from_json)
        .collect::<Option<Vec<_>>>()?;
    Some(StorePart {
        context: strings("context")?,
        errors: strings("errors")?,
        conditions,
    })
}

fn condition_json(c: &Condition) -> Value {
    json!({
        "name": c.name,
        "step": c.step.as_str(),
        "matcher": c.matcher,
        "script": c.script,
        "language": c.language.as_str(),
        "run_async": c.run_async,
        "session_id": c.session_id,
        "created_at": c.created_at,
        "updated_at": c.updated_at,
    })
}

fn condition_from_json(v: &Value) -> Option<Condition> {
    let text = |key: &str| v.get(key)?.as_str().map(str::to_owned);
    Some(Condition {
        name: text("name")?,
        step: text("step")?.parse::<Step>().ok()?,
        matcher: text("matcher")?,
        script: text("script")?,
        language: text("language")?.parse::<ScriptLanguage>().ok()?,
        run_async: v.get("run_async")?.as_bool()?,
        session_id: text("session_id")?,
        created_at: v.get("created_at")?.as_i64()?,
        updated_at: v.get("updated_at")?.as_i64()?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn condition(name: &str) -> Condition {
        Condition {
            name: name.into(),
            step: Step::Pre,
            matcher: "Bash".into(),
            script: "echo \"hi\"\nexit 2".into(),
            language: ScriptLanguage::Python,
            run_async: true,
            session_id: "s".into(),
            created_at: 1,
            updated_at: 2,
        }
    }

    #[test]
    fn the_store_part_survives_the_wire() {
        let part = StorePart {
            context: vec!["[ALERT #1 ci] red \"main\"\nline two".into()],
            errors: vec!["hooks-mcp hook PreToolUse: cannot count the tool call: x".into()],
            conditions: vec![condition("a"), condition("b")],
        };
        assert_eq!(parse_answer(answer_body(&part).as_bytes()), Some(part));
        assert_eq!(parse_answer(b"{\"v\":2,\"context\":[]}"), None);
        assert_eq!(parse_answer(b"not json"), None);
    }

    #[test]
    fn the_request_carries_the_payload_text_unchanged() {
        let subs = Subscriptions {
            channels: Some(vec!["global".into(), "ci".into()]),
        };
        let text = " {\"session_id\": \"s\",  \"prompt\": \"x\"}\n";
        let settings = PartSettings {
            subscriptions: &subs,
            gate_enforced: false,
            budget: DeliveryBudget::of_tokens(900).unwrap(),
            stop_block: false,
        };
        let body = request_body("postgres://h@db:5432/d", &settings, text);
        assert!(
            body.ends_with(r#""payload":{"session_id": "s",  "prompt": "x"}}"#),
            "{body}"
        );
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["channels"], json!(["global", "ci"]));
        assert_eq!(v["gate"], json!(false));
        assert_eq!(v["budget"], json!(900));
        assert_eq!(v["stop_block"], json!(false));
        assert_eq!(v["store"], json!("postgres://h@db:5432/d"));
    }
}
