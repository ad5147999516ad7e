//! `floor-stdio`: the floor `cargo xtask bench stdio` measures the stdio front end against.
//!
//! A standard-library-only program that answers MCP `initialize`, `ping` and `tools/list` over
//! stdin/stdout from canned JSON, and nothing else: what the light path costs with no catalogue,
//! no JSON library and no handoff machinery. It is a measuring stick, not a server.
//!
//! Usage: `floor-stdio CANNED_FILE`, where the file holds two lines: the `initialize` result
//! object, then the `tools/list` result object (the benchmark captures both from the real
//! server). Requests are recognised by scanning for their `"method"` and `"id"` members, which
//! is enough for the well-formed lines a benchmark sends; lines without an id (notifications)
//! get no reply, other methods a JSON-RPC "method not found" error.

#![allow(clippy::disallowed_macros)]

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!(
            "floor-stdio: usage: floor-stdio CANNED_FILE (initialize and tools/list results, one per line)"
        );
        return ExitCode::FAILURE;
    };
    let canned = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("floor-stdio: cannot read {}: {e}", path.to_string_lossy());
            return ExitCode::FAILURE;
        }
    };
    let Some(canned) = Canned::parse(&canned) else {
        eprintln!(
            "floor-stdio: {} must hold two non-empty lines: the initialize result, then the \
             tools/list result",
            path.to_string_lossy()
        );
        return ExitCode::FAILURE;
    };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut out = io::stdout().lock();
    let mut line = String::with_capacity(4096);
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) => return ExitCode::SUCCESS,
            Ok(_) => {}
            Err(e) => {
                eprintln!("floor-stdio: cannot read stdin: {e}");
                return ExitCode::FAILURE;
            }
        }
        if let Some(reply) = canned.reply(line.trim_end())
            && out
                .write_all(reply.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
        {
            // The client closed its end: nothing left to serve.
            return ExitCode::SUCCESS;
        }
    }
}

/// The two canned results.
#[derive(Debug)]
struct Canned<'a> {
    initialize: &'a str,
    tools_list: &'a str,
}

impl<'a> Canned<'a> {
    /// Two non-empty lines: the `initialize` result, then the `tools/list` result.
    fn parse(text: &'a str) -> Option<Canned<'a>> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let initialize = lines.next()?;
        let tools_list = lines.next()?;
        Some(Canned {
            initialize,
            tools_list,
        })
    }

    /// The response line (with its newline) to one request line; `None` for a notification.
    fn reply(&self, request: &str) -> Option<String> {
        let id = member(request, "id")?;
        let result = match member(request, "method") {
            Some("\"initialize\"") => self.initialize,
            Some("\"tools/list\"") => self.tools_list,
            Some("\"ping\"") => "{}",
            _ => {
                return Some(format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32601,\
                     \"message\":\"method not found\"}}}}\n"
                ));
            }
        };
        Some(format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}\n"
        ))
    }
}

/// The raw JSON text of the first member named `name` whose value is a string, number, boolean
/// or null (objects and arrays are not scalars and are skipped).
fn member<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("\"{name}\"");
    let mut from = 0;
    while let Some(at) = line[from..].find(&key) {
        let after_key = from + at + key.len();
        from = after_key;
        let rest = line[after_key..].trim_start();
        let Some(value) = rest.strip_prefix(':') else {
            continue;
        };
        let value = value.trim_start();
        let start = line.len() - value.len();
        let len = if value.starts_with('"') {
            string_len(value)?
        } else {
            value.find([',', '}', ']']).unwrap_or(value.len())
        };
        let raw = line[start..start + len].trim_end();
        if raw.is_empty() || raw.starts_with('{') || raw.starts_with('[') {
            continue;
        }
        return Some(raw);
    }
    None
}

/// The length of the JSON string literal `text` starts with, quotes included.
fn string_len(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANNED: &str = "{\"protocolVersion\":\"2025-11-25\"}\n{\"tools\":[]}\n";

    #[test]
    fn answers_the_canned_methods_with_the_request_id() {
        let canned = Canned::parse(CANNED).unwrap();
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"x"}}}"#;
        assert_eq!(
            canned.reply(init).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"}}\n"
        );
        let list = r#"{"jsonrpc": "2.0", "method": "tools/list", "id": "a\"b", "params": {}}"#;
        assert_eq!(
            canned.reply(list).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"result\":{\"tools\":[]}}\n"
        );
        let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        assert!(
            canned
                .reply(ping)
                .unwrap()
                .contains("\"id\":7,\"result\":{}")
        );
    }

    #[test]
    fn notifications_get_nothing_and_other_methods_an_error() {
        let canned = Canned::parse(CANNED).unwrap();
        assert_eq!(
            canned.reply(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}"#;
        assert!(
            canned
                .reply(call)
                .unwrap()
                .contains("\"id\":3,\"error\":{\"code\":-32601")
        );
    }

    #[test]
    fn canned_file_needs_both_results() {
        assert!(Canned::parse("{}\n").is_none());
        assert!(Canned::parse("\n\n").is_none());
    }
}
