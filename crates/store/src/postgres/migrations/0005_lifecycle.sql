-- hooks-mcp store, schema version 5, PostgreSQL: the sessions' lifecycle and messages to one
-- session. Same columns and indexes as the SQLite schema of the same version; the counter
-- triggers leave the messages to one session out of the info counts.

ALTER TABLE sessions ADD COLUMN ended_at BIGINT;
ALTER TABLE sessions ADD COLUMN parent_id TEXT;
ALTER TABLE sessions ADD COLUMN turn_started_at BIGINT;
CREATE INDEX sessions_by_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

ALTER TABLE messages ADD COLUMN target TEXT;
CREATE INDEX messages_targeted ON messages (target, id) WHERE target IS NOT NULL;

CREATE OR REPLACE FUNCTION hooks_mcp_message_added() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO channel_stats AS c (channel, messages, info, last_info_id)
    VALUES (NEW.channel, 1,
            CASE WHEN NEW.severity = 'info' AND NEW.target IS NULL THEN 1 ELSE 0 END,
            CASE WHEN NEW.severity = 'info' AND NEW.target IS NULL THEN NEW.id ELSE 0 END)
    ON CONFLICT (channel) DO UPDATE SET
        messages = c.messages + 1,
        info = c.info + EXCLUDED.info,
        last_info_id = greatest(c.last_info_id, EXCLUDED.last_info_id);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION hooks_mcp_messages_deleted() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM 1 FROM channel_stats WHERE channel IN (SELECT channel FROM gone)
    ORDER BY channel FOR UPDATE;
    UPDATE channel_stats c
    SET messages = c.messages - g.n, info = c.info - g.i
    FROM (SELECT channel, count(*) AS n,
                 count(*) FILTER (WHERE severity = 'info' AND target IS NULL) AS i
          FROM gone GROUP BY channel) g
    WHERE c.channel = g.channel;
    DELETE FROM channel_stats
    WHERE channel IN (SELECT channel FROM gone) AND messages <= 0;
    RETURN NULL;
END $$;
