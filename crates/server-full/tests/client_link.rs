//! What an embedder registers and what a tool handler can do with its client during a call
//! ([`catalogue::ClientLink`]): progress and log notifications, `sampling/createMessage` and
//! `elicitation/create` requests, rich content (images, embedded resources), and prompts with
//! arguments and completion. Tools and prompts registered here, the way an embedder registers
//! its own, are served by a [`server_full::HooksServer`] in this process, over an in-memory
//! pipe, to rmcp's client.
// Logging and sampling are deprecated by the newest revision (SEP-2577), which rmcp marks; the
// revisions this server negotiates define them.
#![allow(deprecated, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use catalogue::{
    Annotations, CallContext, Category, Content, Filter, LogLevel, PromptArgument, PromptMessage,
    PromptRegistration, Role, SessionPolicy, StartMode, ToolError, ToolRegistration,
};
use rmcp::model::{
    ArgumentInfo, CallToolRequestParams, CompleteRequestParams, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, GetPromptRequestParams, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, Reference, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use server_full::{HooksServer, Settings};

fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

macro_rules! test_tool {
    ($name:literal, $handler:expr) => {
        catalogue::submit! {
            ToolRegistration {
                name: $name,
                category: Category::Channels,
                title: $name,
                description: "A tool of this test.",
                input_schema: no_args,
                output_schema: None,
                annotations: Annotations::ADDITIVE,
                handler: $handler,
            }
        }
    };
}

test_tool!("link_progress", |ctx: &CallContext<'_>, _| {
    let client = ctx.client()?;
    for step in [1.0, 2.0, 3.0] {
        client.progress(step, Some(3.0), Some(&format!("step {step}")))?;
    }
    Ok(json!({ "steps": 3 }))
});

test_tool!("link_logging", |ctx: &CallContext<'_>, _| {
    let client = ctx.client()?;
    client.log(LogLevel::Debug, json!("debug detail"))?;
    client.log(LogLevel::Info, json!("info line"))?;
    client.log(LogLevel::Error, json!({ "failed": "error line" }))?;
    Ok(json!({ "logged": 3 }))
});

test_tool!("link_sampling", |ctx: &CallContext<'_>, _| {
    let answer = ctx.client()?.request(
        "sampling/createMessage",
        json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "2+2?" } }],
            "maxTokens": 10,
        }),
    )?;
    Ok(json!({ "model": answer["model"], "text": answer["content"]["text"] }))
});

test_tool!("link_elicitation", |ctx: &CallContext<'_>, _| {
    let answer = ctx.client()?.request(
        "elicitation/create",
        json!({
            "mode": "form",
            "message": "Your name?",
            "requestedSchema": {
                "type": "object",
                "properties": { "name": { "type": "string" } },
                "required": ["name"]
            },
        }),
    )?;
    Ok(json!({ "action": answer["action"], "content": answer["content"] }))
});

test_tool!("link_not_a_request", |ctx: &CallContext<'_>, _| {
    ctx.client()?.request("tools/list", json!({}))
});

test_tool!("link_rich", |ctx: &CallContext<'_>, _| {
    ctx.reply_with(vec![
        Content::Text("see the picture".into()),
        Content::Image {
            data: "iVBORw0KGgo=".into(),
            mime_type: "image/png".into(),
        },
        Content::Resource(catalogue::ResourceContents::text(
            "test://note",
            "text/plain",
            "embedded text",
        )),
    ]);
    Ok(Value::Null)
});

test_tool!("link_refusal", |_: &CallContext<'_>, _| Err(
    ToolError::Refused("refused on purpose".into())
));

