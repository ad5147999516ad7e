//! The store's resource list, fetched from a short-lived child
//! (`hooks-mcp-stdio --list-resources`): the front end links no store, so this is how it
//! answers a 2026-07-28 `resources/list` and how it tells whether the list changed.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use protocol_lite::setting::{FULL_BIN_ENV, LIST_RESOURCES_ARG};
use serde_json::Value;

use crate::child::{self, Named};
use crate::error::FrontError;

/// How long the listing child may take: it opens the store and reads it.
const LIMIT: Duration = Duration::from_secs(10);

/// The members rmcp writes before a list result's items, in its order: a listing in this order
/// has the bytes the full server would answer.
const LEADING: [&str; 5] = ["resultType", "_meta", "nextCursor", "ttlMs", "cacheScope"];

/// One listing: the complete `resources/list` result and the URIs it lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listing {
    /// The result object's JSON text, its members in rmcp's order ([`LEADING`] first).
    pub(crate) result: Vec<u8>,
    /// The listed resources' URIs, sorted: what a change of the list is judged by.
    pub(crate) uris: Vec<String>,
    /// When the store's next message expires (milliseconds since the epoch), if one will: the
    /// list may change then with nothing written.
    pub(crate) next_expiry: Option<i64>,
}

impl Listing {
    /// Checks what the child printed: one JSON object with a `resources` array of objects
    /// that each have a string `uri`, on its first line; on a second, optional line,
    /// `{"nextExpiry": MILLIS or null}`.
    ///
    /// # Errors
    /// [`FrontError::Unusable`] saying what is wrong.
    pub(crate) fn parse(output: &[u8]) -> Result<Listing, FrontError> {
        let unusable = |problem: String| FrontError::Unusable {
            what: "resource listing child",
            problem,
        };
        let (output, expiry) = match output.iter().position(|&b| b == b'\n') {
            Some(at) => (&output[..at], &output[at + 1..]),
            None => (output, &b""[..]),
        };
        let next_expiry =
            if expiry.trim_ascii().is_empty() {
                None
            } else {
                let expiry: Value = serde_json::from_slice(expiry)
                    .map_err(|e| unusable(format!("its expiry line is not JSON: {e}")))?;
                match expiry.get("nextExpiry") {
                    Some(Value::Null) => None,
                    Some(at) => Some(at.as_i64().ok_or_else(|| {
                        unusable(format!("`nextExpiry` {at} is not milliseconds"))
                    })?),
                    None => return Err(unusable("its second line has no `nextExpiry`".into())),
                }
            };
        let value: Value =
            serde_json::from_slice(output).map_err(|e| unusable(format!("not JSON: {e}")))?;
        let Value::Object(mut members) = value else {
            return Err(unusable("not a JSON object".into()));
        };
        let resources = members
            .get("resources")
            .and_then(Value::as_array)
            .ok_or_else(|| unusable("no `resources` array".into()))?;
        let mut uris = resources
            .iter()
            .map(|r| r.get("uri").and_then(Value::as_str).map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| unusable("a resource without a string `uri`".into()))?;
        uris.sort_unstable();
        let mut ordered = serde_json::Map::with_capacity(members.len());
        for key in LEADING {
            if let Some(value) = members.shift_remove(key) {
                ordered.insert(key.to_owned(), value);
            }
        }
        ordered.append(&mut members);
        let result = serde_json::to_vec(&ordered)
            .map_err(|e| unusable(format!("cannot be written again: {e}")))?;
        Ok(Listing {
            result,
            uris,
            next_expiry,
        })
    }
}

/// Runs `stdio` (`hooks-mcp-stdio`) with [`LIST_RESOURCES_ARG`] in this process's environment
/// (so it opens the same store) and reads its listing.
///
/// # Errors
/// What running the child or reading its output failed with.
pub(crate) fn list(stdio: &Path) -> Result<Listing, FrontError> {
    let mut command = Command::new(stdio);
    command.arg(LIST_RESOURCES_ARG);
    let hint = format!(
        "it is built and installed beside hooks-mcp-full, or set {FULL_BIN_ENV} to the path of \
         hooks-mcp-full (hooks-mcp-stdio lies beside it)"
    );
    let named = Named {
        what: "resource listing child",
        hint: &hint,
        limit_setting: None,
    };
    let output = child::output_of(command, LIMIT, named)?;
    Listing::parse(&output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_checked_and_its_uris_sorted() {
        let text = b"{\"resources\":[{\"uri\":\"hooks://channels/b\",\"name\":\"b\"},\
                     {\"uri\":\"hooks://channels/a\"}],\"resultType\":\"complete\",\
                     \"ttlMs\":0, \"cacheScope\":\"private\"}\n";
        let listing = Listing::parse(text).unwrap();
        assert_eq!(listing.uris, ["hooks://channels/a", "hooks://channels/b"]);
        // rmcp's order: what the full server would write.
        assert_eq!(
            String::from_utf8(listing.result).unwrap(),
            "{\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"private\",\"resources\":\
             [{\"uri\":\"hooks://channels/b\",\"name\":\"b\"},{\"uri\":\"hooks://channels/a\"}]}"
        );
        assert!(
            Listing::parse(b"{\"resources\":[]}")
                .unwrap()
                .uris
                .is_empty()
        );
        assert_eq!(listing.next_expiry, None);
        // The second line: when the next message expires.
        let with_expiry = Listing::parse(b"{\"resources\":[]}\n{\"nextExpiry\":1765000000000}\n");
        assert_eq!(with_expiry.unwrap().next_expiry, Some(1_765_000_000_000));
        let none = Listing::parse(b"{\"resources\":[]}\n{\"nextExpiry\":null}\n");
        assert_eq!(none.unwrap().next_expiry, None);
        for bad in [
            &b""[..],
            b"not json",
            b"[]",
            b"{\"resources\":{}}",
            b"{\"resources\":[{\"name\":\"x\"}]}",
            b"{\"resources\":[]}\n{\"nextExpiry\":\"soon\"}",
            b"{\"resources\":[]}\n{}",
            b"{\"resources\":[]}\nnot json",
        ] {
            let err = Listing::parse(bad).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("the resource listing child's output is unusable: "),
                "{err}"
            );
        }
    }

    #[test]
    fn a_missing_child_is_an_error_not_a_crash() {
        let err = list(Path::new("/nonexistent/hooks-mcp-stdio")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot run the resource listing child `/nonexistent/"),
            "{err}"
        );
    }
}
