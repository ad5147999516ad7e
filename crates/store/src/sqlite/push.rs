//! The SQLite side of [`crate::PushStore`]: one read of the urgent-message index.

use rusqlite::params;

use super::SqliteStore;
use super::channels::{MESSAGE_COLUMNS, channel_filter, finish, json_list, message_from_row};
use crate::{Message, PushQuery, PushStore, StoreResult};

impl PushStore for SqliteStore {
    fn urgent_after(&self, query: &PushQuery<'_>) -> StoreResult<Vec<Message>> {
        let channels = query
            .channels
            .map(|c| json_list(c.iter().map(String::as_str)));
        self.read(|tx| {
            let filter = channel_filter("m.channel", "?4", channels.is_some());
            // `<> 'info'` lets SQLite use the partial index of the urgent messages.
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS}
                 FROM messages m
                 WHERE m.severity <> 'info'
                   AND m.expires_at > ?1
                   AND m.id > ?2
                   AND m.created_at >= ?3
                   AND (m.target = ?5 OR (m.target IS NULL {filter}))
                   AND NOT EXISTS (SELECT 1 FROM message_acks a
                                   WHERE a.message_id = m.id AND a.session_id = ?5)
                 ORDER BY m.id
                 LIMIT ?6"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(
                params![
                    query.now,
                    query.after_id,
                    query.since,
                    channels,
                    query.session_id,
                    query.limit
                ],
                message_from_row,
            )?;
            let mut out = Vec::new();
            for row in rows {
                out.push(finish(row?)?);
            }
            Ok(out)
        })
    }
}
