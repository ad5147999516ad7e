//! Which channels reach a session: its subscriptions (`HOOKS_MCP_CHANNELS`, the rule every
//! hook applies) and, of those, the channels allowed to push into it
//! (`HOOKS_MCP_PUSH_CHANNELS`).

pub use protocol_lite::setting::PUSH_CHANNELS_ENV;
use store::rules::{GLOBAL_CHANNEL, check_channel_name};

use crate::SUBSCRIPTIONS_ENV;

/// The names of a comma-separated list; `None` for every channel (blank, `all` or `*`).
fn names(value: &str) -> Option<Vec<&str>> {
    let names: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    let every = names.is_empty()
        || names
            .iter()
            .any(|n| *n == "*" || n.eq_ignore_ascii_case("all"));
    (!every).then_some(names)
}

/// The valid, distinct names of `names` after `first`; invalid ones go to `warn` (naming
/// `variable`) and are skipped.
fn checked(
    first: Vec<String>,
    names: Vec<&str>,
    variable: &str,
    warn: &mut impl FnMut(String),
) -> Vec<String> {
    let mut channels = first;
    for name in names {
        match check_channel_name(name) {
            Ok(()) if !channels.iter().any(|c| c == name) => channels.push(name.to_owned()),
            Ok(()) => {}
            Err(e) => warn(format!("{variable}: channel `{name}` {e}; it is skipped")),
        }
    }
    channels
}

/// The channels of a [`SUBSCRIPTIONS_ENV`] value: comma separated names, `global` always
/// included; `None` (every channel) for blank, `all` or `*`. Invalid names go to `warn` and
/// are skipped.
pub fn subscribed_channels(value: &str, mut warn: impl FnMut(String)) -> Option<Vec<String>> {
    let names = names(value)?;
    Some(checked(
        vec![GLOBAL_CHANNEL.to_owned()],
        names,
        SUBSCRIPTIONS_ENV,
        &mut warn,
    ))
}

/// The channels allowed to push into a session that receives `subscribed` (`None`: every
/// channel): those a [`PUSH_CHANNELS_ENV`] value `allowed` lists that the session receives
/// (`global` only when listed), or all it receives when `allowed` is blank, `all` or `*`.
/// `None` means every channel.
pub fn push_channels(
    subscribed: Option<Vec<String>>,
    allowed: &str,
    mut warn: impl FnMut(String),
) -> Option<Vec<String>> {
    let Some(names) = names(allowed) else {
        return subscribed;
    };
    let listed = checked(Vec::new(), names, PUSH_CHANNELS_ENV, &mut warn);
    Some(match subscribed {
        None => listed,
        Some(received) => listed
            .into_iter()
            .filter(|c| received.contains(c))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(_: String) {}

    #[test]
    fn subscriptions_always_include_global_and_skip_bad_names() {
        assert_eq!(subscribed_channels("", quiet), None);
        assert_eq!(subscribed_channels(" all ", quiet), None);
        assert_eq!(subscribed_channels("ops,*", quiet), None);
        let mut warnings = Vec::new();
        let channels = subscribed_channels("ops, ci,ops,bad name", |w| warnings.push(w));
        assert_eq!(channels.unwrap(), ["global", "ops", "ci"]);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("HOOKS_MCP_CHANNELS: channel `bad name`"));
    }

    #[test]
    fn push_channels_are_those_listed_that_the_session_receives() {
        let received = subscribed_channels("ops,ci", quiet);
        assert_eq!(push_channels(received.clone(), "", quiet), received);
        assert_eq!(
            push_channels(received.clone(), "ops,deploys", quiet).unwrap(),
            ["ops"]
        );
        assert_eq!(
            push_channels(received, "global", quiet).unwrap(),
            ["global"]
        );
        assert_eq!(push_channels(None, "deploys", quiet).unwrap(), ["deploys"]);
        assert_eq!(push_channels(None, "*", quiet), None);
        let mut warnings = Vec::new();
        assert!(
            push_channels(None, "x y", |w| warnings.push(w))
                .unwrap()
                .is_empty()
        );
        assert!(warnings[0].starts_with("HOOKS_MCP_PUSH_CHANNELS: channel `x y`"));
    }
}
