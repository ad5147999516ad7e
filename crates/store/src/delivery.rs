//! What one delivery shows and what it leaves out.
//!
//! A hook event asks the store for the messages due for a session ([`crate::Severity::is_due`]).
//! The caller bounds what one event shows with an [`Admission`]: the due messages are offered
//! to it in delivery order ([`delivery_order`]: `critical`, then `alert`, then `info`; newest
//! first within each), and it admits the longest run it accepts, from the first message to its
//! first refusal. What it did not admit is counted per channel ([`Backlog`]), so the caller can
//! say where the rest is. An `info` message counted so is handled as if shown: it is not due
//! again at the session's next prompt. `alert` and `critical` messages repeat until
//! acknowledged, so what is left out of one event is offered again at the next.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use crate::{DeliveryPoint, Message, Severity};

/// Decides what one delivery shows, message by message.
pub trait Admission {
    /// Whether `message` is shown too. Messages are offered in delivery order
    /// ([`delivery_order`]); after the first refusal nothing more is offered, and every due
    /// message not admitted is counted in [`Delivery::unshown`].
    fn admit(&mut self, message: &Message) -> bool;
}

/// Admits every message: the delivery shows everything that is due.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unbounded;

impl Admission for Unbounded {
    fn admit(&mut self, _message: &Message) -> bool {
        true
    }
}

/// Admits the first `n` messages offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtMost(pub usize);

impl Admission for AtMost {
    fn admit(&mut self, _message: &Message) -> bool {
        match self.0.checked_sub(1) {
            Some(left) => {
                self.0 = left;
                true
            }
            None => false,
        }
    }
}

/// What was due on one channel and not shown, by severity.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Backlog {
    /// The channel.
    pub channel: String,
    /// `critical` messages not shown (offered again at the next event).
    pub critical: u64,
    /// `alert` messages not shown (offered again at the next prompt).
    pub alert: u64,
    /// `info` messages not shown (counted once: they are not due again).
    pub info: u64,
}

impl Backlog {
    /// All the messages it counts.
    pub fn total(&self) -> u64 {
        self.critical + self.alert + self.info
    }

    /// Adds `n` messages of `severity`.
    pub fn add(&mut self, severity: Severity, n: u64) {
        match severity {
            Severity::Critical => self.critical += n,
            Severity::Alert => self.alert += n,
            Severity::Info => self.info += n,
        }
    }
}

/// One delivery: what it shows, and what was due and left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// The messages shown, in delivery order ([`delivery_order`]).
    pub shown: Vec<Message>,
    /// What was due and not shown, per channel (channels with nothing left out are absent), by
    /// channel name.
    pub unshown: Vec<Backlog>,
}

impl Delivery {
    /// Orders `due` ([`delivery_order`]) and shows the run of it that `admission` admits; the
    /// rest is counted per channel. What a backend computes from the whole due set.
    pub fn select(mut due: Vec<Message>, admission: &mut dyn Admission) -> Delivery {
        due.sort_by(delivery_order);
        let mut unshown = Unshown::default();
        let mut refused = false;
        let mut shown = Vec::new();
        for message in due {
            if !refused && admission.admit(&message) {
                shown.push(message);
            } else {
                refused = true;
                unshown.add(&message.channel, message.severity, 1);
            }
        }
        Delivery {
            shown,
            unshown: unshown.into_list(),
        }
    }

    /// How many due messages were left out.
    pub fn unshown_total(&self) -> u64 {
        self.unshown.iter().map(Backlog::total).sum()
    }
}

/// The order of a delivery: `critical` first, then `alert`, then `info`; within a severity the
/// most recently published first (by id, which the store hands out in publication order).
pub fn delivery_order(a: &Message, b: &Message) -> Ordering {
    b.severity.cmp(&a.severity).then(b.id.cmp(&a.id))
}

/// Counts of what was left out, per channel, while a backend builds a [`Delivery`].
#[derive(Debug, Default)]
pub(crate) struct Unshown(BTreeMap<String, Backlog>);

impl Unshown {
    /// Adds `n` messages of `severity` on `channel` (nothing for `n == 0`).
    pub(crate) fn add(&mut self, channel: &str, severity: Severity, n: u64) {
        if n == 0 {
            return;
        }
        if let Some(backlog) = self.0.get_mut(channel) {
            backlog.add(severity, n);
            return;
        }
        let mut backlog = Backlog {
            channel: channel.to_owned(),
            ..Backlog::default()
        };
        backlog.add(severity, n);
        self.0.insert(channel.to_owned(), backlog);
    }

    /// The backlogs, by channel name (byte-wise).
    pub(crate) fn into_list(self) -> Vec<Backlog> {
        self.0.into_values().collect()
    }
}

