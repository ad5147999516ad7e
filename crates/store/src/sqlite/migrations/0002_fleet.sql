-- hooks-mcp store, schema version 2: the audit trail and the sessions the store hears of.

-- One row per change, written in the change's own transaction.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    actor_kind  TEXT    NOT NULL,
    actor_name  TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    detail      TEXT    NOT NULL
);
CREATE INDEX audit_by_time ON audit_log (at);

-- One row per session: when it was first and last seen, and how. `subscriptions` is NULL
-- while unknown, else a JSON array of channel names (`["*"]` for every channel).
CREATE TABLE sessions (
    session_id     TEXT    PRIMARY KEY,
    first_seen     INTEGER NOT NULL,
    last_seen      INTEGER NOT NULL,
    last_event     TEXT    NOT NULL,
    transport      TEXT    NOT NULL CHECK (transport IN ('stdio', 'streamable-http', 'sse', 'hook')),
    cwd            TEXT,
    subscriptions  TEXT
) WITHOUT ROWID;
CREATE INDEX sessions_by_last_seen ON sessions (last_seen);
