//! Target `tool_args`: every registered tool's argument parsing through `catalogue::call`
//! over a temporary SQLite store.
//!
//! Input: the first byte picks the tool (in `catalogue::registrations()` order), the second
//! the session policy (bit 0: network-style explicit ids) and the day of the call (the other
//! bits); the rest is the arguments' JSON text (text that is not JSON is passed as a JSON
//! string). Invariants: never a panic; a result is a JSON object; a failure is a typed
//! [`ToolError`] with a message, never `Internal` (a store failure or an unexpected state
//! that the arguments caused); arguments that are not an object (or null) are refused as
//! invalid arguments, by every tool.

use catalogue::{CallContext, SessionPolicy, ToolError};
use serde_json::Value;

use crate::runtime;

/// The call's clock: 2026-01-01T00:00:00Z plus the input's day.
const BASE_MS: i64 = 1_767_225_600_000;
const DAY_MS: i64 = 86_400_000;

/// The input bytes that call `tool` with `args` (for seeds); `None` for an unknown tool.
pub fn encode(tool: &str, flags: u8, args: &Value) -> Option<Vec<u8>> {
    server_full::link_tools();
    let index = catalogue::registrations()
        .iter()
        .position(|r| r.name == tool)?;
    let mut data = vec![u8::try_from(index).ok()?, flags];
    data.extend_from_slice(args.to_string().as_bytes());
    Some(data)
}

/// Calls the tool `data` picks.
pub fn check(data: &[u8]) {
    server_full::link_tools();
    let tools = catalogue::registrations();
    let (Some(&pick), Some(&flags)) = (data.first(), data.get(1)) else {
        return;
    };
    let tool = tools[usize::from(pick) % tools.len()];
    let text = &data[2..];
    let args: Value = serde_json::from_slice(text)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(text).into_owned()));
    let policy = if flags & 1 == 1 {
        SessionPolicy::ExplicitOnly
    } else {
        SessionPolicy::Fallback(Some("fuzz-session".into()))
    };
    let now = BASE_MS + i64::from(flags >> 1) * DAY_MS;
    let store = runtime::shared_store();
    let ctx = CallContext::new(now, &policy, &store.extensions);
    let not_an_object = !(args.is_object() || args.is_null());
    match catalogue::call(tool.name, &ctx, args.clone()) {
        Ok(result) => {
            assert!(
                !not_an_object,
                "`{}` accepted non-object arguments {args}",
                tool.name
            );
            assert!(
                result.is_object(),
                "`{}` returned a non-object: {result}",
                tool.name
            );
        }
        Err(e) => {
            let message = match &e {
                ToolError::InvalidArguments(m) => m,
                ToolError::NotFound(m) | ToolError::Refused(m) => {
                    assert!(
                        !not_an_object,
                        "`{}`: {e} for non-object arguments",
                        tool.name
                    );
                    m
                }
                ToolError::Internal(m) => {
                    panic!("`{}` failed internally on arguments {args}: {m}", tool.name)
                }
                other => panic!("`{}`: an unknown kind of error: {other}", tool.name),
            };
            assert!(
                !message.trim().is_empty(),
                "`{}`: an empty error message",
                tool.name
            );
        }
    }
}
