//! Agent clients beside Claude Code: which client sent an event, how its events map onto what
//! the dispatcher does, how its payload becomes the dispatcher's [`crate::Payload`], and how
//! the answer is written in its own output format (docs/clients.md).
//!
//! A hook registered for another client names it: `hooks-mcp-hook hook --client codex
//! PreToolUse`. A Claude Code hook (`hook <Event>`, no client) whose payload is not Claude
//! Code's (VS Code's agent hooks and Cursor read Claude Code's settings and run its hooks with
//! their own payloads) is recognised by its fields ([`detect`]) and answered in Claude Code's
//! format, which those clients read.
//!
//! Each client event has a [`Route`]: the dispatcher's event it is answered as, and the store's
//! work done on it ([`Step`]), so that a client whose event cannot carry context to the model
//! gets that delivery on another event (Gemini CLI's `BeforeTool` answers no context: its
//! tool-time deliveries come with `AfterTool`). The payload is rewritten into the dispatcher's
//! shape ([`adapt`]): `session_id`, `tool_name` (the client's shell tool as `Bash`, MCP tools
//! as `mcp__<server>__<tool>`, so condition matchers read the same), `tool_input`, `prompt`,
//! `cwd`, every other field kept, and the client and its event under [`MARKER`]. That text is
//! what a local daemon receives and what a PostgreSQL hand-over replays, and the process that
//! receives it answers for the same client ([`marked`]).
//!
//! The turn's end (Codex's and Copilot CLI's `Stop`, Gemini CLI's `AfterAgent`, Cursor's
//! `stop`) is answered as Claude Code's `Stop`, the session's end as its `SessionEnd`: the
//! payload's own word that a stop hook already made the agent go on becomes
//! `stop_hook_active` ([`adapt`]), and the push is said in the client's words ([`render`]).
//!
//! A payload the hook cannot place (no session id, an event the client does not have, an
//! unknown client) is answered with nothing, noted on stderr, and recorded
//! ([`unplaced`]: the count and the last one, which `hooks-mcp status` shows).

mod adapt;
pub mod quiet;
mod record_file;
mod render;
mod run;
pub mod unplaced;

use std::fmt;

use crate::payload::Event;

pub use adapt::{MARKER, adapt, detect, marked};
pub use render::render;
pub use run::{recover, run, run_from_args, run_marked};
pub use store::rules::PUSH_HEADER;

/// The agent clients hooks-mcp registers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Client {
    /// Claude Code (`~/.claude.json`, `~/.claude/settings.json`).
    Claude,
    /// OpenAI Codex CLI (`~/.codex/config.toml`, `~/.codex/hooks.json`).
    Codex,
    /// Google Gemini CLI (`~/.gemini/settings.json`).
    Gemini,
    /// GitHub Copilot CLI (`~/.copilot/mcp-config.json`, `~/.copilot/hooks/`).
    Copilot,
    /// Cursor (`~/.cursor/mcp.json`, `~/.cursor/hooks.json`).
    Cursor,
    /// VS Code's agent (its `mcp.json`; its agent hooks read Claude Code's settings).
    VsCode,
}

impl Client {
    /// Every client, in the order reports list them.
    pub const ALL: [Client; 6] = [
        Client::Claude,
        Client::Codex,
        Client::Gemini,
        Client::Copilot,
        Client::Cursor,
        Client::VsCode,
    ];

