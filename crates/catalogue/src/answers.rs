//! Resources, prompts and argument completion as MCP results: the registrations linked into
//! the program ([`crate::resources`], [`crate::prompts`]) answering `resources/list`,
//! `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get` and
//! `completion/complete`. Plain JSON, so any server (the full rmcp server, a short-lived child
//! listing the resources for the light front end) answers with the same bytes.

use protocol_lite::handshake::Features;
use serde_json::{Map, Value, json};

use crate::{CallContext, PromptRegistration, ResourceRegistration, ToolError, UriVariables};

/// At most this many completion values go in one answer (the specification's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// What this program offers besides tools, from its registrations.
pub fn features() -> Features {
    let resources = crate::resources();
    let prompts = crate::prompts();
    Features {
        resources: !resources.is_empty(),
        prompts: !prompts.is_empty(),
        completions: resources.iter().any(|r| r.complete.is_some())
            || prompts.iter().any(|p| p.complete.is_some()),
    }
}

/// The `resources/list` entries: fixed resources and what each template lists now.
pub fn list_resources(ctx: &CallContext<'_>) -> Result<Value, ToolError> {
    let mut listed = Vec::new();
    for r in crate::resources() {
        if !r.is_template() {
            listed.push(json!({
                "uri": r.uri, "name": r.name, "title": r.title,
                "description": r.description, "mimeType": r.mime_type,
            }));
        } else if let Some(list) = r.list {
            for entry in list(ctx)? {
                let mut item = json!({
                    "uri": entry.uri, "name": entry.name, "mimeType": r.mime_type,
                });
                if let Some(description) = entry.description {
                    item["description"] = Value::String(description);
                }
                listed.push(item);
            }
        }
    }
    Ok(json!({ "resources": listed }))
}

/// The `resources/templates/list` result.
pub fn list_templates() -> Value {
    let templates: Vec<Value> = crate::resources()
        .into_iter()
        .filter(|r| r.is_template())
        .map(|r| {
            json!({
                "uriTemplate": r.uri, "name": r.name, "title": r.title,
                "description": r.description, "mimeType": r.mime_type,
            })
        })
        .collect();
    json!({ "resourceTemplates": templates })
}

/// The `resources/read` result for `uri`.
pub fn read_resource(
    ctx: &CallContext<'_>,
    registration: &ResourceRegistration,
    uri: &str,
    vars: &UriVariables,
) -> Result<Value, ToolError> {
    let contents: Vec<Value> = (registration.read)(ctx, uri, vars)?
        .iter()
        .map(crate::ResourceContents::to_mcp)
        .collect();
    Ok(json!({ "contents": contents }))
}

/// The `prompts/list` result.
pub fn list_prompts() -> Value {
    let prompts: Vec<Value> = crate::prompts()
        .into_iter()
        .map(PromptRegistration::to_mcp)
        .collect();
    json!({ "prompts": prompts })
}

/// The `prompts/get` result.
pub fn get_prompt(
    ctx: &CallContext<'_>,
    prompt: &PromptRegistration,
    args: &Map<String, Value>,
) -> Result<Value, ToolError> {
    for argument in prompt.arguments.iter().filter(|a| a.required) {
        if !args.contains_key(argument.name) {
            return Err(ToolError::InvalidArguments(format!(
                "{}: required ({})",
                argument.name, argument.description
            )));
        }
    }
    let messages: Vec<Value> = (prompt.get)(ctx, args)?
        .iter()
        .map(crate::PromptMessage::to_mcp)
        .collect();
    Ok(json!({ "description": prompt.description, "messages": messages }))
}

/// What a `completion/complete` request refers to.
#[derive(Debug, Clone, Copy)]
pub enum CompletionTarget {
    /// A prompt's argument.
    Prompt(&'static PromptRegistration),
    /// A resource template's variable.
    Resource(&'static ResourceRegistration),
}

/// The `completion/complete` result: at most [`MAX_COMPLETIONS`] values.
pub fn complete(
    ctx: &CallContext<'_>,
    target: CompletionTarget,
    argument: &str,
    prefix: &str,
) -> Result<Value, ToolError> {
    let complete = match target {
        CompletionTarget::Prompt(p) => p.complete,
        CompletionTarget::Resource(r) => r.complete,
    };
    let mut values = match complete {
        Some(complete) => complete(ctx, argument, prefix)?,
        None => Vec::new(),
    };
    let total = values.len();
    values.truncate(MAX_COMPLETIONS);
    Ok(json!({
        "completion": { "values": values, "total": total, "hasMore": total > MAX_COMPLETIONS }
    }))
}
