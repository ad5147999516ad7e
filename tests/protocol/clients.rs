//! The official TypeScript MCP clients against the real binaries: `tests/clients/run.mjs` drives
//! one scenario with `@modelcontextprotocol/sdk` 1.x (the `initialize` era) or
//! `@modelcontextprotocol/client` 2.x (the 2026-07-28 revision) over stdio (the client spawns
//! `hooks-mcp`) or Streamable HTTP (against a `hooks-mcp-full` daemon on an ephemeral loopback
//! port, with a bearer token), and prints what it observed as one JSON object, which these tests
//! assert on.
//!
//! The clients are pinned in `tests/clients/package-lock.json`; install them with
//! `npm ci --prefix tests/clients`. Without them (or without Node.js 20 or newer) the tests fail
//! and say so.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use test_support::daemon::Daemon;

use crate::support::{front_bin, full_bin};

/// How long one driver run may take (it gives up by itself after 90 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// The daemon's bearer token in the HTTP tests.
const TOKEN: &str = "client-tests-token-0123456789";
/// The channel the driver publishes to, and its resource.
const CHANNEL: &str = "client-tests";
const CHANNEL_URI: &str = "hooks://channels/client-tests";
const TEMPLATE: &str = "hooks://channels/{channel}";

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/clients")
}

/// Checks once that Node.js 20+ and the pinned clients are installed; panics saying how to
/// install them otherwise.
fn require_clients() {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    let checked = CHECKED.get_or_init(|| {
        let dir = clients_dir();
        let version = Command::new("node")
            .arg("--version")
            .output()
            .map_err(|e| format!("cannot run `node` ({e}): install Node.js 20 or newer"))?;
        let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        let major: u32 = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if major < 20 {
            return Err(format!(
                "node {version} is too old for the MCP clients: install Node.js 20 or newer"
            ));
        }
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).unwrap())
                .unwrap();
        for (name, pinned) in manifest["dependencies"].as_object().unwrap() {
            let installed =
                std::fs::read_to_string(dir.join("node_modules").join(name).join("package.json"))
                    .ok()
                    .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                    .and_then(|v| v["version"].as_str().map(str::to_owned));
            let pinned = pinned.as_str().unwrap_or_default();
            if installed.as_deref() != Some(pinned) {
                return Err(format!(
                    "{name} {pinned} is not installed in tests/clients/node_modules (found \
                     {}): run `npm ci --prefix tests/clients`",
                    installed.as_deref().unwrap_or("none")
                ));
            }
        }
        Ok(())
    });
    if let Err(message) = checked {
        panic!("{message}");
    }
}

/// What one driver run printed.
struct Observed {
    report: Value,
    status: ExitStatus,
    stderr: String,
}

impl Observed {
    /// A step's value; panics with the step's error (and the run's stderr) when it failed.
    fn step(&self, name: &str) -> &Value {
        let step = &self.report["steps"][name];
        assert!(
            step["ok"] == Value::Bool(true),
            "{} {}: step `{name}` {}\nfailed steps: {}\nstderr:\n{}",
            self.report["scenario"],
            self.report["transport"],
            match step["error"].as_str() {
                Some(error) => format!("failed: {error}"),
                None => "did not run".to_owned(),
            },
            self.report["failed"],
            self.stderr
        );
        &step["value"]
    }

    /// Asserts that every step succeeded, the client reported no error, and the driver exited
    /// with success.
    fn all_passed(&self) {
        for name in self.report["steps"].as_object().unwrap().keys() {
            self.step(name);
        }
        let errors = &self.report["clientErrors"];
        assert!(
            errors.as_array().is_some_and(Vec::is_empty),
            "{} {}: the client reported errors: {errors}\nstderr:\n{}",
            self.report["scenario"],
            self.report["transport"],
            self.stderr
        );
        assert!(
            self.status.success(),
            "the driver exited with {}:\n{}",
            self.status,
            self.stderr
        );
    }

