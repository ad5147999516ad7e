//! The gate that guards changing conditions, and how the operator's prompt arms it.
//!
//! A condition is code that runs on every matching tool call, so an agent may not install,
//! replace or remove one on its own initiative: the operator must ask for it in their own
//! prompt, which the prompt hook passes to [`arm_gate_for_prompt`], or switch the gate off with
//! [`GATE_ENV`].

use store::{Millis, StoreError};

/// Environment variable that switches the gate off: `off`, `false` or `0`.
pub const GATE_ENV: &str = "HOOKS_MCP_CONDITIONS_GATE";

/// The settings this crate parses, for the generated configuration reference.
pub const SETTINGS: &[catalogue::Setting] = &[
    catalogue::Setting {
        env: SCRIPT_TIMEOUT_ENV,
        flag: "",
        default: "10000",
        effect: "Hook command: time limit of one condition script in milliseconds; on timeout \
                 its process group is killed and the tool call goes ahead.",
    },
    catalogue::Setting {
        env: GATE_ENV,
        flag: "",
        default: "on",
        effect: "`off` (or `false`, `0`) lets tools set and remove conditions without the operator \
             asking in their own prompt; otherwise the prompt hook opens the gate for that \
             session for ten minutes.",
    },
];

/// Environment variable of the hook command: a condition script's time limit in milliseconds.
pub const SCRIPT_TIMEOUT_ENV: &str = "HOOKS_MCP_CONDITION_TIMEOUT_MS";

/// How long a prompt keeps the gate open: 10 minutes.
pub const GATE_WINDOW_MS: Millis = 10 * 60 * 1000;

/// Whether the gate is enforced; servers insert it as a tool-call service. A server that
/// provides none enforces the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateSetting {
    /// Changing a condition needs an open gate.
    pub enforced: bool,
}

impl GateSetting {
    /// Parses the value of [`GATE_ENV`]: `off`, `false` or `0` (any case) disable the gate;
    /// anything else, or no value, enforces it.
    pub fn parse(value: Option<&str>) -> GateSetting {
        let off = value.map(str::trim).is_some_and(|v| {
            ["off", "false", "0"]
                .iter()
                .any(|o| v.eq_ignore_ascii_case(o))
        });
        GateSetting { enforced: !off }
    }
}

/// Reads [`GATE_ENV`] from the process environment (see [`GateSetting::parse`]).
pub fn gate_setting_from_env() -> GateSetting {
    GateSetting::parse(std::env::var(GATE_ENV).ok().as_deref())
}

/// Verbs that, next to the word "condition(s)", ask to change conditions, with inflections.
const VERBS: &[&str] = &[
    "set",
    "sets",
    "setting",
    "add",
    "adds",
    "added",
    "adding",
    "create",
    "creates",
    "created",
    "creating",
    "install",
    "installs",
    "installed",
    "installing",
    "remove",
    "removes",
    "removed",
    "removing",
    "delete",
    "deletes",
    "deleted",
    "deleting",
    "clear",
    "clears",
    "cleared",
    "clearing",
    "replace",
    "replaces",
    "replaced",
    "replacing",
    "update",
    "updates",
    "updated",
    "updating",
];

/// Whether an operator's prompt asks to set or remove a condition.
///
/// The heuristic is deliberately simple: the prompt, split into words at every character that
/// is not a letter or digit and compared case-insensitively, contains `condition` or
/// `conditions` and one of the verbs set, add, create, install, remove, delete, clear, replace or
/// update (or their -s, -ed, -ing forms). `condition_set` counts, as it splits into two words.
/// A prompt that is hooks-mcp's own turn-end push ([`store::rules::PUSH_HEADER`] first: some
/// clients submit the push as the next prompt) is not the operator's, whatever it says.
pub fn prompt_requests_condition_change(prompt: &str) -> bool {
    if prompt.trim_start().starts_with(store::rules::PUSH_HEADER) {
        return false;
    }
    let words: Vec<String> = prompt
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.iter().any(|w| w == "condition" || w == "conditions")
        && words.iter().any(|w| VERBS.contains(&w.as_str()))
}

/// Arms the gate of `session_id` for [`GATE_WINDOW_MS`] from `now` when the operator's prompt
/// asks to change conditions ([`prompt_requests_condition_change`]); returns whether it did.
///
/// # Errors
/// The store's error when arming fails.
pub fn arm_gate_for_prompt(
    store: &dyn store::Store,
    session_id: &str,
    prompt_text: &str,
    now: Millis,
) -> Result<bool, StoreError> {
    if !prompt_requests_condition_change(prompt_text) {
        return Ok(false);
    }
    store.arm_gate(
        session_id,
        now.saturating_add(GATE_WINDOW_MS),
        &store::Actor::Session(session_id.to_owned()),
        now,
    )?;
    Ok(true)
}
