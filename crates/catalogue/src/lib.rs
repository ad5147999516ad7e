//! The hooks-mcp tool catalogue: what tools exist, which of them a session may see, and the exact
//! JSON an MCP `tools/list` result carries for them.
//!
//! # What this crate owns
//!
//! - [`ToolRegistration`]: the static record a tools crate submits with [`inventory::submit!`]
//!   (re-exported as [`submit!`]). Linking a tools crate is what makes its tools exist.
//! - [`ToolSpec`] and [`Catalogue`]: plain, serializable tool descriptions, built either from the
//!   linked registrations ([`Catalogue::from_registry`]) or from JSON that another process dumped
//!   ([`Catalogue::from_json`]).
//! - [`Listing`]: the same tools as MCP JSON text ([`Catalogue::listing_json`]), which the stdio
//!   front end filters and serves without building a JSON tree.
//! - [`Filter`]: the `MCP_CATEGORIES` and `ALLOWED_TOOLS` rules, parsed here so every entry point
//!   (the stdio front end, the full server, the daemon, `cargo xtask catalogue`) applies the same
//!   ones. Problems come back as [`FilterWarning`] values for the caller to print.
//! - [`StartMode`]: eager, lazy or modules; the discovery tools ([`discovery_tools`]), the
//!   list a session advertises at start ([`advertised_tools`]) and the lazy-mode
//!   [`instructions`]; [`search`]: how well a tool matches a `find_tools` query.
//! - [`Setting`]: how each crate documents the settings it parses, for the generated
//!   configuration reference.
//! - [`CallContext`], [`ToolError`] and [`parse_args`]: what a tool handler receives and returns;
//!   through the context a handler may reach the session's client ([`ClientLink`]: progress, log
//!   messages, requests such as sampling) and answer with rich [`Content`].
//! - [`ResourceRegistration`] and [`PromptRegistration`]: resources (fixed or templated URIs) and
//!   prompts, submitted with [`submit!`] like tools and served by the full server.
//!
//! # What it must not depend on
//!
//! No async runtime, no MCP SDK, no store: the catalogue stays cheap to embed in other Rust tools
//! and in the lightweight stdio front end.
//!
//! # Embedding
//!
//! Another Rust tool can carry the same tools: link the tools crates it wants (or register its
//! own with [`submit!`]), build [`Catalogue::from_registry`], narrow it with [`Filter::parse`],
//! serve [`Catalogue::tools_list_result`] and run calls with [`call`] and a [`CallContext`]
//! holding its services in [`Extensions`]:
//!
//! ```
//! use catalogue::{
//!     Annotations, CallContext, Catalogue, Category, Extensions, Filter, SessionPolicy,
//!     ToolError,
//! };
//! use serde_json::{Value, json};
//!
//! // The embedding program's own service, which handlers reach through the call's context.
//! struct Greeting(&'static str);
//!
//! // The tool's arguments: their JSON Schema is the tool's `inputSchema`.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct GreetArgs {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! fn greet(ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
//!     let args: GreetArgs = catalogue::parse_args(args)?;
//!     let greeting = ctx.service::<Greeting>()?;
//!     Ok(json!({ "text": format!("{}, {}!", greeting.0, args.name) }))
//! }
//!
//! // Linking this code is what makes the tool exist.
//! catalogue::submit! {
//!     catalogue::ToolRegistration {
//!         name: "channel_greet",
//!         category: Category::Channels,
//!         title: "Greet someone",
//!         description: "Return a greeting for a name.",
//!         input_schema: catalogue::schema_of::<GreetArgs>,
//!         output_schema: None,
//!         annotations: Annotations::READ_ONLY,
//!         handler: greet,
//!     }
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Every tool linked into this program, narrowed as `MCP_CATEGORIES=channels` would.
//!     let catalogue = Catalogue::from_registry()?;
//!     let (filter, warnings) = Filter::parse(Some("channels"), None);
//!     assert!(warnings.is_empty());
//!     let (visible, _) = catalogue.filtered(&filter);
//!     let list = visible.tools_list_result();
//!     assert_eq!(list["tools"][0]["name"], "channel_greet");
//!     assert_eq!(list["tools"][0]["inputSchema"]["required"], json!(["name"]));
//!
//!     // A call: the program supplies its services and whose session acts.
//!     let mut services = Extensions::new();
//!     services.insert(Greeting("Hello"));
//!     let policy = SessionPolicy::Fallback(Some("session-1".into()));
//!     let ctx = CallContext::new(1_700_000_000_000, &policy, &services);
//!     let answer = catalogue::call("channel_greet", &ctx, json!({ "name": "Ada" }))?;
//!     assert_eq!(answer["text"], "Hello, Ada!");
//!
//!     // Bad arguments are the tool's error, for an `isError: true` result.
//!     let refused = catalogue::call("channel_greet", &ctx, json!({ "name": 7 }));
//!     assert!(matches!(refused, Err(ToolError::InvalidArguments(_))));
//!     Ok(())
//! }
//! ```
//!
//! `examples/embed.rs` does the same as a program, with the filter read from the environment
//! (`cargo run -p catalogue --example embed`).
//!
//! # Reading a dump
//!
//! A process that cannot link the tools (the stdio front end) reads the catalogue another
//! process printed:
//!
//! ```
//! use catalogue::{Catalogue, Filter};
//!
//! // A dump as a child process prints it (`Catalogue::to_json`).
//! let dump = r#"{"tools":[
//!   {"name":"channel_list","category":"channels","title":"List channels",
//!    "description":"List channels.","inputSchema":{"type":"object"},
//!    "annotations":{"readOnly":true}}
//! ]}"#;
//! let catalogue = Catalogue::from_json(dump).unwrap();
//! let (filter, warnings) = Filter::parse(Some("channels,nope"), Some("CHANNEL_LIST"));
//! assert_eq!(warnings.len(), 1); // `nope` is not a category
//! let (visible, warnings) = catalogue.filtered(&filter);
//! assert!(warnings.is_empty());
//! assert_eq!(visible.tools()[0].name, "channel_list");
//! let list = visible.tools_list_result();
//! assert_eq!(list["tools"][0]["annotations"]["readOnlyHint"], true);
//! ```

