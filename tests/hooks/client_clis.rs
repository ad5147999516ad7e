//! The real Codex, Gemini and Copilot CLIs (pinned in `tests/client-clis/package.json`, which
//! `.ci/run` installs with `npm ci --prefix tests/client-clis --ignore-scripts`) read what
//! `hooks-mcp init --client …` writes in a throwaway `HOME`: each lists hooks-mcp, Codex and
//! Gemini CLI connect to it and Codex lists its hooks as trusted; a second `init` changes
//! nothing, and `init --remove` restores the users' files byte for byte.
//!
//! The CLIs never reach a network service: each runs in a network namespace of its own when
//! `unshare -rn` works here, and always with every proxy variable pointing at a closed port.
//! Only commands that read configuration run (no account, no model).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Env, full_bin};

const CODEX_CONFIG: &str = "# kept by hand\nmodel = \"gpt-5-codex\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\" # an unrelated server\n";
const GEMINI_SETTINGS: &str =
    "{\n  // set up by hand\n  \"ui\": { \"theme\": \"GitHub\" },\n  \"mcpServers\": {}\n}\n";

/// The files `init` writes for the three clients, relative to the home.
const FILES: &[&str] = &[
    ".codex/config.toml",
    ".codex/hooks.json",
    ".gemini/settings.json",
    ".copilot/mcp-config.json",
    ".copilot/hooks/hooks-mcp.json",
];

/// The installed CLIs' directory; fails (never skips) without them.
fn clis() -> PathBuf {
    let bin =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/client-clis/node_modules/.bin");
    for cli in ["codex", "gemini", "copilot"] {
        assert!(
            bin.join(cli).exists(),
            "the {cli} CLI is not installed in {}: run `npm ci --prefix tests/client-clis \
             --ignore-scripts` (.ci/run does, before the tests)",
            bin.display()
        );
    }
    bin
}

/// Whether this machine lets an unprivileged process take a network namespace of its own.
fn isolated_network() -> bool {
    Command::new("unshare")
        .args(["-rn", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A client CLI run in `env`'s home, in `cwd`, offline, with `stdin`; at most two minutes.
fn cli(env: &Env, bin: &Path, args: &[&str], cwd: &Path, stdin: &str) -> Output {
    let mut command = if isolated_network() {
        let mut c = Command::new("unshare");
        c.args(["-rn", "timeout", "120"]).arg(bin);
        c
    } else {
        let mut c = Command::new("timeout");
        c.arg("120").arg(bin);
        c
    };
    let closed = "http://127.0.0.1:9";
    command
        .args(args)
        .current_dir(cwd)
        .env("HOME", env.home())
        .env("XDG_CACHE_HOME", cache_dir())
        .env_remove("CODEX_HOME")
        .env_remove("GEMINI_CLI_HOME")
        .env_remove("COPILOT_HOME")
        .envs(
            [
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "ALL_PROXY",
                "http_proxy",
                "https_proxy",
                "all_proxy",
            ]
            .map(|k| (k, closed)),
        )
        .env("NO_PROXY", "")
        .env("no_proxy", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Where Copilot CLI unpacks itself, kept between runs.
fn cache_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp/client-clis-cache");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn snapshot(env: &Env) -> Vec<(&'static str, Option<Vec<u8>>)> {
    FILES
        .iter()
        .map(|f| (*f, std::fs::read(env.home().join(f)).ok()))
        .collect()
}

fn front() -> String {
    Path::new(full_bin())
        .canonicalize()
        .unwrap()
        .with_file_name("hooks-mcp")
        .to_string_lossy()
        .into_owned()
}

/// Codex's app server over stdio: initialize, then each request in `requests` (numbered from
/// 2); the answers by id, read until all came or two minutes passed.
fn codex_app_server(env: &Env, bin: &Path, cwd: &Path, requests: &[Value]) -> Vec<Value> {
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "hooks-mcp-tests", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "initialized"}),
    ];
    for (i, request) in requests.iter().enumerate() {
        let mut request = request.clone();
        request["jsonrpc"] = "2.0".into();
        request["id"] = (i + 2).into();
        lines.push(request);
    }
    let mut command = if isolated_network() {
        let mut c = Command::new("unshare");
        c.args(["-rn"]).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    let mut child = command
        .arg("app-server")
        .current_dir(cwd)
        .env("HOME", env.home())
        .env_remove("CODEX_HOME")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && tx.send(value).is_err()
            {
                break;
            }
        }
    });
    let mut answers = vec![Value::Null; requests.len()];
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while answers.iter().any(Value::is_null) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(message) = rx.recv_timeout(left) else {
            break;
        };
        if let Some(id) = message["id"].as_u64().filter(|id| *id >= 2) {
            answers[id as usize - 2] = message;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    answers
}