    /// The wire responses to requests of `method`.
    fn responses(&self, method: &str) -> Vec<&Value> {
        self.report["wire"]["responses"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["method"] == method)
            .collect()
    }

    /// Asserts that every result of `methods` on the wire carried `resultType: "complete"`.
    fn results_carry_result_type(&self, methods: &[&str]) {
        for method in methods {
            let responses = self.responses(method);
            assert!(!responses.is_empty(), "no {method} response on the wire");
            for response in responses {
                assert_eq!(
                    response["resultType"], "complete",
                    "{method} result without resultType: {response}"
                );
            }
        }
    }
}

/// Runs `node tests/clients/run.mjs <args...>` with `env` (and PATH) and parses what it printed.
fn run(args: &[&str], env: &[(&str, &str)]) -> Observed {
    require_clients();
    let dir = clients_dir();
    let mut child = Command::new("node")
        .arg(dir.join("run.mjs"))
        .args(args)
        .current_dir(&dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "run.mjs {args:?} did not finish within {RUN_TIMEOUT:?}; stderr:\n{}",
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = stdout.join().unwrap();
    let stderr = stderr.join().unwrap();
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    let report = line
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!("run.mjs {args:?} printed no report ({status}); stdout:\n{stdout}\nstderr:\n{stderr}")
        });
    Observed {
        report,
        status,
        stderr,
    }
}

fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        text
    })
}

/// Runs `scenario` over stdio: the client spawns `hooks-mcp` (with `server_args`) on a fresh
/// store.
fn over_stdio(scenario: &str, server_args: &[&str]) -> Observed {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_str().unwrap();
    let mut args = vec![scenario, "stdio", front_bin()];
    args.extend_from_slice(server_args);
    run(
        &args,
        &[
            ("HOOKS_MCP_HOME", home_path),
            ("HOOKS_MCP_FULL_BIN", full_bin()),
            ("HOOKS_MCP_SESSION_ID", "client-tests"),
        ],
    )
}

