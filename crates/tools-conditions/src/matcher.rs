//! The matcher grammar: which tool calls a condition runs on.
//!
//! ```text
//! matcher     = alternative ("+" alternative)*
//! alternative = "any"                      every tool call
//!             | "mcp"                      every MCP tool (name starts `mcp__`)
//!             | "mcp__" server             every tool of one MCP server
//!             | "mcp__" server "__" tool   one MCP tool
//!             | "bash." cli                a Bash call whose command runs the program `cli`
//!             | tool                       a tool by name, e.g. bash, edit, write, read, webfetch
//! ```
//!
//! Names are compared case-insensitively. A `bash.<cli>` alternative looks at every simple
//! command of `tool_input.command` (split on `;`, `&&`, `||`, `|`, `&`, new lines, parentheses
//! and backticks, outside quotes), skips leading `VAR=value` assignments, the wrappers `sudo`,
//! `env`, `time`, `command`, `exec`, `nice`, `nohup` (with their options) and shell keywords
//! (`if`, `then`, `do`, `!`...), and compares the program's base name (`/usr/bin/git` is `git`);
//! a wrapper counts as run too (`bash.sudo` matches `sudo git pull`).
//! It is a heuristic over shell text, not a shell: `eval "git push"` or a script that runs git
//! is not seen.

use std::fmt;

use serde_json::Value;

/// The grammar in one line, for error messages.
const GRAMMAR: &str = "expected `any`, a tool name (e.g. `bash`, `edit`), `mcp`, \
                       `mcp__<server>`, `mcp__<server>__<tool>` or `bash.<cli>`, alternatives \
                       joined with `+` (e.g. `edit+write`, `bash.git+bash.gh`)";

/// One alternative of a [`Matcher`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchTerm {
    /// Every tool call.
    Any,
    /// Every MCP tool.
    Mcp,
    /// Every tool of this MCP server (lower-cased).
    McpServer(String),
    /// One MCP tool (both names lower-cased).
    McpTool {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// A Bash call running this program (lower-cased).
    BashCli(String),
    /// A tool by name (lower-cased).
    Tool(String),
}

/// A parsed matcher: the tool calls a condition runs on. Its [`fmt::Display`] form is the
/// canonical text (lower-case, no spaces) that the store keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    terms: Vec<MatchTerm>,
}

impl Matcher {
    /// Parses matcher text.
    ///
    /// # Errors
    /// A message naming the offending part and showing the grammar, for the caller to prefix
    /// with the field name.
    pub fn parse(text: &str) -> Result<Matcher, String> {
        if text.trim().is_empty() {
            return Err(format!("must not be empty; {GRAMMAR}"));
        }
        let terms = text
            .split('+')
            .map(|part| parse_term(part.trim()).map_err(|why| format!("{why}; {GRAMMAR}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Matcher { terms })
    }

    /// The alternatives, in the order given.
    pub fn terms(&self) -> &[MatchTerm] {
        &self.terms
    }

    /// Whether a call of `tool_name` with `tool_input` matches any alternative.
    pub fn matches(&self, tool_name: &str, tool_input: &Value) -> bool {
        self.terms
            .iter()
            .any(|term| term_matches(term, tool_name, tool_input))
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            match term {
                MatchTerm::Any => f.write_str("any")?,
                MatchTerm::Mcp => f.write_str("mcp")?,
                MatchTerm::McpServer(server) => write!(f, "mcp__{server}")?,
                MatchTerm::McpTool { server, tool } => write!(f, "mcp__{server}__{tool}")?,
                MatchTerm::BashCli(cli) => write!(f, "bash.{cli}")?,
                MatchTerm::Tool(tool) => f.write_str(tool)?,
            }
        }
        Ok(())
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Checks one name of an alternative: non-empty and made of `allowed` characters.
fn check_name(part: &str, what: &str, name: &str, allowed: fn(char) -> bool) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("part `{part}` has an empty {what}"));
    }
    if let Some(bad) = name.chars().find(|c| !allowed(*c)) {
        return Err(format!(
            "part `{part}`: the {what} `{name}` contains {bad:?}"
        ));
    }
    Ok(())
}

fn parse_term(part: &str) -> Result<MatchTerm, String> {
    if part.is_empty() {
        return Err("has an empty alternative (check for a stray `+`)".into());
    }
    let lower = part.to_ascii_lowercase();
    if lower == "any" {
        return Ok(MatchTerm::Any);
    }
    if lower == "mcp" {
        return Ok(MatchTerm::Mcp);
    }
    if let Some(rest) = lower.strip_prefix("mcp__") {
        return match rest.split_once("__") {
            None => {
                check_name(part, "server name", rest, is_name_char)?;
                Ok(MatchTerm::McpServer(rest.to_owned()))
            }
            Some((server, tool)) => {
                check_name(part, "server name", server, is_name_char)?;
                check_name(part, "tool name", tool, is_name_char)?;
                Ok(MatchTerm::McpTool {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                })
            }
        };
    }
    if let Some(cli) = lower.strip_prefix("bash.") {
        check_name(part, "program name", cli, |c| is_name_char(c) || c == '.')?;
        return Ok(MatchTerm::BashCli(cli.to_owned()));
    }
    if !lower.starts_with(|c: char| c.is_ascii_alphabetic()) || !lower.chars().all(is_name_char) {
        return Err(format!("part `{part}` is not a valid alternative"));
    }
    Ok(MatchTerm::Tool(lower))
}

fn term_matches(term: &MatchTerm, tool_name: &str, tool_input: &Value) -> bool {
    let name = tool_name.to_ascii_lowercase();
    match term {
        MatchTerm::Any => true,
        MatchTerm::Mcp => name.starts_with("mcp__"),
        MatchTerm::McpServer(server) => name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.strip_prefix(server.as_str()))
            .is_some_and(|rest| rest.starts_with("__")),
        MatchTerm::McpTool { server, tool } => name == format!("mcp__{server}__{tool}"),
        MatchTerm::Tool(tool) => name == *tool,
        MatchTerm::BashCli(cli) => {
            name == "bash"
                && tool_input
                    .get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|command| command_runs(command, cli))
        }
    }
}

