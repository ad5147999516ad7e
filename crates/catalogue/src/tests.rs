//! Unit tests: filter parsing and application, JSON shapes, schemas, argument parsing and the
//! session fallback.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    Annotations, CallContext, Catalogue, CatalogueError, Category, Extensions, Filter,
    FilterWarning, ModeError, SessionPolicy, StartMode, ToolError, ToolSpec, parse_args, schema_of,
};

fn spec(name: &str, category: Category) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        category,
        title: format!("Title of {name}"),
        description: format!("Does {name}."),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: Annotations::READ_ONLY,
    }
}

/// One tool per category, listed out of order on purpose.
fn sample() -> Catalogue {
    Catalogue::new(vec![
        spec("schedule_list", Category::Scheduler),
        spec("channel_publish", Category::Channels),
        spec("condition_list", Category::Conditions),
        spec("channel_list", Category::Channels),
        spec("enforcement_list", Category::Enforcement),
    ])
    .unwrap()
}

fn names(catalogue: &Catalogue) -> Vec<&str> {
    catalogue.tools().iter().map(|t| t.name.as_str()).collect()
}

fn unknown_category(name: &str) -> FilterWarning {
    FilterWarning::UnknownCategory { name: name.into() }
}

// ---------------------------------------------------------------------------------------------
// Filter::parse

#[test]
fn category_settings_select_the_expected_categories() {
    use Category::*;
    let all: Vec<Category> = Category::ALL.to_vec();
    let cases: Vec<(Option<&str>, Vec<Category>, Vec<FilterWarning>)> = vec![
        (None, all.clone(), vec![]),
        (Some(""), all.clone(), vec![]),
        (Some("   "), all.clone(), vec![]),
        (Some("all"), all.clone(), vec![]),
        (Some("ALL"), all.clone(), vec![]),
        (Some("channels"), vec![Channels], vec![]),
        (
            Some(" Scheduler , CHANNELS,conditions "),
            vec![Channels, Conditions, Scheduler],
            vec![],
        ),
        (Some("channels,,channels,"), vec![Channels], vec![]),
        (
            Some("enforcement, nope"),
            vec![Enforcement],
            vec![unknown_category("nope")],
        ),
        (
            Some("nope, Also-Nope"),
            vec![],
            vec![unknown_category("nope"), unknown_category("Also-Nope")],
        ),
        (
            Some("nope,all"),
            all.clone(),
            vec![unknown_category("nope")],
        ),
    ];
    for (setting, expected, expected_warnings) in cases {
        let (filter, warnings) = Filter::parse(setting, None);
        let got: Vec<Category> = filter.categories().collect();
        assert_eq!(got, expected, "MCP_CATEGORIES={setting:?}");
        assert_eq!(warnings, expected_warnings, "MCP_CATEGORIES={setting:?}");
        for category in Category::ALL {
            assert_eq!(
                filter.selects_category(category),
                expected.contains(&category),
                "MCP_CATEGORIES={setting:?}, {category}"
            );
        }
    }
}

#[test]
fn default_filter_is_every_category_without_allowlist() {
    assert_eq!(Filter::default(), Filter::parse(None, None).0);
    assert_eq!(Filter::default().allowed_tools(), None);
}

#[test]
fn allowlist_settings_parse_to_lowercase_sorted_names() {
    let cases: Vec<(Option<&str>, Option<Vec<&str>>)> = vec![
        (None, None),
        (Some(""), None),
        (Some(" , ,"), None),
        (Some("channel_list"), Some(vec!["channel_list"])),
        (
            Some(" Schedule_List,CHANNEL_LIST , channel_list"),
            Some(vec!["channel_list", "schedule_list"]),
        ),
    ];
    for (setting, expected) in cases {
        let (filter, warnings) = Filter::parse(None, setting);
        assert!(warnings.is_empty(), "ALLOWED_TOOLS={setting:?}");
        let got: Option<Vec<&str>> = filter
            .allowed_tools()
            .map(|names| names.iter().map(String::as_str).collect());
        assert_eq!(got, expected, "ALLOWED_TOOLS={setting:?}");
    }
}

