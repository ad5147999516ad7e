//! What these tests take from `test-support` (daemon children, the HTTP and MCP client), the
//! security tests' token, and a hold on the store's write lock.

use std::path::Path;

pub(crate) use test_support::PATIENCE;
pub(crate) use test_support::daemon::{Daemon, child_entry, run_to_exit};
pub(crate) use test_support::http::{Open, Response, http, open, try_http};
pub(crate) use test_support::mcp::{
    MCP_POST, SseSession, call, initialize, initialized, mcp_request, mcp_session, sse_messages,
    wait_health,
};

/// The token the security tests use.
pub(crate) const TOKEN: &str = "test-token-0123456789abcdef";

/// Holds SQLite's write lock on the daemon's store until dropped, so a writing tool call
/// stays in flight.
pub(crate) struct WriteLock(rusqlite::Connection);

impl WriteLock {
    /// Takes the lock.
    pub(crate) fn take(home: &Path) -> WriteLock {
        let conn = rusqlite::Connection::open(home.join("state.db")).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        WriteLock(conn)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = self.0.execute_batch("COMMIT");
    }
}

/// One raw request on a fresh connection, read to its end: `(status, body)`.
pub(crate) fn raw(addr: std::net::SocketAddr, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    let response = test_support::http::parse_response(&bytes)
        .unwrap_or_else(|| panic!("no response to {request:?}"));
    (response.status, response.body)
}
