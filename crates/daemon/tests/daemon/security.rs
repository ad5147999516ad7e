//! Bearer tokens, `Host`/`Origin` refusals, and no secrets in the log.

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::support::{Daemon, MCP_POST, SseSession, TOKEN, http, initialize, mcp_session};

const BEARER: &str = "Bearer test-token-0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_hosts_and_origins_are_enforced() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "security::tokens_hosts_and_origins_are_enforced",
        home.path(),
        &[("HOOKS_MCP_TOKEN", TOKEN), ("HOOKS_MCP_LOG", "trace")],
    );
    daemon.wait_ready();
    let addr = daemon.addr;
    let auth = [("Authorization", BEARER)];

    // Without the token, or with a wrong one: 401 on every MCP endpoint.
    let missing = http(addr, "POST", "/mcp", &MCP_POST, &initialize(1));
    assert_eq!(missing.status, 401, "{}", missing.body);
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
    let wrong = [
        MCP_POST[0],
        ("Authorization", "Bearer test-token-0123456789abcdeX"),
    ];
    assert_eq!(
        http(addr, "POST", "/mcp", &wrong, &initialize(1)).status,
        401
    );
    assert_eq!(http(addr, "GET", "/sse", &[], "").status, 401);
    assert_eq!(
        http(addr, "POST", "/messages?sessionId=x", &[], "{}").status,
        401
    );
    // Health stays open to supervisors.
    assert_eq!(http(addr, "GET", "/health", &[], "").status, 200);

    // With it, both transports work, and so does rmcp's client.
    let session = mcp_session(addr, &auth);
    assert!(!session.is_empty());
    let mut sse = SseSession::connect(addr, &auth);
    sse.handshake(addr, &auth);
    let config =
        StreamableHttpClientTransportConfig::with_uri(daemon.url("/mcp")).auth_header(TOKEN);
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    assert!(!client.list_all_tools().await.unwrap().is_empty());
    client.cancel().await.unwrap();

    // DNS rebinding: a foreign Host or Origin is refused even with the token.
    let evil_host = [MCP_POST[0], auth[0], ("Host", "evil.example.com")];
    let refused = http(addr, "POST", "/mcp", &evil_host, &initialize(1));
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("HOOKS_MCP_ALLOWED_HOSTS"),
        "{}",
        refused.body
    );
    let evil_origin = [MCP_POST[0], auth[0], ("Origin", "http://evil.example.com")];
    assert_eq!(
        http(addr, "POST", "/mcp", &evil_origin, &initialize(1)).status,
        403
    );
    let sse_origin = [auth[0], ("Origin", "https://evil.example.com")];
    assert_eq!(http(addr, "GET", "/sse", &sse_origin, "").status, 403);
    let local_origin = [MCP_POST[0], auth[0], ("Origin", "http://localhost:3000")];
    assert_eq!(
        http(addr, "POST", "/mcp", &local_origin, &initialize(1)).status,
        200
    );

    // The token never reaches the log, even at trace level.
    drop(sse);
    let log = daemon.log.text();
    assert!(log.contains("listening on"), "{log}");
    assert!(!log.contains(TOKEN), "the token leaked into the log");
}
