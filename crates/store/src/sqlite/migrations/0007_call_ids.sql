-- hooks-mcp store, schema version 7: a session's counter remembers the ids of the tool calls it
-- counted last (the client's `tool_use_id`s, newest first, separated by spaces, at most 600
-- characters: some twenty calls). A client that runs two registrations of hooks-mcp's hook for
-- one tool call (VS Code runs both Claude Code's and Copilot CLI's hook files; Cursor runs
-- Claude Code's beside its own) reports the same call twice, the reports of parallel calls
-- interleaved: each call is counted, and its reminders and broadcasts delivered, once.

ALTER TABLE session_counters ADD COLUMN recent_calls TEXT;
