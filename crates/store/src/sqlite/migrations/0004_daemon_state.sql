-- hooks-mcp store, schema version 4, SQLite: what the network daemons of one store share
-- besides the domain: the keys that sign what any of them must accept (the operator console's
-- session cookies), and what another daemon needs to resume a Streamable HTTP session of the
-- 2025 revisions (the client's initialize parameters). Same tables as the PostgreSQL schema of
-- the same version.

CREATE TABLE signing_keys (
    id          INTEGER PRIMARY KEY,
    purpose     TEXT    NOT NULL,
    secret      BLOB    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX signing_keys_by_purpose ON signing_keys (purpose, created_at);

CREATE TABLE http_sessions (
    session_id  TEXT    PRIMARY KEY,
    state       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    seen_at     INTEGER NOT NULL
);
CREATE INDEX http_sessions_by_seen ON http_sessions (seen_at);
