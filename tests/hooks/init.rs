//! `init` on existing client configuration files: only hooks-mcp's entries change, a second run
//! changes nothing, and switching back or removing is symmetric.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Env, full_bin};

/// A `~/.claude.json` with unrelated state and another server.
fn servers_doc() -> Value {
    json!({
        "numStartups": 42,
        "theme": "dark",
        "mcpServers": {
            "github": { "type": "http", "url": "https://api.example.com/mcp" },
            "memory": { "type": "stdio", "command": "npx", "args": ["-y", "memory-server"], "env": {} }
        },
        "projects": { "/home/dev/src/app": { "allowedTools": [], "hasTrustDialogAccepted": true } }
    })
}

/// A `~/.claude/settings.json` with permissions and another hook on one of our events.
fn settings_doc() -> Value {
    json!({
        "permissions": { "allow": ["Bash(cargo test:*)"] },
        "hooks": {
            "PreToolUse": [
                { "matcher": "Bash", "hooks": [{ "type": "command", "command": "python3 ~/hooks/audit.py" }] }
            ],
            "Stop": [ { "hooks": [{ "type": "command", "command": "notify-send done" }] } ]
        },
        "model": "opus"
    })
}

struct Files {
    servers: PathBuf,
    settings: PathBuf,
}

fn write_files(env: &Env) -> Files {
    let files = Files {
        servers: env.home().join(".claude.json"),
        settings: env.home().join(".claude").join("settings.json"),
    };
    std::fs::create_dir_all(files.settings.parent().unwrap()).unwrap();
    std::fs::write(
        &files.servers,
        serde_json::to_string_pretty(&servers_doc()).unwrap(),
    )
    .unwrap();
    std::fs::write(
        &files.settings,
        serde_json::to_string_pretty(&settings_doc()).unwrap(),
    )
    .unwrap();
    files
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn init(env: &Env, args: &[&str]) -> String {
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    env.cli(&all)
}

fn backups(env: &Env) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = [env.home(), env.home().join(".claude")]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".bak"))
        .collect();
    found.sort();
    found
}

fn full_dir() -> PathBuf {
    Path::new(full_bin())
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .to_owned()
}

#[test]
fn init_registers_the_server_and_hooks_and_nothing_else() {
    let env = Env::new();
    let files = write_files(&env);
    let report = init(&env, &[]);
    assert!(report.contains("add mcpServers.hooks"), "{report}");

    let servers = read(&files.servers);
    let front = full_dir().join("hooks-mcp");
    assert_eq!(
        servers["mcpServers"]["hooks"],
        json!({ "type": "stdio", "command": front.to_string_lossy(), "args": [], "env": {} })
    );
    let mut unrelated = servers.clone();
    unrelated["mcpServers"]
        .as_object_mut()
        .unwrap()
        .remove("hooks");
    assert_eq!(unrelated, servers_doc(), "only mcpServers.hooks may change");

    let settings = read(&files.settings);
    let full = full_dir().join("hooks-mcp-hook");
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "SubagentStart",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    ] {
        let groups = settings["hooks"][event].as_array().unwrap();
        let ours = groups.last().unwrap();
        assert_eq!(
            ours["hooks"],
            json!([{ "type": "command", "command": format!("{} hook {event}", full.display()) }]),
            "{event}"
        );
    }
    assert_eq!(
        settings["hooks"]["PreToolUse"][0],
        settings_doc()["hooks"]["PreToolUse"][0]
    );
    assert_eq!(settings["hooks"]["PreToolUse"][1]["matcher"], json!("*"));
    // The operator's own Stop hook stays, first, beside hooks-mcp's.
    assert_eq!(
        settings["hooks"]["Stop"][0],
        settings_doc()["hooks"]["Stop"][0]
    );
    assert_eq!(settings["hooks"]["Stop"].as_array().unwrap().len(), 2);
    assert_eq!(settings["permissions"], settings_doc()["permissions"]);
    assert_eq!(settings["model"], json!("opus"));

    // Each changed file was backed up with its previous content.
    let made = backups(&env);
    assert_eq!(made.len(), 2, "{made:?}");
    let contents: Vec<Value> = made.iter().map(|p| read(p)).collect();
    assert!(contents.contains(&servers_doc()) && contents.contains(&settings_doc()));

    // Idempotent: nothing changes, nothing is written, no new backup.
    let before = (
        std::fs::read(&files.servers).unwrap(),
        std::fs::read(&files.settings).unwrap(),
    );
    let again = init(&env, &[]);
    assert_eq!(again.matches("unchanged").count(), 2, "{again}");
    assert_eq!(std::fs::read(&files.servers).unwrap(), before.0);
    assert_eq!(std::fs::read(&files.settings).unwrap(), before.1);
    assert_eq!(backups(&env), made);
}

#[test]
fn init_dry_run_prints_the_change_and_writes_nothing() {
    let env = Env::new();
    let files = write_files(&env);
    let before = std::fs::read(&files.settings).unwrap();
    let report = init(&env, &["--dry-run", "--transport", "streamable-http"]);
    assert!(
        report.contains(
            r#"add mcpServers.hooks = {"type":"http","url":"http://localhost:8642/mcp"}"#
        ),
        "{report}"
    );
    assert!(report.contains("add hooks.PreToolUse"), "{report}");
    assert!(report.contains("dry run: nothing was written"), "{report}");
    assert_eq!(std::fs::read(&files.settings).unwrap(), before);
    assert_eq!(read(&files.servers), servers_doc());
    assert!(backups(&env).is_empty());
}