/// Runs `scenario` over Streamable HTTP against a daemon (with `daemon_env`) on a fresh store.
fn over_http(scenario: &str, daemon_env: &[(&str, &str)]) -> Observed {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_str().unwrap();
    let mut command = Command::new(full_bin());
    command
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("HOOKS_MCP_HOME", home.path())
        .env("MCP_TRANSPORT", "streamable-http")
        .env("MCP_HOST", "127.0.0.1")
        .env("MCP_PORT", "0")
        .env("HOOKS_MCP_TOKEN", TOKEN)
        .env("HOOKS_MCP_LOG", "info,rmcp=warn")
        .envs(daemon_env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let daemon = Daemon::spawn(command);
    daemon.wait_ready();
    let url = daemon.url("/mcp");
    let mut observed = run(
        &[scenario, "http", &url],
        &[
            ("HOOKS_MCP_TOKEN", TOKEN),
            ("HOOKS_MCP_HOME", home_path),
            ("HOOKS_MCP_FULL_BIN", full_bin()),
        ],
    );
    observed.stderr.push_str("\n--- the daemon's log:\n");
    observed.stderr.push_str(&daemon.text());
    observed
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// A message to one session (`channel_publish`'s `to`): echoed in the answer, read by its
/// recipient, hidden from another session.
fn one_to_one_works(observed: &Observed) {
    let published = &observed.step("channel_publish to")["structuredContent"];
    assert_eq!(published["to"], "one-to-one-recipient", "{published}");
    let id = &published["id"];
    let read = |step: &str| -> Vec<Value> {
        let messages = &observed.step(step)["structuredContent"]["messages"];
        messages
            .as_array()
            .unwrap_or_else(|| panic!("{step}: {messages}"))
            .iter()
            .map(|m| m["id"].clone())
            .collect()
    };
    assert!(read("channel_read as the recipient").contains(id));
    let others = read("channel_read as another session");
    assert!(!others.contains(id), "{others:?}");
    // The broadcast published before it is still read by everyone.
    assert!(!others.is_empty());
}

/// The 1.x SDK's scenario: the `initialize` handshake, tools, resources.
fn legacy_sdk_works(observed: &Observed, transport: &str) {
    observed.all_passed();
    assert_eq!(
        observed.report["client"]["package"],
        "@modelcontextprotocol/sdk"
    );
    let connect = observed.step("connect");
    assert_eq!(connect["serverVersion"]["name"], "hooks-mcp", "{connect}");
    let version = connect["protocolVersion"].as_str().unwrap_or_default();
    assert!(version.starts_with("2025-"), "negotiated {version:?}");
    assert_eq!(
        observed.responses("initialize").len(),
        1,
        "one initialize handshake"
    );
    assert!(
        connect["capabilities"]["resources"].is_object(),
        "{connect}"
    );

    let tools = strings(observed.step("tools/list"));
    for tool in [
        "channel_publish",
        "channel_list",
        "channel_read",
        "schedule_create",
    ] {
        assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
    }
    let published = &observed.step("channel_publish")["structuredContent"];
    assert_eq!(published["channel"], CHANNEL, "{published}");
    assert!(published["id"].is_u64(), "{published}");
    let channels = &observed.step("channel_list")["structuredContent"]["channels"];
    assert_eq!(channels[0]["channel"], CHANNEL, "{channels}");
    assert_eq!(channels[0]["active"], 1, "{channels}");

    let resources = observed.step("resources/list");
    assert!(
        resources
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == CHANNEL_URI),
        "{resources}"
    );
    let templates = observed.step("resources/templates/list");
    assert_eq!(templates[0]["uriTemplate"], TEMPLATE, "{templates}");
    let read = observed.step("resources/read");
    assert_eq!(read["contents"][0]["uri"], CHANNEL_URI, "{read}");
    assert_eq!(
        read["value"]["messages"][0]["message"],
        format!("published by the 1.x SDK over {transport}"),
        "{read}"
    );
    one_to_one_works(observed);
}

#[test]
fn sdk_1x_over_stdio_lists_calls_and_reads() {
    legacy_sdk_works(&over_stdio("legacy", &[]), "stdio");
}

#[test]
fn sdk_1x_over_http_lists_calls_and_reads() {
    legacy_sdk_works(&over_http("legacy", &[]), "http");
}

/// The 2.x client pinned to 2026-07-28 connected in the modern era through `server/discover`
/// (over stdio the client probes on a sibling process, so only HTTP shows it on the wire).
fn connected_modern(observed: &Observed) {
    assert_eq!(
        observed.report["client"]["package"],
        "@modelcontextprotocol/client"
    );
    let connect = observed.step("connect");
    assert_eq!(connect["era"], "modern", "{connect}");
    assert_eq!(connect["protocolVersion"], "2026-07-28", "{connect}");
    assert_eq!(connect["serverVersion"]["name"], "hooks-mcp", "{connect}");
    let versions = strings(&connect["discover"]["supportedVersions"]);
    assert!(versions.contains(&"2026-07-28"), "{connect}");
    assert!(connect["capabilities"]["tools"].is_object(), "{connect}");
    assert!(
        observed.responses("initialize").is_empty(),
        "a modern connection sends no initialize"
    );
    if observed.report["transport"] == "http" {
        observed.results_carry_result_type(&["server/discover"]);
    }
}

/// Tools on the modern era: tools/list and two tool calls, each result typed.
fn modern_tools_work(observed: &Observed) {
    connected_modern(observed);
    let tools = strings(observed.step("tools/list"));
    for tool in ["channel_publish", "channel_list", "channel_read"] {
        assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
    }
    let published = &observed.step("channel_publish")["structuredContent"];
    assert_eq!(published["channel"], CHANNEL, "{published}");
    assert!(published["id"].is_u64(), "{published}");
    let channels = &observed.step("channel_list")["structuredContent"]["channels"];
    assert_eq!(channels[0]["channel"], CHANNEL, "{channels}");
    one_to_one_works(observed);
    observed.results_carry_result_type(&["tools/list", "tools/call"]);
}

#[test]
fn client_2x_over_stdio_discovers_and_calls_tools() {
    modern_tools_work(&over_stdio("modern", &[]));
}

#[test]
fn client_2x_over_http_discovers_and_calls_tools() {
    modern_tools_work(&over_http("modern", &[]));
}

/// The 2.x client probing with `server/discover` (`versionNegotiation: 'auto'`) settles on the
/// modern era rather than falling back to `initialize`, and tools work on it.
fn auto_negotiation_selects_modern(observed: &Observed) {
    observed.all_passed();
    assert_eq!(observed.report["client"]["negotiation"], "auto");
    connected_modern(observed);
    let tools = strings(observed.step("tools/list"));
    assert!(tools.contains(&"channel_publish"), "{tools:?}");
    let channels = &observed.step("channel_list")["structuredContent"]["channels"];
    assert_eq!(channels[0]["channel"], CHANNEL, "{channels}");
    observed.results_carry_result_type(&["tools/list", "tools/call"]);
}

#[test]
fn client_2x_auto_over_stdio_selects_the_modern_era() {
    auto_negotiation_selects_modern(&over_stdio("auto", &[]));
}

#[test]
fn client_2x_auto_over_http_selects_the_modern_era() {
    auto_negotiation_selects_modern(&over_http("auto", &[]));
}

/// Lazy mode on the modern era: two tools at start, `find_tools` names the channel tools,
/// `load_modules` adds them to the session's list and they can be called.
fn modern_lazy_loads(observed: &Observed) {
    connected_modern(observed);
    assert_eq!(
        strings(observed.step("tools/list")),
        ["find_tools", "load_modules"]
    );
    let found = observed.step("find_tools");
    assert!(found.to_string().contains("channel_publish"), "{found}");
    let loaded = &observed.step("load_modules")["structuredContent"];
    assert!(
        strings(&loaded["added"]).contains(&"channel_publish"),
        "{loaded}"
    );
    let after = strings(observed.step("tools/list after"));
    assert!(
        after.contains(&"channel_publish"),
        "tools/list after load_modules lacks channel_publish: {after:?}"
    );
    assert_eq!(
        observed.step("channel_publish")["structuredContent"]["channel"],
        CHANNEL
    );
    observed.results_carry_result_type(&["tools/list", "tools/call"]);
}

/// Resources on the modern era: list, templates, read back what the client published,
/// completion of the template's argument, each result typed.
fn modern_resources_work(observed: &Observed, transport: &str) {
    connected_modern(observed);
    let resources = observed.step("resources/list");
    assert!(
        resources
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == CHANNEL_URI),
        "{resources}"
    );
    let templates = observed.step("resources/templates/list");
    assert_eq!(templates[0]["uriTemplate"], TEMPLATE, "{templates}");
    let read = observed.step("resources/read");
    assert_eq!(
        read["value"]["messages"][0]["message"],
        format!("published by the 2.x client over {transport}"),
        "{read}"
    );
    let completion = observed.step("completion/complete");
    assert!(
        strings(&completion["values"]).contains(&CHANNEL),
        "{completion}"
    );
    observed.results_carry_result_type(&[
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
    ]);
}

