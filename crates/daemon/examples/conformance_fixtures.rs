//! A server for the MCP conformance suite, built the way an embedder builds one: the
//! `catalogue` and `server-full` crates, with the suite's fixture tools, resources and prompts
//! registered through the same `catalogue::submit!` API that hooks-mcp's own tools use, served
//! by the daemon (`MCP_TRANSPORT=streamable-http`, `MCP_HOST`, `MCP_PORT`, `HOOKS_MCP_HOME`).
//!
//! `cargo xtask conformance --fixtures` builds and runs it; it is never part of hooks-mcp.

use catalogue::{
    Annotations, CallContext, Category, Content, LogLevel, PromptArgument, PromptMessage,
    PromptRegistration, ResourceBody, ResourceContents, ResourceRegistration, Role, ToolError,
    ToolRegistration, UriVariables, parse_args,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
/// A WAV file with one silent sample.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==";

fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

fn text_arg(name: &'static str) -> Value {
    json!({ "type": "object", "properties": { name: { "type": "string" } }, "required": [name] })
}

macro_rules! fixture_tool {
    ($name:literal, $description:literal, $schema:expr, $annotations:expr, $handler:expr) => {
        catalogue::submit! {
            ToolRegistration {
                name: $name,
                // The category set is closed; the fixtures ride along with the channels.
                category: Category::Channels,
                title: $name,
                description: $description,
                input_schema: $schema,
                output_schema: None,
                annotations: $annotations,
                handler: $handler,
            }
        }
    };
}

fn image() -> Content {
    Content::Image {
        data: PNG.into(),
        mime_type: "image/png".into(),
    }
}

fn embedded() -> Content {
    Content::Resource(ResourceContents::text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

fixture_tool!(
    "test_simple_text",
    "Returns a fixed text.",
    no_args,
    Annotations::READ_ONLY,
    |ctx, _| {
        ctx.reply_with(vec![Content::Text(
            "This is a simple text response for testing.".into(),
        )]);
        Ok(Value::Null)
    }
);
fixture_tool!(
    "test_image_content",
    "Returns an image.",
    no_args,
    Annotations::READ_ONLY,
    |ctx, _| {
        ctx.reply_with(vec![image()]);
        Ok(Value::Null)
    }
);
fixture_tool!(
    "test_audio_content",
    "Returns audio.",
    no_args,
    Annotations::READ_ONLY,
    |ctx, _| {
        ctx.reply_with(vec![Content::Audio {
            data: WAV.into(),
            mime_type: "audio/wav".into(),
        }]);
        Ok(Value::Null)
    }
);
fixture_tool!(
    "test_embedded_resource",
    "Returns an embedded resource.",
    no_args,
    Annotations::READ_ONLY,
    |ctx, _| {
        ctx.reply_with(vec![embedded()]);
        Ok(Value::Null)
    }
);
fixture_tool!(
    "test_multiple_content_types",
    "Returns text, an image and a resource.",
    no_args,
    Annotations::READ_ONLY,
    |ctx, _| {
        ctx.reply_with(vec![
            Content::Text("Multiple content types test:".into()),
            image(),
            embedded(),
        ]);
        Ok(Value::Null)
    }
);
fixture_tool!(
    "test_error_handling",
    "Always fails.",
    no_args,
    Annotations::READ_ONLY,
    |_, _| Err(ToolError::Refused(
        "This tool intentionally returns an error for testing".into()
    ))
);

fixture_tool!(
    "test_tool_with_logging",
    "Logs three messages while it runs.",
    no_args,
    Annotations::ADDITIVE,
    |ctx, _| {
        let client = ctx.client()?;
        for (i, text) in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        .into_iter()
        .enumerate()
        {
            client.log(LogLevel::Info, json!(text))?;
            if i < 2 {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        ctx.reply_with(vec![Content::Text(
            "Tool with logging executed successfully".into(),
        )]);
        Ok(Value::Null)
    }
);

fixture_tool!(
    "test_tool_with_progress",
    "Reports progress 0, 50, 100 of 100.",
    no_args,
    Annotations::ADDITIVE,
    |ctx, _| {
        let client = ctx.client()?;
        for step in [0.0, 50.0, 100.0] {
            client.progress(
                step,
                Some(100.0),
                Some(&format!("Completed step {step} of 100")),
            )?;
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        ctx.reply_with(vec![Content::Text(
            "Tool with progress executed successfully".into(),
        )]);
        Ok(Value::Null)
    }
);

#[derive(Deserialize)]
struct PromptArgs {
    prompt: String,
}

fixture_tool!(
    "test_sampling",
    "Asks the client's model to answer a prompt.",
    || text_arg("prompt"),
    Annotations::ADDITIVE,
    |ctx, args| {
        let args: PromptArgs = parse_args(args)?;
        let answer = ctx.client()?.request("sampling/createMessage", json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": args.prompt } }],
            "maxTokens": 100,
        }))?;
        let text = answer["content"]["text"].as_str().unwrap_or("").to_owned();
        ctx.reply_with(vec![Content::Text(format!("LLM response: {text}"))]);
        Ok(Value::Null)
    }
);

#[derive(Deserialize)]
struct MessageArgs {
    message: String,
}

fn elicit(ctx: &CallContext<'_>, message: &str, schema: Value) -> Result<Value, ToolError> {
    let answer = ctx.client()?.request(
        "elicitation/create",
        json!({
            "mode": "form", "message": message, "requestedSchema": schema,
        }),
    )?;
    ctx.reply_with(vec![Content::Text(format!(
        "User response: action={}, content={}",
        answer["action"].as_str().unwrap_or("unknown"),
        answer.get("content").cloned().unwrap_or(Value::Null)
    ))]);
    Ok(Value::Null)
}

fixture_tool!(
    "test_elicitation",
    "Asks the user for a username and an email address.",
    || text_arg("message"),
    Annotations::ADDITIVE,
    |ctx, args| {
        let args: MessageArgs = parse_args(args)?;
        elicit(
            ctx,
            &args.message,
            json!({
                "type": "object",
                "properties": {
                    "username": { "type": "string", "description": "User's response" },
                    "email": { "type": "string", "description": "User's email address" },
                },
                "required": ["username", "email"],
            }),
        )
    }
);

fixture_tool!(
    "test_elicitation_sep1034_defaults",
    "Elicits fields that have default values.",
    no_args,
    Annotations::ADDITIVE,
    |ctx, _| {
        elicit(
            ctx,
            "Please review and update the form fields with defaults",
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "User name", "default": "John Doe" },
                    "age": { "type": "integer", "description": "User age", "default": 30 },
                    "score": { "type": "number", "description": "User score", "default": 95.5 },
                    "status": {
                        "type": "string", "description": "User status",
                        "enum": ["active", "inactive", "pending"], "default": "active",
                    },
                    "verified": { "type": "boolean", "description": "Verification status", "default": true },
                },
            }),
        )
    }
);

