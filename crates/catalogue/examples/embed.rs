//! Embedding the catalogue in another Rust tool: register a tool, list it as MCP `tools/list`
//! does, and call it.
//!
//! Run with `cargo run -p catalogue --example embed`. Set `MCP_CATEGORIES` or `ALLOWED_TOOLS`
//! to see the filter at work (for example `MCP_CATEGORIES=scheduler` hides the tool).
// An example talks to a terminal, not to an MCP client: printing is its output.
#![allow(clippy::print_stdout, clippy::disallowed_macros)]

use catalogue::{
    Annotations, CallContext, Catalogue, Category, Extensions, Filter, SessionPolicy, ToolError,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The embedding program's own service, handed to handlers through [`Extensions`].
#[derive(Debug)]
struct Greeting(&'static str);

// Arguments of `channel_greet` (a plain comment: a doc comment would become a schema
// description that every listing session pays for).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GreetArgs {
    /// Who to greet.
    name: String,
    /// Acting session; defaults to the server's own.
    session_id: Option<String>,
}

fn greet(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let args: GreetArgs = catalogue::parse_args(args)?;
    if args.name.trim().is_empty() {
        return Err(ToolError::InvalidArguments(
            "name: must not be blank; pass who to greet".into(),
        ));
    }
    let session = ctx.session_id(args.session_id.as_deref())?;
    let greeting = ctx.service::<Greeting>()?;
    Ok(json!({
        "text": format!("{}, {}!", greeting.0, args.name),
        "session": session,
        "at_ms": ctx.now_ms(),
    }))
}

catalogue::submit! {
    catalogue::ToolRegistration {
        name: "channel_greet",
        category: Category::Channels,
        title: "Greet someone",
        description: "Return a greeting for a name.",
        input_schema: catalogue::schema_of::<GreetArgs>,
        output_schema: None,
        annotations: Annotations::READ_ONLY,
        handler: greet,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every tool linked into this program: here just `channel_greet`. A real embedding also
    // names the tools crates it wants (`use tools_channels as _;`) so their tools link in.
    let catalogue = Catalogue::from_registry()?;

    // The same settings the servers read; warnings are for the operator.
    let categories = std::env::var(catalogue::CATEGORIES_ENV).ok();
    let allowed = std::env::var(catalogue::ALLOWED_TOOLS_ENV).ok();
    let (filter, mut warnings) = Filter::parse(categories.as_deref(), allowed.as_deref());
    let (visible, more) = catalogue.filtered(&filter);
    warnings.extend(more);
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }

    println!("tools/list result:");
    println!(
        "{}",
        serde_json::to_string_pretty(&visible.tools_list_result())?
    );

    // A call: the program provides its services and the session policy, the catalogue finds
    // the handler by name. Only listed tools should be callable.
    let mut services = Extensions::new();
    services.insert(Greeting("Hello"));
    let policy = SessionPolicy::Fallback(Some("session-1".into()));
    let ctx = CallContext::new(1_700_000_000_000, &policy, &services);
    for args in [json!({"name": "Ada"}), json!({"name": 7})] {
        let result = if visible.get("channel_greet").is_some() {
            catalogue::call("channel_greet", &ctx, args.clone())
        } else {
            Err(ToolError::NotFound(
                "`channel_greet` is not exposed by the current filter".into(),
            ))
        };
        match result {
            Ok(value) => println!("call {args} -> {value}"),
            Err(err) => println!("call {args} -> error: {err}"),
        }
    }
    Ok(())
}