#[test]
fn client_2x_over_stdio_lists_reads_and_completes_resources() {
    modern_resources_work(&over_stdio("modern", &[]), "stdio");
}

#[test]
fn client_2x_over_http_lists_reads_and_completes_resources() {
    modern_resources_work(&over_http("modern", &[]), "http");
}

/// Asserts that every notification of `prefix` on the wire came on the subscription (its
/// `_meta` names the subscription's id), and that there was at least one.
fn notifications_on_the_subscription(observed: &Observed, prefix: &str) {
    let on_wire: Vec<&Value> = observed.report["wire"]["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["method"].as_str().unwrap_or_default().starts_with(prefix))
        .collect();
    assert!(!on_wire.is_empty(), "no {prefix}* notification on the wire");
    for notification in on_wire {
        assert!(
            notification["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].is_string(),
            "a notification outside the subscription (no subscription id): {notification}"
        );
    }
}

/// `subscriptions/listen` on the modern era: the filter honoured, another process's
/// publications heard on the stream (the channel's update, the new channel's list change), and
/// the stream closed by the client.
fn modern_subscriptions_work(observed: &Observed) {
    connected_modern(observed);
    let listen = observed.step("subscriptions/listen");
    let honoured = &listen["honoredFilter"];
    assert_eq!(honoured["toolsListChanged"], true, "{listen}");
    assert_eq!(honoured["resourcesListChanged"], true, "{listen}");
    assert_eq!(
        strings(&honoured["resourceSubscriptions"]),
        [CHANNEL_URI],
        "{listen}"
    );
    observed.step("publish from another process");
    let updated = observed.step("notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], CHANNEL_URI, "{updated}");
    observed.step("notifications/resources/list_changed");
    notifications_on_the_subscription(observed, "notifications/resources/");
    let read = observed.step("resources/read after");
    assert_eq!(
        read["value"]["messages"][0]["message"], "published by another process",
        "{read}"
    );
    assert_eq!(observed.step("subscription close"), "local");
    observed.all_passed();
}

#[test]
fn client_2x_over_stdio_hears_another_process_on_subscriptions_listen() {
    modern_subscriptions_work(&over_stdio("modern", &[]));
}

#[test]
fn client_2x_over_http_hears_another_process_on_subscriptions_listen() {
    modern_subscriptions_work(&over_http("modern", &[]));
}

/// Lazy mode with a subscription: `load_modules` is heard as `notifications/tools/list_changed`
/// on the `subscriptions/listen` stream.
fn modern_lazy_notifies(observed: &Observed) {
    modern_lazy_loads(observed);
    let listen = observed.step("subscriptions/listen");
    assert_eq!(
        listen["honoredFilter"]["toolsListChanged"], true,
        "{listen}"
    );
    observed.step("notifications/tools/list_changed");
    notifications_on_the_subscription(observed, "notifications/tools/");
    assert_eq!(observed.step("subscription close"), "local");
    observed.all_passed();
}

#[test]
fn client_2x_lazy_over_stdio_loads_modules_and_hears_tools_list_changed() {
    modern_lazy_notifies(&over_stdio("lazy", &["--lazy"]));
}

/// Lazy mode over HTTP on the modern era: no session to load modules into, so the list offers
/// `find_tools` (with each tool's input schema) and `call_tool`, which runs any tool by name;
/// `load_modules` is refused and says so.
fn modern_lazy_calls_through_call_tool(observed: &Observed) {
    observed.all_passed();
    connected_modern(observed);
    assert_eq!(
        strings(observed.step("tools/list")),
        ["find_tools", "call_tool"]
    );
    let found = &observed.step("find_tools")["structuredContent"]["tools"];
    let publish = found
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "channel_publish")
        .unwrap_or_else(|| panic!("find_tools names no channel_publish: {found}"));
    assert!(
        publish["inputSchema"]["properties"]["channel"].is_object(),
        "{publish}"
    );
    let published = &observed.step("call_tool channel_publish")["structuredContent"];
    assert_eq!(published["channel"], CHANNEL, "{published}");
    let channels = &observed.step("call_tool channel_list")["structuredContent"]["channels"];
    assert_eq!(channels[0]["channel"], CHANNEL, "{channels}");
    let refused = observed.step("load_modules refused");
    assert!(refused.to_string().contains("call_tool"), "{refused}");
    assert_eq!(
        strings(observed.step("tools/list after")),
        ["find_tools", "call_tool"]
    );
    observed.results_carry_result_type(&["tools/list", "tools/call"]);
}

#[test]
fn client_2x_lazy_over_http_calls_tools_through_call_tool() {
    modern_lazy_calls_through_call_tool(&over_http("lazy", &[("HOOKS_MCP_MODE", "lazy")]));
}
