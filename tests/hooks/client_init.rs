//! `init` and `status` for the clients beside Claude Code, on users' existing files (with
//! comments and other entries): what is written where, that a second run changes nothing,
//! that `--remove` restores every file byte for byte, and that tokens are only referenced.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Env, full_bin};

const CODEX_CONFIG: &str = r#"# Codex settings, kept by hand
model = "gpt-5-codex" # the default

[mcp_servers.github]
command = "github-mcp"
args = ["--read-only"]
"#;

const GEMINI_SETTINGS: &str = r#"{
  // Gemini settings
  "theme": "GitHub",
  "hooks": {
    "BeforeTool": [
      { "matcher": "write_file", "hooks": [{ "type": "command", "command": "./audit.sh" }] }
    ]
  }
}
"#;

const COPILOT_MCP: &str = r#"{
  "mcpServers": {
    "context7": {
      "tools": [
        "*"
      ],
      "type": "local",
      "command": "npx",
      "args": [
        "-y",
        "@upstash/context7-mcp"
      ]
    }
  }
}
"#;

// Written on one line: `init` adds its events to the `hooks` object, `--remove` restores the line.
const CURSOR_HOOKS: &str =
    "{ \"version\": 1, \"hooks\": { \"afterFileEdit\": [{ \"command\": \"./format.sh\" }] } }\n";

const VSCODE_MCP: &str = "{\n\t// VS Code MCP servers\n\t\"servers\": {\n\t\t\"playwright\": { \"command\": \"npx\", \"args\": [\"@playwright/mcp\"] }\n\t},\n\t\"inputs\": []\n}\n";

/// A home with Codex, Gemini CLI, Copilot CLI, Cursor and VS Code configured, no Claude Code.
fn clients_home() -> Env {
    let mut env = Env::new();
    let home = env.home();
    let write = |rel: &str, text: &str| {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(".codex/config.toml", CODEX_CONFIG);
    write(".gemini/settings.json", GEMINI_SETTINGS);
    write(".copilot/mcp-config.json", COPILOT_MCP);
    // Cursor starts with an empty container: `--remove` keeps it.
    write(".cursor/mcp.json", "{ \"mcpServers\": {} }\n");
    write(".cursor/hooks.json", CURSOR_HOOKS);
    write("vscode-user/mcp.json", VSCODE_MCP);
    env.vars.push((
        "HOOKS_MCP_VSCODE_USER_DIR".into(),
        home.join("vscode-user").to_string_lossy().into_owned(),
    ));
    env
}

/// Every file `init` may touch, relative to the home.
const FILES: &[&str] = &[
    ".codex/config.toml",
    ".codex/hooks.json",
    ".gemini/settings.json",
    ".copilot/mcp-config.json",
    ".copilot/hooks/hooks-mcp.json",
    ".cursor/mcp.json",
    ".cursor/hooks.json",
    "vscode-user/mcp.json",
    ".claude.json",
    ".claude/settings.json",
];

fn snapshot(env: &Env) -> Vec<(&'static str, Option<Vec<u8>>)> {
    FILES
        .iter()
        .map(|f| (*f, std::fs::read(env.home().join(f)).ok()))
        .collect()
}

fn json_of(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    client_config::doc::parse_json(&text).unwrap()
}

fn bin_dir() -> PathBuf {
    Path::new(full_bin())
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .to_owned()
}

fn backups(env: &Env) -> usize {
    fn walk(dir: &Path, n: &mut usize) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, n);
            } else if path.to_string_lossy().ends_with(".bak") {
                *n += 1;
            }
        }
    }
    let mut n = 0;
    walk(&env.home(), &mut n);
    n
}

