//! Bearer tokens, `Host`/`Origin` refusals, and no secrets in the log.

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::support::{Daemon, MCP_POST, SseSession, TOKEN, http, initialize, mcp_session, raw};

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

#[test]
fn a_balancer_probe_needs_no_allowed_host_and_nothing_else_does() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "security::a_balancer_probe_needs_no_allowed_host_and_nothing_else_does",
        home.path(),
        &[("HOOKS_MCP_TEST_PHASE_DELAY_MS", "2000")],
    );
    let addr = daemon.addr;
    // HAProxy's check: HTTP/1.0 and no Host at all. It tells starting from ready.
    let haproxy = "GET /health HTTP/1.0\r\n\r\n";
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    loop {
        let (status, body) = raw(addr, haproxy);
        seen.push(status);
        if status == 200 {
            assert!(body.contains("\"status\":\"ok\""), "{body}");
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("\"status\":\"starting\""), "{body}");
        assert!(
            std::time::Instant::now() < deadline,
            "never ready: {seen:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(seen[0], 503, "the probe saw start-up: {seen:?}");
    // A Kubernetes probe names the pod's address, which no setting lists.
    let kubernetes = "GET /health HTTP/1.1\r\nHost: 10.1.2.3:8080\r\nUser-Agent: kube-probe/1.31\r\nConnection: close\r\n\r\n";
    let (status, body) = raw(addr, kubernetes);
    assert_eq!(status, 200, "{body}");
    let (status, _) = raw(addr, "HEAD /health?level=alive HTTP/1.0\r\n\r\n");
    assert_eq!(status, 200);

    // Everything else keeps the DNS-rebinding checks: the detailed health levels, MCP, the
    // metrics and the read API, with a foreign Host or none.
    for (request, expected) in [
        (
            "GET /health?level=full HTTP/1.0\r\nHost: 10.1.2.3:8080\r\n\r\n",
            403,
        ),
        ("GET /health?level=db HTTP/1.0\r\n\r\n", 400),
        // The key percent-encoded is the same key to the handler, so it is to the check.
        (
            "GET /health?%6cevel=full HTTP/1.0\r\nHost: 10.1.2.3:8080\r\n\r\n",
            403,
        ),
        ("GET /health?lev%65l=db HTTP/1.0\r\n\r\n", 400),
        ("GET /health?level=%64b&x=1 HTTP/1.0\r\n\r\n", 400),
        ("GET /metrics HTTP/1.0\r\nHost: 10.1.2.3:8080\r\n\r\n", 403),
        (
            "GET /api/v1/overview HTTP/1.0\r\nHost: 10.1.2.3\r\n\r\n",
            403,
        ),
        ("GET /api/v1/overview HTTP/1.0\r\n\r\n", 400),
        (
            "POST /mcp HTTP/1.0\r\nHost: 10.1.2.3:8080\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: 2\r\n\r\n{}",
            403,
        ),
        // A browser's foreign Origin is refused on the probe too.
        (
            "GET /health HTTP/1.0\r\nHost: 10.1.2.3\r\nOrigin: http://evil.example.com\r\n\r\n",
            403,
        ),
    ] {
        let (status, body) = raw(addr, request);
        assert_eq!(status, expected, "{request:?}: {body}");
    }
    // With an allowed Host the detailed levels answer as before.
    let (status, body) = raw(
        addr,
        &format!("GET /health?level=full HTTP/1.0\r\nHost: {addr}\r\n\r\n"),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"scheduler\""), "{body}");
}

/// A console session is bound to the token it began under: a cookie a daemon without a token
/// gave anyone is no session once a token is set, and one signed in under a token ends when
/// the daemon starts with another.
#[test]
fn console_sessions_end_when_the_token_changes() {
    let test = "security::console_sessions_end_when_the_token_changes";
    let home = tempfile::tempdir().unwrap();
    let cookie_of = |reply: &test_support::http::Response| -> String {
        let set = reply
            .header("set-cookie")
            .unwrap_or_else(|| panic!("no cookie: {}", reply.head));
        set.split(';').next().unwrap().trim().to_owned()
    };
    let restart = |env: &[(&str, &str)]| {
        let daemon = Daemon::start(test, home.path(), env);
        daemon.wait_ready();
        daemon
    };
    let stop = |daemon: Daemon| {
        daemon.signal("TERM");
        assert!(daemon.wait_exit().success(), "{}", daemon.text());
    };
    // No token: anyone who asks gets a session.
    let open = restart(&[]);
    let page = test_support::http::plain(open.addr, "GET", "/console/", &[], "");
    assert_eq!(page.status, 200, "{}", page.head);
    let tokenless = cookie_of(&page);
    stop(open);

    let other = "another-token-0123456789abcdef";
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let a = restart(&[("HOOKS_MCP_TOKEN", TOKEN)]);
    let page = http(a.addr, "GET", "/console/", &[("Cookie", &tokenless)], "");
    assert_eq!(
        page.status, 303,
        "the tokenless session still holds: {}",
        page.head
    );
    let login = test_support::http::plain(
        a.addr,
        "POST",
        "/console/login",
        &form,
        &format!("token={TOKEN}&next=%2Fconsole%2F"),
    );
    assert_eq!(login.status, 303, "{}", login.body);
    let signed_in = cookie_of(&login);
    let page = http(a.addr, "GET", "/console/", &[("Cookie", &signed_in)], "");
    assert_eq!(page.status, 200, "{}", page.head);
    stop(a);

    // Another token: the session signed in under the first one is over.
    let b = restart(&[("HOOKS_MCP_TOKEN", other)]);
    let page = http(b.addr, "GET", "/console/", &[("Cookie", &signed_in)], "");
    assert_eq!(
        page.status, 303,
        "the old token's session still holds: {}",
        page.head
    );
    stop(b);
}
