//! Tests of the conditions tools through the catalogue, of the gate and of
//! [`crate::matching_conditions`].

use std::sync::Arc;

use catalogue::{CallContext, Extensions, SessionPolicy, ToolError};
use serde_json::{Value, json};
use store::{SqliteStore, Step, StoreHandle};

use crate::{GATE_WINDOW_MS, GateSetting};

const NOW: i64 = 1_764_000_000_000;

struct Env {
    _dir: tempfile::TempDir,
    ext: Extensions,
    store: StoreHandle,
    policy: SessionPolicy,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = StoreHandle(Arc::new(
        SqliteStore::create(dir.path().join("state.db")).unwrap(),
    ));
    let mut ext = Extensions::new();
    ext.insert(store.clone());
    Env {
        _dir: dir,
        ext,
        store,
        policy: SessionPolicy::Fallback(Some("s1".into())),
    }
}

/// An environment whose session `s1` has an open gate.
fn armed() -> Env {
    let env = env();
    env.store
        .arm_gate("s1", NOW + GATE_WINDOW_MS, &store::Actor::Daemon, 0)
        .unwrap();
    env
}

impl Env {
    fn call_at(&self, now: i64, tool: &str, args: Value) -> Result<Value, ToolError> {
        catalogue::call(tool, &CallContext::new(now, &self.policy, &self.ext), args)
    }

    fn call(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        self.call_at(NOW, tool, args)
    }

    fn names(&self) -> Vec<String> {
        self.store
            .conditions()
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect()
    }
}

fn set_args(name: &str) -> Value {
    json!({"step": "pre", "matcher": "Bash.Git", "name": name, "script": "exit 0"})
}

fn invalid(result: Result<Value, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArguments(msg)) => msg,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

fn refused(result: Result<Value, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(msg)) => msg,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn set_list_show_clear_round_trip() {
    let env = armed();
    let created = env.call("condition_set", set_args("no_push")).unwrap();
    assert_eq!(
        created,
        json!({"name": "no_push", "status": "created", "step": "pre", "matcher": "bash.git"})
    );
    let audit = json!({"step": "post", "matcher": "edit+write", "name": "audit",
                       "script": "print(1)", "language": "python", "run_async": true,
                       "session_id": "s9"});
    refused(env.call("condition_set", audit.clone())); // s9's gate is closed
    env.store
        .arm_gate("s9", NOW + 1, &store::Actor::Daemon, 0)
        .unwrap();
    env.call("condition_set", audit).unwrap();

    let list = env.call("condition_list", json!({})).unwrap();
    assert_eq!(
        list,
        json!({"conditions": [
            {"name": "audit", "step": "post", "matcher": "edit+write", "language": "python",
             "run_async": true, "session_id": "s9"},
            {"name": "no_push", "step": "pre", "matcher": "bash.git", "language": "bash",
             "run_async": false, "session_id": "s1"},
        ]})
    );

    let shown = env
        .call("condition_show", json!({"name": "no_push"}))
        .unwrap();
    assert_eq!(
        shown,
        json!({"name": "no_push", "step": "pre", "matcher": "bash.git", "language": "bash",
               "run_async": false, "session_id": "s1", "script": "exit 0",
               "created_at": store::to_rfc3339(NOW), "updated_at": store::to_rfc3339(NOW)})
    );

    assert_eq!(
        env.call("condition_clear", json!({"name": "no_push"}))
            .unwrap(),
        json!({"removed": "no_push"})
    );
    assert_eq!(env.names(), ["audit"]);
}

#[test]
fn replace_false_conflicts_and_replace_true_keeps_created_at() {
    let env = armed();
    env.call("condition_set", set_args("guard")).unwrap();
    let msg = refused(env.call("condition_set", set_args("guard")));
    assert!(msg.contains("replace=true"), "{msg}");

    let mut args = set_args("guard");
    args["script"] = json!("exit 2");
    args["replace"] = json!(true);
    let later = NOW + 60_000;
    let replaced = env.call_at(later, "condition_set", args).unwrap();
    assert_eq!(replaced["status"], "replaced");
    let c = env.store.condition("guard").unwrap().unwrap();
    assert_eq!(
        (c.script.as_str(), c.created_at, c.updated_at),
        ("exit 2", NOW, later)
    );
}

