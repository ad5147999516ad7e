//! The rmcp `ServerHandler` over the filtered catalogue.

// Logging is deprecated by SEP-2577 for future protocol revisions; the revisions this server
// negotiates still define `logging/setLevel`, so it is implemented.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use catalogue::{CallContext, Extensions, FilterWarning, SessionPolicy, StartMode, ToolError};
use protocol_lite::handshake::{LATEST_WITH_INITIALIZE, ServerIdentity};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, ErrorData, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, ServerConfig, SetLevelRequestParams, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::discovery;
use crate::registry::{self, Registry, ToolEntry};
use crate::settings::{Settings, SettingsError, now_ms};

/// The hooks-mcp MCP server. Clones share everything; [`HooksServer::fork_session`] makes a
/// server for another session that shares the registry but loads tools on its own.
#[derive(Debug, Clone)]
pub struct HooksServer {
    inner: Arc<Inner>,
    session: Arc<SessionTools>,
}

/// The tools one session has loaded (indexes into the registry).
#[derive(Debug)]
struct SessionTools {
    loaded: Mutex<Vec<bool>>,
}

#[derive(Debug)]
struct Inner {
    registry: Registry,
    mode: StartMode,
    discovery: Vec<Tool>,
    info: ServerConfig,
    session: SessionPolicy,
    extensions: Arc<Extensions>,
    initialized: Arc<Notify>,
    log_level: Mutex<LoggingLevel>,
    /// The store answers reads at once ([`store::no_wait`]): read-only tools then run on the
    /// async thread, without the round trip through the blocking pool.
    inline_reads: bool,
}

