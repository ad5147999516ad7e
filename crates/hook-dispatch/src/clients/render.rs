//! The answer in each client's output format (docs/clients.md has each format's sources).
//!
//! - Claude Code and VS Code: Claude Code's format ([`Response::to_json`]).
//! - Codex: Claude Code's field names, within what Codex accepts (its output schemas reject
//!   unknown fields): no `updatedToolOutput`, `ask` answered as a denial that names the
//!   approval asked for, `updatedInput` only with `allow`, a reason with every denial.
//! - Gemini CLI: `hookSpecificOutput.additionalContext` on `SessionStart`, `BeforeAgent` and
//!   `AfterTool`; `BeforeTool` answers `decision` (`allow`, `ask`, `deny`) with `reason`, and a
//!   rewritten input as `hookSpecificOutput.tool_input`; a replaced output is `AfterTool`'s
//!   `decision: "deny"`, whose `reason` the model gets instead of the tool's result.
//! - Copilot CLI: its own top-level fields (`additionalContext`, `permissionDecision`,
//!   `permissionDecisionReason`, `modifiedArgs`, `modifiedResult`) and, for its Claude Code
//!   compatible hooks, the same in `hookSpecificOutput`.
//! - Cursor: `additional_context` (`sessionStart`, `postToolUse`), `continue` on
//!   `beforeSubmitPrompt`, `permission` with `user_message` and `agent_message` on
//!   `beforeShellExecution` and `beforeMCPExecution`.
//!
//! At the turn's end, what the turn did not show makes the agent go on, in each client's
//! words: Codex's and Copilot CLI's `Stop` answer `{"decision": "block", "reason": …}`
//! (Claude Code's), Gemini CLI's `AfterAgent` `{"decision": "deny", "reason": …}`, Cursor's
//! `stop` `{"followup_message": …}`. The reason starts with [`store::rules::PUSH_HEADER`], as
//! Claude Code's does: these clients give it to the agent as its next prompt (Gemini CLI,
//! Cursor and Copilot CLI submit it as one), and a prompt that is hooks-mcp's own push is not
//! the operator's words (it opens no conditions gate). The session's end answers nothing.
//!
//! Nothing to say is no output, except where the client expects an answer (Cursor's
//! `beforeSubmitPrompt`). What a client cannot apply is left out and said in the returned
//! notes (the hook's stderr).

use serde_json::{Map, Value, json};

use super::{Client, Route};
use crate::output::{Decision, Response};
use crate::payload::Event;

/// The reason given with a denial that came without one (Codex and Gemini CLI require one).
const DENIED: &str = "denied by a hooks-mcp condition";

/// The JSON to print for `response` in `client`'s format, for its event `client_event`
/// answered as `route`, about `tool_name`; and lines for the operator about what the client
/// cannot apply.
pub fn render(
    client: Client,
    client_event: &str,
    route: Route,
    response: &Response,
    tool_name: &str,
) -> (Option<Value>, Vec<String>) {
    let mut notes = Vec::new();
    let answer = match client {
        Client::Claude | Client::VsCode => response.to_json(route.event, tool_name),
        Client::Codex => codex(route.event, response, &mut notes),
        Client::Gemini => gemini(route.event, response),
        Client::Copilot => copilot(route.event, response),
        Client::Cursor => cursor(route.event, response),
    };
    for note in &mut notes {
        *note = format!("hooks-mcp hook {client_event} ({}): {note}", client.title());
    }
    (answer, notes)
}

/// The context blocks on one text, or `None`.
fn context(response: &Response) -> Option<String> {
    (!response.context.is_empty()).then(|| response.context.join("\n"))
}