#[test]
fn gate_closed_refuses_every_change() {
    let env = env();
    let msg = refused(env.call("condition_set", set_args("guard")));
    assert!(msg.contains("session `s1`"), "{msg}");
    assert!(msg.contains("their own prompt"), "{msg}");
    assert!(msg.contains("HOOKS_MCP_CONDITIONS_GATE=off"), "{msg}");
    assert!(env.names().is_empty());

    // Install one with the gate open, then close it: removal is refused too.
    env.store
        .arm_gate("s1", NOW + 1, &store::Actor::Daemon, 0)
        .unwrap();
    env.call("condition_set", set_args("guard")).unwrap();
    env.store.disarm_gate("s1").unwrap();
    refused(env.call("condition_clear", json!({"name": "guard"})));
    let mut replace = set_args("guard");
    replace["replace"] = json!(true);
    refused(env.call("condition_set", replace));
    assert_eq!(
        env.store.condition("guard").unwrap().unwrap().script,
        "exit 0"
    );
    // Reading needs no gate.
    env.call("condition_list", json!({})).unwrap();
    env.call("condition_show", json!({"name": "guard"}))
        .unwrap();
}

#[test]
fn gate_expires_and_is_per_session() {
    let env = armed();
    let expiry = NOW + GATE_WINDOW_MS;
    env.call_at(expiry - 1, "condition_set", set_args("a"))
        .unwrap();
    refused(env.call_at(expiry, "condition_set", set_args("b")));
    let mut other = set_args("c");
    other["session_id"] = json!("s2");
    refused(env.call("condition_set", other));
    assert_eq!(env.names(), ["a"]);
}

#[test]
fn gate_disabled_by_setting() {
    let mut env = env();
    env.ext.insert(GateSetting { enforced: false });
    env.call("condition_set", set_args("free")).unwrap();
    env.call("condition_clear", json!({"name": "free"}))
        .unwrap();
    env.ext.insert(GateSetting { enforced: true });
    refused(env.call("condition_set", set_args("free")));
}

#[test]
fn gate_setting_parses_off_values() {
    for off in ["off", "OFF", " false ", "0"] {
        assert!(!GateSetting::parse(Some(off)).enforced, "{off}");
    }
    for on in [None, Some("on"), Some(""), Some("1"), Some("no thanks")] {
        assert!(GateSetting::parse(on).enforced, "{on:?}");
    }
}

#[test]
fn prompts_arm_the_gate_only_when_asking_to_change_conditions() {
    let asks = [
        "Please set a condition that blocks git push --force",
        "remove the no_push Condition",
        "Add conditions for edits to src/",
        "use condition_set to install a check",
        "We are DELETING that condition now",
    ];
    let does_not = [
        "set up the build",
        "what conditions exist?",
        "under which conditional branch does this run? fix it",
        "add a precondition check to parse()",
        "",
    ];
    for prompt in asks {
        assert!(crate::prompt_requests_condition_change(prompt), "{prompt}");
    }
    for prompt in does_not {
        assert!(!crate::prompt_requests_condition_change(prompt), "{prompt}");
    }
    // hooks-mcp's own turn-end push, submitted as the next prompt: never the operator's.
    let pushed = format!("{}\n[ALERT #3 ops] {}", store::rules::PUSH_HEADER, asks[0]);
    assert!(!crate::prompt_requests_condition_change(&pushed));

    let env = env();
    let store: &dyn store::Store = &*env.store.0;
    assert!(!crate::arm_gate_for_prompt(store, "s1", "list the conditions", NOW).unwrap());
    assert_eq!(env.store.gate_open_until("s1", NOW).unwrap(), None);
    assert!(crate::arm_gate_for_prompt(store, "s1", asks[0], NOW).unwrap());
    assert_eq!(
        env.store.gate_open_until("s1", NOW).unwrap(),
        Some(NOW + GATE_WINDOW_MS)
    );
    assert_eq!(env.store.gate_open_until("s2", NOW).unwrap(), None);
    env.call("condition_set", set_args("via_prompt")).unwrap();
}