/// The prompt the sessions submit.
const PROMPT: &str = "Please add a condition that blocks force pushes.";

/// Starts `bin args` (a session, in its own network namespace, with a made-up `key`) and
/// waits until the store records a new session whose last event is a prompt (its hooks ran),
/// then stops it; returns that session's id. At most two minutes.
fn session_reaching_its_prompt(
    env: &Env,
    bin: &Path,
    args: &[&str],
    cwd: &Path,
    key: (&str, &str),
) -> String {
    use std::os::unix::process::CommandExt;
    let known: Vec<Value> = env.cli_json(&["sessions", "--all"])["sessions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut child = Command::new("unshare")
        .arg("-rn")
        .arg(bin)
        .args(args)
        .current_dir(cwd)
        .env("HOME", env.home())
        .env("HOOKS_MCP_HOME", env.store_dir())
        .env("GEMINI_CLI_NO_RELAUNCH", "true")
        .env(key.0, key.1)
        .env_remove("HOOKS_MCP_CHANNELS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let found = loop {
        let sessions = env.cli_json(&["sessions", "--all"]);
        let new = sessions["sessions"].as_array().and_then(|all| {
            all.iter()
                .find(|s| !known.contains(s) && s["last_event"] == "UserPromptSubmit")
                .cloned()
        });
        if let Some(session) = new {
            break Some(session["session_id"].as_str().unwrap().to_owned());
        }
        if std::time::Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let group = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let _ = child.wait();
    found.unwrap_or_else(|| panic!("{} ran no prompt hook within two minutes", bin.display()))
}

#[test]
fn the_real_clients_read_what_init_writes_and_remove_restores_their_files() {
    let bin = clis();
    let env = Env::new();
    let home = env.home();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(home.join(".codex/config.toml"), CODEX_CONFIG).unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(home.join(".gemini/settings.json"), GEMINI_SETTINGS).unwrap();
    let project = env.dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let before = snapshot(&env);

    env.cli(&["init", "--client", "codex,gemini,copilot"]);

    // Codex lists the server, connects to it, and lists the six hooks as trusted.
    let listed = cli(
        &env,
        &bin.join("codex"),
        &["mcp", "list", "--json"],
        &project,
        "",
    );
    let servers: Value = serde_json::from_str(&stdout(&listed))
        .unwrap_or_else(|e| panic!("codex mcp list --json ({e}): {}", stdout(&listed)));
    let ours = servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "hooks")
        .unwrap_or_else(|| panic!("codex lists no `hooks` server: {servers}"));
    assert_eq!(ours["enabled"], true);
    assert_eq!(ours["transport"]["command"], front().as_str());
    assert!(
        servers
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "docs"),
        "the user's own server stays: {servers}"
    );
    let answers = codex_app_server(
        &env,
        &bin.join("codex"),
        &project,
        &[
            json!({"method": "mcpServerStatus/list", "params": {}}),
            json!({"method": "hooks/list", "params": {}}),
        ],
    );
    let status = &answers[0]["result"]["data"];
    let hooks_server = status
        .as_array()
        .and_then(|all| all.iter().find(|s| s["name"] == "hooks"))
        .unwrap_or_else(|| panic!("codex app-server reports no `hooks` server: {}", answers[0]));
    assert_eq!(
        hooks_server["serverInfo"]["name"], "hooks-mcp",
        "Codex connected to hooks-mcp: {hooks_server}"
    );
    assert!(
        hooks_server["tools"].get("channel_publish").is_some(),
        "{hooks_server}"
    );
    let hooks = answers[1]["result"]["data"][0]["hooks"]
        .as_array()
        .unwrap_or_else(|| panic!("codex hooks/list: {}", answers[1]))
        .clone();
    let ours: Vec<&Value> = hooks
        .iter()
        .filter(|h| {
            h["command"]
                .as_str()
                .is_some_and(|c| c.contains(" hook --client codex "))
        })
        .collect();
    assert_eq!(ours.len(), 6, "{hooks:?}");
    for hook in ours {
        assert_eq!(
            hook["trustStatus"], "trusted",
            "Codex would not run it: {hook}"
        );
        assert_eq!(hook["enabled"], true, "{hook}");
    }

    // Gemini CLI, in a folder the user trusts, connects to it.
    let trusted = home.join(".gemini/trustedFolders.json");
    std::fs::write(
        &trusted,
        json!({ project.to_string_lossy(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    let listed = cli(&env, &bin.join("gemini"), &["mcp", "list"], &project, "");
    let text = format!(
        "{}{}",
        stdout(&listed),
        String::from_utf8_lossy(&listed.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.contains("hooks:"))
        .unwrap_or_else(|| panic!("gemini mcp list shows no `hooks`: {text}"));
    assert!(
        line.contains(&front()) && line.ends_with("- Connected"),
        "{line}"
    );

    // Copilot CLI lists it (it connects only in a session, which needs an account).
    let listed = cli(
        &env,
        &bin.join("copilot"),
        &["mcp", "list", "--json"],
        &project,
        "",
    );
    let text = stdout(&listed);
    assert!(
        text.contains("\"hooks\"") && text.contains(&front()),
        "copilot mcp list --json: {text}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let got = cli(
        &env,
        &bin.join("copilot"),
        &["mcp", "get", "hooks"],
        &project,
        "",
    );
    assert!(stdout(&got).contains("Status: Enabled"), "{}", stdout(&got));

    // The CLIs run the hooks init registered, on their own payloads: a session that never
    // reaches a model (a made-up key, no network) still starts and submits its prompt, and the
    // hook delivers the broadcast to it.
    if isolated_network() {
        let broadcast = env.cli_json(&["channel", "publish", "ops", "deploy at noon"])["id"]
            .as_i64()
            .unwrap();
        for (name, args, key) in [
            ("gemini", vec!["-p", PROMPT], ("GEMINI_API_KEY", "made-up")),
            (
                "codex",
                vec!["exec", "--skip-git-repo-check", PROMPT],
                ("OPENAI_API_KEY", "sk-made-up"),
            ),
        ] {
            let session = session_reaching_its_prompt(&env, &bin.join(name), &args, &project, key);
            let report = env.cli_json(&["channel", "status", &broadcast.to_string()]);
            let delivered =
                report["sessions"].as_array().unwrap().iter().any(|s| {
                    s["session_id"] == session.as_str() && s["delivered_at_time"].is_string()
                });
            assert!(
                delivered,
                "{name}'s session {session} got the broadcast: {report}"
            );
        }
        assert!(
            !env.store_dir().join("unplaced-hooks.json").exists(),
            "every payload was placed"
        );
    } else {
        println!(
            "no network namespace here (`unshare -rn`): the sessions that would run the hooks \
             inside the CLIs are not started, so that nothing can reach a model's service"
        );
    }

    // A second init changes nothing.
    let registered = snapshot(&env);
    let again = env.cli(&["init", "--client", "codex,gemini,copilot"]);
    assert!(
        !again.contains("add ") && !again.contains("replace ") && !again.contains("trust "),
        "{again}"
    );
    assert_eq!(snapshot(&env), registered);

    // Removing restores every file as it was, byte for byte (absent ones stay absent).
    env.cli(&["init", "--remove", "--client", "codex,gemini,copilot"]);
    for ((file, was), (_, is)) in before.iter().zip(&snapshot(&env)) {
        assert_eq!(
            is.as_deref().map(String::from_utf8_lossy),
            was.as_deref().map(String::from_utf8_lossy),
            "{file}"
        );
    }
    let listed = cli(
        &env,
        &bin.join("codex"),
        &["mcp", "list", "--json"],
        &project,
        "",
    );
    assert!(
        !stdout(&listed).contains("\"hooks\""),
        "{}",
        stdout(&listed)
    );
}