fixture_tool!(
    "test_elicitation_sep1330_enums",
    "Elicits every kind of enum field.",
    no_args,
    Annotations::ADDITIVE,
    |ctx, _| {
        elicit(
            ctx,
            "Please select options from the enum fields",
            json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {
                        "type": "string", "description": "Select one option",
                        "enum": ["option1", "option2", "option3"],
                    },
                    "titledSingle": {
                        "type": "string", "description": "Select one option with titles",
                        "oneOf": [
                            { "const": "value1", "title": "First Option" },
                            { "const": "value2", "title": "Second Option" },
                            { "const": "value3", "title": "Third Option" },
                        ],
                    },
                    "legacyEnum": {
                        "type": "string", "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"],
                    },
                    "untitledMulti": {
                        "type": "array", "description": "Select multiple options",
                        "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
                    },
                    "titledMulti": {
                        "type": "array", "description": "Select multiple options with titles",
                        "items": { "anyOf": [
                            { "const": "value1", "title": "First Choice" },
                            { "const": "value2", "title": "Second Choice" },
                            { "const": "value3", "title": "Third Choice" },
                        ] },
                    },
                },
            }),
        )
    }
);

// Resources.

catalogue::submit! {
    ResourceRegistration {
        uri: "test://static-text",
        name: "static-text",
        title: "Static text",
        description: "A fixed text resource.",
        mime_type: "text/plain",
        list: None,
        read: |_, uri, _| Ok(vec![ResourceContents::text(uri, "text/plain",
            "This is the content of the static text resource.")]),
        complete: None,
    }
}

