//! The rmcp `ServerHandler` over the filtered catalogue.

// Logging is deprecated by SEP-2577 for future protocol revisions; the revisions this server
// negotiates still define `logging/setLevel`, so it is implemented.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use catalogue::{CallContext, Extensions, FilterWarning, SessionPolicy, ToolError};
use protocol_lite::handshake::{LATEST_WITH_INITIALIZE, ServerIdentity};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, ErrorData, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, ServerConfig, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::Notify;

use crate::registry::{self, ToolEntry};
use crate::settings::{Settings, SettingsError, now_ms};

/// The hooks-mcp MCP server: one per session (cheap to clone; clones share state).
#[derive(Debug, Clone)]
pub struct HooksServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tools: Vec<ToolEntry>,
    info: ServerConfig,
    session: SessionPolicy,
    extensions: Arc<Extensions>,
    initialized: Arc<Notify>,
    log_level: Mutex<LoggingLevel>,
}

impl HooksServer {
    /// Builds the server from `settings`; returns the filter's warnings for the caller to log.
    ///
    /// # Errors
    /// [`SettingsError::Catalogue`] when the registered tools are inconsistent.
    pub fn new(settings: Settings) -> Result<(Self, Vec<FilterWarning>), SettingsError> {
        let (tools, warnings) = registry::build(&settings.filter)?;
        let info = server_config(&settings.identity)?;
        let inner = Inner {
            tools,
            info,
            session: settings.session,
            extensions: settings.extensions,
            initialized: Arc::new(Notify::new()),
            log_level: Mutex::new(LoggingLevel::Info),
        };
        Ok((
            HooksServer {
                inner: Arc::new(inner),
            },
            warnings,
        ))
    }

    /// The exposed tools, in catalogue order.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.inner.tools
    }

    /// Signalled each time a client's `notifications/initialized` has been handled.
    pub fn initialized_signal(&self) -> Arc<Notify> {
        self.inner.initialized.clone()
    }

    /// Runs one tool call to completion on a blocking thread and shapes its result.
    async fn run_tool(&self, name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
        let Some(entry) = self.inner.tools.iter().find(|t| t.spec.name == name) else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool `{name}`; call tools/list for the tools this server offers"),
                None,
            ));
        };
        let handler = entry.handler;
        let inner = self.inner.clone();
        let now = now_ms();
        let outcome = tokio::task::spawn_blocking(move || {
            let ctx = CallContext::new(now, &inner.session, &inner.extensions);
            handler(&ctx, args)
        })
        .await;
        Ok(match outcome {
            Ok(Ok(value)) => {
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
                result.structured_content = Some(value);
                result
            }
            Ok(Err(error)) => tool_error(&error),
            Err(join) => {
                tracing::error!(tool = name, error = %join, "tool handler panicked");
                tool_error(&ToolError::Internal(format!(
                    "the tool `{name}` failed unexpectedly; the server continues, retry or report it"
                )))
            }
        })
    }
}

fn tool_error(error: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.to_string())])
}

/// The rmcp initialize result, parsed from the same JSON the light path sends.
fn server_config(identity: &ServerIdentity) -> Result<ServerConfig, SettingsError> {
    let value = identity.initialize_result(LATEST_WITH_INITIALIZE);
    serde_json::from_value::<InitializeResult>(value)
        .map_err(|e| SettingsError::Catalogue(catalogue::CatalogueError::Malformed(e)))
}

impl ServerHandler for HooksServer {
    fn get_info(&self) -> ServerConfig {
        self.inner.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.inner.tools.iter().map(|t| t.tool.clone()).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.inner
            .tools
            .iter()
            .find(|t| t.spec.name == name)
            .map(|t| t.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        self.run_tool(&request.name, args).await.map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(Vec::new()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(Vec::new()))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(Vec::new()))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut level = self
            .inner
            .log_level
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *level = request.level;
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: `{}`", request.method),
            None,
        ))
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        tracing::debug!("client initialized");
        self.inner.initialized.notify_one();
    }
}

/// How long a transport waits for `notifications/initialized` to be handled before it reads
/// on regardless (a safety net: the wait normally ends on the signal, within microseconds).
pub(crate) const INITIALIZED_GRACE: Duration = Duration::from_secs(2);
