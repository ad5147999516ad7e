//! The read behind pushing into a session (Claude Code's channels): the urgent messages
//! published for it since a point, that it has not acknowledged.

use crate::{Message, Millis, StoreResult};

/// Which urgent messages to push into one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushQuery<'a> {
    /// The session (its acknowledgements hide messages).
    pub session_id: &'a str,
    /// Only these channels (`None`: every channel).
    pub channels: Option<&'a [String]>,
    /// Only messages published at or after this instant.
    pub since: Millis,
    /// Only messages with a larger id.
    pub after_id: i64,
    /// Messages expired at this instant are left out.
    pub now: Millis,
    /// At most this many.
    pub limit: u32,
}

/// The urgent messages to push.
pub trait PushStore {
    /// The unexpired `alert` and `critical` messages of the query's channels with an id above
    /// `after_id`, published at or after `since`, that the session did not acknowledge, by id
    /// (oldest first), at most `limit`. Reads only: pushing records no delivery (a hook still
    /// delivers the message at the session's next prompt until it is acknowledged).
    fn urgent_after(&self, query: &PushQuery<'_>) -> StoreResult<Vec<Message>>;
}