// --- What both backends share: the plan of one delivery ------------------------------------
//
// A backend reads the session's urgent messages (the severities due at every event until
// acknowledged: one indexed read of the unexpired alert and critical messages) and, at a
// prompt, its heads: the channels whose newest info message is above the session's mark
// (one read of the per-channel counters joined with the session's marks). With no head and
// every urgent message delivered before, nothing is new and nothing is written. Otherwise the
// plan reads the heads' info messages newest first, a page at a time and only as far as the
// admission goes, counts what is left from the counters, and says what to record: each head's
// mark moves to its channel's newest info message, and the shown messages not delivered
// before get their delivery record.

/// The severities due at `point` every time until acknowledged: what the urgent read selects.
pub(crate) fn repeating(point: DeliveryPoint) -> Vec<Severity> {
    Severity::ALL
        .iter()
        .copied()
        .filter(|s| s.is_due(point, true, false))
        .collect()
}

/// Whether `info` messages are due at `point`, each once (what the marks record).
pub(crate) fn info_once(point: DeliveryPoint) -> bool {
    Severity::Info.is_due(point, false, false) && !Severity::Info.is_due(point, true, false)
}

/// A channel with info messages the session was neither shown nor told of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The channel.
    pub(crate) channel: String,
    /// Its newest info message (the session's mark moves there).
    pub(crate) last_info_id: i64,
    /// Its stored info messages (expired ones until pruned).
    pub(crate) info: u64,
    /// The session's mark on it (0: none).
    pub(crate) mark: i64,
}

/// An unexpired, unacknowledged message of a repeating severity on a subscribed channel.
#[derive(Debug, Clone)]
pub(crate) struct Urgent {
    /// The message.
    pub(crate) message: Message,
    /// Whether its delivery to the session is recorded.
    pub(crate) delivered_before: bool,
}

/// Info messages read at a time from one channel.
pub(crate) const PAGE: usize = 16;

/// A backend's reads of the heads' info messages.
pub(crate) trait InfoSource {
    /// The backend's failure.
    type Error;
    /// The due info messages of `head`'s channel (unexpired, unacknowledged by the session,
    /// above its mark and at most its newest) with ids below `below`, newest first, at most
    /// `limit`.
    fn page(&mut self, head: &Head, below: i64, limit: usize) -> Result<Vec<Message>, Self::Error>;
    /// The first page of each of `heads`.
    fn first_pages(
        &mut self,
        heads: &[Head],
        limit: usize,
    ) -> Result<Vec<Vec<Message>>, Self::Error> {
        heads
            .iter()
            .map(|h| self.page(h, h.last_info_id.saturating_add(1), limit))
            .collect()
    }
    /// How many info messages are due on each of `heads`' channels (as [`InfoSource::page`]
    /// selects them), in order.
    fn due_counts(&mut self, heads: &[&Head]) -> Result<Vec<u64>, Self::Error>;
}

/// The source of a delivery with no heads: nothing to read.
#[derive(Debug)]
pub(crate) struct NoInfo;

impl InfoSource for NoInfo {
    type Error = std::convert::Infallible;

    fn page(&mut self, _: &Head, _: i64, _: usize) -> Result<Vec<Message>, Self::Error> {
        Ok(Vec::new())
    }

    fn due_counts(&mut self, heads: &[&Head]) -> Result<Vec<u64>, Self::Error> {
        Ok(vec![0; heads.len()])
    }
}

/// What one delivery shows and what it records.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// What the caller gets.
    pub(crate) delivery: Delivery,
    /// For each head: its channel, the mark to record, and the mark read.
    pub(crate) marks: Vec<(String, i64, i64)>,
    /// The shown messages whose delivery to the session is not recorded yet.
    pub(crate) first: Vec<i64>,
}

impl Plan {
    /// Whether there is anything to record.
    pub(crate) fn writes(&self) -> bool {
        !self.marks.is_empty() || !self.first.is_empty()
    }

    /// Takes the info messages of `channel` out of what is shown and counted (another call
    /// of the same session recorded that channel's mark first, and delivers them).
    pub(crate) fn drop_info_of(&mut self, channel: &str) {
        let gone: Vec<i64> = self
            .delivery
            .shown
            .iter()
            .filter(|m| m.channel == channel && m.severity == Severity::Info)
            .map(|m| m.id)
            .collect();
        self.delivery.shown.retain(|m| !gone.contains(&m.id));
        self.first.retain(|id| !gone.contains(id));
        for backlog in &mut self.delivery.unshown {
            if backlog.channel == channel {
                backlog.info = 0;
            }
        }
        self.delivery.unshown.retain(|b| b.total() > 0);
        self.marks.retain(|(c, _, _)| c != channel);
    }
}

/// One head's info messages as the plan reads them.
#[derive(Debug, Default)]
struct Stream {
    buffer: VecDeque<Message>,
    /// Every due message of the channel was read.
    exhausted: bool,
    /// The lowest id read so far (the next page starts below it).
    lowest: i64,
    read: u64,
    shown: u64,
}

impl Stream {
    fn take(&mut self, page: Vec<Message>) {
        self.exhausted = page.len() < PAGE;
        self.read += page.len() as u64;
        if let Some(last) = page.last() {
            self.lowest = last.id;
        }
        self.buffer.extend(page);
    }
}

