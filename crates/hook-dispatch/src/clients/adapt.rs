//! A client's payload rewritten into the dispatcher's shape (Claude Code's field names), and
//! telling the client from a payload's fields.
//!
//! Unknown fields are kept as they are (condition scripts see them); only the fields the
//! dispatcher reads are set: `session_id` (from `session_id`, `sessionId` or `conversation_id`),
//! `cwd` (from `cwd`, `workingDirectory` or the first of `workspace_roots`), and for tool events
//! `tool_name` and `tool_input` (from `tool_name`/`toolName` and
//! `tool_input`/`toolArgs`/`toolInput`, a JSON string parsed). The client's shell tool is named
//! `Bash` (its command in `tool_input.command`), Gemini CLI's MCP tools
//! `mcp__<server>__<tool>` from their `mcp_context`, and a few file tools by Claude Code's
//! names, so that condition matchers (`bash.git`, `edit`, `mcp__github`) mean the same for
//! every client. The event name moves under [`MARKER`] with the client (and the client's own
//! tool name when it was renamed).
//!
//! At a turn's end, the client's word that a stop hook already made the agent go on becomes
//! `stop_hook_active: true`, which the dispatcher reads before pushing anything (never twice
//! in a row): Codex, Gemini CLI and Copilot CLI send `stop_hook_active` (Copilot CLI's SDK
//! spells it `stopHookActive`), Cursor counts its follow-ups in `loop_count`; Cursor's stop of
//! a turn that was aborted or failed (`status`) is not pushed into either.

use serde_json::{Map, Value, json};

use super::{Client, Route};
use crate::payload::Event;

/// The field of an adapted payload that names the client and its event:
/// `{"hooks_mcp": {"client": "gemini", "event": "AfterTool", "tool_name": "run_shell_command"}}`.
pub const MARKER: &str = "hooks_mcp";

/// The client a payload sent to a Claude Code hook comes from, by fields only Claude Code does
/// not send: VS Code's camelCase `sessionId`/`hookEventName`, Cursor's `cursor_version` or
/// `conversation_id`, Copilot CLI's `toolName`/`toolArgs`/`workingDirectory`; an adapted
/// payload names its client under [`MARKER`]. `None` when nothing tells.
pub fn detect(raw: &Map<String, Value>) -> Option<Client> {
    if let Some((client, _)) = marked(raw) {
        return Some(client);
    }
    let has = |keys: &[&str]| keys.iter().any(|k| raw.contains_key(*k));
    if has(&["cursor_version", "conversation_id", "generation_id"]) {
        Some(Client::Cursor)
    } else if has(&["sessionId", "hookEventName"]) {
        Some(Client::VsCode)
    } else if has(&["toolName", "toolArgs", "workingDirectory"]) {
        Some(Client::Copilot)
    } else {
        None
    }
}

/// The client and client event an adapted payload names under [`MARKER`].
pub fn marked(raw: &Map<String, Value>) -> Option<(Client, String)> {
    let marker = raw.get(MARKER)?.as_object()?;
    let client = Client::parse(marker.get("client")?.as_str()?)?;
    let event = marker.get("event")?.as_str()?.to_owned();
    Some((client, event))
}

