//! Table-driven tests of the matcher grammar and of Bash command matching.

use serde_json::{Value, json};

use crate::{MatchTerm, Matcher};

#[test]
fn parses_every_form_to_canonical_text() {
    let cases: &[(&str, &str)] = &[
        ("any", "any"),
        ("ANY", "any"),
        ("bash", "bash"),
        ("Edit", "edit"),
        ("WebFetch", "webfetch"),
        ("notebook_edit-2", "notebook_edit-2"),
        ("mcp", "mcp"),
        ("mcp__github", "mcp__github"),
        ("mcp__GitHub__create_issue", "mcp__github__create_issue"),
        ("mcp__my-server__do_it", "mcp__my-server__do_it"),
        ("bash.git", "bash.git"),
        ("Bash.Docker-Compose", "bash.docker-compose"),
        ("bash.python3.12", "bash.python3.12"),
        ("edit+write", "edit+write"),
        (" edit + write ", "edit+write"),
        (
            "bash.git+bash.gh+mcp__github",
            "bash.git+bash.gh+mcp__github",
        ),
    ];
    for (text, canonical) in cases {
        let m = Matcher::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(m.to_string(), *canonical, "{text}");
        assert_eq!(
            Matcher::parse(canonical).unwrap(),
            m,
            "{text}: canonical form round-trips"
        );
    }
    assert_eq!(
        Matcher::parse("mcp__a__b+bash.git").unwrap().terms(),
        [
            MatchTerm::McpTool {
                server: "a".into(),
                tool: "b".into()
            },
            MatchTerm::BashCli("git".into())
        ]
    );
}

#[test]
fn rejects_bad_text_naming_the_part() {
    let cases: &[(&str, &str)] = &[
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("edit+", "empty alternative"),
        ("+edit", "empty alternative"),
        ("edit++write", "empty alternative"),
        ("bash.", "part `bash.` has an empty program name"),
        ("bash.g/it", "program name `g/it` contains '/'"),
        ("mcp__", "part `mcp__` has an empty server name"),
        ("mcp____tool", "empty server name"),
        ("mcp__srv__", "part `mcp__srv__` has an empty tool name"),
        ("mcp__s rv", "server name `s rv` contains ' '"),
        ("1edit", "part `1edit` is not a valid alternative"),
        (
            "Bash(git:*)",
            "part `Bash(git:*)` is not a valid alternative",
        ),
        ("edit,write", "part `edit,write` is not a valid alternative"),
        ("edit|write", "not a valid alternative"),
        ("web.fetch", "part `web.fetch` is not a valid alternative"),
        ("*", "not a valid alternative"),
    ];
    for (text, expected) in cases {
        let err = Matcher::parse(text).expect_err(text);
        assert!(err.contains(expected), "{text}: {err}");
        assert!(
            err.contains("alternatives joined with `+`"),
            "{text}: shows the grammar: {err}"
        );
    }
}

fn bash(command: &str) -> Value {
    json!({ "command": command })
}

