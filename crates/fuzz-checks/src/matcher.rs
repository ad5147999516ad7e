//! Target `matcher`: the condition matcher grammar (`tools_conditions::Matcher`).
//!
//! Input: the matcher text, a newline, a tool name, a newline, and a Bash command (the rest).
//! Invariants: parsing never panics; a parsed matcher's canonical text parses back to the same
//! matcher and is its own canonical text (what the store keeps is stable), lower-case, without
//! spaces; every alternative matches the call it names (`edit` matches a call of `Edit`,
//! `mcp__s__t` a call of `mcp__s__t`, `bash.git` a Bash call running `git`); `any` matches every
//! call; matching never panics on any tool name and command; a matcher matches exactly when
//! one of its alternatives does.

use serde_json::json;
use tools_conditions::{MatchTerm, Matcher};

/// Checks one input.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\n');
    let matcher_text = parts.next().unwrap_or_default();
    let tool_name = parts.next().unwrap_or_default();
    let command = parts.next().unwrap_or_default();

    let Ok(matcher) = Matcher::parse(matcher_text) else {
        return;
    };
    assert!(!matcher.terms().is_empty(), "a matcher has an alternative");
    let canonical = matcher.to_string();
    assert!(
        !canonical
            .chars()
            .any(|c| c.is_whitespace() || c.is_ascii_uppercase()),
        "canonical text `{canonical}` has spaces or capitals"
    );
    let again = Matcher::parse(&canonical)
        .unwrap_or_else(|e| panic!("canonical text `{canonical}` does not parse: {e}"));
    assert_eq!(again, matcher, "`{canonical}` parses to another matcher");
    assert_eq!(again.to_string(), canonical, "canonical text is not stable");

    for term in matcher.terms() {
        let single = single_matcher(term);
        assert_eq!(
            single.terms(),
            std::slice::from_ref(term),
            "an alternative alone"
        );
        let (name, input) = match term {
            MatchTerm::Any => (tool_name.to_owned(), json!({})),
            MatchTerm::Mcp => ("mcp__server__tool".to_owned(), json!({})),
            MatchTerm::McpServer(server) => (format!("mcp__{server}__tool"), json!({})),
            MatchTerm::McpTool { server, tool } => (format!("mcp__{server}__{tool}"), json!({})),
            // Shell keywords are never programs.
            MatchTerm::BashCli(cli) if SHELL_KEYWORDS.contains(&cli.as_str()) => continue,
            MatchTerm::BashCli(cli) => (
                "Bash".to_owned(),
                json!({"command": format!("{cli} status")}),
            ),
            MatchTerm::Tool(tool) => (tool.to_ascii_uppercase(), json!({})),
        };
        assert!(
            single.matches(&name, &input),
            "{term:?} does not match its own call {name} {input}"
        );
        assert!(
            matcher.matches(&name, &input),
            "the matcher misses what {term:?} matches"
        );
    }

    let input = json!({"command": command});
    let any_term = matcher
        .terms()
        .iter()
        .any(|t| single_matcher(t).matches(tool_name, &input));
    assert_eq!(
        matcher.matches(tool_name, &input),
        any_term,
        "a matcher matches exactly when one of its alternatives does"
    );
    if matcher.terms().contains(&MatchTerm::Any) {
        assert!(
            matcher.matches(tool_name, &input),
            "`any` matches every call"
        );
    }
}

/// Shell keywords that are valid program names in the grammar but never run a program.
const SHELL_KEYWORDS: &[&str] = &["if", "then", "elif", "else", "do", "while", "until"];

/// A matcher of one alternative, through its canonical text.
fn single_matcher(term: &MatchTerm) -> Matcher {
    let text = match term {
        MatchTerm::Any => "any".to_owned(),
        MatchTerm::Mcp => "mcp".to_owned(),
        MatchTerm::McpServer(server) => format!("mcp__{server}"),
        MatchTerm::McpTool { server, tool } => format!("mcp__{server}__{tool}"),
        MatchTerm::BashCli(cli) => format!("bash.{cli}"),
        MatchTerm::Tool(tool) => tool.clone(),
    };
    Matcher::parse(&text).unwrap_or_else(|e| panic!("alternative `{text}` does not parse: {e}"))
}
