//! The full server's side of resources, prompts and completion: finding the registration a
//! request names, and their errors as JSON-RPC errors (the results themselves are
//! [`catalogue::answers`]).

use catalogue::{PromptRegistration, ResourceRegistration, ToolError, UriVariables};
use rmcp::model::ErrorData;

pub(crate) use catalogue::answers::{
    CompletionTarget, complete, features, get_prompt, list_prompts, list_resources, list_templates,
    read_resource,
};

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
/// Resource not found (`-32002`, `-32602` for 2026-07-28 peers) naming the URIs this server
/// serves, when none matches.
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
    // Resource not found: -32002 for the 2025 revisions; rmcp gives 2026-07-28 peers -32602.
    Err(ErrorData::resource_not_found(
        format!(
            "no resource has the URI `{uri}`; valid URIs look like: {}",
            valid.join(", ")
        ),
        None,
    ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use protocol_lite::handshake::Features;

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
        assert_eq!(error.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND);
        assert!(
            error.message.contains("hooks://channels/{channel}"),
            "{}",
            error.message
        );
        assert!(resource_for("hooks://channels/deploys").is_ok());
    }
}
