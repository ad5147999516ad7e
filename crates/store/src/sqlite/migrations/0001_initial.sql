-- hooks-mcp store, schema version 1. Times are Unix milliseconds.

CREATE TABLE messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    channel     TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    severity    TEXT    NOT NULL CHECK (severity IN ('info', 'alert', 'critical')),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX messages_by_channel ON messages (channel, expires_at);
CREATE INDEX messages_by_expiry ON messages (expires_at);

CREATE TABLE message_acks (
    message_id  INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    session_id  TEXT    NOT NULL,
    acked_at    INTEGER NOT NULL,
    PRIMARY KEY (message_id, session_id)
) WITHOUT ROWID;

CREATE TABLE message_deliveries (
    message_id    INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    session_id    TEXT    NOT NULL,
    delivered_at  INTEGER NOT NULL,
    PRIMARY KEY (message_id, session_id)
) WITHOUT ROWID;

CREATE TABLE reminders (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    message     TEXT    NOT NULL,
    cadence     INTEGER NOT NULL CHECK (cadence >= 1),
    tag         TEXT,
    created_at  INTEGER NOT NULL
);
CREATE INDEX reminders_by_tag ON reminders (tag);

CREATE TABLE session_counters (
    session_id  TEXT    PRIMARY KEY,
    tool_calls  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE conditions (
    name        TEXT    PRIMARY KEY,
    step        TEXT    NOT NULL CHECK (step IN ('pre', 'post')),
    matcher     TEXT    NOT NULL,
    script      TEXT    NOT NULL,
    language    TEXT    NOT NULL CHECK (language IN ('bash', 'python')),
    run_async   INTEGER NOT NULL,
    session_id  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE condition_gates (
    session_id   TEXT    PRIMARY KEY,
    armed_until  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE schedules (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT,
    channel        TEXT    NOT NULL,
    message        TEXT    NOT NULL,
    severity       TEXT    NOT NULL CHECK (severity IN ('info', 'alert', 'critical')),
    ttl_seconds    INTEGER NOT NULL,
    kind           TEXT    NOT NULL CHECK (kind IN ('at', 'every', 'cron')),
    at_ms          INTEGER,
    every_seconds  INTEGER,
    cron           TEXT,
    next_fire_at   INTEGER,
    last_fired_at  INTEGER,
    fire_count     INTEGER NOT NULL DEFAULT 0,
    skipped_count  INTEGER NOT NULL DEFAULT 0,
    status         TEXT    NOT NULL CHECK (status IN ('active', 'completed', 'cancelled')),
    created_at     INTEGER NOT NULL
);
CREATE INDEX schedules_due ON schedules (status, next_fire_at);

-- One row per occurrence fired: the primary key makes a double firing impossible.
CREATE TABLE schedule_firings (
    schedule_id    INTEGER NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    scheduled_for  INTEGER NOT NULL,
    fired_at       INTEGER NOT NULL,
    message_id     INTEGER,
    skipped        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (schedule_id, scheduled_for)
) WITHOUT ROWID;