#[test]
fn filtering_applies_categories_and_allowlist() {
    let catalogue = sample();
    let cases: Vec<(Option<&str>, Option<&str>, Vec<&str>)> = vec![
        (
            None,
            None,
            vec![
                "channel_list",
                "channel_publish",
                "condition_list",
                "enforcement_list",
                "schedule_list",
            ],
        ),
        (None, Some("  "), names(&catalogue)),
        (
            Some("channels"),
            None,
            vec!["channel_list", "channel_publish"],
        ),
        (
            Some("scheduler,channels"),
            None,
            vec!["channel_list", "channel_publish", "schedule_list"],
        ),
        (
            None,
            Some("CHANNEL_LIST, Schedule_List"),
            vec!["channel_list", "schedule_list"],
        ),
        (
            Some("channels"),
            Some("channel_publish"),
            vec!["channel_publish"],
        ),
    ];
    for (categories, allowed, expected) in cases {
        let (filter, parse_warnings) = Filter::parse(categories, allowed);
        assert!(parse_warnings.is_empty());
        let (visible, warnings) = catalogue.filtered(&filter);
        assert!(
            warnings.is_empty(),
            "{categories:?} {allowed:?}: {warnings:?}"
        );
        assert_eq!(names(&visible), expected, "{categories:?} {allowed:?}");
    }
}

#[test]
fn allowlist_never_adds_a_tool_of_an_unselected_category() {
    let (filter, _) = Filter::parse(Some("channels"), Some("channel_list,Schedule_List"));
    assert!(!filter.allows(Category::Scheduler, "schedule_list"));
    let (visible, warnings) = sample().filtered(&filter);
    assert_eq!(names(&visible), ["channel_list"]);
    assert_eq!(
        warnings,
        [FilterWarning::ExcludedByCategory {
            tool: "schedule_list".into(),
            category: Category::Scheduler,
        }]
    );
    let text = warnings[0].to_string();
    assert!(
        text.contains("ALLOWED_TOOLS") && text.contains("scheduler"),
        "{text}"
    );
}

#[test]
fn allowlist_with_only_excluded_tools_selects_none() {
    let (filter, _) = Filter::parse(Some("conditions"), Some("channel_list"));
    let (visible, warnings) = sample().filtered(&filter);
    assert!(visible.is_empty());
    assert_eq!(
        warnings,
        [
            FilterWarning::ExcludedByCategory {
                tool: "channel_list".into(),
                category: Category::Channels,
            },
            FilterWarning::NoTools,
        ]
    );
}

#[test]
fn unknown_allowlisted_tool_is_reported() {
    let (filter, _) = Filter::parse(None, Some("channel_list, Channel_Lst"));
    let (visible, warnings) = sample().filtered(&filter);
    assert_eq!(names(&visible), ["channel_list"]);
    assert_eq!(
        warnings,
        [FilterWarning::UnknownTool {
            name: "channel_lst".into()
        }]
    );
    assert!(warnings[0].to_string().contains("`channel_lst`"));
}

#[test]
fn all_unknown_categories_select_no_tools() {
    let (filter, parse_warnings) = Filter::parse(Some("chanels"), None);
    assert_eq!(parse_warnings, [unknown_category("chanels")]);
    assert!(parse_warnings[0].to_string().contains("MCP_CATEGORIES"));
    let (visible, warnings) = sample().filtered(&filter);
    assert!(visible.is_empty());
    assert_eq!(warnings, [FilterWarning::NoTools]);
    assert!(warnings[0].to_string().contains("zero tools"));
}