/// The context, then what the model should read after the call: the `post` conditions' block
/// reasons, and a replaced output the client cannot apply (`replacement`).
fn after_call(response: &Response, replacement: bool) -> Option<String> {
    let mut lines = response.context.clone();
    lines.extend(response.block_reasons.iter().cloned());
    if replacement && let Some(output) = &response.updated_output {
        lines.push(format!(
            "[hooks-mcp] a condition replaced this tool's output with: {}",
            as_text(output)
        ));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// A JSON value as text: a string as it is, anything else as JSON.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The reason a turn-end push gives (`Response::turn_end_reason`); `None` when there is
/// nothing to push.
fn turn_end(response: &Response) -> Option<String> {
    (!response.block_reasons.is_empty()).then(|| response.turn_end_reason())
}

/// The reasons of the decision, or `None`.
fn reasons(response: &Response) -> Option<String> {
    match &response.decision {
        Some((_, reasons)) if !reasons.is_empty() => Some(reasons.join("\n")),
        _ => None,
    }
}

/// `{"hookSpecificOutput": {"hookEventName": name, …fields}}`, or `None` without fields.
fn specific(name: &str, fields: Map<String, Value>) -> Option<Map<String, Value>> {
    if fields.is_empty() {
        return None;
    }
    let mut specific = Map::new();
    specific.insert("hookEventName".into(), name.into());
    specific.extend(fields);
    let mut top = Map::new();
    top.insert("hookSpecificOutput".into(), Value::Object(specific));
    Some(top)
}

/// An object's fields: the pairs whose value is `Some`.
fn fields(pairs: Vec<(&str, Option<Value>)>) -> Map<String, Value> {
    pairs
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
        .collect()
}

fn codex(event: Event, response: &Response, notes: &mut Vec<String>) -> Option<Value> {
    let additional = context(response).map(Value::from);
    match event {
        // Codex's `Stop` takes Claude Code's answer (stop.command.output: a `block` needs a
        // non-empty reason, which Codex gives the agent to go on with).
        Event::Stop => {
            turn_end(response).map(|reason| json!({ "decision": "block", "reason": reason }))
        }
        // Its `SessionEnd` reads no answer; the subagent events are Claude Code's alone
        // (`Client::route`).
        Event::SessionEnd | Event::SubagentStart | Event::SubagentStop => None,
        Event::SessionStart | Event::UserPromptSubmit => specific(
            event.name(),
            fields(vec![("additionalContext", additional)]),
        )
        .map(Value::Object),
        Event::PreToolUse => {
            let (decision, reason) = match &response.decision {
                None => (None, None),
                Some((Decision::Allow, _)) => (Some("allow"), reasons(response)),
                Some((Decision::Deny, _)) => (
                    Some("deny"),
                    Some(reasons(response).unwrap_or_else(|| DENIED.into())),
                ),
                Some((Decision::Ask, _)) => {
                    notes.push(
                        "Codex hooks cannot ask the operator; the call is denied instead".into(),
                    );
                    let asked = "a hooks-mcp condition asks for the operator's approval, which \
                                 Codex hooks cannot ask for";
                    let reason = match reasons(response) {
                        Some(why) => format!("{asked}: {why}"),
                        None => asked.to_owned(),
                    };
                    (Some("deny"), Some(reason))
                }
            };
            let updated = match (&response.updated_input, decision) {
                (Some(input), Some("allow")) => Some(input.clone()),
                (Some(_), _) => {
                    notes.push(
                        "Codex applies a rewritten input only with `allow`; the rewrite was \
                         dropped"
                            .into(),
                    );
                    None
                }
                (None, _) => None,
            };
            // Codex takes `allow` only with a rewritten input (and a reason only with a
            // decision): a bare `allow` is refused as invalid, and with it the whole answer,
            // the context included. Letting the call go on is what saying nothing does.
            let (decision, reason) = match (decision, &updated) {
                (Some("allow"), None) => (None, None),
                kept => (kept.0, reason),
            };
            specific(
                "PreToolUse",
                fields(vec![
                    ("additionalContext", additional),
                    ("permissionDecision", decision.map(Value::from)),
                    ("permissionDecisionReason", reason.map(Value::from)),
                    ("updatedInput", updated),
                ]),
            )
            .map(Value::Object)
        }
        Event::PostToolUse => {
            if response.updated_output.is_some() {
                notes.push(
                    "Codex cannot replace a tool's output; the replacement goes to the model as \
                     context"
                        .into(),
                );
            }
            let mut context = response.context.clone();
            if let Some(output) = &response.updated_output {
                context.push(format!(
                    "[hooks-mcp] a condition replaced this tool's output with: {}",
                    as_text(output)
                ));
            }
            let additional = (!context.is_empty()).then(|| Value::from(context.join("\n")));
            let mut top = specific(
                "PostToolUse",
                fields(vec![("additionalContext", additional)]),
            )
            .unwrap_or_default();
            if !response.block_reasons.is_empty() {
                top.insert("decision".into(), "block".into());
                top.insert("reason".into(), response.block_reasons.join("\n").into());
            }
            (!top.is_empty()).then_some(Value::Object(top))
        }
    }
}

fn gemini(event: Event, response: &Response) -> Option<Value> {
    match event {
        // `AfterAgent`: a denial rejects the turn's response and sends the reason to the
        // agent as a new prompt.
        Event::Stop => {
            turn_end(response).map(|reason| json!({ "decision": "deny", "reason": reason }))
        }
        // `SessionEnd` is not waited for; the subagent events are Claude Code's alone.
        Event::SessionEnd | Event::SubagentStart | Event::SubagentStop => None,
        Event::SessionStart => specific(
            "SessionStart",
            fields(vec![(
                "additionalContext",
                context(response).map(Value::from),
            )]),
        )
        .map(Value::Object),
        Event::UserPromptSubmit => specific(
            "BeforeAgent",
            fields(vec![(
                "additionalContext",
                context(response).map(Value::from),
            )]),
        )
        .map(Value::Object),
        Event::PreToolUse => {
            let mut top = specific(
                "BeforeTool",
                fields(vec![("tool_input", response.updated_input.clone())]),
            )
            .unwrap_or_default();
            match &response.decision {
                Some((Decision::Deny, _)) => {
                    let mut why: Vec<String> = reasons(response).into_iter().collect();
                    why.extend(response.context.iter().cloned());
                    let why = if why.is_empty() {
                        DENIED.to_owned()
                    } else {
                        why.join("\n")
                    };
                    top.insert("decision".into(), "deny".into());
                    top.insert("reason".into(), why.into());
                }
                other => {
                    if let Some((decision, _)) = other {
                        top.insert("decision".into(), decision.as_str().into());
                        if let Some(why) = reasons(response) {
                            top.insert("reason".into(), why.into());
                        }
                    }
                    // Gemini CLI shows no context before a call: the operator sees it.
                    if let Some(text) = context(response) {
                        top.insert("systemMessage".into(), text.into());
                    }
                }
            }
            (!top.is_empty()).then_some(Value::Object(top))
        }
        Event::PostToolUse => match &response.updated_output {
            // The model gets the reason instead of the tool's result; the context goes with it
            // (Gemini CLI reads no additional context from a denial).
            Some(output) => {
                let mut reason = as_text(output);
                if let Some(more) = after_call(response, false) {
                    reason.push_str("\n\n");
                    reason.push_str(&more);
                }
                Some(json!({ "decision": "deny", "reason": reason }))
            }
            None => specific(
                "AfterTool",
                fields(vec![(
                    "additionalContext",
                    after_call(response, false).map(Value::from),
                )]),
            )
            .map(Value::Object),
        },
    }
}

fn copilot(event: Event, response: &Response) -> Option<Value> {
    let mut top = Map::new();
    let mut nested = Map::new();
    match event {
        // `agentStop` (registered as `Stop`): a `block` enqueues the reason as the agent's
        // next prompt.
        Event::Stop => {
            if let Some(reason) = turn_end(response) {
                top.insert("decision".into(), "block".into());
                top.insert("reason".into(), reason.into());
            }
        }
        // `sessionEnd`'s output is not read; the subagent events are Claude Code's alone.
        Event::SessionEnd | Event::SubagentStart | Event::SubagentStop => {}
        Event::SessionStart | Event::UserPromptSubmit => {
            if let Some(text) = context(response) {
                top.insert("additionalContext".into(), text.clone().into());
                nested.insert("additionalContext".into(), text.into());
            }
        }
        Event::PreToolUse => {
            if let Some(text) = context(response) {
                top.insert("additionalContext".into(), text.clone().into());
                nested.insert("additionalContext".into(), text.into());
            }
            if let Some((decision, _)) = &response.decision {
                for map in [&mut top, &mut nested] {
                    map.insert("permissionDecision".into(), decision.as_str().into());
                }
                let why = reasons(response)
                    .or_else(|| (*decision == Decision::Deny).then(|| DENIED.to_owned()));
                if let Some(why) = why {
                    top.insert("permissionDecisionReason".into(), why.clone().into());
                    nested.insert("permissionDecisionReason".into(), why.into());
                }
            }
            if let Some(input) = &response.updated_input {
                top.insert("modifiedArgs".into(), input.clone());
                nested.insert("updatedInput".into(), input.clone());
            }
        }
        Event::PostToolUse => {
            if let Some(text) = after_call(response, false) {
                top.insert("additionalContext".into(), text.clone().into());
                nested.insert("additionalContext".into(), text.into());
            }
            if let Some(output) = &response.updated_output {
                top.insert(
                    "modifiedResult".into(),
                    json!({ "textResultForLlm": as_text(output), "resultType": "success" }),
                );
            }
        }
    }
    if !nested.is_empty() {
        let mut specific = Map::new();
        specific.insert("hookEventName".into(), event.name().into());
        specific.extend(nested);
        top.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    (!top.is_empty()).then_some(Value::Object(top))
}

fn cursor(event: Event, response: &Response) -> Option<Value> {
    match event {
        // `stop`: a follow-up message is submitted as the next user message.
        Event::Stop => turn_end(response).map(|text| json!({ "followup_message": text })),
        // `sessionEnd` is fire-and-forget; the subagent events are Claude Code's alone.
        Event::SessionEnd | Event::SubagentStart | Event::SubagentStop => None,
        Event::SessionStart => {
            context(response).map(|text| json!({ "additional_context": text, "continue": true }))
        }
        // Only the conditions gate runs on a prompt: Cursor shows no context there.
        Event::UserPromptSubmit => Some(json!({ "continue": true })),
        Event::PreToolUse => {
            let (decision, _) = response.decision.as_ref()?;
            let why = reasons(response);
            let mut agent: Vec<String> = why.iter().cloned().collect();
            agent.extend(response.context.iter().cloned());
            let mut top = Map::new();
            top.insert("permission".into(), decision.as_str().into());
            let user = why.or_else(|| (*decision == Decision::Deny).then(|| DENIED.to_owned()));
            if let Some(user) = user {
                top.insert("user_message".into(), user.into());
            }
            if !agent.is_empty() {
                top.insert("agent_message".into(), agent.join("\n").into());
            }
            Some(Value::Object(top))
        }
        Event::PostToolUse => {
            after_call(response, true).map(|text| json!({ "additional_context": text }))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn response(context: &[&str]) -> Response {
        let mut r = Response::default();
        for c in context {
            r.add_context(*c);
        }
        r
    }

    #[test]
    fn codex_never_gets_a_field_its_schema_rejects() {
        let mut r = response(&["[REMINDER #1] run the tests"]);
        r.decide(Decision::Ask, Some("force push".into()));
        r.updated_input = Some(json!({"command": "git push"}));
        let (answer, notes) = render(
            Client::Codex,
            "PreToolUse",
            Route::whole(Event::PreToolUse),
            &r,
            "Bash",
        );
        let answer = answer.unwrap();
        let specific = &answer["hookSpecificOutput"];
        assert_eq!(specific["permissionDecision"], "deny");
        assert!(
            specific["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .ends_with(": force push")
        );
        assert!(specific.get("updatedInput").is_none());
        assert_eq!(notes.len(), 2, "{notes:?}");

        let mut post = response(&[]);
        post.updated_output = Some(json!("redacted"));
        let (answer, _) = render(
            Client::Codex,
            "PostToolUse",
            Route::whole(Event::PostToolUse),
            &post,
            "mcp__x__y",
        );
        let answer = answer.unwrap();
        assert!(
            answer["hookSpecificOutput"]
                .get("updatedMCPToolOutput")
                .is_none()
        );
        assert!(
            answer["hookSpecificOutput"]
                .get("updatedToolOutput")
                .is_none()
        );
    }

    #[test]
    fn gemini_replacing_an_output_keeps_the_context_in_the_reason() {
        let mut r = response(&["[CRITICAL #3 ops] freeze"]);
        r.updated_output = Some(json!("[redacted]"));
        let (answer, _) = render(
            Client::Gemini,
            "AfterTool",
            Route::DELIVER_AFTER_TOOL,
            &r,
            "Bash",
        );
        assert_eq!(
            answer,
            Some(json!({"decision": "deny", "reason": "[redacted]\n\n[CRITICAL #3 ops] freeze"}))
        );
    }

    #[test]
    fn a_turn_end_push_takes_each_clients_words_and_the_session_end_none() {
        let mut r = response(&[]);
        r.block_reasons.push("[ALERT #3 ops] freeze".into());
        let reason = format!("{}\n[ALERT #3 ops] freeze", store::rules::PUSH_HEADER);
        let stop = Route::whole(Event::Stop);
        for (client, name, expected) in [
            (
                Client::Codex,
                "Stop",
                json!({"decision": "block", "reason": reason}),
            ),
            (
                Client::Copilot,
                "Stop",
                json!({"decision": "block", "reason": reason}),
            ),
            (
                Client::Gemini,
                "AfterAgent",
                json!({"decision": "deny", "reason": reason}),
            ),
            (Client::Cursor, "stop", json!({"followup_message": reason})),
        ] {
            let (answer, notes) = render(client, name, stop, &r, "");
            assert_eq!(answer, Some(expected), "{client}");
            assert!(notes.is_empty(), "{client}: {notes:?}");
            let (end, _) = render(
                client,
                "SessionEnd",
                Route::whole(Event::SessionEnd),
                &r,
                "",
            );
            assert_eq!(end, None, "{client}");
        }
        // Claude Code's own answer has the same reason: VS Code and Cursor run its hooks too.
        let (claude, _) = render(Client::Claude, "Stop", stop, &r, "");
        assert_eq!(claude, Some(json!({"decision": "block", "reason": reason})));
    }

    #[test]
    fn nothing_to_say_is_no_output() {
        for client in Client::ALL {
            for event in Event::ALL {
                let (answer, _) = render(client, "x", Route::whole(event), &response(&[]), "Bash");
                let expected = (client == Client::Cursor && event == Event::UserPromptSubmit)
                    .then(|| json!({"continue": true}));
                assert_eq!(answer, expected, "{client} {event}");
            }
        }
    }
}
