//! Resources, prompts and argument completion: the registrations linked into the program
//! ([`catalogue::resources`], [`catalogue::prompts`]) as MCP results.

use catalogue::{CallContext, PromptRegistration, ResourceRegistration, ToolError, UriVariables};
use protocol_lite::handshake::Features;
use rmcp::model::ErrorData;
use serde_json::{Map, Value, json};

/// At most this many completion values go in one answer (the specification's limit).
pub(crate) const MAX_COMPLETIONS: usize = 100;

/// What this program offers besides tools, from its registrations.
pub(crate) fn features() -> Features {
    let resources = catalogue::resources();
    let prompts = catalogue::prompts();
    Features {
        resources: !resources.is_empty(),
        prompts: !prompts.is_empty(),
        completions: resources.iter().any(|r| r.complete.is_some())
            || prompts.iter().any(|p| p.complete.is_some()),
    }
}

/// A tool error as the JSON-RPC error of a resource, prompt or completion request.
pub(crate) fn protocol_error(error: ToolError) -> ErrorData {
    match error {
        ToolError::InvalidArguments(m) => ErrorData::invalid_params(m, None),
        ToolError::NotFound(m) => ErrorData::resource_not_found(m, None),
        ToolError::Refused(m) => ErrorData::invalid_request(m, None),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

/// The registration serving `uri`, with its variables.
///
/// # Errors
/// -32602 naming the URIs this server serves when none matches.
pub(crate) fn resource_for(
    uri: &str,
) -> Result<(&'static ResourceRegistration, UriVariables), ErrorData> {
    let all = catalogue::resources();
    for registration in &all {
        if let Some(vars) = registration.matches(uri) {
            return Ok((registration, vars));
        }
    }
    let valid: Vec<&str> = all.iter().map(|r| r.uri).collect();
    Err(ErrorData::invalid_params(
        format!(
            "no resource has the URI `{uri}`; valid URIs look like: {}",
            valid.join(", ")
        ),
        None,
    ))
}

/// The `resources/list` entries: fixed resources and what each template lists now.
pub(crate) fn list_resources(ctx: &CallContext<'_>) -> Result<Value, ToolError> {
    let mut listed = Vec::new();
    for r in catalogue::resources() {
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
pub(crate) fn list_templates() -> Value {
    let templates: Vec<Value> = catalogue::resources()
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
pub(crate) fn read_resource(
    ctx: &CallContext<'_>,
    registration: &ResourceRegistration,
    uri: &str,
    vars: &UriVariables,
) -> Result<Value, ToolError> {
    let contents: Vec<Value> = (registration.read)(ctx, uri, vars)?
        .iter()
        .map(catalogue::ResourceContents::to_mcp)
        .collect();
    Ok(json!({ "contents": contents }))
}

/// The `prompts/list` result.
pub(crate) fn list_prompts() -> Value {
    let prompts: Vec<Value> = catalogue::prompts()
        .into_iter()
        .map(PromptRegistration::to_mcp)
        .collect();
    json!({ "prompts": prompts })
}

/// The prompt named `name`.
pub(crate) fn prompt(name: &str) -> Result<&'static PromptRegistration, ErrorData> {
    catalogue::prompts()
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!("no prompt is named `{name}`; prompts/list shows the prompts"),
                None,
            )
        })
}

/// The `prompts/get` result.
pub(crate) fn get_prompt(
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
        .map(catalogue::PromptMessage::to_mcp)
        .collect();
    Ok(json!({ "description": prompt.description, "messages": messages }))
}

/// What a `completion/complete` request refers to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CompletionTarget {
    /// A prompt's argument.
    Prompt(&'static PromptRegistration),
    /// A resource template's variable.
    Resource(&'static ResourceRegistration),
}

/// The `completion/complete` result: at most [`MAX_COMPLETIONS`] values.
pub(crate) fn complete(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_light_path_lists_the_same_templates_and_capabilities() {
        crate::link_tools();
        assert_eq!(list_templates(), protocol_lite::light::resource_templates());
        assert_eq!(features(), Features::HOOKS_MCP);
    }

    #[test]
    fn unknown_uris_say_what_a_valid_one_looks_like() {
        crate::link_tools();
        let error = resource_for("hooks://channels/").unwrap_err();
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(
            error.message.contains("hooks://channels/{channel}"),
            "{}",
            error.message
        );
        assert!(resource_for("hooks://channels/deploys").is_ok());
    }
}