catalogue::submit! {
    PromptRegistration {
        name: "link_review",
        title: "Review a change",
        description: "Asks for a review of one file.",
        arguments: &[
            PromptArgument { name: "file", description: "The file to review", required: true },
            PromptArgument { name: "focus", description: "What to look at", required: false },
        ],
        get: |_, args| {
            let file = args.get("file").and_then(Value::as_str).ok_or_else(|| {
                ToolError::InvalidArguments("file: required; name the file to review".into())
            })?;
            let focus = args.get("focus").and_then(Value::as_str).unwrap_or("everything");
            Ok(vec![PromptMessage {
                role: Role::User,
                content: Content::Text(format!("Review {file}, looking at {focus}.")),
            }])
        },
        complete: Some(|_, argument, typed| {
            let files = ["src/main.rs", "src/lib.rs", "README.md"];
            Ok(match argument {
                "file" => files
                    .iter()
                    .filter(|f| f.starts_with(typed))
                    .map(|f| (*f).to_owned())
                    .collect(),
                _ => Vec::new(),
            })
        }),
    }
}

/// One progress notification: progress, total, message.
type Progress = (f64, Option<f64>, Option<String>);

/// What the client saw, in order.
#[derive(Debug, Default, Clone)]
struct Client {
    progress: Arc<Mutex<Vec<Progress>>>,
    logs: Arc<Mutex<Vec<(LoggingLevel, Value)>>>,
    sampled: Arc<Mutex<Vec<Value>>>,
    elicited: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap()
            .push((params.progress, params.total, params.message));
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push((params.level, params.data));
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sampled
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params.messages).unwrap());
        Ok(serde_json::from_value(json!({
            "model": "test-model",
            "role": "assistant",
            "content": { "type": "text", "text": "4" }
        }))
        .unwrap())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = serde_json::to_value(&request).unwrap()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.elicited.lock().unwrap().push(message);
        Ok(
            serde_json::from_value(json!({ "action": "accept", "content": { "name": "Ada" } }))
                .unwrap(),
        )
    }
}

/// A server over a fresh store and a connected client.
async fn connect(home: &std::path::Path) -> (Client, RunningService<RoleClient, Client>) {
    let store = store::SqliteStore::create(home.join("state.db")).unwrap();
    let settings = Settings {
        filter: Filter::default(),
        session: SessionPolicy::ExplicitOnly,
        mode: StartMode::Eager,
        extensions: Arc::new(Settings::extensions(store::StoreHandle(Arc::new(store)))),
    };
    let (server, _) = HooksServer::new(settings).unwrap();
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let client = Client::default();
    let running = client.clone().serve(client_end).await.unwrap();
    (client, running)
}