/// Plans one delivery from the urgent messages and the heads the backend read: the urgent
/// messages first (critical, then alert, newest first), then the heads' info messages newest
/// first across channels, each offered to `admission` until its first refusal.
pub(crate) fn plan<S: InfoSource>(
    source: &mut S,
    mut urgent: Vec<Urgent>,
    heads: Vec<Head>,
    admission: &mut dyn Admission,
) -> Result<Plan, S::Error> {
    urgent.sort_by(|a, b| delivery_order(&a.message, &b.message));
    let mut unshown = Unshown::default();
    let mut shown = Vec::new();
    let mut first = Vec::new();
    let mut refused = false;
    for u in urgent {
        if !refused && admission.admit(&u.message) {
            if !u.delivered_before {
                first.push(u.message.id);
            }
            shown.push(u.message);
        } else {
            refused = true;
            unshown.add(&u.message.channel, u.message.severity, 1);
        }
    }
    let mut streams: Vec<Stream> = heads.iter().map(|_| Stream::default()).collect();
    if !refused && !heads.is_empty() {
        let pages = source.first_pages(&heads, PAGE)?;
        let mut next = BinaryHeap::new();
        for (i, page) in pages.into_iter().enumerate() {
            if let Some(stream) = streams.get_mut(i) {
                stream.take(page);
                if let Some(m) = stream.buffer.front() {
                    next.push((m.id, i));
                }
            }
        }
        while let Some((_, i)) = next.pop() {
            let Some(stream) = streams.get_mut(i) else {
                continue;
            };
            let Some(message) = stream.buffer.pop_front() else {
                continue;
            };
            if !admission.admit(&message) {
                break;
            }
            stream.shown += 1;
            first.push(message.id);
            shown.push(message);
            if stream.buffer.is_empty() && !stream.exhausted {
                let page = source.page(&heads[i], stream.lowest, PAGE)?;
                stream.take(page);
            }
            if let Some(m) = stream.buffer.front() {
                next.push((m.id, i));
            }
        }
    }
    // What is left of each head: known when its channel was read to the end, else counted.
    let uncounted: Vec<&Head> = heads
        .iter()
        .zip(&streams)
        .filter(|(_, s)| !s.exhausted)
        .map(|(h, _)| h)
        .collect();
    let mut counts = if uncounted.is_empty() {
        Vec::new()
    } else {
        source.due_counts(&uncounted)?
    }
    .into_iter();
    for (head, stream) in heads.iter().zip(&streams) {
        let due = if stream.exhausted {
            stream.read
        } else {
            counts.next().unwrap_or(0).max(stream.read)
        };
        unshown.add(
            &head.channel,
            Severity::Info,
            due.saturating_sub(stream.shown),
        );
    }
    Ok(Plan {
        delivery: Delivery {
            shown,
            unshown: unshown.into_list(),
        },
        marks: heads
            .into_iter()
            .map(|h| (h.channel, h.last_info_id, h.mark))
            .collect(),
        first,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: i64, channel: &str, severity: Severity) -> Message {
        Message {
            id,
            channel: channel.into(),
            body: format!("m{id}"),
            severity,
            created_at: id,
            expires_at: 1_000,
            target: None,
        }
    }

    #[test]
    fn selection_shows_critical_then_alert_then_info_newest_first_and_counts_the_rest() {
        let due = vec![
            message(1, "a", Severity::Info),
            message(2, "b", Severity::Critical),
            message(3, "a", Severity::Alert),
            message(4, "b", Severity::Info),
            message(5, "a", Severity::Critical),
            message(6, "a", Severity::Info),
        ];
        let all = Delivery::select(due.clone(), &mut Unbounded);
        let order: Vec<i64> = all.shown.iter().map(|m| m.id).collect();
        assert_eq!(order, [5, 2, 3, 6, 4, 1]);
        assert!(all.unshown.is_empty());

        let some = Delivery::select(due, &mut AtMost(3));
        let order: Vec<i64> = some.shown.iter().map(|m| m.id).collect();
        assert_eq!(order, [5, 2, 3]);
        assert_eq!(
            some.unshown,
            [
                Backlog {
                    channel: "a".into(),
                    info: 2,
                    ..Backlog::default()
                },
                Backlog {
                    channel: "b".into(),
                    info: 1,
                    ..Backlog::default()
                },
            ]
        );
        assert_eq!(some.unshown_total(), 3);
    }

    #[test]
    fn the_first_refusal_ends_the_showing() {
        // Refuses the second message offered only: the rest is left out all the same.
        struct Once(usize);
        impl Admission for Once {
            fn admit(&mut self, _m: &Message) -> bool {
                self.0 += 1;
                self.0 != 2
            }
        }
        let due = (1..=4).map(|i| message(i, "a", Severity::Alert)).collect();
        let d = Delivery::select(due, &mut Once(0));
        assert_eq!(d.shown.len(), 1);
        assert_eq!(d.unshown[0].alert, 3);
    }
}
