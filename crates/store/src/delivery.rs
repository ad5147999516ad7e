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
use std::collections::BTreeMap;

use crate::{Message, Severity};

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