#[test]
fn set_rejects_bad_arguments() {
    let env = armed();
    let base = set_args("ok");
    let with = |key: &str, value: Value| {
        let mut args = base.clone();
        args[key] = value;
        args
    };
    let without = |key: &str| {
        let mut args = base.clone();
        args.as_object_mut().unwrap().remove(key);
        args
    };
    let cases = [
        (with("name", json!("")), "name: must be 1 to 64"),
        (with("name", json!("a".repeat(65))), "name: must be 1 to 64"),
        (with("name", json!("no-push")), "name: may contain only"),
        (with("matcher", json!("bash.")), "matcher: part `bash.`"),
        (with("matcher", json!("")), "matcher: must not be empty"),
        (with("script", json!(" \n")), "script: must not be empty"),
        (
            with("script", json!("x".repeat(64 * 1024 + 1))),
            "script: is 65537 bytes",
        ),
        (with("step", json!("during")), "unknown variant `during`"),
        (with("language", json!("ruby")), "unknown variant `ruby`"),
        (with("run_async", json!("yes")), "invalid type"),
        (with("replace", json!(1)), "invalid type"),
        (with("script", json!(["exit 0"])), "invalid type"),
        (with("timeout", json!(5)), "unknown field `timeout`"),
        (without("step"), "missing field `step`"),
        (without("matcher"), "missing field `matcher`"),
        (without("name"), "missing field `name`"),
        (without("script"), "missing field `script`"),
    ];
    for (args, expected) in cases {
        let msg = invalid(env.call("condition_set", args.clone()));
        assert!(msg.contains(expected), "{expected}: {msg}");
    }
    // The full 64 KiB is accepted.
    env.call(
        "condition_set",
        with("script", json!("#".repeat(64 * 1024))),
    )
    .unwrap();
    assert_eq!(env.names(), ["ok"]);
}

#[test]
fn missing_session_id_is_an_error_naming_it() {
    let mut env = armed();
    env.policy = SessionPolicy::Fallback(None);
    let msg = invalid(env.call("condition_set", set_args("a")));
    assert!(msg.starts_with("session_id:"), "{msg}");
    let msg = invalid(env.call("condition_clear", json!({"name": "a"})));
    assert!(msg.starts_with("session_id:"), "{msg}");
    let mut explicit = set_args("a");
    explicit["session_id"] = json!("s1");
    env.call("condition_set", explicit).unwrap();
}

#[test]
fn show_and_clear_unknown_names_are_not_found() {
    let env = armed();
    for tool in ["condition_show", "condition_clear"] {
        match env.call(tool, json!({"name": "ghost"})) {
            Err(ToolError::NotFound(msg)) => assert!(msg.contains("`ghost`"), "{tool}: {msg}"),
            other => panic!("{tool}: expected not found, got {other:?}"),
        }
        assert!(invalid(env.call(tool, json!({"name": "a b"}))).starts_with("name:"));
        assert!(invalid(env.call(tool, json!({}))).contains("missing field `name`"));
        assert!(invalid(env.call(tool, json!({"name": 3}))).contains("invalid type"));
        assert!(
            invalid(env.call(tool, json!({"name": "a", "x": 1}))).contains("unknown field `x`")
        );
    }
    assert!(invalid(env.call("condition_list", json!({"all": true}))).contains("unknown field"));
}

#[test]
fn matching_conditions_filters_by_step_and_matcher() {
    let env = armed();
    for (name, step, matcher) in [
        ("pre_git", "pre", "bash.git"),
        ("pre_any", "pre", "any"),
        ("post_edit", "post", "edit"),
    ] {
        env.call(
            "condition_set",
            json!({"step": step, "matcher": matcher, "name": name, "script": "true"}),
        )
        .unwrap();
    }
    let store: &dyn store::Store = &*env.store.0;
    let names = |step, tool: &str, input: Value| -> Vec<String> {
        crate::matching_conditions(store, step, tool, &input)
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect()
    };
    assert_eq!(
        names(Step::Pre, "Bash", json!({"command": "git push"})),
        ["pre_any", "pre_git"]
    );
    assert_eq!(
        names(Step::Pre, "Bash", json!({"command": "ls"})),
        ["pre_any"]
    );
    assert_eq!(names(Step::Post, "Edit", json!({})), ["post_edit"]);
    assert!(names(Step::Post, "Bash", json!({"command": "git push"})).is_empty());
}

#[test]
fn a_matcher_longer_than_its_limit_is_refused() {
    let env = armed();
    let with_matcher = |name: &str, matcher: String| {
        let mut args = set_args(name);
        args["matcher"] = json!(matcher);
        args
    };
    let huge = format!("bash.x{}", "y".repeat(1 << 20));
    let msg = invalid(env.call("condition_set", with_matcher("huge", huge)));
    assert!(
        msg.starts_with("matcher: is 1048582 bytes; the limit is 1024"),
        "{msg}"
    );
    let many = (0..100_000)
        .map(|i| format!("t{i}"))
        .collect::<Vec<_>>()
        .join("+");
    let msg = invalid(env.call("condition_set", with_matcher("many", many)));
    assert!(msg.starts_with("matcher: is "), "{msg}");
    assert!(env.names().is_empty());
    // The limit itself is accepted.
    let longest = format!("bash.{}", "g".repeat(crate::MATCHER_MAX_BYTES - 5));
    env.call("condition_set", with_matcher("longest", longest))
        .unwrap();
    assert_eq!(env.names(), ["longest"]);
}
