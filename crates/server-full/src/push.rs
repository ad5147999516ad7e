//! Pushing urgent messages into the session (Claude Code's channels), when
//! `HOOKS_MCP_CHANNEL_PUSH` is on: the batches the front end's child prints
//! (`hooks-mcp-stdio --pending-pushes`), and, once a session is handed over (or served from the
//! start), a task woken by [`StoreChanges`] that sends each new message as
//! `notifications/claude/channel` through rmcp's peer. The cursor the front end reached comes
//! over in `HOOKS_MCP_PUSH_CURSOR`, so nothing is pushed twice or lost.

use protocol_lite::push::{BATCH_LIMIT, Batch, CHANNEL_METHOD, Cursor, Decision, channel_params};
use protocol_lite::setting::{PUSH_CHANNELS_ENV, PUSH_CURSOR_ENV};
use rmcp::model::{CustomNotification, ServerNotification};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use store::{PushQuery, Store, StoreError, StoreHandle};

use crate::store_changes::StoreChanges;

/// What this stdio process pushes: into which session, from which channels, and from where
/// (its cursor when it started). In the extensions of a server that pushes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelPush {
    /// The session pushed into.
    pub session: String,
    /// The channels allowed to push (`None`: every channel).
    pub channels: Option<Vec<String>>,
    /// Where pushing starts.
    pub cursor: Cursor,
}

impl ChannelPush {
    /// From the environment: `None` unless push is on ([`Decision`]; why it was refused is
    /// logged at debug level, the front end having said it). The cursor is the handed over one
    /// ([`PUSH_CURSOR_ENV`]), else the present instant (messages published before this process
    /// started are the hooks' to deliver). Bad channel names are logged as warnings.
    pub fn from_env() -> Option<ChannelPush> {
        match ChannelPush::from_env_with(&|w| tracing::warn!("{w}")) {
            Ok(push) => push,
            Err(why) => {
                tracing::debug!("{why}");
                None
            }
        }
    }

    /// [`ChannelPush::from_env`], each warning about a setting given to `warn`.
    ///
    /// # Errors
    /// Why push was refused (on, but without a session id, or neither on nor off).
    pub fn from_env_with(warn: &dyn Fn(String)) -> Result<Option<ChannelPush>, String> {
        let var = |name: &str| std::env::var(name).ok();
        let session = match Decision::from_vars(var) {
            Decision::On { session } => session,
            Decision::Off => return Ok(None),
            Decision::Refused(why) => return Err(why),
        };
        let subscribed = tools_channels::subscribed_channels(
            &var(tools_channels::SUBSCRIPTIONS_ENV).unwrap_or_default(),
            warn,
        );
        let channels = tools_channels::push_channels(
            subscribed,
            &var(PUSH_CHANNELS_ENV).unwrap_or_default(),
            warn,
        );
        let cursor = var(PUSH_CURSOR_ENV)
            .and_then(|c| Cursor::parse(&c).ok())
            .unwrap_or_else(|| Cursor::starting(crate::now_ms()));
        Ok(Some(ChannelPush {
            session,
            channels,
            cursor,
        }))
    }

    /// The next batch after `cursor`, which moves past it: each message's notification
    /// params, and whether more wait.
    ///
    /// # Errors
    /// What the store said.
    pub fn next(
        &self,
        store: &dyn Store,
        cursor: &mut Cursor,
        now: i64,
    ) -> Result<(Vec<Value>, bool), StoreError> {
        let messages = store.urgent_after(&PushQuery {
            session_id: &self.session,
            channels: self.channels.as_deref(),
            since: cursor.since_ms,
            after_id: cursor.after_id,
            now,
            limit: BATCH_LIMIT,
        })?;
        let more = messages.len() >= BATCH_LIMIT as usize;
        let pushes = messages
            .iter()
            .map(|m| {
                cursor.passed(m.id);
                let content = tools_channels::render_line(m);
                channel_params(&content, &m.channel, m.severity.as_str(), m.id)
            })
            .collect();
        Ok((pushes, more))
    }
}

/// Prints the [`Batch`] after `cursor` (the text of a [`Cursor`]) for the front end and exits:
/// `hooks-mcp-stdio --pending-pushes CURSOR [--quiet]`; `quiet`: the settings' warnings are
/// not logged (the front end's first run said them).
///
/// # Errors
/// A message saying what was wrong: push off, a bad cursor, the store, or stdout.
pub fn print_pending_from_env(cursor: &str, quiet: bool) -> Result<(), String> {
    use std::io::Write as _;
    let warn = |w: String| {
        if !quiet {
            tracing::warn!("{w}");
        }
    };
    let push = ChannelPush::from_env_with(&warn)?
        .ok_or("push is off (HOOKS_MCP_CHANNEL_PUSH is not on): there is nothing to print")?;
    let mut cursor = Cursor::parse(cursor)?;
    let (store, _) = store::open_from_env(true).map_err(|e| format!("opening the store: {e}"))?;
    let (pushes, more) = push
        .next(&*store, &mut cursor, crate::now_ms())
        .map_err(|e| format!("reading the messages to push: {e}"))?;
    let batch = Batch {
        cursor: cursor.to_string(),
        more,
        pushes,
    };
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &batch)
        .map_err(std::io::Error::other)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing the batch: {e}"))
}

/// Pushes into one session while it lasts: what a server that pushes needs besides its peer.
#[derive(Debug)]
pub(crate) struct Pusher {
    push: ChannelPush,
    store: StoreHandle,
    changes: StoreChanges,
}

impl Pusher {
    /// The pusher of `server`, when it pushes.
    pub(crate) fn of(server: &crate::HooksServer) -> Option<Pusher> {
        let push = server.channel_push()?.clone();
        let store = server.store()?;
        let changes = server.store_changes()?.clone();
        Some(Pusher {
            push,
            store,
            changes,
        })
    }

    /// Pushes what is pending, then each new message as the store changes, until the client is
    /// gone.
    pub(crate) async fn run(self, peer: Peer<RoleServer>) {
        let mut woken = self.changes.subscribe();
        let mut cursor = self.push.cursor;
        loop {
            let (push, store) = (self.push.clone(), self.store.clone());
            let batch = tokio::task::spawn_blocking(move || {
                let next = push.next(&*store, &mut cursor, crate::now_ms());
                (next, cursor)
            })
            .await;
            let (pushes, more) = match batch {
                Ok((Ok(found), moved)) => {
                    cursor = moved;
                    found
                }
                Ok((Err(e), _)) => {
                    tracing::warn!("cannot read the messages to push: {e}");
                    (Vec::new(), false)
                }
                Err(_) => return,
            };
            for params in pushes {
                let note = CustomNotification::new(CHANNEL_METHOD, Some(params));
                let sent = peer
                    .send_notification(ServerNotification::CustomNotification(note))
                    .await;
                if sent.is_err() {
                    return;
                }
            }
            if !more && woken.changed().await.is_err() {
                return;
            }
        }
    }
}
