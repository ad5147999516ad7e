//! Hook dispatch: what hooks-mcp answers to an agent client's lifecycle events.
//!
//! # What this crate owns
//!
//! - [`Event`] and [`Payload`] (the payload parser, [`Payload::parse`]): the events handled and
//!   the checks a payload must pass.
//! - The store's part of an answer ([`store_part`], [`StorePart`]): due schedules fired,
//!   broadcasts delivered per the session's [`Subscriptions`] within its [`DeliveryBudget`],
//!   the tool call counted with its
//!   due reminders, the conditions gate armed, the matching conditions found. The same
//!   function runs in a hook process and in the daemon.
//! - Condition scripts ([`conditions`]): run in the payload's `cwd` with a time limit, each in
//!   its own process group, killed with it on time-out; their results folded into the answer.
//! - The answer ([`Response`]) in Claude Code's hook output format.
//! - The command hook ([`run`], [`run_from_args`]): stdin, stdout, stderr, always exit 0; and
//!   how it opens the store ([`open`]): in process, or, for the hook binary on PostgreSQL,
//!   by handing the event over to the full binary (`exec`), so that binary links no
//!   PostgreSQL client.
//! - Forwarding ([`forward`]): a command hook hands its event to a local daemon (PostgreSQL),
//!   and the daemon's side of that exchange.
//! - HTTP hooks ([`http`]): the daemon's answer to Claude Code's `"type": "http"` hooks, the
//!   same bytes the command hook prints.
//! - Other agent clients ([`clients`]): Codex, Gemini CLI, Copilot CLI, Cursor and VS Code,
//!   each event mapped onto the dispatcher's work, each payload adapted, each answer in the
//!   client's format (`hook --client <name> <event>`); and the payloads no client could place,
//!   counted ([`clients::unplaced`]).
//!
//! Inside, the command hook (`dispatch`) and the daemon's sides (`forward`, `http`) build on
//! the store's part (`part`), and both the condition scripts and the hand-over to the full
//! binary give a child the payload on its stdin (`stdin_file`): imports between these modules
//! go one way only.
//!
//! # What it must not depend on
//!
//! The hook binary links this crate and starts around every tool call: std, the store, the
//! tools crates' hook-side functions and protocol-lite only. Never an async runtime, the MCP
//! SDK, an HTTP server or the `daemon` (which depends on this crate, not the reverse).

pub mod clients;
pub mod conditions;
mod dispatch;
pub mod forward;
pub mod http;
pub mod open;
mod output;
mod part;
mod payload;
mod stdin_file;

pub use dispatch::{banner, complete, run, run_from_args, run_from_args_with, run_with};
pub use output::{Decision, Response, answer_bytes};
pub use part::{
    CHANNELS_ENV, DeliveryBudget, PartSettings, SETTINGS, STOP_BLOCK_ENV, StorePart, Subscriptions,
    stop_block_from_env, store_part,
};
pub use payload::{Event, Payload, PayloadError, QUIET_EVENTS, json_text, quiet_event};