#[test]
fn category_names_parse_and_display() {
    for category in Category::ALL {
        let upper = category.as_str().to_ascii_uppercase();
        assert_eq!(upper.parse::<Category>().unwrap(), category);
        assert_eq!(category.to_string(), category.as_str());
    }
    let err = "bogus".parse::<Category>().unwrap_err();
    assert!(err.to_string().contains("`bogus`"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Catalogue construction and JSON

#[test]
fn catalogue_sorts_by_category_then_name() {
    let catalogue = sample();
    assert_eq!(
        names(&catalogue),
        [
            "channel_list",
            "channel_publish",
            "condition_list",
            "enforcement_list",
            "schedule_list",
        ]
    );
    assert_eq!(catalogue.len(), 5);
    assert_eq!(
        catalogue.get("condition_list").map(|t| t.category),
        Some(Category::Conditions)
    );
    assert!(catalogue.get("Condition_List").is_none());
}

#[test]
fn duplicate_names_are_rejected() {
    let err = Catalogue::new(vec![
        spec("channel_list", Category::Channels),
        spec("schedule_list", Category::Scheduler),
        spec("channel_list", Category::Channels),
    ])
    .unwrap_err();
    assert!(
        matches!(&err, CatalogueError::DuplicateTool(name) if name == "channel_list"),
        "{err:?}"
    );
    assert!(err.to_string().contains("`channel_list`"));
}

#[test]
fn tools_list_result_has_the_mcp_shape_in_order() {
    let mut with_output = spec("channel_publish", Category::Channels);
    with_output.output_schema = Some(json!({"type": "object"}));
    with_output.annotations = Annotations::ADDITIVE;
    let catalogue =
        Catalogue::new(vec![spec("channel_list", Category::Channels), with_output]).unwrap();
    let result = catalogue.tools_list_result();

    let top: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(top, ["tools"]);
    let tools = result["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    let keys =
        |tool: &Value| -> Vec<String> { tool.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&tools[0]),
        ["name", "title", "description", "inputSchema", "annotations"]
    );
    assert_eq!(
        keys(&tools[1]),
        [
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations"
        ]
    );
    assert_eq!(
        tools[0],
        json!({
            "name": "channel_list",
            "title": "Title of channel_list",
            "description": "Does channel_list.",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        })
    );
    // No catalogue-only field leaks into the MCP object.
    assert!(tools[0].get("category").is_none());
}

#[test]
fn annotations_encode_only_non_default_hints() {
    let cases = [
        (
            Annotations::READ_ONLY,
            json!({"readOnlyHint": true, "openWorldHint": false}),
        ),
        (
            Annotations::ADDITIVE,
            json!({"destructiveHint": false, "openWorldHint": false}),
        ),
        (
            Annotations::DESTRUCTIVE,
            json!({"idempotentHint": true, "openWorldHint": false}),
        ),
        (
            Annotations {
                read_only: false,
                destructive: false,
                idempotent: true,
            },
            json!({"destructiveHint": false, "idempotentHint": true, "openWorldHint": false}),
        ),
        (
            Annotations {
                read_only: false,
                destructive: true,
                idempotent: false,
            },
            json!({"openWorldHint": false}),
        ),
    ];
    for (annotations, expected) in cases {
        assert_eq!(annotations.to_mcp(), expected, "{annotations:?}");
    }
}

#[test]
fn dump_round_trips() {
    let mut with_output = spec("channel_publish", Category::Channels);
    with_output.output_schema = Some(json!({"type": "object", "properties": {"id": {}}}));
    with_output.annotations = Annotations::DESTRUCTIVE;
    let catalogue = Catalogue::new(vec![
        with_output,
        spec("schedule_list", Category::Scheduler),
    ])
    .unwrap();
    let text = catalogue.to_json();
    assert_eq!(Catalogue::from_json(&text).unwrap(), catalogue);
    // outputSchema is written only when set.
    let dump: Value = serde_json::from_str(&text).unwrap();
    assert!(dump["tools"][0].get("outputSchema").is_some());
    assert!(dump["tools"][1].get("outputSchema").is_none());
    assert_eq!(dump["tools"][1]["category"], "scheduler");
}

#[test]
fn bad_dumps_are_errors() {
    let duplicate = r#"{"tools":[
        {"name":"a","category":"channels","title":"","description":"","inputSchema":{}},
        {"name":"a","category":"scheduler","title":"","description":"","inputSchema":{}}]}"#;
    let cases = [
        "",
        "not json",
        "[]",
        r#"{"tools": 3}"#,
        r#"{"tools":[{"name":"a"}]}"#,
        r#"{"tools":[{"name":"a","category":"nope","title":"","description":"","inputSchema":{}}]}"#,
    ];
    for text in cases {
        let err = Catalogue::from_json(text).unwrap_err();
        assert!(
            matches!(err, CatalogueError::Malformed(_)),
            "{text}: {err:?}"
        );
        assert!(err.to_string().contains("\"tools\""), "{err}");
    }
    assert!(matches!(
        Catalogue::from_json(duplicate),
        Err(CatalogueError::DuplicateTool(name)) if name == "a"
    ));
}

// ---------------------------------------------------------------------------------------------
// schema_of

/// How loud a test message is.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Loudness {
    Quiet,
    Loud,
}