/// What `recorded` holds once it holds at least `count` entries (bounded: 5 s), and a moment
/// more for any that should not have come. rmcp's client handles each notification in a task
/// of its own, so a notification sent before a tool's result may be recorded after it.
async fn settled<T: Clone>(recorded: &Mutex<Vec<T>>, count: usize) -> Vec<T> {
    for _ in 0..100 {
        if recorded.lock().unwrap().len() >= count {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    recorded.lock().unwrap().clone()
}

async fn call(running: &RunningService<RoleClient, Client>, tool: &str) -> Value {
    let result = running
        .call_tool(CallToolRequestParams::new(tool.to_owned()))
        .await
        .unwrap();
    serde_json::to_value(result).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_client_before_the_result() {
    let home = tempfile::tempdir().unwrap();
    let (client, running) = connect(home.path()).await;
    // With a progress token, each step arrives before the call answers.
    let mut params = CallToolRequestParams::new("link_progress");
    params.meta = Some(serde_json::from_value(json!({ "progressToken": "p-1" })).unwrap());
    let result = serde_json::to_value(running.call_tool(params).await.unwrap()).unwrap();
    assert_eq!(result["structuredContent"]["steps"], 3, "{result}");
    // rmcp's client handles each notification in a task of its own: the order it records
    // them in is not the order they were sent in.
    let mut seen = settled(&client.progress, 3).await;
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        seen,
        [1.0, 2.0, 3.0].map(|s| (s, Some(3.0), Some(format!("step {s}"))))
    );
    // Another call: its own three steps.
    let result = call(&running, "link_progress").await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(settled(&client.progress, 6).await.len(), 6);
    running.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_follow_the_level_the_client_set() {
    let home = tempfile::tempdir().unwrap();
    let (client, running) = connect(home.path()).await;
    // The default level is info: the debug line is held back.
    let result = call(&running, "link_logging").await;
    assert_eq!(result["isError"], false, "{result}");
    let mut logs = settled(&client.logs, 2).await;
    logs.sort_by_key(|l| l.0 as u8);
    assert_eq!(
        logs,
        [
            (LoggingLevel::Info, json!("info line")),
            (LoggingLevel::Error, json!({ "failed": "error line" }))
        ]
    );

    running
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();
    client.logs.lock().unwrap().clear();
    call(&running, "link_logging").await;
    let levels: Vec<LoggingLevel> = settled(&client.logs, 1).await.iter().map(|l| l.0).collect();
    assert_eq!(levels, [LoggingLevel::Error]);

    running
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    client.logs.lock().unwrap().clear();
    call(&running, "link_logging").await;
    assert_eq!(settled(&client.logs, 3).await.len(), 3);
    running.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_and_elicitation_requests_are_answered_by_the_client_during_the_call() {
    let home = tempfile::tempdir().unwrap();
    let (client, running) = connect(home.path()).await;
    let result = call(&running, "link_sampling").await;
    assert_eq!(
        result["structuredContent"],
        json!({ "model": "test-model", "text": "4" }),
        "{result}"
    );
    let sampled = client.sampled.lock().unwrap().clone();
    assert_eq!(sampled.len(), 1);
    assert_eq!(sampled[0][0]["content"]["text"], "2+2?");

    let result = call(&running, "link_elicitation").await;
    assert_eq!(
        result["structuredContent"],
        json!({ "action": "accept", "content": { "name": "Ada" } }),
        "{result}"
    );
    assert_eq!(*client.elicited.lock().unwrap(), ["Your name?"]);

    // A request the client does not serve fails the handler's call, and says which.
    let result = call(&running, "link_not_a_request").await;
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("the client did not answer tools/list"),
        "{text}"
    );
    running.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rich_content_and_refusals_keep_their_shape() {
    let home = tempfile::tempdir().unwrap();
    let (_client, running) = connect(home.path()).await;
    let result = call(&running, "link_rich").await;
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 3, "{result}");
    assert_eq!(
        content[0],
        json!({ "type": "text", "text": "see the picture" })
    );
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["mimeType"], "image/png");
    assert_eq!(content[2]["type"], "resource");
    assert_eq!(content[2]["resource"]["uri"], "test://note");
    assert_eq!(content[2]["resource"]["text"], "embedded text");

    let result = call(&running, "link_refusal").await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("refused on purpose"),
        "{result}"
    );
    running.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_prompts_are_listed_rendered_and_completed() {
    let home = tempfile::tempdir().unwrap();
    let (_client, running) = connect(home.path()).await;
    assert!(running.peer_info().unwrap().capabilities.prompts.is_some());
    let prompts = running.list_all_prompts().await.unwrap();
    let review = prompts.iter().find(|p| p.name == "link_review").unwrap();
    let arguments = review.arguments.as_ref().unwrap();
    assert_eq!(
        arguments
            .iter()
            .map(|a| (a.name.as_str(), a.required))
            .collect::<Vec<_>>(),
        [("file", Some(true)), ("focus", Some(false))]
    );

    let mut args = serde_json::Map::new();
    args.insert("file".into(), json!("src/lib.rs"));
    let got = running
        .get_prompt(GetPromptRequestParams::new("link_review").with_arguments(args))
        .await
        .unwrap();
    let got = serde_json::to_value(got).unwrap();
    assert_eq!(got["messages"][0]["role"], "user");
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "Review src/lib.rs, looking at everything."
    );

    // A missing argument is the handler's refusal; an unknown prompt a -32602.
    let missing = running
        .get_prompt(GetPromptRequestParams::new("link_review"))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("file: required"), "{missing}");
    let unknown = running
        .get_prompt(GetPromptRequestParams::new("no_such_prompt"))
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("-32602"), "{unknown}");

    let completed = running
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("link_review"),
            ArgumentInfo::new("file", "src/"),
        ))
        .await
        .unwrap();
    assert_eq!(completed.completion.values, ["src/main.rs", "src/lib.rs"]);
    running.cancel().await.unwrap();
}
