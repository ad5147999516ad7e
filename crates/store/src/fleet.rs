//! What both backends share about sessions: how subscriptions are stored, and how a delivery
//! report is put together from the rows they read.

use std::collections::BTreeMap;

use crate::{
    DeliveryReport, Message, Millis, ReportQuery, SessionDelivery, StoreError, Subscribed,
};

/// The stored form of subscriptions: a JSON array, `["*"]` for every channel.
pub(crate) fn subscriptions_text(subscriptions: Option<&Subscribed>) -> Option<String> {
    subscriptions.map(|s| match s {
        Subscribed::All => serde_json::Value::from(vec!["*"]).to_string(),
        Subscribed::Channels(list) => serde_json::Value::from(list.clone()).to_string(),
    })
}

/// Reads the stored form back.
pub(crate) fn subscriptions_from_text(
    session_id: &str,
    text: Option<&str>,
) -> Result<Option<Subscribed>, StoreError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let list: Vec<String> = serde_json::from_str(text).map_err(|e| {
        StoreError::InvalidData(format!("session {session_id}: subscriptions: {e}"))
    })?;
    Ok(Some(if list.iter().any(|c| c == "*") {
        Subscribed::All
    } else {
        Subscribed::Channels(list)
    }))
}

/// The rows a backend reads for one report, in one snapshot.
#[derive(Debug)]
pub(crate) struct ReportRows {
    pub(crate) message: Message,
    /// `(session, first delivery, acknowledgement)` for every session with either.
    pub(crate) received: Vec<(String, Option<Millis>, Option<Millis>)>,
    /// `(session, subscriptions)` of every live session.
    pub(crate) live: Vec<(String, Option<Subscribed>)>,
}

/// Counts and one page of sessions, by session id. A message to one session expects that
/// session only (as subscribed, whatever its subscriptions), when it is live.
pub(crate) fn report(rows: ReportRows, query: &ReportQuery) -> DeliveryReport {
    let channel = rows.message.channel.clone();
    let target = rows.message.target.clone();
    let mut sessions: BTreeMap<String, SessionDelivery> = BTreeMap::new();
    for (session_id, subscriptions) in rows.live {
        let subscribed = match &target {
            Some(target) => *target == session_id,
            None => subscriptions.is_some_and(|s| s.receives(&channel)),
        };
        sessions.insert(
            session_id.clone(),
            SessionDelivery {
                session_id,
                delivered_at: None,
                acknowledged_at: None,
                live: true,
                subscribed,
            },
        );
    }
    for (session_id, delivered_at, acknowledged_at) in rows.received {
        let entry = sessions
            .entry(session_id.clone())
            .or_insert_with(|| SessionDelivery {
                session_id,
                delivered_at: None,
                acknowledged_at: None,
                live: false,
                subscribed: false,
            });
        entry.delivered_at = delivered_at;
        entry.acknowledged_at = acknowledged_at;
    }
    let all: Vec<SessionDelivery> = sessions
        .into_values()
        .filter(|s| {
            s.delivered_at.is_some() || s.acknowledged_at.is_some() || (s.live && s.subscribed)
        })
        .collect();
    let count = |f: &dyn Fn(&SessionDelivery) -> bool| all.iter().filter(|s| f(s)).count() as u64;
    DeliveryReport {
        live_subscribed: count(&|s| s.live && s.subscribed),
        delivered_live: count(&|s| s.live && s.subscribed && s.delivered_at.is_some()),
        delivered: count(&|s| s.delivered_at.is_some()),
        acknowledged: count(&|s| s.acknowledged_at.is_some()),
        acknowledged_live: count(&|s| s.live && s.subscribed && s.acknowledged_at.is_some()),
        sessions: all
            .iter()
            .filter(|s| {
                query
                    .after_session
                    .as_deref()
                    .is_none_or(|after| s.session_id.as_str() > after)
            })
            .take(query.limit as usize)
            .cloned()
            .collect(),
        message: rows.message,
    }
}

/// A tool call's id as the counters remember it (see migration 7): ids are kept in one text,
/// separated by spaces, so one with white space in it, or longer than 128 bytes, is not
/// remembered (its call is counted as one without an id).
pub(crate) fn remembered_call_id(call_id: Option<&str>) -> Option<&str> {
    call_id.filter(|id| !id.is_empty() && id.len() <= 128 && !id.contains(char::is_whitespace))
}