pub mod answers;
mod content;
mod context;
mod filter;
mod listing;
mod mode;
mod registration;
mod schema;
pub mod search;
mod spec;

#[cfg(test)]
mod tests;

pub use content::{
    CompleteFn, Content, GetPromptFn, ListFn, PromptArgument, PromptMessage, PromptRegistration,
    ReadFn, ResourceBody, ResourceContents, ResourceEntry, ResourceRegistration, Role,
    UriVariables, match_template, prompts, resources,
};
pub use context::{
    CallContext, ClientLink, Extensions, LogLevel, SESSION_ID_MAX_BYTES, SessionPolicy, ToolError,
    check_session_id, json_kind, parse_args,
};
pub use filter::{ALLOWED_TOOLS_ENV, CATEGORIES_ENV, FILTER_SETTINGS, Filter, FilterWarning};
pub use listing::Listing;
pub use mode::{
    BYTES_PER_TOKEN, CALL_TOOL, CallToolArgs, FIND_TOOLS, FindToolsArgs, LOAD_MODULES,
    LoadModulesArgs, MODE_ENV, MODE_SETTINGS, MODULES_ENV, ModeError, RESOURCES_LINE,
    SESSIONLESS_LEAD, StartMode, advertised_tools, discovery_tools, estimate_tokens, instructions,
    instructions_for, sessionless_discovery_tools,
};
pub use protocol_lite::setting::Setting;
pub use registration::{Handler, ToolRegistration, call, find, registrations};
pub use schema::schema_of;
pub use spec::{Annotations, Catalogue, CatalogueError, Category, ToolSpec, UnknownCategory};

/// Re-export of [`inventory::submit!`], so tools crates need no direct `inventory` dependency.
pub use inventory::submit;
