//! The hook's answer, in Claude Code's hook output format.
//!
//! Everything goes into `hookSpecificOutput` (`additionalContext`; for `PreToolUse` also
//! `permissionDecision`, `permissionDecisionReason` and `updatedInput`; for `PostToolUse`
//! `updatedToolOutput`, plus `updatedMCPToolOutput` for MCP tools, which older clients read).
//! A `post` condition that exits 2 adds the top-level `"decision": "block"` with its reason, which
//! the client shows to the agent; so does a `Stop` with a message the turn did not show (the
//! agent goes on with it). Nothing to say means no output at all.

use serde_json::{Map, Value};

use crate::payload::Event;

/// A permission decision for the pending tool call, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Decision {
    /// Run it without asking the operator.
    Allow,
    /// Ask the operator first.
    Ask,
    /// Do not run it; the reason goes to the agent.
    Deny,
}

impl Decision {
    /// The client's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }

    /// Parses `allow`, `ask` or `deny`.
    pub fn parse(text: &str) -> Option<Decision> {
        [Decision::Allow, Decision::Ask, Decision::Deny]
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

/// What the hook tells the client, built up by the event's steps.
#[derive(Debug, Default)]
pub struct Response {
    /// Lines of context for the agent, in order.
    pub context: Vec<String>,
    /// The strongest decision so far, with the reasons given for decisions of that strength.
    pub decision: Option<(Decision, Vec<String>)>,
    /// The whole rewritten tool input (`pre`).
    pub updated_input: Option<Value>,
    /// The replacement tool output (`post`).
    pub updated_output: Option<Value>,
    /// Reasons to show the agent after the call (`post` conditions that exited 2).
    pub block_reasons: Vec<String>,
    /// Whole lines for the operator (a command hook's stderr, the daemon's log): what could not
    /// be done. Never part of the answer.
    pub notes: Vec<String>,
}

impl Response {
    /// A turn-end push's reason: [`store::rules::PUSH_HEADER`], then what the turn did not
    /// show, one message a line.
    pub fn turn_end_reason(&self) -> String {
        format!(
            "{}\n{}",
            store::rules::PUSH_HEADER,
            self.block_reasons.join("\n")
        )
    }

    /// Adds a context block, unless it is blank.
    pub fn add_context(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !text.trim().is_empty() {
            self.context.push(text);
        }
    }

    /// Records a decision: a stronger one replaces a weaker one, an equal one adds its reason.
    pub fn decide(&mut self, decision: Decision, reason: Option<String>) {
        let reason = reason.filter(|r| !r.trim().is_empty());
        match &mut self.decision {
            Some((current, reasons)) if *current == decision => reasons.extend(reason),
            Some((current, _)) if *current > decision => {}
            _ => self.decision = Some((decision, reason.into_iter().collect())),
        }
    }

    /// Records a line for the operator (see [`Response::notes`]).
    pub fn note(&mut self, line: impl Into<String>) {
        self.notes.push(line.into());
    }

    /// Whether the call is denied.
    pub fn denied(&self) -> bool {
        matches!(self.decision, Some((Decision::Deny, _)))
    }

    /// The JSON to print for `event` (about `tool_name`), or `None` when there is nothing to say.
    pub fn to_json(&self, event: Event, tool_name: &str) -> Option<Value> {
        // `hookEventName` first, as the client's documentation shows it.
        let mut specific = Map::new();
        specific.insert("hookEventName".into(), event.name().into());
        if !self.context.is_empty() {
            specific.insert("additionalContext".into(), self.context.join("\n").into());
        }
        let mut top = Map::new();
        match event {
            Event::PreToolUse => {
                if let Some((decision, reasons)) = &self.decision {
                    specific.insert("permissionDecision".into(), decision.as_str().into());
                    if !reasons.is_empty() {
                        specific
                            .insert("permissionDecisionReason".into(), reasons.join("\n").into());
                    }
                }
                if let Some(input) = &self.updated_input {
                    specific.insert("updatedInput".into(), input.clone());
                }
            }
            Event::PostToolUse => {
                if let Some(output) = &self.updated_output {
                    specific.insert("updatedToolOutput".into(), output.clone());
                    if tool_name.starts_with("mcp__") {
                        specific.insert("updatedMCPToolOutput".into(), output.clone());
                    }
                }
                if !self.block_reasons.is_empty() {
                    top.insert("decision".into(), "block".into());
                    top.insert("reason".into(), self.block_reasons.join("\n").into());
                }
            }
            Event::Stop => {
                if !self.block_reasons.is_empty() {
                    top.insert("decision".into(), "block".into());
                    top.insert("reason".into(), self.turn_end_reason().into());
                }
            }
            // Context only (`SubagentStop` and `SessionEnd` never get any).
            Event::SessionStart
            | Event::UserPromptSubmit
            | Event::SubagentStart
            | Event::SubagentStop
            | Event::SessionEnd => {}
        }
        if specific.len() > 1 {
            top.insert("hookSpecificOutput".into(), Value::Object(specific));
        }
        (!top.is_empty()).then_some(Value::Object(top))
    }
}

/// The bytes a command hook prints for `answer` (and an HTTP hook's body): the JSON on one line,
/// then a newline.
pub fn answer_bytes(answer: &Value) -> Vec<u8> {
    let mut bytes = answer.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_with_reasons_blocks_and_the_end_events_say_nothing() {
        let mut response = Response::default();
        assert_eq!(response.to_json(Event::Stop, ""), None);
        response.block_reasons.push("[ALERT #3 ops] go on".into());
        assert_eq!(
            response.to_json(Event::Stop, ""),
            Some(serde_json::json!({
                "decision": "block",
                "reason": format!("{}\n[ALERT #3 ops] go on", store::rules::PUSH_HEADER),
            }))
        );
        let mut start = Response::default();
        start.add_context("[CRITICAL #4 ops] stop");
        assert_eq!(
            start.to_json(Event::SubagentStart, ""),
            Some(serde_json::json!({"hookSpecificOutput": {
                "hookEventName": "SubagentStart",
                "additionalContext": "[CRITICAL #4 ops] stop",
            }}))
        );
        for event in [Event::SessionEnd, Event::SubagentStop] {
            assert_eq!(Response::default().to_json(event, ""), None, "{event}");
        }
    }
}
