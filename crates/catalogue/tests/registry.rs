//! Registration through `catalogue::submit!`: what a linked tools crate does, seen from outside.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use catalogue::{
    Annotations, CallContext, Catalogue, Category, Extensions, SessionPolicy, ToolError,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Arguments of `test_echo`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EchoArgs {
    /// Text to return.
    text: String,
    /// Acting session.
    session_id: Option<String>,
}

fn echo(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: EchoArgs = catalogue::parse_args(args)?;
    if args.text.is_empty() {
        return Err(ToolError::InvalidArguments(
            "text: must not be empty".into(),
        ));
    }
    let session = ctx.session_id(args.session_id.as_deref())?;
    Ok(json!({ "text": args.text, "session": session, "at": ctx.now_ms() }))
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

fn nothing(_ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let NoArgs {} = catalogue::parse_args(args)?;
    Ok(json!({}))
}

// Registered out of (category, name) order on purpose.
catalogue::submit! {
    catalogue::ToolRegistration {
        name: "test_wipe",
        category: Category::Scheduler,
        title: "Wipe",
        description: "Wipe everything.",
        input_schema: catalogue::schema_of::<NoArgs>,
        output_schema: None,
        annotations: Annotations::DESTRUCTIVE,
        handler: nothing,
    }
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "test_echo",
        category: Category::Channels,
        title: "Echo",
        description: "Return the text.",
        input_schema: catalogue::schema_of::<EchoArgs>,
        output_schema: Some(|| json!({"type": "object"})),
        annotations: Annotations::READ_ONLY,
        handler: echo,
    }
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "test_append",
        category: Category::Channels,
        title: "Append",
        description: "Append nothing.",
        input_schema: catalogue::schema_of::<NoArgs>,
        output_schema: None,
        annotations: Annotations::ADDITIVE,
        handler: nothing,
    }
}

#[test]
fn registry_lists_linked_tools_sorted_by_category_then_name() {
    let catalogue = Catalogue::from_registry().unwrap();
    let listed: Vec<(Category, &str)> = catalogue
        .tools()
        .iter()
        .map(|t| (t.category, t.name.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            (Category::Channels, "test_append"),
            (Category::Channels, "test_echo"),
            (Category::Scheduler, "test_wipe"),
        ]
    );
    let registered: Vec<&str> = catalogue::registrations().iter().map(|r| r.name).collect();
    assert_eq!(registered, ["test_append", "test_echo", "test_wipe"]);

    let echo = catalogue.get("test_echo").unwrap();
    assert_eq!(echo.title, "Echo");
    assert_eq!(echo.output_schema, Some(json!({"type": "object"})));
    assert_eq!(
        echo.input_schema["properties"]["text"]["description"],
        "Text to return."
    );
    assert_eq!(echo.input_schema["required"], json!(["text"]));
}

#[test]
fn registry_feeds_the_filtered_tools_list() {
    let (filter, warnings) = catalogue::Filter::parse(Some("channels"), Some("TEST_ECHO"));
    assert!(warnings.is_empty());
    let (visible, warnings) = Catalogue::from_registry().unwrap().filtered(&filter);
    assert!(warnings.is_empty());
    let list = visible.tools_list_result();
    assert_eq!(list["tools"].as_array().unwrap().len(), 1);
    assert_eq!(list["tools"][0]["name"], "test_echo");
    assert_eq!(list["tools"][0]["outputSchema"], json!({"type": "object"}));
}

#[test]
fn call_runs_the_named_handler() {
    let ext = Extensions::new();
    let policy = SessionPolicy::Fallback(Some("s1".into()));
    let ctx = CallContext::new(42, &policy, &ext);

    let out = catalogue::call("test_echo", &ctx, json!({"text": "hi"})).unwrap();
    assert_eq!(out, json!({"text": "hi", "session": "s1", "at": 42}));
    let out =
        catalogue::call("test_echo", &ctx, json!({"text": "hi", "session_id": "s2"})).unwrap();
    assert_eq!(out["session"], "s2");
    assert_eq!(
        catalogue::call("test_wipe", &ctx, Value::Null).unwrap(),
        json!({})
    );

    assert_eq!(
        catalogue::call("test_echo", &ctx, json!({"text": ""})),
        Err(ToolError::InvalidArguments(
            "text: must not be empty".into()
        ))
    );
    let err = catalogue::call("test_wipe", &ctx, json!({"force": true})).unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments(m) if m.contains("unknown field `force`")),
        "{err:?}"
    );
}

#[test]
fn call_of_an_unknown_name_is_not_found() {
    let ext = Extensions::new();
    let policy = SessionPolicy::ExplicitOnly;
    let ctx = CallContext::new(0, &policy, &ext);
    for name in ["test_missing", "TEST_ECHO", ""] {
        let err = catalogue::call(name, &ctx, json!({})).unwrap_err();
        assert_eq!(
            err,
            ToolError::NotFound(format!("no tool is named `{name}`"))
        );
    }
    assert!(catalogue::find("test_echo").is_some());
    assert!(catalogue::find("test_missing").is_none());
}

#[test]
fn duplicate_registered_names_are_rejected() {
    let mut specs: Vec<_> = catalogue::registrations()
        .iter()
        .map(|r| r.spec())
        .collect();
    specs.push(catalogue::find("test_echo").unwrap().spec());
    let err = Catalogue::new(specs).unwrap_err();
    assert!(
        matches!(&err, catalogue::CatalogueError::DuplicateTool(name) if name == "test_echo"),
        "{err:?}"
    );
}