#[test]
fn init_registers_every_client_found_keeps_the_users_files_and_removes_byte_for_byte() {
    let env = clients_home();
    let before = snapshot(&env);
    let report = env.cli(&["init"]);
    for title in [
        "Codex:",
        "Gemini CLI:",
        "Copilot CLI:",
        "Cursor:",
        "VS Code:",
    ] {
        assert!(report.contains(title), "{report}");
    }
    assert!(
        !report.contains("Claude Code:"),
        "Claude Code is not on this machine: {report}"
    );
    let home = env.home();
    let hook = bin_dir().join("hooks-mcp-hook");
    let front = bin_dir().join("hooks-mcp");
    let command =
        |client: &str, event: &str| format!("{} hook --client {client} {event}", hook.display());

    // Codex: the server and the trust entries in config.toml, around the user's own lines.
    let config = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(config.starts_with(CODEX_CONFIG), "{config}");
    assert!(
        config.contains(&format!(
            "[mcp_servers.hooks]\ncommand = \"{}\"\nargs = []\n",
            front.display()
        )),
        "{config}"
    );
    let source = home.join(".codex/hooks.json");
    for event in [
        "session_start",
        "user_prompt_submit",
        "pre_tool_use",
        "post_tool_use",
        "stop",
        "session_end",
    ] {
        let key = format!(
            "[hooks.state.\"{}:{event}:0:0\"]\ntrusted_hash = \"sha256:",
            source.display()
        );
        assert!(config.contains(&key), "{key} in {config}");
    }
    let hooks = json_of(&source);
    assert_eq!(
        hooks["hooks"]["PreToolUse"],
        json!([{ "matcher": "*", "hooks": [{ "type": "command", "command": command("codex", "PreToolUse") }] }])
    );
    for event in ["SessionStart", "Stop", "SessionEnd"] {
        assert_eq!(
            hooks["hooks"][event],
            json!([{ "hooks": [{ "type": "command", "command": command("codex", event) }] }]),
            "{event}"
        );
    }

    // Gemini CLI: its comment and hook kept, hooks-mcp's added after them.
    let settings_text = std::fs::read_to_string(home.join(".gemini/settings.json")).unwrap();
    assert!(
        settings_text.contains("// Gemini settings"),
        "{settings_text}"
    );
    let settings = json_of(&home.join(".gemini/settings.json"));
    assert_eq!(
        settings["mcpServers"]["hooks"],
        json!({ "command": front.to_string_lossy(), "args": [] })
    );
    assert_eq!(settings["hooks"]["BeforeTool"][0]["matcher"], "write_file");
    assert_eq!(
        settings["hooks"]["BeforeTool"][1],
        json!({ "matcher": "*", "hooks": [{ "type": "command", "command": command("gemini", "BeforeTool"), "name": "hooks-mcp" }] })
    );
    for event in ["BeforeAgent", "AfterAgent", "SessionEnd"] {
        assert_eq!(
            settings["hooks"][event],
            json!([{ "hooks": [{ "type": "command", "command": command("gemini", event), "name": "hooks-mcp" }] }]),
            "{event}"
        );
    }

    // Copilot CLI: the server beside the user's, the hooks in hooks-mcp's own file.
    let mcp = json_of(&home.join(".copilot/mcp-config.json"));
    assert!(mcp["mcpServers"]["context7"].is_object());
    assert_eq!(
        mcp["mcpServers"]["hooks"],
        json!({ "type": "local", "command": front.to_string_lossy(), "args": [], "tools": ["*"] })
    );
    let copilot_hooks = json_of(&home.join(".copilot/hooks/hooks-mcp.json"));
    assert_eq!(copilot_hooks["version"], 1);
    let events: Vec<&str> = copilot_hooks["hooks"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionEnd"
        ],
        "Claude Code's names: Stop is Copilot CLI's agentStop"
    );
    for event in events {
        assert_eq!(
            copilot_hooks["hooks"][event],
            json!([{ "type": "command", "bash": command("copilot", event), "timeoutSec": 60 }]),
            "{event}"
        );
    }

    // Cursor: its own hook kept.
    let cursor = json_of(&home.join(".cursor/hooks.json"));
    assert_eq!(
        cursor["hooks"]["afterFileEdit"],
        json!([{ "command": "./format.sh" }])
    );
    for event in [
        "sessionStart",
        "beforeSubmitPrompt",
        "beforeShellExecution",
        "beforeMCPExecution",
        "postToolUse",
        "stop",
        "sessionEnd",
    ] {
        assert_eq!(
            cursor["hooks"][event],
            json!([{ "command": command("cursor", event) }]),
            "{event}"
        );
    }
    assert_eq!(
        json_of(&home.join(".cursor/mcp.json"))["mcpServers"]["hooks"]["command"],
        front.to_string_lossy().as_ref()
    );

    // VS Code: tabs and comment kept; its agent hooks are Claude Code's.
    let vscode_text = std::fs::read_to_string(home.join("vscode-user/mcp.json")).unwrap();
    assert!(
        vscode_text.contains("\t// VS Code MCP servers\n"),
        "{vscode_text}"
    );
    assert_eq!(
        json_of(&home.join("vscode-user/mcp.json"))["servers"]["hooks"],
        json!({ "type": "stdio", "command": front.to_string_lossy(), "args": [] })
    );
    let claude = json_of(&home.join(".claude/settings.json"));
    assert_eq!(
        claude["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"],
        format!("{} hook UserPromptSubmit", hook.display())
    );

    // Twice: nothing changes, nothing is written.
    let registered = snapshot(&env);
    let made = backups(&env);
    let again = env.cli(&["init"]);
    assert!(
        !again.contains("add ") && !again.contains("replace "),
        "{again}"
    );
    assert_eq!(snapshot(&env), registered);
    assert_eq!(backups(&env), made);

    // Status: every client registered, nothing diverges.
    let out = env.run(&["status", "--json"], "", &[]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let clients = status["clients"].as_array().unwrap();
    let names: Vec<&str> = clients
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["codex", "gemini", "copilot", "cursor", "vscode"],
        "{status}"
    );
    for c in clients {
        assert_eq!(
            (&c["registered"], &c["hooks"]),
            (&json!(true), &json!(true)),
            "{c}"
        );
        assert_eq!(c["divergences"], json!([]), "{c}");
    }

    // Removing restores every file as it was, byte for byte; files init created are gone.
    env.cli(&["init", "--remove"]);
    let after = snapshot(&env);
    for ((file, was), (_, is)) in before.iter().zip(&after) {
        assert_eq!(
            is.as_deref().map(String::from_utf8_lossy),
            was.as_deref().map(String::from_utf8_lossy),
            "{file}"
        );
    }
}