/// Whether any simple command of the shell text `command` runs the program `cli`.
pub(crate) fn command_runs(command: &str, cli: &str) -> bool {
    simple_commands(command)
        .iter()
        .flat_map(|words| programs_of(words))
        .any(|program| {
            program
                .rsplit('/')
                .next()
                .is_some_and(|b| b.eq_ignore_ascii_case(cli))
        })
}

/// Splits shell text into simple commands, each a list of words with quotes removed.
fn simple_commands(text: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                word.push(escaped);
                            }
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                // A backslash-newline joins lines; any other escaped character is literal.
                match chars.next() {
                    Some('\n') | None => {}
                    Some(escaped) => word.push(escaped),
                }
            }
            // `>&2`, `<&0`: redirections, not separators.
            '&' if matches!(prev, Some('>' | '<')) => {
                in_word = true;
                word.push(c);
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
        prev = Some(c);
    }
    if in_word {
        words.push(word);
    }
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// Words that only introduce a command.
const KEYWORDS: &[&str] = &[
    "if", "then", "elif", "else", "do", "while", "until", "!", "{", "}",
];
/// Programs that run the command after their options.
const WRAPPERS: &[&str] = &["sudo", "env", "time", "command", "exec", "nice", "nohup"];
/// `sudo` options that take a separate value.
const SUDO_VALUE_OPTIONS: &[&str] = &[
    "-u", "-g", "-C", "-D", "-h", "-p", "-R", "-r", "-t", "-T", "-U",
];

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn is_redirection(word: &str) -> bool {
    word.trim_start_matches(|c: char| c.is_ascii_digit())
        .starts_with(['>', '<'])
}

/// The programs a simple command runs: the wrappers (`sudo git push` runs `sudo` too, so
/// `bash.sudo` matches it) and the program they run, if any.
fn programs_of(words: &[String]) -> Vec<&str> {
    let mut programs = Vec::new();
    let mut i = 0;
    while let Some(word) = words.get(i).map(String::as_str) {
        if is_assignment(word) || is_redirection(word) || KEYWORDS.contains(&word) {
            i += 1;
            continue;
        }
        programs.push(word);
        if !WRAPPERS.contains(&word) {
            return programs;
        }
        i += 1;
        // The wrapper's options (and `env`'s assignments) precede the command it runs.
        while let Some(option) = words.get(i).map(String::as_str) {
            if word == "command" && (option == "-v" || option == "-V") {
                return programs; // `command -v git` only looks git up.
            }
            if option == "--" {
                i += 1;
                break;
            }
            if !(option.starts_with('-') || (word == "env" && is_assignment(option))) {
                break;
            }
            let takes_value = (word == "sudo" && SUDO_VALUE_OPTIONS.contains(&option))
                || (word == "nice" && option == "-n");
            i += if takes_value { 2 } else { 1 };
        }
    }
    programs
}
