-- hooks-mcp store, schema version 5: the sessions' lifecycle and messages to one session.
--
-- A session's record says when it ended (`SessionEnd`; a later event of it clears this again),
-- the session it works for (a subagent's recipient), and when its current turn started (its
-- last prompt). A message may name the one session it is for (`target`): it is delivered to
-- that session only, whatever its subscriptions, and it stays out of the per-channel info
-- counters (which every session's delivery reads); a session finds its own by the index.

ALTER TABLE sessions ADD COLUMN ended_at INTEGER;
ALTER TABLE sessions ADD COLUMN parent_id TEXT;
ALTER TABLE sessions ADD COLUMN turn_started_at INTEGER;
CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

ALTER TABLE messages ADD COLUMN target TEXT;
CREATE INDEX messages_targeted ON messages (target, id) WHERE target IS NOT NULL;

DROP TRIGGER messages_counted;
CREATE TRIGGER messages_counted AFTER INSERT ON messages
BEGIN
    INSERT INTO channel_stats (channel, messages, info, last_info_id)
    VALUES (NEW.channel, 1, NEW.severity = 'info' AND NEW.target IS NULL,
            CASE WHEN NEW.severity = 'info' AND NEW.target IS NULL THEN NEW.id ELSE 0 END)
    ON CONFLICT (channel) DO UPDATE SET
        messages = messages + 1,
        info = info + excluded.info,
        last_info_id = max(last_info_id, excluded.last_info_id);
END;

DROP TRIGGER messages_uncounted;
CREATE TRIGGER messages_uncounted AFTER DELETE ON messages
BEGIN
    UPDATE channel_stats
    SET messages = messages - 1,
        info = info - (OLD.severity = 'info' AND OLD.target IS NULL)
    WHERE channel = OLD.channel;
    DELETE FROM channel_stats WHERE channel = OLD.channel AND messages <= 0;
END;