/// Arguments of a test tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct SchemaArgs {
    /// Channel to post to.
    channel: String,
    /// Heading shown above the body.
    title: Option<String>,
    /// Volume of the post.
    loudness: Option<Loudness>,
    /// Seconds to keep it.
    ttl_seconds: u32,
}

#[test]
fn schema_of_is_a_plain_object_schema() {
    let schema = schema_of::<SchemaArgs>();
    let text = serde_json::to_string(&schema).unwrap();
    assert_eq!(schema["type"], "object", "{text}");
    for noise in ["$schema", "title", "format", "$defs", "$ref"] {
        assert!(schema.get(noise).is_none(), "{noise} in {text}");
    }
    assert!(!text.contains("\"format\""), "{text}");
    assert!(!text.contains("\"$ref\""), "{text}");
    assert!(!text.contains("\"additionalProperties\":false"), "{text}");
    assert!(!text.contains("null"), "optional fields stay plain: {text}");

    let props = schema["properties"].as_object().unwrap();
    let keys: BTreeSet<&str> = props.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from(["channel", "title", "loudness", "ttl_seconds"])
    );
    assert_eq!(
        props["channel"],
        json!({"type": "string", "description": "Channel to post to."})
    );
    // A property named `title` is a field, not schema noise.
    assert_eq!(
        props["title"],
        json!({"type": "string", "description": "Heading shown above the body."})
    );
    assert_eq!(props["ttl_seconds"]["type"], "integer");
    assert_eq!(props["ttl_seconds"]["description"], "Seconds to keep it.");
    assert_eq!(props["loudness"]["description"], "Volume of the post.");
    assert_eq!(
        props["loudness"]["enum"],
        json!(["quiet", "loud"]),
        "{text}"
    );

    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["channel", "ttl_seconds"]);
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[test]
fn schema_of_an_empty_struct_is_an_object() {
    let schema = schema_of::<NoArgs>();
    assert_eq!(schema["type"], "object");
    assert!(schema.get("additionalProperties").is_none());
    assert!(schema.get("title").is_none());
}

// ---------------------------------------------------------------------------------------------
// parse_args

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    channel: String,
    limit: Option<u32>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionalArgs {
    limit: Option<u32>,
}

fn invalid<T: std::fmt::Debug>(result: Result<T, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArguments(message)) => message,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

#[test]
fn parse_args_accepts_valid_objects() {
    assert_eq!(
        parse_args::<Args>(json!({"channel": "ops", "limit": 3})).unwrap(),
        Args {
            channel: "ops".into(),
            limit: Some(3)
        }
    );
    assert_eq!(
        parse_args::<OptionalArgs>(Value::Null).unwrap(),
        OptionalArgs { limit: None }
    );
    assert_eq!(
        parse_args::<OptionalArgs>(json!({})).unwrap(),
        OptionalArgs { limit: None }
    );
}

