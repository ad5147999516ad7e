-- hooks-mcp store, schema version 7: a session's counter remembers the id of the tool call it
-- counted last (the client's `tool_use_id`). A client that runs two registrations of
-- hooks-mcp's hook for one tool call (VS Code runs both Claude Code's and Copilot CLI's hook
-- files; Cursor runs Claude Code's beside its own) reports the same call twice: it is counted,
-- and its reminders and broadcasts delivered, once.

ALTER TABLE session_counters ADD COLUMN last_call_id TEXT;