#[test]
fn matches_tool_calls() {
    let none = json!({});
    // (matcher, tool name, tool input, expected)
    let cases: Vec<(&str, &str, Value, bool)> = vec![
        ("any", "Read", none.clone(), true),
        ("any", "mcp__x__y", none.clone(), true),
        ("bash", "Bash", bash("ls"), true),
        ("bash", "BashOutput", none.clone(), false),
        ("edit", "Edit", none.clone(), true),
        ("edit", "MultiEdit", none.clone(), false),
        ("webfetch", "WebFetch", none.clone(), true),
        ("edit+write", "Write", none.clone(), true),
        ("edit+write", "Read", none.clone(), false),
        ("mcp", "mcp__github__create_issue", none.clone(), true),
        ("mcp", "Bash", bash("mcp__x"), false),
        (
            "mcp__github",
            "mcp__github__create_issue",
            none.clone(),
            true,
        ),
        ("mcp__github", "mcp__GitHub__list", none.clone(), true),
        ("mcp__git", "mcp__github__create_issue", none.clone(), false),
        ("mcp__github", "mcp__github", none.clone(), false),
        (
            "mcp__github__create_issue",
            "mcp__github__create_issue",
            none.clone(),
            true,
        ),
        (
            "mcp__github__create",
            "mcp__github__create_issue",
            none.clone(),
            false,
        ),
        (
            "mcp__github__create_issue",
            "mcp__gitlab__create_issue",
            none.clone(),
            false,
        ),
        ("bash.git", "Bash", bash("git status"), true),
        ("bash.git", "Edit", bash("git status"), false),
        ("bash.git", "Bash", none.clone(), false),
        ("bash.git", "Bash", json!({"command": 5}), false),
        ("bash.git+bash.gh", "Bash", bash("gh pr list"), true),
        ("bash.git+edit", "Edit", none.clone(), true),
    ];
    for (text, tool, input, expected) in cases {
        let m = Matcher::parse(text).unwrap();
        assert_eq!(
            m.matches(tool, &input),
            expected,
            "{text} vs {tool} {input}"
        );
    }
}

#[test]
fn bash_cli_finds_the_program_of_each_simple_command() {
    // (command, runs git?)
    let cases: &[(&str, bool)] = &[
        ("git push", true),
        ("  git", true),
        ("/usr/bin/git log", true),
        ("./git", true),
        ("GIT_DIR=x git log", true),
        ("A=1 B=2 git log", true),
        ("sudo git pull", true),
        ("sudo -u deploy git pull", true),
        ("sudo -E git pull", true),
        ("env -i PATH=/bin git status", true),
        ("time git gc", true),
        ("command git status", true),
        ("exec git status", true),
        ("nice -n 5 git gc", true),
        ("nohup git fetch &", true),
        ("cd repo && git status", true),
        ("make || git stash", true),
        ("ls; git log", true),
        ("ls\ngit log", true),
        ("cat x | git apply", true),
        ("sleep 1 & git fetch", true),
        ("(cd repo; git status)", true),
        ("echo $(git rev-parse HEAD)", true),
        ("echo `git rev-parse HEAD`", true),
        ("if git diff --quiet; then echo same; fi", true),
        ("! git diff --quiet", true),
        ("ls \\\n && git log", true),
        ("\"git\" status", true),
        ("git log 2>&1 | head", true),
        // Not running git.
        ("", false),
        ("ls", false),
        ("echo git", false),
        ("gitk --all", false),
        ("legit push", false),
        ("cat .gitignore", false),
        ("echo 'a; git push'", false),
        ("echo \"x && git push\"", false),
        ("grep -r git .", false),
        ("command -v git", false),
        ("GIT=git", false),
        ("make 2>&1 | tee log", false),
        ("cargo build >&2", false),
    ];
    for (command, expected) in cases {
        assert_eq!(
            crate::matcher::command_runs(command, "git"),
            *expected,
            "{command:?}"
        );
    }
    assert!(crate::matcher::command_runs(
        "docker-compose up",
        "docker-compose"
    ));
    assert!(
        !crate::matcher::command_runs("make 2>&1", "1"),
        "a redirection is no command"
    );
}

#[test]
fn a_wrapper_counts_as_a_program_run() {
    // Found by fuzzing: `bash.sudo` parsed but matched no command at all.
    let sudo = Matcher::parse("bash.sudo").unwrap();
    let call = |command: &str| json!({"command": command});
    assert!(sudo.matches("Bash", &call("sudo git pull")));
    assert!(sudo.matches("Bash", &call("sudo -u deploy make")));
    assert!(!sudo.matches("Bash", &call("git pull")));
    let git = Matcher::parse("bash.git").unwrap();
    assert!(git.matches("Bash", &call("sudo git pull")));
    let nohup = Matcher::parse("bash.nohup").unwrap();
    assert!(nohup.matches("Bash", &call("FOO=1 nohup git fetch &")));
}
