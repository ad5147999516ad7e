//! What hooks-mcp's tests share (a dev-dependency only): a daemon launcher, a throwaway
//! PostgreSQL server, and a small HTTP and MCP client.