#[test]
fn parse_args_takes_a_whole_number_written_as_a_float_as_what_the_schema_admits() {
    // JSON Schema's `integer` admits 5.0 and 3e0; the tools' schemas say `integer`.
    for limit in [json!(3.0), json!(3e0), json!(3)] {
        assert_eq!(
            parse_args::<Args>(json!({"channel": "ops", "limit": limit})).unwrap(),
            Args {
                channel: "ops".into(),
                limit: Some(3)
            },
            "{limit}"
        );
    }
    for (limit, says) in [
        (
            json!(3.5),
            "limit: invalid type: floating point `3.5`, expected u32",
        ),
        (
            json!(-1.0),
            "limit: invalid value: integer `-1`, expected u32",
        ),
        (json!(1e300), "limit: invalid type: floating point"),
    ] {
        let message = invalid(parse_args::<Args>(
            json!({"channel": "ops", "limit": limit}),
        ));
        assert!(message.starts_with(says), "{message}");
    }
}

#[test]
fn parse_args_errors_name_the_field_and_the_problem() {
    let cases = [
        (json!({}), "missing field `channel`"),
        (Value::Null, "missing field `channel`"),
        (
            json!({"channel": "ops", "extra": 1}),
            "unknown field `extra`, expected `channel` or `limit`",
        ),
        (
            json!({"channel": 5}),
            "channel: invalid type: integer `5`, expected a string",
        ),
        (
            json!({"channel": "ops", "limit": "3"}),
            "limit: invalid type: string \"3\", expected u32",
        ),
        (
            json!({"channel": "ops", "limit": -1}),
            "limit: invalid value: integer `-1`, expected u32",
        ),
        (
            json!({"channel": ["a", "b"], "limit": 1}),
            "channel: invalid type: sequence, expected a string",
        ),
        (json!([]), "arguments must be a JSON object, got an array"),
        (json!("x"), "arguments must be a JSON object, got a string"),
        (json!(7), "arguments must be a JSON object, got a number"),
        (
            json!(true),
            "arguments must be a JSON object, got a boolean",
        ),
    ];
    for (args, expected) in cases {
        let message = invalid(parse_args::<Args>(args.clone()));
        assert!(
            message.starts_with(expected),
            "{args}: got {message:?}, want {expected:?}"
        );
    }
}

