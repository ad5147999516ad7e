-- hooks-mcp store, schema version 3: delivery whose cost follows what is new. Counters per
-- channel kept by triggers in the writing transaction, a mark per session and channel of the
-- info messages it was shown or told of, and indexes that find a session's new and urgent
-- messages and a channel's pages without reading the rest.

-- One row per channel with stored messages (expired ones count until pruned): how many, how
-- many of them info, and the newest info message ever stored on it.
CREATE TABLE channel_stats (
    channel       TEXT    PRIMARY KEY,
    messages      INTEGER NOT NULL DEFAULT 0,
    info          INTEGER NOT NULL DEFAULT 0,
    last_info_id  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

INSERT INTO channel_stats (channel, messages, info, last_info_id)
SELECT channel, count(*), sum(severity = 'info'),
       coalesce(max(CASE WHEN severity = 'info' THEN id END), 0)
FROM messages GROUP BY channel;

CREATE TRIGGER messages_counted AFTER INSERT ON messages
BEGIN
    INSERT INTO channel_stats (channel, messages, info, last_info_id)
    VALUES (NEW.channel, 1, NEW.severity = 'info',
            CASE WHEN NEW.severity = 'info' THEN NEW.id ELSE 0 END)
    ON CONFLICT (channel) DO UPDATE SET
        messages = messages + 1,
        info = info + excluded.info,
        last_info_id = max(last_info_id, excluded.last_info_id);
END;

CREATE TRIGGER messages_uncounted AFTER DELETE ON messages
BEGIN
    UPDATE channel_stats
    SET messages = messages - 1, info = info - (OLD.severity = 'info')
    WHERE channel = OLD.channel;
    DELETE FROM channel_stats WHERE channel = OLD.channel AND messages <= 0;
END;

-- Every info message of `channel` with an id up to `info_mark` was shown to the session or
-- counted in a summary line: none of them is due for it again. Started from the info
-- deliveries recorded so far (each prompt delivered every due info message of a channel).
CREATE TABLE delivery_marks (
    session_id  TEXT    NOT NULL,
    channel     TEXT    NOT NULL,
    info_mark   INTEGER NOT NULL,
    PRIMARY KEY (session_id, channel)
) WITHOUT ROWID;

INSERT INTO delivery_marks (session_id, channel, info_mark)
SELECT d.session_id, m.channel, max(m.id)
FROM message_deliveries d JOIN messages m ON m.id = d.message_id
WHERE m.severity = 'info'
GROUP BY d.session_id, m.channel;

-- A channel's info messages newest first, from a session's mark.
CREATE INDEX messages_info ON messages (channel, id, expires_at) WHERE severity = 'info';
-- The unexpired alert and critical messages, without the info ones.
CREATE INDEX messages_urgent ON messages (severity, expires_at) WHERE severity <> 'info';
-- Pages of one channel and of every channel, newest first.
CREATE INDEX messages_by_time ON messages (channel, created_at, id);
CREATE INDEX messages_by_created ON messages (created_at, id);
-- A session's acknowledgements.
CREATE INDEX message_acks_by_session ON message_acks (session_id);