    /// The name `--client` takes.
    pub fn name(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Copilot => "copilot",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
        }
    }

    /// The product's name, for people.
    pub fn title(self) -> &'static str {
        match self {
            Client::Claude => "Claude Code",
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
            Client::Copilot => "Copilot CLI",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
        }
    }

    /// Parses a `--client` name, ignoring case (`vs-code` and `code` name VS Code too).
    pub fn parse(name: &str) -> Option<Client> {
        let name = name.trim().to_ascii_lowercase();
        match name.as_str() {
            "vs-code" | "code" => Some(Client::VsCode),
            "claude-code" => Some(Client::Claude),
            "copilot-cli" => Some(Client::Copilot),
            "gemini-cli" => Some(Client::Gemini),
            other => Client::ALL.into_iter().find(|c| c.name() == other),
        }
    }

    /// The client's events hooks-mcp registers, as the client names them, in lifecycle order
    /// (the turn's end and the session's end last). VS Code registers none of its own: it runs
    /// Claude Code's.
    pub fn hook_events(self) -> &'static [&'static str] {
        match self {
            Client::Claude => &[
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "SubagentStart",
                "SubagentStop",
                "Stop",
                "SessionEnd",
            ],
            // Copilot CLI's `Stop` and `SessionEnd` are the Claude Code compatible names of
            // its `agentStop` and `sessionEnd`.
            Client::Codex | Client::Copilot => &[
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "Stop",
                "SessionEnd",
            ],
            Client::Gemini => &[
                "SessionStart",
                "BeforeAgent",
                "BeforeTool",
                "AfterTool",
                "AfterAgent",
                "SessionEnd",
            ],
            Client::Cursor => &[
                "sessionStart",
                "beforeSubmitPrompt",
                "beforeShellExecution",
                "beforeMCPExecution",
                "postToolUse",
                "stop",
                "sessionEnd",
            ],
            Client::VsCode => &[],
        }
    }

    /// The client's event names [`Client::route`] handles, for a message: its own
    /// registered events, or for those that run Claude Code's hooks, the events they take.
    pub fn handled_events(self) -> Vec<&'static str> {
        match self {
            Client::Claude => Event::ALL.map(Event::name).to_vec(),
            Client::VsCode => Event::CORE.map(Event::name).to_vec(),
            Client::Codex | Client::Copilot | Client::Gemini | Client::Cursor => {
                self.hook_events().to_vec()
            }
        }
    }

    /// The client's event `name` under the name hooks-mcp registers it by: Copilot CLI's own
    /// camelCase `userPromptSubmitted` and `agentStop` (any case) are its `UserPromptSubmit`
    /// and `Stop`; every other name as it is.
    pub fn registered_name(self, name: &str) -> &str {
        let name = name.trim();
        match self {
            Client::Copilot if name.eq_ignore_ascii_case("userPromptSubmitted") => {
                "UserPromptSubmit"
            }
            Client::Copilot if name.eq_ignore_ascii_case("agentStop") => "Stop",
            _ => name,
        }
    }

    /// What the dispatcher does on the client's event `name` (ignoring case), or `None` for an
    /// event it does not handle.
    pub fn route(self, name: &str) -> Option<Route> {
        let name = name.trim();
        let is = |known: &str| known.eq_ignore_ascii_case(name);
        match self {
            Client::Gemini => {
                if is("SessionStart") {
                    Some(Route::whole(Event::SessionStart))
                } else if is("BeforeAgent") {
                    Some(Route::whole(Event::UserPromptSubmit))
                } else if is("BeforeTool") {
                    Some(Route::CONDITIONS_BEFORE_TOOL)
                } else if is("AfterTool") {
                    Some(Route::DELIVER_AFTER_TOOL)
                } else if is("AfterAgent") {
                    Some(Route::whole(Event::Stop))
                } else if is("SessionEnd") {
                    Some(Route::whole(Event::SessionEnd))
                } else {
                    None
                }
            }
            Client::Cursor => {
                if is("sessionStart") {
                    Some(Route::SESSION_WITH_BROADCASTS)
                } else if is("beforeSubmitPrompt") {
                    Some(Route::GATE_ONLY)
                } else if is("beforeShellExecution") || is("beforeMCPExecution") || is("preToolUse")
                {
                    Some(Route::CONDITIONS_BEFORE_TOOL)
                } else if is("postToolUse") {
                    Some(Route::DELIVER_AFTER_TOOL)
                } else if is("stop") {
                    Some(Route::whole(Event::Stop))
                } else if is("sessionEnd") {
                    Some(Route::whole(Event::SessionEnd))
                } else {
                    None
                }
            }
            // Copilot CLI's own camelCase names (`userPromptSubmitted`, `agentStop`) map like
            // its PascalCase ones, which are Claude Code's.
            Client::Copilot if self.registered_name(name) != name => {
                self.route(self.registered_name(name))
            }
            Client::Claude => Event::parse(name).map(Route::whole),
            // Codex and Copilot CLI: Claude Code's names, the turn's end and the session's end
            // among them; the subagent events are Claude Code's alone.
            Client::Codex | Client::Copilot => Event::parse(name)
                .filter(|e| Event::CORE.contains(e) || matches!(e, Event::Stop | Event::SessionEnd))
                .map(Route::whole),
            // VS Code's own client name takes the four (its turn's end and session's end come
            // through Claude Code's hooks, which it runs).
            Client::VsCode => Event::parse(name)
                .filter(|e| Event::CORE.contains(e))
                .map(Route::whole),
        }
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the dispatcher does on one client event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The dispatcher's event the answer is for: the banner on `SessionStart`, the `pre` or
    /// `post` conditions of a tool event.
    pub event: Event,
    /// The store's work, in order; their parts are joined.
    pub steps: &'static [Step],
}

/// One piece of the store's work for a client event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The store's part of this event, whole: what it delivers, counts and records, and the
    /// conditions it matches.
    Part(Event),
    /// What the store's part of this event delivers (context only: its conditions are left
    /// out), for a client that shows it on another event than this one.
    Deliveries(Event),
    /// The conditions matching the route's tool event, with nothing delivered or counted.
    Conditions,
    /// The conditions gate armed by the operator's prompt, with nothing delivered: the client
    /// shows no context on this event.
    Gate,
}