/// Rewrites `value`, sent by `client` for its event `client_event` (answered as `route`), into
/// the dispatcher's shape. An already adapted payload comes back unchanged.
///
/// # Errors
/// A sentence saying why the payload cannot be placed: not an object, another event than the
/// one registered, no session id, no tool name for a tool event.
pub fn adapt(
    client: Client,
    client_event: &str,
    route: Route,
    value: Value,
) -> Result<Map<String, Value>, String> {
    let Value::Object(mut raw) = value else {
        return Err("the payload is not a JSON object".into());
    };
    if marked(&raw).is_some() {
        return Ok(raw);
    }
    for key in ["hook_event_name", "hookEventName"] {
        // The client's other names for the same event (Copilot CLI's `userPromptSubmitted`
        // for `UserPromptSubmit`) are the same event.
        if let Some(named) = raw.remove(key)
            && let Some(named) = named.as_str()
            && !client
                .registered_name(named)
                .eq_ignore_ascii_case(client.registered_name(client_event))
        {
            return Err(format!(
                "the payload is for `{}` but the hook was registered for `{client_event}`",
                shown(named)
            ));
        }
    }
    let session = [
        "session_id",
        "sessionId",
        "conversation_id",
        "conversationId",
    ]
    .iter()
    .find_map(|k| raw.get(*k).and_then(Value::as_str))
    .map(str::trim)
    .filter(|s| !s.is_empty())
    .map(str::to_owned)
    .ok_or("the payload has no session id (`session_id`, `sessionId` or `conversation_id`)")?;
    raw.insert("session_id".into(), session.into());
    if !raw.get("cwd").is_some_and(Value::is_string) {
        let cwd = raw
            .get("workingDirectory")
            .and_then(Value::as_str)
            .or_else(|| {
                raw.get("workspace_roots")
                    .and_then(Value::as_array)
                    .and_then(|roots| roots.first())
                    .and_then(Value::as_str)
            })
            .map(str::to_owned);
        if let Some(cwd) = cwd {
            raw.insert("cwd".into(), cwd.into());
        }
    }
    let mut marker = json!({ "client": client.name(), "event": client_event });
    if route.event == Event::Stop && stop_hook_already_ran(client, &raw) {
        raw.insert("stop_hook_active".into(), true.into());
    }
    if route.event.is_tool_event() {
        let (name, input) = tool_call(client, client_event, &raw).ok_or_else(|| {
            format!("the {client_event} payload has no tool name (`tool_name` or `toolName`)")
        })?;
        let original = raw
            .get("tool_name")
            .or_else(|| raw.get("toolName"))
            .cloned();
        if let Some(original) = original.filter(|o| o.as_str() != Some(name.as_str())) {
            marker["tool_name"] = original;
        }
        raw.insert("tool_name".into(), name.into());
        raw.insert("tool_input".into(), input);
    }
    raw.insert(MARKER.into(), marker);
    Ok(raw)
}

/// Whether the client says this turn's end must not be pushed into: a stop hook already made
/// the agent go on (`stop_hook_active`, Copilot CLI's SDK `stopHookActive`, Cursor's
/// `loop_count` above 0), or Cursor's turn was aborted or failed (`status` other than
/// `completed`).
fn stop_hook_already_ran(client: Client, raw: &Map<String, Value>) -> bool {
    let flag = |key: &str| raw.get(key).and_then(Value::as_bool) == Some(true);
    let followed_up = raw
        .get("loop_count")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 0);
    let not_completed = client == Client::Cursor
        && raw
            .get("status")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.trim().eq_ignore_ascii_case("completed"));
    flag("stop_hook_active") || flag("stopHookActive") || followed_up || not_completed
}

/// The tool's name (as the dispatcher names it) and input.
fn tool_call(client: Client, event: &str, raw: &Map<String, Value>) -> Option<(String, Value)> {
    if client == Client::Cursor && event.eq_ignore_ascii_case("beforeShellExecution") {
        let command = raw.get("command").and_then(Value::as_str)?;
        let mut input = json!({ "command": command });
        if let Some(cwd) = raw.get("cwd") {
            input["cwd"] = cwd.clone();
        }
        return Some(("Bash".into(), input));
    }
    let name = raw
        .get("tool_name")
        .or_else(|| raw.get("toolName"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())?;
    let input = ["tool_input", "toolArgs", "toolInput"]
        .iter()
        .find_map(|k| raw.get(*k))
        .map(parsed)
        .unwrap_or_else(|| Value::Object(Map::new()));
    if client == Client::Cursor && event.eq_ignore_ascii_case("beforeMCPExecution") {
        let name = if name.starts_with("mcp__") {
            name.to_owned()
        } else {
            format!("mcp__{name}")
        };
        return Some((name, input));
    }
    if client == Client::Gemini
        && let Some(context) = raw.get("mcp_context").and_then(Value::as_object)
        && let (Some(server), Some(tool)) = (
            context.get("server_name").and_then(Value::as_str),
            context.get("tool_name").and_then(Value::as_str),
        )
    {
        return Some((format!("mcp__{server}__{tool}"), input));
    }
    Some((canonical_tool(name).unwrap_or(name).to_owned(), input))
}

/// A tool input given as a JSON string (Copilot CLI's `toolArgs`, Cursor's MCP `tool_input`)
/// parsed; any other value as it is.
fn parsed(value: &Value) -> Value {
    match value {
        Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| value.clone()),
        other => other.clone(),
    }
}