catalogue::submit! {
    ResourceRegistration {
        uri: "test://static-binary",
        name: "static-binary",
        title: "Static binary",
        description: "A fixed binary resource (a PNG image).",
        mime_type: "image/png",
        list: None,
        read: |_, uri, _| Ok(vec![ResourceContents {
            uri: uri.to_owned(),
            mime_type: Some("image/png".into()),
            body: ResourceBody::Blob(PNG.into()),
        }]),
        complete: None,
    }
}

catalogue::submit! {
    ResourceRegistration {
        uri: "test://watched-resource",
        name: "watched-resource",
        title: "Watched resource",
        description: "A resource to subscribe to.",
        mime_type: "text/plain",
        list: None,
        read: |_, uri, _| Ok(vec![ResourceContents::text(uri, "text/plain", "Watched resource content")]),
        complete: None,
    }
}

fn read_template(
    _: &CallContext<'_>,
    uri: &str,
    vars: &UriVariables,
) -> Result<Vec<ResourceContents>, ToolError> {
    let id = vars.get("id").unwrap_or_default();
    let data = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
    Ok(vec![ResourceContents::text(
        uri,
        "application/json",
        data.to_string(),
    )])
}

catalogue::submit! {
    ResourceRegistration {
        uri: "test://template/{id}/data",
        name: "template-data",
        title: "Data by id",
        description: "Data for any id.",
        mime_type: "application/json",
        list: None,
        read: read_template,
        complete: None,
    }
}

// Prompts.

fn text_message(text: String) -> PromptMessage {
    PromptMessage {
        role: Role::User,
        content: Content::Text(text),
    }
}

fn arg<'a>(args: &'a Map<String, Value>, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}

catalogue::submit! {
    PromptRegistration {
        name: "test_simple_prompt",
        title: "Simple prompt",
        description: "A prompt without arguments.",
        arguments: &[],
        get: |_, _| Ok(vec![text_message("This is a simple prompt for testing.".into())]),
        complete: None,
    }
}

catalogue::submit! {
    PromptRegistration {
        name: "test_prompt_with_arguments",
        title: "Prompt with arguments",
        description: "A prompt that uses its two arguments.",
        arguments: &[
            PromptArgument { name: "arg1", description: "First test argument", required: true },
            PromptArgument { name: "arg2", description: "Second test argument", required: true },
        ],
        get: |_, args| Ok(vec![text_message(format!(
            "Prompt with arguments: arg1='{}', arg2='{}'", arg(args, "arg1"), arg(args, "arg2")
        ))]),
        complete: Some(|_, _, _| Ok(Vec::new())),
    }
}

catalogue::submit! {
    PromptRegistration {
        name: "test_prompt_with_embedded_resource",
        title: "Prompt with a resource",
        description: "A prompt that embeds the resource it is given.",
        arguments: &[PromptArgument {
            name: "resourceUri", description: "URI of the resource to embed", required: true,
        }],
        get: |_, args| Ok(vec![
            PromptMessage {
                role: Role::User,
                content: Content::Resource(ResourceContents::text(
                    arg(args, "resourceUri"), "text/plain", "Embedded resource content for testing.",
                )),
            },
            text_message("Please process the embedded resource above.".into()),
        ]),
        complete: None,
    }
}

catalogue::submit! {
    PromptRegistration {
        name: "test_prompt_with_image",
        title: "Prompt with an image",
        description: "A prompt that carries an image.",
        arguments: &[],
        get: |_, _| Ok(vec![
            PromptMessage { role: Role::User, content: image() },
            text_message("Please analyze the image above.".into()),
        ]),
        complete: None,
    }
}

fn main() -> std::process::ExitCode {
    match daemon::serve_from_env() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            protocol_lite::diag!("conformance fixtures: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
