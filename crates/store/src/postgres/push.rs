//! The PostgreSQL side of [`crate::PushStore`].

use super::PostgresStore;
use super::channels::{message_columns, message_from_row};
use crate::{Message, PushQuery, PushStore, StoreResult};

impl PushStore for PostgresStore {
    fn urgent_after(&self, query: &PushQuery<'_>) -> StoreResult<Vec<Message>> {
        self.run(|db| {
            let rows = db.query(
                concat!(
                    "SELECT ",
                    message_columns!(),
                    " FROM messages m
                     WHERE m.severity <> 'info'
                       AND m.expires_at > $1
                       AND m.id > $2
                       AND m.created_at >= $3
                       AND (m.target = $5
                            OR (m.target IS NULL
                                AND ($4::text[] IS NULL OR m.channel = ANY ($4::text[]))))
                       AND NOT EXISTS (SELECT 1 FROM message_acks a
                                       WHERE a.message_id = m.id AND a.session_id = $5)
                     ORDER BY m.id
                     LIMIT $6"
                ),
                &[
                    &query.now,
                    &query.after_id,
                    &query.since,
                    &query.channels,
                    &query.session_id,
                    &i64::from(query.limit),
                ],
            )?;
            rows.iter().map(message_from_row).collect()
        })
    }
}