/// Claude Code's name for a client's built-in tool, when there is one.
fn canonical_tool(name: &str) -> Option<&'static str> {
    const NAMES: &[(&[&str], &str)] = &[
        (
            &[
                "bash",
                "shell",
                "run_shell_command",
                "runInTerminal",
                "run_in_terminal",
                "runTerminalCommand",
                "exec_command",
                "local_shell",
            ],
            "Bash",
        ),
        (&["read_file", "readFile", "view"], "Read"),
        (
            &["write_file", "create_file", "createFile", "create"],
            "Write",
        ),
        (
            &[
                "replace",
                "edit",
                "editFiles",
                "replace_string_in_file",
                "StrReplace",
                // Codex's one file tool: its own matchers take `Edit` and `Write` for it.
                "apply_patch",
            ],
            "Edit",
        ),
        (&["web_fetch", "fetch_webpage"], "WebFetch"),
        (&["glob", "file_search"], "Glob"),
        (&["search_file_content", "grep_search"], "Grep"),
    ];
    NAMES
        .iter()
        .find(|(names, _)| {
            names
                .iter()
                .any(|n| *n == name || n.eq_ignore_ascii_case(name))
        })
        .map(|(_, canonical)| *canonical)
        .filter(|canonical| *canonical != name)
}

/// A payload's text in a refusal: control characters escaped, at most 64 characters.
fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(64).flat_map(char::escape_debug).collect();
    if text.chars().nth(64).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn client_tools_get_the_dispatchers_names() {
        let gemini = json!({
            "session_id": "g1", "hook_event_name": "BeforeTool", "cwd": "/src",
            "tool_name": "mcp_tracker_get_issue", "tool_input": {"issue": 4},
            "mcp_context": {"server_name": "tracker", "tool_name": "get_issue"}
        });
        let out = adapt(
            Client::Gemini,
            "BeforeTool",
            Route::CONDITIONS_BEFORE_TOOL,
            gemini,
        )
        .unwrap();
        assert_eq!(out["tool_name"], "mcp__tracker__get_issue");
        assert_eq!(out["hooks_mcp"]["tool_name"], "mcp_tracker_get_issue");
        assert!(!out.contains_key("hook_event_name"));

        let copilot = json!({"sessionId": "c1", "workingDirectory": "/w", "toolName": "bash",
                             "toolArgs": "{\"command\":\"git push\"}"});
        let out = adapt(
            Client::Copilot,
            "PreToolUse",
            Route::whole(Event::PreToolUse),
            copilot,
        )
        .unwrap();
        assert_eq!(out["session_id"], "c1");
        assert_eq!(
            adapt(
                Client::Codex,
                "PreToolUse",
                Route::whole(Event::PreToolUse),
                json!({"session_id": "x1", "tool_name": "apply_patch", "tool_input": {}}),
            )
            .unwrap()["tool_name"],
            "Edit"
        );
        assert_eq!(out["cwd"], "/w");
        assert_eq!(out["tool_name"], "Bash");
        assert_eq!(out["tool_input"], json!({"command": "git push"}));

        let cursor = json!({"conversation_id": "k1", "hook_event_name": "beforeShellExecution",
                            "command": "rm -rf /", "cwd": "/p", "workspace_roots": ["/p"]});
        let out = adapt(
            Client::Cursor,
            "beforeShellExecution",
            Route::CONDITIONS_BEFORE_TOOL,
            cursor,
        )
        .unwrap();
        assert_eq!(
            (&out["session_id"], &out["tool_name"]),
            (&json!("k1"), &json!("Bash"))
        );
        assert_eq!(out["tool_input"]["command"], "rm -rf /");
    }

    #[test]
    fn payloads_that_cannot_be_placed_say_why() {
        let route = Route::whole(Event::PreToolUse);
        let cases = [
            (json!([1]), "not a JSON object"),
            (json!({"tool_name": "Bash"}), "no session id"),
            (json!({"sessionId": "s"}), "no tool name"),
            (
                json!({"sessionId": "s", "hookEventName": "Stop", "tool_name": "x"}),
                "for `Stop`",
            ),
        ];
        for (value, says) in cases {
            let why = adapt(Client::VsCode, "PreToolUse", route, value.clone()).unwrap_err();
            assert!(why.contains(says), "{value}: {why}");
        }
    }

    #[test]
    fn a_clients_other_name_for_the_registered_event_is_that_event() {
        let prompt = Route::whole(Event::UserPromptSubmit);
        for named in [
            "userPromptSubmitted",
            "UserPromptSubmitted",
            "UserPromptSubmit",
        ] {
            let payload = json!({"sessionId": "c1", "hookEventName": named, "prompt": "hi"});
            let out = adapt(Client::Copilot, "UserPromptSubmit", prompt, payload);
            assert_eq!(out.unwrap()["session_id"], "c1", "{named}");
        }
        let payload = json!({"sessionId": "c1", "hookEventName": "PreToolUse", "prompt": "hi"});
        let why = adapt(Client::Copilot, "UserPromptSubmit", prompt, payload).unwrap_err();
        assert!(why.contains("for `PreToolUse`"), "{why}");
        // Codex has no such alias.
        let payload = json!({"session_id": "x", "hook_event_name": "userPromptSubmitted"});
        assert!(adapt(Client::Codex, "UserPromptSubmit", prompt, payload).is_err());
    }

    #[test]
    fn each_clients_word_for_a_stop_that_already_went_on_is_stop_hook_active() {
        let stop = Route::whole(Event::Stop);
        let active = |client: Client, payload: Value| {
            adapt(client, "x", stop, payload)
                .unwrap()
                .get("stop_hook_active")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        assert!(active(
            Client::Copilot,
            json!({"sessionId": "c1", "stopHookActive": true})
        ));
        assert!(!active(
            Client::Copilot,
            json!({"sessionId": "c1", "stop_hook_active": false})
        ));
        assert!(active(
            Client::Gemini,
            json!({"session_id": "g1", "stop_hook_active": true})
        ));
        let cursor = |loop_count: u64, status: &str| json!({"conversation_id": "k1", "status": status, "loop_count": loop_count});
        assert!(!active(Client::Cursor, cursor(0, "completed")));
        assert!(active(Client::Cursor, cursor(1, "completed")));
        assert!(active(Client::Cursor, cursor(0, "aborted")));
        assert!(active(Client::Cursor, cursor(0, "error")));
        // Only at a turn's end.
        let start = adapt(
            Client::Cursor,
            "sessionStart",
            Route::whole(Event::SessionStart),
            cursor(1, "completed"),
        );
        assert!(!start.unwrap().contains_key("stop_hook_active"));
    }

    #[test]
    fn clients_are_told_by_their_fields() {
        let of = |v: Value| detect(v.as_object().unwrap());
        assert_eq!(of(json!({"sessionId": "s"})), Some(Client::VsCode));
        assert_eq!(
            of(json!({"conversation_id": "c", "cursor_version": "2.1"})),
            Some(Client::Cursor)
        );
        assert_eq!(of(json!({"toolArgs": "{}"})), Some(Client::Copilot));
        assert_eq!(of(json!({"session_id": "s"})), None);
        assert_eq!(
            of(json!({"hooks_mcp": {"client": "gemini", "event": "AfterTool"}})),
            Some(Client::Gemini)
        );
    }
}