impl Route {
    /// The dispatcher's whole work on `event`, as for Claude Code.
    pub const fn whole(event: Event) -> Route {
        let steps: &'static [Step] = match event {
            Event::SessionStart => &[Step::Part(Event::SessionStart)],
            Event::UserPromptSubmit => &[Step::Part(Event::UserPromptSubmit)],
            Event::PreToolUse => &[Step::Part(Event::PreToolUse)],
            Event::PostToolUse => &[Step::Part(Event::PostToolUse)],
            Event::Stop => &[Step::Part(Event::Stop)],
            Event::SubagentStart => &[Step::Part(Event::SubagentStart)],
            Event::SubagentStop => &[Step::Part(Event::SubagentStop)],
            Event::SessionEnd => &[Step::Part(Event::SessionEnd)],
        };
        Route { event, steps }
    }

    /// Before a tool call, where the client shows no context: the `pre` conditions only.
    pub const CONDITIONS_BEFORE_TOOL: Route = Route {
        event: Event::PreToolUse,
        steps: &[Step::Conditions],
    };

    /// After a tool call, where the client shows context: what `PreToolUse` delivers (due
    /// schedules, critical broadcasts, the tool call counted with its reminders), then the
    /// `post` conditions.
    pub const DELIVER_AFTER_TOOL: Route = Route {
        event: Event::PostToolUse,
        steps: &[
            Step::Deliveries(Event::PreToolUse),
            Step::Part(Event::PostToolUse),
        ],
    };

    /// A session start that also delivers what a prompt would (the client shows no context at
    /// its prompts).
    pub const SESSION_WITH_BROADCASTS: Route = Route {
        event: Event::SessionStart,
        steps: &[
            Step::Part(Event::SessionStart),
            Step::Deliveries(Event::UserPromptSubmit),
        ],
    };

    /// A prompt the client shows no context on: the conditions gate only.
    pub const GATE_ONLY: Route = Route {
        event: Event::UserPromptSubmit,
        steps: &[Step::Gate],
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_event_has_a_route() {
        for client in Client::ALL {
            for name in client.hook_events() {
                assert!(client.route(name).is_some(), "{client} {name}");
            }
            assert_eq!(Client::parse(client.name()), Some(client));
        }
        assert_eq!(Client::parse("VS-Code"), Some(Client::VsCode));
        assert_eq!(Client::parse("zed"), None);
    }

    #[test]
    fn routes_say_where_each_client_gets_its_deliveries() {
        assert_eq!(
            Client::Claude.route("pretooluse"),
            Some(Route::whole(Event::PreToolUse))
        );
        assert_eq!(Client::Codex.route("Stop"), Some(Route::whole(Event::Stop)));
        assert_eq!(Client::Codex.route("SubagentStop"), None);
        assert_eq!(
            Client::Gemini.route("AfterAgent"),
            Some(Route::whole(Event::Stop))
        );
        assert_eq!(
            Client::Cursor.route("sessionEnd"),
            Some(Route::whole(Event::SessionEnd))
        );
        for name in ["Stop", "agentStop", "AgentStop"] {
            assert_eq!(
                Client::Copilot.route(name),
                Some(Route::whole(Event::Stop)),
                "{name}"
            );
        }
        assert_eq!(
            Client::Copilot.route("sessionEnd"),
            Some(Route::whole(Event::SessionEnd))
        );
        assert_eq!(Client::VsCode.route("Stop"), None);
        assert_eq!(
            Client::Gemini.route("BeforeTool").map(|r| r.steps),
            Some(&[Step::Conditions][..])
        );
        assert_eq!(
            Client::Gemini.route("AfterTool"),
            Some(Route::DELIVER_AFTER_TOOL)
        );
        assert_eq!(
            Client::Copilot
                .route("userPromptSubmitted")
                .map(|r| r.event),
            Some(Event::UserPromptSubmit)
        );
        assert_eq!(
            Client::Cursor.route("beforeSubmitPrompt"),
            Some(Route::GATE_ONLY)
        );
        assert_eq!(Client::Cursor.route("afterFileEdit"), None);
    }

    #[test]
    fn every_handled_event_routes_and_every_client_names_some() {
        for client in Client::ALL {
            let handled = client.handled_events();
            assert!(!handled.is_empty(), "{client}");
            for name in handled {
                assert!(client.route(name).is_some(), "{client} {name}");
            }
        }
        assert_eq!(Client::Claude.handled_events().len(), Event::ALL.len());
        assert!(!Client::VsCode.handled_events().contains(&"Stop"));
    }
}