#[test]
fn network_registrations_reference_the_token_and_never_hold_it() {
    let env = clients_home();
    let secret = "s3cret-token-value";
    let vars = [("HOOKS_MCP_TOKEN", secret), ("MCP_PORT", "9444")];
    let out = env.run(
        &[
            "init",
            "--client",
            "codex,gemini",
            "--client",
            "copilot,cursor,vscode",
            "--transport",
            "streamable-http",
        ],
        "",
        &vars,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in FILES {
        if let Ok(text) = std::fs::read_to_string(env.home().join(file)) {
            assert!(!text.contains(secret), "{file} holds the token");
        }
    }
    let home = env.home();
    let config = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(
        config.contains(
            "[mcp_servers.hooks]\nurl = \"http://localhost:9444/mcp\"\nbearer_token_env_var = \"HOOKS_MCP_TOKEN\"\n"
        ),
        "{config}"
    );
    let gemini = json_of(&home.join(".gemini/settings.json"));
    assert_eq!(
        gemini["mcpServers"]["hooks"],
        json!({ "httpUrl": "http://localhost:9444/mcp", "headers": { "Authorization": "Bearer $HOOKS_MCP_TOKEN" } })
    );
    assert_eq!(
        gemini["security"]["environmentVariableRedaction"]["allowed"],
        json!(["HOOKS_MCP_TOKEN"]),
        "Gemini CLI redacts *TOKEN* variables from header expansion unless allowed"
    );
    assert_eq!(
        json_of(&home.join(".copilot/mcp-config.json"))["mcpServers"]["hooks"]["headers"],
        json!({ "Authorization": "Bearer ${HOOKS_MCP_TOKEN}" })
    );
    for file in [".cursor/mcp.json", "vscode-user/mcp.json"] {
        let doc = json_of(&home.join(file));
        let entry = doc
            .get("mcpServers")
            .or_else(|| doc.get("servers"))
            .unwrap();
        assert_eq!(
            entry["hooks"]["headers"],
            json!({ "Authorization": "Bearer ${env:HOOKS_MCP_TOKEN}" }),
            "{file}"
        );
    }

    // Codex has no SSE: under `sse` it gets the same daemon's streamable-HTTP URL, which
    // every daemon serves beside /sse, and status finds it matching.
    let out = env.run(&["init", "--transport", "sse"], "", &vars);
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{report}");
    let codex = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(
        codex.contains("url = \"http://localhost:9444/mcp\""),
        "{codex}"
    );
    assert_eq!(
        json_of(&home.join(".gemini/settings.json"))["mcpServers"]["hooks"]["url"],
        "http://localhost:9444/sse"
    );
    let mut sse = vars.to_vec();
    sse.push(("MCP_TRANSPORT", "sse"));
    let out = env.run(&["status", "--json"], "", &sse);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codex = status["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "codex")
        .unwrap();
    assert_eq!(codex["divergences"], json!([]), "{status}");

    // Back to stdio: the token is no longer allowed through Gemini CLI's redaction.
    env.cli(&["init", "--client", "gemini"]);
    assert!(
        json_of(&home.join(".gemini/settings.json"))
            .get("security")
            .is_none()
    );
}

#[test]
fn status_names_a_client_that_diverges_and_the_last_payload_no_client_could_place() {
    let env = clients_home();
    env.cli(&["init", "--client", "gemini"]);
    let path = env.home().join(".gemini/settings.json");
    let mut settings = json_of(&path);
    settings["hooks"]
        .as_object_mut()
        .unwrap()
        .remove("AfterTool");
    std::fs::write(&path, settings.to_string()).unwrap();
    env.hook_args(
        &["hook", "--client", "gemini", "BeforeTool"],
        "{\"tool_name\": \"x\"}",
        &[],
    );

    let out = env.run(&["status", "--json"], "", &[]);
    assert_eq!(out.status.code(), Some(2));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = status["divergences"].to_string();
    assert!(
        text.contains("Gemini CLI:") && text.contains("add hooks.AfterTool"),
        "{text}"
    );
    assert_eq!(status["unplaced"]["client"], "gemini", "{status}");
    assert_eq!(status["unplaced"]["count"], 1);
    assert!(
        status["unplaced"]["reason"]
            .as_str()
            .unwrap()
            .contains("no session id"),
        "{status}"
    );
    let out = env.run(&["status"], "", &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "unplaced:    1 hook payload(s) no client could place; the last: gemini BeforeTool"
        ),
        "{text}"
    );
    assert!(
        text.contains("gemini:      server registered: yes, hooks: yes"),
        "{text}"
    );
}

#[test]
fn a_registration_from_before_the_turn_and_session_end_events_is_named_and_completed() {
    let env = clients_home();
    env.cli(&["init", "--client", "codex,gemini,copilot,cursor"]);
    let home = env.home();
    // What an older init wrote: the same files without the turn's end and the session's end.
    let older = [
        (".codex/hooks.json", &["Stop", "SessionEnd"][..]),
        (".gemini/settings.json", &["AfterAgent", "SessionEnd"]),
        (".copilot/hooks/hooks-mcp.json", &["Stop", "SessionEnd"]),
        (".cursor/hooks.json", &["stop", "sessionEnd"]),
    ];
    for (file, events) in older {
        let path = home.join(file);
        let mut doc = json_of(&path);
        for event in events {
            doc["hooks"].as_object_mut().unwrap().remove(*event);
        }
        std::fs::write(&path, doc.to_string()).unwrap();
    }

    let out = env.run(&["status", "--json"], "", &[]);
    assert_eq!(out.status.code(), Some(2));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = status["divergences"].to_string();
    for (title, events) in [
        ("Codex:", ["Stop", "SessionEnd"]),
        ("Gemini CLI:", ["AfterAgent", "SessionEnd"]),
        ("Cursor:", ["stop", "sessionEnd"]),
    ] {
        for event in events {
            assert!(
                text.contains(title) && text.contains(&format!("add hooks.{event}")),
                "{title} {event}: {text}"
            );
        }
    }
    assert!(text.contains("Copilot CLI:"), "{text}");

    // init completes them (Codex's trust entries with them), and then nothing diverges.
    let report = env.cli(&["init", "--client", "codex,gemini,copilot,cursor"]);
    assert!(report.contains("add hooks.Stop"), "{report}");
    let config = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    let source = home.join(".codex/hooks.json");
    for event in ["stop", "session_end"] {
        let key = format!("[hooks.state.\"{}:{event}:0:0\"]", source.display());
        assert!(config.contains(&key), "{key} in {config}");
    }
    let out = env.run(&["status", "--json"], "", &[]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    for c in status["clients"].as_array().unwrap() {
        if c["name"] != "vscode" {
            assert_eq!(c["divergences"], json!([]), "{c}");
        }
    }
    // Claude Code is not on this machine and was never registered: not checked, so nothing
    // of it diverges; VS Code, on this machine but not registered, is the one divergence left.
    assert_eq!(status["client"]["checked"], json!(false), "{status}");
    let divergences: Vec<&str> = status["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        divergences.len() == 1 && divergences[0].starts_with("VS Code:"),
        "{status}"
    );
    // Without VS Code, the clients registered match, and the exit status says so.
    std::fs::remove_dir_all(home.join("vscode-user")).unwrap();
    let out = env.run(&["status", "--json"], "", &[]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["divergences"], json!([]), "{status}");
    assert_eq!(out.status.code(), Some(0), "{status}");
    let text = String::from_utf8(env.run(&["status"], "", &[]).stdout).unwrap();
    assert!(
        text.contains("Claude Code is not on this machine"),
        "{text}"
    );
    // Once Claude Code is on the machine (its `.claude.json`), its missing registration counts.
    std::fs::write(home.join(".claude.json"), "{}\n").unwrap();
    let out = env.run(&["status", "--json"], "", &[]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{status}");
    assert!(
        status["divergences"]
            .to_string()
            .contains("declares no `mcpServers.hooks`"),
        "{status}"
    );
    std::fs::remove_file(home.join(".claude.json")).unwrap();
    // And --remove takes every one of them out again.
    env.cli(&[
        "init",
        "--remove",
        "--client",
        "codex,gemini,copilot,cursor",
    ]);
    let codex = std::fs::read_to_string(&source).unwrap_or_default();
    assert!(!codex.contains("hooks-mcp-hook"), "{codex}");
    let config = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(!config.contains("hooks.state"), "{config}");
    for file in [
        ".gemini/settings.json",
        ".copilot/hooks/hooks-mcp.json",
        ".cursor/hooks.json",
    ] {
        let text = std::fs::read_to_string(home.join(file)).unwrap_or_default();
        assert!(!text.contains("hooks-mcp-hook"), "{file}: {text}");
    }
}

#[test]
fn status_reads_claude_code_files_with_comments_as_init_does() {
    let env = Env::new();
    let home = env.home();
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        "{\n  // chosen by hand\n  \"model\": \"opus\",\n}\n",
    )
    .unwrap();
    std::fs::write(
        home.join(".claude.json"),
        "// user state\n{ \"numStartups\": 3 }\n",
    )
    .unwrap();
    env.cli(&["init", "--client", "claude"]);

    let out = env.run(&["status", "--json"], "", &[]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = status["divergences"].to_string();
    assert!(!text.contains("not valid JSON"), "{text}");
    assert!(!text.contains("registers no hooks-mcp hook"), "{text}");
    assert!(!text.contains("declares no"), "{text}");
    let settings = std::fs::read_to_string(home.join(".claude/settings.json")).unwrap();
    assert!(settings.contains("// chosen by hand"), "{settings}");
}

#[test]
fn codex_tables_written_inline_are_tables() {
    let env = Env::new();
    let home = env.home();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    let config = "mcp_servers = { other = { command = \"x\" } }\n\
                  [hooks]\nstate = { \"elsewhere:pre_tool_use:0:0\" = { trusted_hash = \"sha256:0\" } }\n";
    let path = home.join(".codex/config.toml");
    std::fs::write(&path, config).unwrap();

    env.cli(&["init", "--client", "codex"]);
    let text = std::fs::read_to_string(&path).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    assert_eq!(
        doc["mcp_servers"]["other"]["command"].as_str(),
        Some("x"),
        "{text}"
    );
    assert!(
        doc["mcp_servers"]["hooks"]["command"].as_str().is_some(),
        "{text}"
    );
    let state = doc["hooks"]["state"].as_table_like().unwrap();
    assert!(state.contains_key("elsewhere:pre_tool_use:0:0"), "{text}");
    assert!(state.len() > 1, "hooks-mcp's hooks are trusted: {text}");
    // A second run changes nothing; removing leaves what the user had.
    let again = env.cli(&["init", "--client", "codex"]);
    assert!(
        !again.contains("add ") && !again.contains("replace "),
        "{again}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    env.cli(&["init", "--client", "codex", "--remove"]);
    let removed: toml_edit::DocumentMut = std::fs::read_to_string(&path).unwrap().parse().unwrap();
    let original: toml_edit::DocumentMut = config.parse().unwrap();
    assert_eq!(
        removed.to_string().replace(' ', ""),
        original.to_string().replace(' ', "")
    );
}

#[test]
fn init_writes_every_file_or_none() {
    let env = Env::new();
    let home = env.home();
    std::fs::write(home.join(".claude.json"), "{}\n").unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(home.join(".gemini/settings.json"), "{}\n").unwrap();
    // Gemini CLI's new text cannot be written beside its file.
    std::fs::create_dir(home.join(".gemini/.settings.json.hooks-mcp-tmp")).unwrap();
    let before = snapshot(&env);

    let out = env.run(&["init", "--client", "claude,gemini"], "", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert_eq!(snapshot(&env), before, "no file changed");
    assert_eq!(backups(&env), 0, "no backup left");

    // Once it can, it writes them all.
    std::fs::remove_dir(home.join(".gemini/.settings.json.hooks-mcp-tmp")).unwrap();
    env.cli(&["init", "--client", "claude,gemini"]);
    assert!(json_of(&home.join(".claude.json"))["mcpServers"]["hooks"].is_object());
    assert!(json_of(&home.join(".gemini/settings.json"))["mcpServers"]["hooks"].is_object());
}

#[test]
fn a_linked_settings_file_stays_a_link_even_before_its_target_exists() {
    let env = Env::new();
    let home = env.home();
    std::fs::write(home.join(".claude.json"), "{}\n").unwrap();
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(home.join("dotfiles")).unwrap();
    let link = home.join(".claude/settings.json");
    std::os::unix::fs::symlink("../dotfiles/claude-settings.json", &link).unwrap();

    env.cli(&["init", "--client", "claude"]);
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    let target = home.join("dotfiles/claude-settings.json");
    assert!(json_of(&target)["hooks"]["UserPromptSubmit"].is_array());

    env.cli(&["init", "--client", "claude", "--remove"]);
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(
        !target.exists(),
        "the file init created is gone, the link kept"
    );
}

#[test]
fn directories_left_with_only_backups_are_no_sign_of_a_client() {
    let env = Env::new();
    let home = env.home();
    env.cli(&["init", "--client", "all"]);
    env.cli(&["init", "--client", "all", "--remove"]);
    // Only backups remain where init created files; a plain init finds no other client.
    let plan = env.cli(&["init", "--dry-run"]);
    assert!(plan.contains("Claude Code:"), "{plan}");
    for other in ["Codex", "Gemini CLI", "Copilot CLI", "Cursor", "VS Code"] {
        assert!(
            !plan.contains(&format!("{other}:")),
            "{other} found: {plan}"
        );
    }
    assert!(
        home.join(".gemini").is_dir(),
        "the test removes nothing itself"
    );
}