impl HooksServer {
    /// Builds the server from `settings`; returns the filter's warnings for the caller to log.
    ///
    /// # Errors
    /// [`SettingsError::Catalogue`] when the registered tools are inconsistent.
    pub fn new(settings: Settings) -> Result<(Self, Vec<FilterWarning>), SettingsError> {
        let (registry, warnings) = registry::build(&settings.filter)?;
        let identity = ServerIdentity {
            instructions: catalogue::instructions(&registry.visible, &settings.mode),
        };
        let info = server_config(&identity)?;
        let discovery = if settings.mode.has_discovery() {
            catalogue::discovery_tools()
                .into_iter()
                .map(serde_json::from_value::<Tool>)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| SettingsError::Catalogue(catalogue::CatalogueError::Malformed(e)))?
        } else {
            Vec::new()
        };
        let inline_reads = settings
            .extensions
            .get::<store::StoreHandle>()
            .is_some_and(|s| s.reads_without_waiting());
        let inner = Inner {
            inline_reads,
            registry,
            mode: settings.mode,
            discovery,
            info,
            session: settings.session,
            extensions: settings.extensions,
            initialized: Arc::new(Notify::new()),
            log_level: Mutex::new(LoggingLevel::Info),
        };
        let inner = Arc::new(inner);
        let session = SessionTools::new(&inner);
        Ok((HooksServer { inner, session }, warnings))
    }

    /// A server for another session: same registry and store, its own loaded tools (as the
    /// start mode loads them).
    pub fn fork_session(&self) -> HooksServer {
        HooksServer {
            inner: self.inner.clone(),
            session: SessionTools::new(&self.inner),
        }
    }

    /// Every tool the filters expose (loaded or not), in catalogue order.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.inner.registry.entries
    }

    /// The names of the tools this session lists now (discovery tools first).
    pub fn listed_tools(&self) -> Vec<String> {
        self.current_tools()
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect()
    }

    fn loaded(&self) -> std::sync::MutexGuard<'_, Vec<bool>> {
        self.session
            .loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn current_tools(&self) -> Vec<Tool> {
        let loaded = self.loaded().clone();
        let mut tools = self.inner.discovery.clone();
        tools.extend(
            self.inner
                .registry
                .entries
                .iter()
                .zip(loaded)
                .filter(|(_, on)| *on)
                .map(|(e, _)| e.tool.clone()),
        );
        tools
    }

    /// Runs `load_modules`: loads what it names and, when anything was added, notifies the
    /// client through the request's own peer before answering (so the notification can never
    /// miss a session that registered late: the peer is the session).
    async fn load_modules(
        &self,
        args: Value,
        peer: &rmcp::Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let wanted = match discovery::resolve_modules(&self.inner.registry, args) {
            Ok(wanted) => wanted,
            Err(error) => return Ok(tool_error(&error)),
        };
        let added: Vec<String> = {
            let mut loaded = self.loaded();
            wanted
                .into_iter()
                .filter(|&i| !std::mem::replace(&mut loaded[i], true))
                .map(|i| self.inner.registry.entries[i].spec.name.clone())
                .collect()
        };
        if !added.is_empty()
            && let Err(e) = peer.notify_tool_list_changed().await
        {
            tracing::warn!("cannot send tools/list_changed: {e}");
        }
        let value = json!({
            "added": added,
            "listed": self.listed_tools().len(),
        });
        Ok(tool_success(value))
    }

    /// Signalled each time a client's `notifications/initialized` has been handled.
    pub fn initialized_signal(&self) -> Arc<Notify> {
        self.inner.initialized.clone()
    }

    /// Runs one tool call to completion on a blocking thread and shapes its result.
    async fn run_tool(&self, name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
        let position = self
            .inner
            .registry
            .entries
            .iter()
            .position(|t| t.spec.name == name);
        let Some(index) = position else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool `{name}`; call tools/list for the tools this server offers"),
                None,
            ));
        };
        if !self.loaded()[index] {
            return Err(ErrorData::invalid_params(
                format!(
                    "Tool `{name}` is not loaded in this session; call load_modules with \
                     {{\"modules\": [\"{name}\"]}} (or its category) first"
                ),
                None,
            ));
        }
        let entry = &self.inner.registry.entries[index];
        let handler = entry.handler;
        let now = now_ms();
        if self.inner.inline_reads && entry.spec.annotations.read_only {
            // Answered here when the store can without waiting; a refusal discards the attempt
            // (a read-only handler has nothing to undo) and the call runs on the blocking pool.
            let ctx = CallContext::new(now, &self.inner.session, &self.inner.extensions);
            let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store::no_wait::try_without_waiting(|| handler(&ctx, args.clone()))
            }));
            match attempt {
                Ok(Some(Ok(value))) => return Ok(tool_success(value)),
                Ok(Some(Err(error))) => return Ok(tool_error(&error)),
                Ok(None) => {}
                Err(_) => return Ok(panicked(name)),
            }
        }
        let inner = self.inner.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let ctx = CallContext::new(now, &inner.session, &inner.extensions);
            handler(&ctx, args)
        })
        .await;
        Ok(match outcome {
            Ok(Ok(value)) => tool_success(value),
            Ok(Err(error)) => tool_error(&error),
            Err(_) => panicked(name),
        })
    }
}

impl SessionTools {
    fn new(inner: &Inner) -> Arc<SessionTools> {
        let loaded = inner
            .registry
            .entries
            .iter()
            .map(|e| inner.mode.loads_at_start(e.spec.category))
            .collect();
        Arc::new(SessionTools {
            loaded: Mutex::new(loaded),
        })
    }
}

/// The result of a call whose handler panicked (a bug; the server goes on).
fn panicked(name: &str) -> CallToolResult {
    tracing::error!(tool = name, "tool handler panicked");
    tool_error(&ToolError::Internal(format!(
        "the tool `{name}` failed unexpectedly; the server continues, retry or report it"
    )))
}

/// A successful result: the JSON object as structured content and as text.
fn tool_success(value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    result
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
        Ok(ListToolsResult::with_all_items(self.current_tools()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.current_tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        if self.inner.mode.has_discovery() {
            match request.name.as_ref() {
                catalogue::LOAD_MODULES => {
                    return self.load_modules(args, &context.peer).await.map(Into::into);
                }
                catalogue::FIND_TOOLS => {
                    let loaded = self.loaded().clone();
                    let result = discovery::find_tools(&self.inner.registry, &loaded, args);
                    return Ok(match result {
                        Ok(value) => tool_success(value),
                        Err(error) => tool_error(&error),
                    }
                    .into());
                }
                _ => {}
            }
        }
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
