-- hooks-mcp store, schema version 3, PostgreSQL: delivery whose cost follows what is new. Same
-- tables, columns and indexes as the SQLite schema of the same version; the counters are kept
-- by triggers (deletions per statement, each channel's row locked in name order).

CREATE TABLE channel_stats (
    channel       TEXT   PRIMARY KEY,
    messages      BIGINT NOT NULL DEFAULT 0,
    info          BIGINT NOT NULL DEFAULT 0,
    last_info_id  BIGINT NOT NULL DEFAULT 0
);

INSERT INTO channel_stats (channel, messages, info, last_info_id)
SELECT channel, count(*), count(*) FILTER (WHERE severity = 'info'),
       coalesce(max(id) FILTER (WHERE severity = 'info'), 0)
FROM messages GROUP BY channel;

CREATE FUNCTION hooks_mcp_message_added() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO channel_stats AS c (channel, messages, info, last_info_id)
    VALUES (NEW.channel, 1, CASE WHEN NEW.severity = 'info' THEN 1 ELSE 0 END,
            CASE WHEN NEW.severity = 'info' THEN NEW.id ELSE 0 END)
    ON CONFLICT (channel) DO UPDATE SET
        messages = c.messages + 1,
        info = c.info + EXCLUDED.info,
        last_info_id = greatest(c.last_info_id, EXCLUDED.last_info_id);
    RETURN NULL;
END $$;

CREATE TRIGGER messages_counted AFTER INSERT ON messages
FOR EACH ROW EXECUTE PROCEDURE hooks_mcp_message_added();

CREATE FUNCTION hooks_mcp_messages_deleted() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM 1 FROM channel_stats WHERE channel IN (SELECT channel FROM gone)
    ORDER BY channel FOR UPDATE;
    UPDATE channel_stats c
    SET messages = c.messages - g.n, info = c.info - g.i
    FROM (SELECT channel, count(*) AS n, count(*) FILTER (WHERE severity = 'info') AS i
          FROM gone GROUP BY channel) g
    WHERE c.channel = g.channel;
    DELETE FROM channel_stats
    WHERE channel IN (SELECT channel FROM gone) AND messages <= 0;
    RETURN NULL;
END $$;

CREATE TRIGGER messages_uncounted AFTER DELETE ON messages
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE PROCEDURE hooks_mcp_messages_deleted();

CREATE TABLE delivery_marks (
    session_id  TEXT   NOT NULL,
    channel     TEXT   NOT NULL,
    info_mark   BIGINT NOT NULL,
    PRIMARY KEY (session_id, channel)
);

INSERT INTO delivery_marks (session_id, channel, info_mark)
SELECT d.session_id, m.channel, max(m.id)
FROM message_deliveries d JOIN messages m ON m.id = d.message_id
WHERE m.severity = 'info'
GROUP BY d.session_id, m.channel;

CREATE INDEX messages_info ON messages (channel, id, expires_at) WHERE severity = 'info';
CREATE INDEX messages_urgent ON messages (severity, expires_at) WHERE severity <> 'info';
CREATE INDEX messages_by_time ON messages (channel, created_at, id);
CREATE INDEX messages_by_created ON messages (created_at, id);
CREATE INDEX message_acks_by_session ON message_acks (session_id);
