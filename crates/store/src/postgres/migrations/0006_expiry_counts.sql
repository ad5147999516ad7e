-- hooks-mcp store, schema version 6, PostgreSQL: a new session's first delivery counts the
-- expired info messages of its channels (the channel counters still hold those until they are
-- pruned) through an index on exactly that, the channel and the expiry of info messages.
-- Without it the planner could pick `messages_info`, whose expiry comes after the id, and read
-- every info message of those channels: 5 to 8 ms at 100,000 messages on a freshly filled
-- store, against 0.3 ms with this index (docs/benchmarks.md).

CREATE INDEX messages_info_expiry ON messages (channel, expires_at) WHERE severity = 'info';