#[test]
fn parse_args_names_the_field_after_nested_values() {
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Nested {
        tags: Vec<String>,
        count: u8,
    }
    let message = invalid(parse_args::<Nested>(json!({"tags": ["a", 3], "count": 1})));
    assert!(
        message.starts_with("tags: invalid type: integer `3`"),
        "{message}"
    );
    let message = invalid(parse_args::<Nested>(json!({"tags": ["a"], "count": 300})));
    assert!(message.starts_with("count: invalid value"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// CallContext

#[test]
fn session_id_prefers_a_non_blank_explicit_id() {
    let ext = Extensions::new();
    let policies = [
        SessionPolicy::Fallback(Some("env".into())),
        SessionPolicy::Fallback(None),
        SessionPolicy::ExplicitOnly,
    ];
    for policy in &policies {
        let ctx = CallContext::new(0, policy, &ext);
        assert_eq!(ctx.session_id(Some(" s9 ")).unwrap(), "s9", "{policy:?}");
    }
    let fallback = SessionPolicy::Fallback(Some("env".into()));
    let ctx = CallContext::new(0, &fallback, &ext);
    for blank in [None, Some(""), Some("   ")] {
        assert_eq!(ctx.session_id(blank).unwrap(), "env", "{blank:?}");
    }
}

#[test]
fn session_id_without_any_id_is_an_error_naming_the_field() {
    let ext = Extensions::new();
    for policy in [SessionPolicy::Fallback(None), SessionPolicy::ExplicitOnly] {
        let ctx = CallContext::new(0, &policy, &ext);
        for blank in [None, Some(""), Some(" ")] {
            let message = invalid(ctx.session_id(blank));
            assert!(message.starts_with("session_id: required"), "{message}");
        }
    }
}

#[test]
fn an_explicit_session_id_no_session_can_have_is_refused_naming_the_rule() {
    let ext = Extensions::new();
    let policy = SessionPolicy::Fallback(Some("env".into()));
    let ctx = CallContext::new(0, &policy, &ext);
    let long = "s".repeat(crate::SESSION_ID_MAX_BYTES + 1);
    for (id, rule) in [
        ("x\u{0}y", "control characters"),
        ("a\u{1b}b", "control characters"),
        (long.as_str(), "at most 256"),
    ] {
        let message = invalid(ctx.session_id(Some(id)));
        assert!(message.starts_with("session_id: "), "{message}");
        assert!(message.contains(rule), "{message}");
    }
    let longest = "s".repeat(crate::SESSION_ID_MAX_BYTES);
    assert_eq!(ctx.session_id(Some(&longest)).unwrap(), longest);
}

#[test]
fn services_and_time_come_from_the_context() {
    #[derive(Debug, PartialEq)]
    struct Settings(u8);
    let mut ext = Extensions::new();
    let policy = SessionPolicy::ExplicitOnly;
    {
        let ctx = CallContext::new(1_234, &policy, &ext);
        assert_eq!(ctx.now_ms(), 1_234);
        let err = ctx.service::<Settings>().unwrap_err();
        assert!(
            matches!(&err, ToolError::Internal(m) if m.contains("Settings")),
            "{err:?}"
        );
    }
    ext.insert(Settings(1));
    ext.insert(Settings(2));
    let ctx = CallContext::new(0, &policy, &ext);
    assert_eq!(ctx.service::<Settings>().unwrap(), &Settings(2));
}

// ---------------------------------------------------------------------------------------------
// Listing: the front end's form must serve exactly what the full server does

#[test]
fn listing_serves_the_same_bytes_as_the_catalogue_in_every_mode_and_filter() {
    let mut catalogue = sample();
    // A description that needs escaping, so raw text and re-serialized text must agree.
    let mut odd = spec("channel_read", Category::Channels);
    odd.description = "Reads \"quoted\" text\nand ünïcode.".into();
    odd.output_schema = Some(json!({"type": "object", "properties": {"b": {}, "a": {}}}));
    let mut tools = catalogue.tools().to_vec();
    tools.push(odd);
    catalogue = Catalogue::new(tools).unwrap();

    let modes = [
        crate::StartMode::Eager,
        crate::StartMode::Lazy,
        crate::StartMode::Modules([Category::Channels].into_iter().collect()),
        crate::StartMode::Modules([Category::Scheduler, Category::Conditions].into()),
    ];
    let filters = [
        (None, None),
        (Some("channels,scheduler"), None),
        (None, Some("CHANNEL_READ,schedule_list,nope")),
        (Some("enforcement"), Some("channel_list")),
        (Some("nope"), None),
    ];
    let dump = catalogue.listing_json();
    for (categories, allowed) in filters {
        let (filter, _) = Filter::parse(categories, allowed);
        let (visible, expected_warnings) = catalogue.filtered(&filter);
        let listing = crate::Listing::from_json(&dump).unwrap();
        assert_eq!(listing.len(), catalogue.len());
        let (listed, warnings) = listing.filtered(&filter);
        assert_eq!(warnings, expected_warnings, "{categories:?} {allowed:?}");
        assert_eq!(listed.len(), visible.len());
        for mode in &modes {
            let expected = json!({ "tools": crate::advertised_tools(&visible, mode) });
            assert_eq!(
                listed.tools_list_json(mode),
                serde_json::to_string(&expected).unwrap(),
                "{categories:?} {allowed:?} {mode}"
            );
            assert_eq!(
                listed.instructions(mode),
                crate::instructions(&visible, mode),
                "{categories:?} {allowed:?} {mode}"
            );
        }
    }
}

#[test]
fn bad_listings_are_errors() {
    let tool = r#"{"name":"a","category":"channels","tool":{"name":"a"}}"#;
    for text in [
        "",
        "[]",
        r#"{"tools":[]}"#,
        r#"{"tools":[{"name":"a","category":"nope","tool":{}}],"discovery":[]}"#,
        r#"{"tools":[{"name":"a","category":"channels"}],"discovery":[]}"#,
        r#"{"tools":[{"name":"a","category":"channels","tool":{"#,
    ] {
        let err = crate::Listing::from_json(text).unwrap_err();
        assert!(
            matches!(err, CatalogueError::Malformed(_)),
            "{text}: {err:?}"
        );
    }
    let twice = format!(r#"{{"tools":[{tool},{tool}],"discovery":[]}}"#);
    assert!(matches!(
        crate::Listing::from_json(&twice),
        Err(CatalogueError::DuplicateTool(name)) if name == "a"
    ));
    let once = format!(r#"{{"tools":[{tool}],"discovery":[]}}"#);
    assert_eq!(crate::Listing::from_json(&once).unwrap().len(), 1);
}

#[test]
fn start_mode_from_the_environment_refuses_what_it_would_ignore() {
    let none: &[String] = &[];
    let parse = |mode: Option<&str>, modules: Option<&str>| {
        StartMode::parse(none, mode, modules).map(|(m, _)| m)
    };
    assert_eq!(parse(None, None), Ok(StartMode::Eager));
    assert_eq!(parse(Some("lazy"), None), Ok(StartMode::Lazy));
    assert_eq!(
        parse(None, Some("channels")),
        Ok(StartMode::Modules(BTreeSet::from([Category::Channels])))
    );
    // A mode that loads no start modules beside a list of them: refused, naming both.
    for mode in ["eager", "lazy"] {
        let error = parse(Some(mode), Some("channels")).unwrap_err();
        assert!(matches!(error, ModeError::ModulesIgnored { .. }), "{error}");
        let text = error.to_string();
        assert!(text.contains(&format!("HOOKS_MCP_MODE={mode}")), "{text}");
        assert!(text.contains("HOOKS_MCP_MODULES=channels"), "{text}");
    }
    // `modules` without its list names the variable, not the flag.
    for modules in [None, Some(" , ")] {
        let error = parse(Some("modules"), modules).unwrap_err();
        assert_eq!(error, ModeError::MissingModulesEnv);
        assert!(error.to_string().contains("HOOKS_MCP_MODULES="), "{error}");
    }
    // The flag's own message stays the flag's.
    let flag = ["--modules".to_owned()];
    let error = StartMode::parse(&flag, None, None).unwrap_err();
    assert!(error.to_string().starts_with("--modules"), "{error}");
    // A flag wins over the variables, whatever they say.
    let flag = ["--lazy".to_owned()];
    let parsed = StartMode::parse(&flag, Some("eager"), Some("channels"));
    assert_eq!(parsed.map(|(m, _)| m), Ok(StartMode::Lazy));
}

#[test]
fn a_start_module_the_categories_exclude_is_warned_of() {
    let (filter, _) = Filter::parse(Some("channels"), None);
    let modules = StartMode::Modules(BTreeSet::from([Category::Channels, Category::Scheduler]));
    let warnings = modules.excluded_by(&filter);
    assert_eq!(
        warnings,
        [FilterWarning::StartModuleExcluded {
            category: Category::Scheduler
        }]
    );
    let text = warnings[0].to_string();
    assert!(
        text.starts_with("HOOKS_MCP_MODULES: start module `scheduler`"),
        "{text}"
    );
    assert!(StartMode::Lazy.excluded_by(&filter).is_empty());
    let all = Filter::default();
    assert!(modules.excluded_by(&all).is_empty());
}