#[test]
fn switching_transports_and_removing_are_symmetric() {
    let env = Env::new();
    let files = write_files(&env);
    init(&env, &[]);
    let stdio = read(&files.servers);

    init(&env, &["--transport", "streamable-http"]);
    assert_eq!(
        read(&files.servers)["mcpServers"]["hooks"],
        json!({ "type": "http", "url": "http://localhost:8642/mcp" })
    );
    let out = env.run(&["init", "--transport", "sse"], "", &[("MCP_PORT", "9100")]);
    assert!(out.status.success());
    assert_eq!(
        read(&files.servers)["mcpServers"]["hooks"],
        json!({ "type": "sse", "url": "http://localhost:9100/sse" })
    );

    init(&env, &["--transport", "stdio"]);
    assert_eq!(
        read(&files.servers),
        stdio,
        "back to stdio is the stdio registration"
    );

    let report = init(&env, &["--remove"]);
    assert!(report.contains("remove mcpServers.hooks"), "{report}");
    assert_eq!(read(&files.servers), servers_doc());
    assert_eq!(read(&files.settings), settings_doc());
    let again = init(&env, &["--remove"]);
    assert_eq!(again.matches("unchanged").count(), 2, "{again}");
}

#[test]
fn init_creates_missing_files_and_refuses_broken_ones() {
    let env = Env::new();
    init(&env, &[]);
    let servers = read(&env.home().join(".claude.json"));
    assert_eq!(servers["mcpServers"].as_object().unwrap().len(), 1);
    assert!(backups(&env).is_empty(), "new files need no backup");
    init(&env, &["--remove"]);
    // The files did not exist before `init`: taking its entries out removes them again.
    assert!(!env.home().join(".claude.json").exists());
    assert!(!env.home().join(".claude/settings.json").exists());

    let broken = env.home().join(".claude/settings.json");
    std::fs::write(&broken, "{ \"hooks\": ").unwrap();
    let out = env.run(&["init"], "", &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("settings.json is not valid JSON"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), "{ \"hooks\": ");
    assert!(
        !env.home().join(".claude.json").exists(),
        "nothing half-written"
    );
}

#[test]
fn http_hooks_register_idempotently_and_remove_cleanly() {
    let env = Env::new();
    let files = write_files(&env);
    init(&env, &[]);
    let with_commands = read(&files.settings);

    let report = init(
        &env,
        &["--hooks", "http", "--url", "http://127.0.0.1:9200/"],
    );
    assert!(report.contains("add hooks.PreToolUse"), "{report}");
    let settings = read(&files.settings);
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "SubagentStart",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    ] {
        let groups = settings["hooks"][event].as_array().unwrap();
        let ours = groups.last().unwrap();
        assert_eq!(
            ours["hooks"],
            json!([{
                "type": "http",
                "url": format!("http://127.0.0.1:9200/hooks/{event}"),
                "headers": {
                    "Authorization": "Bearer $HOOKS_MCP_TOKEN",
                    "X-Hooks-Mcp-Channels": "$HOOKS_MCP_CHANNELS",
                },
                "allowedEnvVars": ["HOOKS_MCP_TOKEN", "HOOKS_MCP_CHANNELS"],
                "timeout": 60,
            }]),
            "{event}"
        );
        let all: Vec<&Value> = groups
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .collect();
        // hooks-mcp's command hooks were replaced; the operator's own stay.
        let operators = ["python3 ~/hooks/audit.py", "notify-send done"];
        assert!(
            all.iter().all(|h| h["type"] != "command"
                || operators.contains(&h["command"].as_str().unwrap_or(""))),
            "the command hooks were replaced, not kept beside: {groups:?}"
        );
    }
    // The operator's own Stop hook stays, first, beside hooks-mcp's.
    assert_eq!(
        settings["hooks"]["Stop"][0],
        settings_doc()["hooks"]["Stop"][0]
    );
    assert_eq!(settings["hooks"]["Stop"].as_array().unwrap().len(), 2);
    assert_eq!(
        settings["hooks"]["PreToolUse"][0],
        settings_doc()["hooks"]["PreToolUse"][0]
    );
    assert_eq!(settings["permissions"], settings_doc()["permissions"]);

    // Twice changes nothing and writes nothing.
    let before = std::fs::read(&files.settings).unwrap();
    let made = backups(&env);
    let again = init(&env, &["--hooks", "http", "--url", "http://127.0.0.1:9200"]);
    assert_eq!(again.matches("unchanged").count(), 2, "{again}");
    assert_eq!(std::fs::read(&files.settings).unwrap(), before);
    assert_eq!(backups(&env), made);

    // The default URL comes from MCP_HOST and MCP_PORT; back to command hooks is symmetric.
    let out = env.run(&["init", "--hooks", "http"], "", &[("MCP_PORT", "9300")]);
    assert!(out.status.success());
    assert_eq!(
        read(&files.settings)["hooks"]["SessionStart"][0]["hooks"][0]["url"],
        "http://localhost:9300/hooks/SessionStart"
    );
    init(&env, &[]);
    assert_eq!(read(&files.settings), with_commands);

    init(&env, &["--hooks", "http"]);
    init(&env, &["--remove"]);
    assert_eq!(read(&files.servers), servers_doc());
    assert_eq!(
        read(&files.settings),
        settings_doc(),
        "--remove restores the file"
    );

    let bad = env.run(
        &["init", "--hooks", "http", "--url", "localhost:8642"],
        "",
        &[],
    );
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(read(&files.settings), settings_doc(), "nothing written");
}
