//! The rmcp `ServerHandler` over the filtered catalogue.

// Logging is deprecated by SEP-2577 for future protocol revisions; the revisions this server
// negotiates still define `logging/setLevel`, so it is implemented.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use catalogue::{
    CallContext, Extensions, FilterWarning, LogLevel, SessionPolicy, StartMode, ToolError,
};
use protocol_lite::handshake::{LATEST_WITH_INITIALIZE, ServerIdentity};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, CustomRequest, CustomResult, DiscoverResult, ErrorCode, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Reference, RequestId, RequestMetaObject, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::client_link::CallClient;
use crate::discovery;
use crate::lock;
use crate::modern::{self, Cache, Cacheable, Identified};
use crate::observe::{CallObserver, CallOutcome};
use crate::push::ChannelPush;
use crate::registry::{self, Registry, ToolEntry};
use crate::resources_and_prompts::{self, CompletionTarget};
use crate::settings::{Settings, SettingsError, now_ms};
use crate::sightings::{Sighted, Sightings};
use crate::store_changes::StoreChanges;
use crate::watch::{self, Subscriptions, Watch};

/// The hooks-mcp MCP server. Clones share everything; [`HooksServer::fork_session`] makes a
/// server for another session that shares the registry but loads tools on its own.
#[derive(Debug, Clone)]
pub struct HooksServer {
    inner: Arc<Inner>,
    session: Arc<SessionTools>,
    /// The transport this session's calls come over, when the server set it
    /// ([`HooksServer::on_transport`]); else the one in the extensions (stdio).
    transport: Option<store::Transport>,
}

/// What belongs to one session: the tools it has loaded (indexes into the registry), the log
/// level its client set, and the resources it subscribed to.
#[derive(Debug)]
struct SessionTools {
    loaded: Mutex<Vec<bool>>,
    log_level: Mutex<LogLevel>,
    subscriptions: Arc<Subscriptions>,
}

#[derive(Debug)]
struct Inner {
    registry: Registry,
    mode: StartMode,
    discovery: Vec<Tool>,
    /// The discovery tools of a sessionless (2026-07-28 HTTP) lazy server: `find_tools` and
    /// `call_tool`.
    sessionless_discovery: Vec<Tool>,
    info: ServerConfig,
    session: SessionPolicy,
    extensions: Arc<Extensions>,
    initialized: Arc<Notify>,
    /// Signalled each time a `subscriptions/listen` is in place (or refused), so a transport
    /// can hold back what follows it.
    subscribed: Arc<Notify>,
    /// Set when the host shuts down: open `subscriptions/listen` requests end with their
    /// final result.
    closing: tokio::sync::watch::Sender<bool>,
    watch: Arc<Watch>,
    /// The process's feed of store changes (none without a store).
    changes: Option<StoreChanges>,
    /// The store answers reads at once ([`store::no_wait`]): read-only tools then run on the
    /// async thread, without the round trip through the blocking pool (never on stdio).
    inline_reads: bool,
    /// What counts this server's tool calls, when anything does (the daemon's metrics; never
    /// under stdio).
    tool_metrics: OnceLock<Arc<dyn CallObserver>>,
    /// The tool calls' sightings, recorded after their answers.
    sightings: Arc<Sightings>,
}

impl HooksServer {
    /// Builds the server from `settings`; returns the filter's warnings for the caller to log.
    ///
    /// # Errors
    /// [`SettingsError::Catalogue`] when the registered tools are inconsistent.
    pub fn new(settings: Settings) -> Result<(Self, Vec<FilterWarning>), SettingsError> {
        let (registry, warnings) = registry::build(&settings.filter, &settings.mode)?;
        let identity = ServerIdentity {
            instructions: registry.instructions.clone(),
            channel: settings.extensions.get::<ChannelPush>().is_some(),
        };
        let info = server_config(&identity)?;
        let tools_of = |values: Vec<Value>| {
            values
                .into_iter()
                .map(serde_json::from_value::<Tool>)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| SettingsError::Catalogue(catalogue::CatalogueError::Malformed(e)))
        };
        let (discovery, sessionless_discovery) = if settings.mode.has_discovery() {
            (
                tools_of(catalogue::discovery_tools())?,
                tools_of(catalogue::sessionless_discovery_tools())?,
            )
        } else {
            (Vec::new(), Vec::new())
        };
        // Inline reads spare a daemon's many sessions a thread hop each, at the price of a
        // second (reader) connection. A stdio session is one client: its reads take the
        // blocking thread and the one connection, which keeps an idle session smaller.
        let stdio = settings.extensions.get::<store::Transport>() == Some(&store::Transport::Stdio);
        let inline_reads = !stdio
            && settings
                .extensions
                .get::<store::StoreHandle>()
                .is_some_and(|s| s.reads_without_waiting());
        let inner = Inner {
            inline_reads,
            registry,
            mode: settings.mode,
            discovery,
            sessionless_discovery,
            info,
            session: settings.session,
            extensions: settings.extensions.clone(),
            initialized: Arc::new(Notify::new()),
            subscribed: Arc::new(Notify::new()),
            closing: tokio::sync::watch::Sender::new(false),
            changes: settings
                .extensions
                .get::<store::StoreHandle>()
                .cloned()
                .map(StoreChanges::new),
            watch: Arc::new(Watch::default()),
            tool_metrics: OnceLock::new(),
            sightings: Arc::default(),
        };
        let inner = Arc::new(inner);
        let session = SessionTools::new(&inner);
        Ok((
            HooksServer {
                inner,
                session,
                transport: None,
            },
            warnings,
        ))
    }

    /// The queue of this server's tool calls' sightings (shared by its forks).
    pub(crate) fn sightings(&self) -> Arc<Sightings> {
        self.inner.sightings.clone()
    }

    /// A server for another session: same registry and store, its own loaded tools (as the
    /// start mode loads them).
    pub fn fork_session(&self) -> HooksServer {
        HooksServer {
            inner: self.inner.clone(),
            session: SessionTools::new(&self.inner),
            transport: self.transport,
        }
    }

    /// This server, recording its sessions' tool calls as made over `transport` (the daemon
    /// serves Streamable HTTP and legacy SSE side by side).
    pub fn on_transport(mut self, transport: store::Transport) -> HooksServer {
        self.transport = Some(transport);
        self
    }

    /// The process's feed of store changes, shared by every consumer (none without a store).
    pub fn store_changes(&self) -> Option<&StoreChanges> {
        self.inner.changes.as_ref()
    }

    /// What this server pushes into its session, when it pushes (stdio only).
    pub fn channel_push(&self) -> Option<&ChannelPush> {
        self.inner.extensions.get::<ChannelPush>()
    }

    /// The store, when the server has one.
    pub(crate) fn store(&self) -> Option<store::StoreHandle> {
        self.inner.extensions.get::<store::StoreHandle>().cloned()
    }

    /// Every tool name a call may name: the discovery tools and each tool the filters expose
    /// (what an observer creates series for; other names are unknown tools).
    pub fn callable_tool_names(&self) -> Vec<String> {
        let discovery = self
            .inner
            .discovery
            .iter()
            .chain(self.inner.sessionless_discovery.iter().skip(1))
            .map(|t| t.name.to_string());
        let registered = self
            .inner
            .registry
            .entries
            .iter()
            .map(|e| e.spec.name.clone());
        discovery.chain(registered).collect()
    }

    /// Reports every `tools/call` of this server and its forks to `observer` (set once; a
    /// second observer is ignored).
    pub fn observe_calls(&self, observer: Arc<dyn CallObserver>) {
        let _ = self.inner.tool_metrics.set(observer);
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
        self.tools_for(false)
    }

    /// The tools listed now: with the sessionless discovery tools (`find_tools`, `call_tool`)
    /// for a request without a session, else the session's own.
    fn tools_for(&self, sessionless: bool) -> Vec<Tool> {
        let loaded = self.loaded().clone();
        let mut tools = if sessionless {
            self.inner.sessionless_discovery.clone()
        } else {
            self.inner.discovery.clone()
        };
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

    /// Whether `context`'s request has no session to keep state in: a 2026-07-28 request
    /// over Streamable HTTP (each is served on its own). A stdio process is one client in
    /// either era.
    fn sessionless(&self, context: &RequestContext<RoleServer>) -> bool {
        self.transport == Some(store::Transport::StreamableHttp) && modern::is_modern(context)
    }

    /// Runs `load_modules`: loads what it names and, when anything was added, notifies the
    /// client before answering: a legacy session through the request's own peer (so the
    /// notification can never miss a session that registered late: the peer is the session),
    /// a 2026-07-28 client only through its `subscriptions/listen` requests that asked for
    /// tool list changes (nothing it did not ask for).
    async fn load_modules(
        &self,
        args: Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if self.sessionless(context) {
            return Ok(no_session_to_load());
        }
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
        // The notification goes before the answer (a client re-lists on it), but it is not
        // waited for past NOTIFY_WAIT: once the client's input has ended, rmcp writes the
        // answers still due and nothing else, and the notification would hold this answer
        // until rmcp gave up on both.
        if !added.is_empty() {
            if modern::is_modern(context) {
                for sink in self.session.subscriptions.tool_listeners() {
                    let sent = tokio::time::timeout(NOTIFY_WAIT, sink.notify_tool_list_changed());
                    match sent.await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => tracing::debug!("cannot send tools/list_changed: {e}"),
                        Err(_) => tracing::debug!("tools/list_changed not sent in time"),
                    }
                }
            } else {
                let sent =
                    tokio::time::timeout(NOTIFY_WAIT, context.peer.notify_tool_list_changed());
                match sent.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!("cannot send tools/list_changed: {e}"),
                    Err(_) => tracing::debug!("tools/list_changed not sent in time"),
                }
            }
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

    /// Signalled each time a `subscriptions/listen` request is in place; a transport that
    /// sees the request refused signals it too.
    pub fn subscribed_signal(&self) -> Arc<Notify> {
        self.inner.subscribed.clone()
    }

    /// Ends every open `subscriptions/listen` of this server and its forks with its final
    /// result (the host is shutting down).
    pub fn end_subscriptions(&self) {
        self.inner.closing.send_replace(true);
    }

    /// The resources this session subscribed to, in the order it subscribed.
    pub fn subscriptions(&self) -> Vec<String> {
        self.session.subscriptions.uris()
    }

    /// Runs `f` with a call context on a blocking thread (store work may wait there).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&CallContext<'_>) -> T + Send + 'static,
    ) -> Result<T, ErrorData> {
        let inner = self.inner.clone();
        let now = now_ms();
        tokio::task::spawn_blocking(move || {
            let ctx = CallContext::new(now, &inner.session, &inner.extensions);
            f(&ctx)
        })
        .await
        .map_err(|_| ErrorData::internal_error("the request's handler failed unexpectedly", None))
    }

    /// The link a tool handler uses to reach this call's client.
    fn call_client(&self, context: &RequestContext<RoleServer>) -> CallClient {
        let modern = modern::is_modern(context);
        // A 2026-07-28 request asks for log messages in its own `_meta`; without it, none.
        let min_level = if modern {
            context.meta.log_level().map(modern::log_level)
        } else {
            Some(*lock(&self.session.log_level))
        };
        CallClient {
            peer: Some(context.peer.clone()),
            request: context.id.clone(),
            progress_token: context.meta.get_progress_token(),
            min_level,
            modern,
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// Answers one `tools/call`: the discovery tools here, every other tool through
    /// [`HooksServer::run_tool`].
    async fn dispatch_call(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = arguments.map(Value::Object).unwrap_or(Value::Null);
        let sessionless = self.sessionless(&context);
        if self.inner.mode.has_discovery() {
            match name {
                catalogue::LOAD_MODULES => {
                    return self.load_modules(args, &context).await;
                }
                catalogue::FIND_TOOLS => {
                    let loaded = self.loaded().clone();
                    let result =
                        discovery::find_tools(&self.inner.registry, &loaded, args, sessionless);
                    return Ok(match result {
                        Ok(value) => tool_success(value),
                        Err(error) => tool_error(&error),
                    });
                }
                // Listed only where there is no session to load tools into.
                catalogue::CALL_TOOL if sessionless => {
                    let (name, args) = match self.call_through(args) {
                        Ok(call) => call,
                        Err(refusal) => return Ok(tool_error(&refusal)),
                    };
                    let client = self.call_client(&context);
                    let call = Call::new(&name, args, &context, false);
                    return self.run_tool(call, client).await;
                }
                _ => {}
            }
        }
        let client = self.call_client(&context);
        let call = Call::new(name, args, &context, !sessionless);
        self.run_tool(call, client).await
    }

    /// Answers a 2026-07-28 `tools/call` over Streamable HTTP that needs no reply stream (its
    /// `_meta` names no progress token and no log level): the result as rmcp's own handler
    /// would produce it (the discovery tools of a server without sessions included), for a
    /// host that answers such requests without rmcp's per-request session machinery. A tool
    /// that would ask the client something is refused (a 2026-07-28 request cannot be asked).
    ///
    /// # Errors
    /// The protocol error rmcp would answer (an unknown tool).
    pub async fn call_without_stream(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
        meta: &RequestMetaObject,
    ) -> Result<CallToolResult, ErrorData> {
        let started = Instant::now();
        let result = self.detached_call(name, arguments, meta).await;
        if let Some(metrics) = self.inner.tool_metrics.get() {
            let outcome = match &result {
                Ok(r) if r.is_error == Some(true) => CallOutcome::ToolError,
                Ok(_) => CallOutcome::Ok,
                Err(_) => CallOutcome::ProtocolError,
            };
            metrics.record(name, outcome, started.elapsed());
        }
        result.map(|r| r.identified(true))
    }

    async fn detached_call(
        &self,
        name: &str,
        arguments: Option<rmcp::model::JsonObject>,
        meta: &RequestMetaObject,
    ) -> Result<CallToolResult, ErrorData> {
        let client = CallClient {
            peer: None,
            request: RequestId::Number(0),
            progress_token: None,
            min_level: None,
            modern: true,
            runtime: tokio::runtime::Handle::current(),
        };
        let args = arguments.map(Value::Object).unwrap_or(Value::Null);
        if self.inner.mode.has_discovery() {
            match name {
                catalogue::LOAD_MODULES => return Ok(no_session_to_load()),
                catalogue::FIND_TOOLS => {
                    let loaded = self.loaded().clone();
                    let found = discovery::find_tools(&self.inner.registry, &loaded, args, true);
                    return Ok(match found {
                        Ok(value) => tool_success(value),
                        Err(error) => tool_error(&error),
                    });
                }
                catalogue::CALL_TOOL => {
                    let (name, args) = match self.call_through(args) {
                        Ok(call) => call,
                        Err(refusal) => return Ok(tool_error(&refusal)),
                    };
                    return self
                        .run_tool(Call::from_meta(&name, args, meta), client)
                        .await;
                }
                _ => {}
            }
        }
        self.run_tool(Call::from_meta(name, args, meta), client)
            .await
    }

    /// Reads `call_tool`'s arguments: the tool to run and its arguments, or the error to
    /// answer as the tool's when they name no tool `call_tool` can run (a discovery tool, a
    /// tool this server does not offer). Both of a server's paths for `call_tool` go through
    /// here, so they answer alike.
    fn call_through(&self, args: Value) -> Result<(String, Value), ToolError> {
        let inner: catalogue::CallToolArgs = catalogue::parse_args(args)?;
        let name = inner.name;
        let refusal = if [
            catalogue::CALL_TOOL,
            catalogue::FIND_TOOLS,
            catalogue::LOAD_MODULES,
        ]
        .contains(&name.as_str())
        {
            format!(
                "name: `{name}` is called directly, not through call_tool; name one of the \
                 tools find_tools lists"
            )
        } else if self
            .inner
            .registry
            .entries
            .iter()
            .any(|e| e.spec.name == name)
        {
            return Ok((
                name,
                inner.arguments.map(Value::Object).unwrap_or(Value::Null),
            ));
        } else if let Some((_, category)) = self
            .inner
            .registry
            .excluded
            .iter()
            .find(|(t, _)| *t == name)
        {
            format!(
                "name: `{name}` ({category}) exists but this server's MCP_CATEGORIES/\
                 ALLOWED_TOOLS settings exclude it"
            )
        } else {
            format!(
                "name: no tool `{name}` on this server; find_tools searches the tools it offers"
            )
        };
        Err(ToolError::InvalidArguments(refusal))
    }

    /// Runs one tool call to completion on a blocking thread and shapes its result.
    async fn run_tool(
        &self,
        call: Call<'_>,
        client: CallClient,
    ) -> Result<CallToolResult, ErrorData> {
        let Call {
            name,
            mut args,
            meta_session,
            require_loaded,
        } = call;
        let position = self
            .inner
            .registry
            .entries
            .iter()
            .position(|t| t.spec.name == name);
        let Some(index) = position else {
            // Where tools are reached on demand, tools/list shows only the discovery tools.
            let advice = if self.inner.mode.has_discovery() {
                "call find_tools to search the tools this server offers"
            } else {
                "call tools/list for the tools this server offers"
            };
            return Err(ErrorData::invalid_params(
                format!("Unknown tool `{name}`; {advice}"),
                None,
            ));
        };
        if require_loaded && !self.loaded()[index] {
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
        // A session named in `_meta` stands in for a `session_id` argument the call left out.
        if let (Some(session), Value::Object(map)) = (&meta_session, &mut args)
            && !map.contains_key("session_id")
            && takes_session_id(&entry.tool)
        {
            map.insert("session_id".into(), Value::String(session.clone()));
        }
        // The session `_meta` names is the call's too where no argument names one: what it
        // changes is audited as that session's (a server of many sessions knows no other).
        let call_policy = meta_session
            .clone()
            .map(|session| SessionPolicy::Fallback(Some(session)));
        let named = args
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or(meta_session);
        if self.inner.inline_reads && entry.spec.annotations.read_only {
            // Answered here when the store can without waiting; a refusal discards the attempt
            // (a read-only handler has nothing to undo) and the call runs on the blocking pool.
            let policy = call_policy.as_ref().unwrap_or(&self.inner.session);
            let ctx = CallContext::new(now, policy, &self.inner.extensions);
            let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                store::no_wait::try_without_waiting(|| handler(&ctx, args.clone()))
            }));
            let answered = matches!(attempt, Ok(Some(_)));
            if answered
                && let Some(sighted) = sighting(&self.inner, self.transport, named.as_deref(), now)
            {
                // A write of its own: queued, the answer does not wait for it.
                self.inner.sightings.record(sighted);
            }
            match attempt {
                Ok(Some(Ok(value))) => return Ok(shaped(value, ctx.take_content())),
                Ok(Some(Err(error))) => return Ok(tool_error(&error)),
                Ok(None) => {}
                Err(_) => return Ok(panicked(name)),
            }
        }
        let (inner, transport) = (self.inner.clone(), self.transport);
        let sightings = self.inner.sightings.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let policy = call_policy.as_ref().unwrap_or(&inner.session);
            let ctx = CallContext::new(now, policy, &inner.extensions).with_client(&client);
            let result = handler(&ctx, args);
            let sighted = sighting(&inner, transport, named.as_deref(), now);
            (result, ctx.take_content(), sighted)
        })
        .await;
        // The sighting is queued (`sightings`): the answer does not wait for it.
        let outcome = outcome.map(|(result, content, sighted)| {
            if let Some(sighted) = sighted {
                sightings.record(sighted);
            }
            (result, content)
        });
        Ok(match outcome {
            Ok((Ok(value), content)) => shaped(value, content),
            Ok((Err(error), _)) => tool_error(&error),
            Err(_) => panicked(name),
        })
    }
}

/// `load_modules`'s answer to a request without a session.
fn no_session_to_load() -> CallToolResult {
    tool_error(&ToolError::Refused(
        "load_modules needs a session, and a 2026-07-28 request over HTTP has none: call the \
         tool through call_tool {\"name\": ..., \"arguments\": {...}} (find_tools shows its \
         input schema)"
            .into(),
    ))
}

/// One tool call to run: the tool, its arguments, the session its request's `_meta` names, and
/// whether the tool must be loaded in the session (not for `call_tool`, nor without a session).
struct Call<'a> {
    name: &'a str,
    args: Value,
    meta_session: Option<String>,
    require_loaded: bool,
}

impl<'a> Call<'a> {
    fn from_meta(name: &'a str, args: Value, meta: &RequestMetaObject) -> Call<'a> {
        Call {
            name,
            args,
            meta_session: modern::session_from_meta(meta),
            require_loaded: false,
        }
    }

    fn new(
        name: &'a str,
        args: Value,
        context: &RequestContext<RoleServer>,
        require_loaded: bool,
    ) -> Call<'a> {
        Call {
            name,
            args,
            meta_session: modern::session_from_meta(&context.meta),
            require_loaded,
        }
    }
}

/// Whether `tool`'s input schema has a `session_id` property.
fn takes_session_id(tool: &Tool) -> bool {
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key("session_id"))
}

/// That the call's session (the `session_id` it names, else the session policy's fallback)
/// made a tool call over this server's transport; `None` when the session is unknown (then
/// nothing is recorded, and no thread is woken for it).
fn sighting(
    inner: &Inner,
    transport: Option<store::Transport>,
    named: Option<&str>,
    now: i64,
) -> Option<Sighted> {
    let store = inner.extensions.get::<store::StoreHandle>()?;
    let transport = transport.or_else(|| inner.extensions.get::<store::Transport>().copied())?;
    let ctx = CallContext::new(now, &inner.session, &inner.extensions);
    let session_id = ctx.session_id(named).ok()?;
    Some(Sighted {
        store: store.clone(),
        sighting: store::Sighting {
            session_id,
            at: now,
            event: "tools/call".into(),
            transport,
            cwd: None,
            subscriptions: None,
        },
    })
}

/// Parses the JSON of an MCP result into its rmcp type.
fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
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
            log_level: Mutex::new(LogLevel::Info),
            subscriptions: Arc::new(Subscriptions::default()),
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

/// A successful result: the handler's own content when it set some (with the JSON value as
/// structured content unless it is null), else the JSON value as text and structured content.
fn shaped(value: Value, content: Option<Vec<catalogue::Content>>) -> CallToolResult {
    let Some(content) = content else {
        return tool_success(value);
    };
    let blocks: Result<Vec<ContentBlock>, _> = content
        .iter()
        .map(|c| serde_json::from_value::<ContentBlock>(c.to_mcp()))
        .collect();
    match blocks {
        Ok(blocks) => {
            let mut result = CallToolResult::success(blocks);
            if !value.is_null() {
                result.structured_content = Some(value);
            }
            result
        }
        Err(e) => tool_error(&ToolError::Internal(format!(
            "the tool produced content MCP cannot carry: {e}"
        ))),
    }
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
    let value =
        identity.initialize_result_with(LATEST_WITH_INITIALIZE, resources_and_prompts::features());
    serde_json::from_value::<InitializeResult>(value)
        .map_err(|e| SettingsError::Catalogue(catalogue::CatalogueError::Malformed(e)))
}

impl ServerHandler for HooksServer {
    fn get_info(&self) -> ServerConfig {
        self.inner.info.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        no_cursor(request.as_ref())?;
        let sessionless = self.sessionless(&context);
        // Eager lists, and the fixed lists of requests without a session, are the same for
        // every client; a session's lazy list changes with load_modules.
        let cache = if self.inner.mode.has_discovery() && !sessionless {
            Cache::Private
        } else {
            Cache::Configuration
        };
        Ok(ListToolsResult::with_all_items(self.tools_for(sessionless))
            .cached(modern::is_modern(&context), cache))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.current_tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(metrics) = self.inner.tool_metrics.get() else {
            let modern = modern::is_modern(&context);
            return self
                .dispatch_call(&request.name, request.arguments, context)
                .await
                .map(|r| r.identified(modern).into());
        };
        let started = Instant::now();
        let modern = modern::is_modern(&context);
        let result = self
            .dispatch_call(&request.name, request.arguments, context)
            .await
            .map(|r| r.identified(modern));
        let outcome = match &result {
            Ok(r) if r.is_error == Some(true) => CallOutcome::ToolError,
            Ok(_) => CallOutcome::Ok,
            Err(_) => CallOutcome::ProtocolError,
        };
        metrics.record(&request.name, outcome, started.elapsed());
        result.map(Into::into)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        no_cursor(request.as_ref())?;
        let listed = self.blocking(resources_and_prompts::list_resources).await?;
        typed::<ListResourcesResult>(listed.map_err(resources_and_prompts::protocol_error)?)
            .map(|r| r.cached(modern::is_modern(&context), Cache::Private))
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        no_cursor(request.as_ref())?;
        typed::<ListResourceTemplatesResult>(resources_and_prompts::list_templates())
            .map(|r| r.cached(modern::is_modern(&context), Cache::Configuration))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (registration, vars) = resources_and_prompts::resource_for(&request.uri)?;
        let uri = request.uri;
        let read = self
            .blocking(move |ctx| {
                resources_and_prompts::read_resource(ctx, registration, &uri, &vars)
            })
            .await?;
        typed::<ReadResourceResult>(read.map_err(resources_and_prompts::protocol_error)?)
            .map(|r| r.cached(modern::is_modern(&context), Cache::Private).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        resources_and_prompts::resource_for(&request.uri)?;
        let uri = request.uri.clone();
        let extensions = self.inner.extensions.clone();
        let seed = tokio::task::spawn_blocking(move || watch::digest_of(&extensions, &uri))
            .await
            .ok()
            .flatten()
            .map(|d| (request.uri.clone(), d))
            .into_iter()
            .collect();
        let subscriptions = &self.session.subscriptions;
        subscriptions.add(request.uri, context.peer.clone());
        self.inner.watch.register(
            subscriptions,
            seed,
            None,
            self.inner.extensions.clone(),
            self.inner.changes.as_ref(),
        );
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.subscriptions.remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        no_cursor(request.as_ref())?;
        typed::<ListPromptsResult>(resources_and_prompts::list_prompts())
            .map(|r| r.cached(modern::is_modern(&context), Cache::Configuration))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let prompt = resources_and_prompts::prompt(&request.name)?;
        let args = request.arguments.unwrap_or_default();
        let got = self
            .blocking(move |ctx| resources_and_prompts::get_prompt(ctx, prompt, &args))
            .await?;
        typed::<GetPromptResult>(got.map_err(resources_and_prompts::protocol_error)?)
            .map(|r| r.identified(modern::is_modern(&context)).into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let target = match &request.r#ref {
            Reference::Prompt(p) => {
                CompletionTarget::Prompt(resources_and_prompts::prompt(&p.name)?)
            }
            Reference::Resource(r) => {
                let found = catalogue::resources()
                    .into_iter()
                    .find(|reg| reg.uri == r.uri)
                    .ok_or_else(|| {
                        ErrorData::invalid_params(
                            format!(
                                "no resource template is `{}`; resources/templates/list shows them",
                                r.uri
                            ),
                            None,
                        )
                    })?;
                CompletionTarget::Resource(found)
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "completion/complete: ref must be ref/prompt or ref/resource",
                    None,
                ));
            }
        };
        let argument = request.argument.name;
        let prefix = request.argument.value;
        let completed = self
            .blocking(move |ctx| resources_and_prompts::complete(ctx, target, &argument, &prefix))
            .await?;
        typed::<CompleteResult>(completed.map_err(resources_and_prompts::protocol_error)?)
            .map(|r| r.identified(modern::is_modern(&context)))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Removed by 2026-07-28, whose requests each say their level in `_meta`.
        if modern::is_modern(&context)
            && let Some(removed) =
                protocol_lite::modern::removed_method(&Value::Null, "logging/setLevel")
        {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                removed.message,
                None,
            ));
        }
        *lock(&self.session.log_level) = modern::log_level(request.level);
        Ok(())
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        // The light path's bytes (a test compares both), the same for every client while the
        // configuration lasts. Over HTTP a lazy server's tools are reached through call_tool
        // (there is no session to load them into), and its instructions say so.
        let mut instructions = self.inner.registry.instructions.clone();
        if self.transport == Some(store::Transport::StreamableHttp)
            && let Some(text) = instructions.as_mut()
            && let Some((_, rest)) = text.split_once('\n')
        {
            *text = format!("{}\n{rest}", catalogue::SESSIONLESS_LEAD);
        }
        let identity = ServerIdentity {
            instructions,
            channel: self.channel_push().is_some(),
        };
        typed(identity.discover_result_with(resources_and_prompts::features()))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(modern::accepted_filter(requested))
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let sink = subscription.sink().clone();
        let accepted = sink.accepted().clone();
        let subscriptions = &self.session.subscriptions;
        subscriptions.listen(sink.clone());
        if accepted.resources_list_changed == Some(true)
            || accepted.resource_subscriptions.is_some()
        {
            // Each subscribed resource's contents now, for the watcher to compare with.
            let uris = accepted.resource_subscriptions.clone().unwrap_or_default();
            let extensions = self.inner.extensions.clone();
            let lists = accepted.resources_list_changed == Some(true);
            let (seeds, list_seed) = tokio::task::spawn_blocking(move || {
                let seeds = uris
                    .into_iter()
                    .filter_map(|uri| watch::digest_of(&extensions, &uri).map(|d| (uri, d)))
                    .collect();
                (
                    seeds,
                    lists.then(|| watch::list_digest(&extensions)).flatten(),
                )
            })
            .await
            .unwrap_or_default();
            self.inner.watch.register(
                subscriptions,
                seeds,
                list_seed,
                self.inner.extensions.clone(),
                self.inner.changes.as_ref(),
            );
        }
        self.inner.subscribed.notify_one();
        let mut closing = self.inner.closing.subscribe();
        tokio::select! {
            () = subscription.cancelled() => {
                tracing::debug!("a listen stream ended by its client");
            }
            _ = closing.wait_for(|closing| *closing) => {}
        }
        subscriptions.end_listen(&sink);
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // rmcp hands over a request of a method it knows whose params do not parse as one.
        if let Some(why) = malformed(&request.method, request.params) {
            return Err(ErrorData::invalid_params(
                format!(
                    "invalid params for `{}`: {why}; see the method's schema in the MCP \
                     specification",
                    request.method
                ),
                None,
            ));
        }
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

/// Refuses a list request's cursor: every list here fits one page and names no `nextCursor`
/// (the light path refuses it in the same words, `protocol_lite::modern::cursor_refusal`).
fn no_cursor(request: Option<&PaginatedRequestParams>) -> Result<(), ErrorData> {
    let refused = |c: &str| protocol_lite::modern::invalid_cursor_message(&Value::from(c));
    let cursor = request.and_then(|r| r.cursor.as_deref());
    cursor.map_or(Ok(()), |c| Err(ErrorData::invalid_params(refused(c), None)))
}

/// Why a request of `method`, one this server serves, did not parse with `params`: the
/// parser's message. `None` for a method it does not serve.
fn malformed(method: &str, params: Option<Value>) -> Option<String> {
    use rmcp::model::{
        CallToolRequest, CompleteRequest, DiscoverRequest, GetPromptRequest, InitializeRequest,
        ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest, ListToolsRequest,
        ReadResourceRequest, SetLevelRequest, SubscribeRequest, SubscriptionsListenRequest,
        UnsubscribeRequest,
    };
    fn why<T: serde::de::DeserializeOwned>(request: Value) -> String {
        match serde_json::from_value::<T>(request) {
            Err(e) => e.to_string(),
            Ok(_) => "they do not match the method's schema".to_owned(),
        }
    }
    // serde's words for absent params would name the SDK's internal type (`WithMeta`).
    let absent = matches!(params, None | Some(Value::Null));
    let request = serde_json::json!({ "method": method, "params": params });
    Some(match method {
        "tools/call" => why::<CallToolRequest>(request),
        "tools/list" => why::<ListToolsRequest>(request),
        "resources/read" => why::<ReadResourceRequest>(request),
        "resources/list" => why::<ListResourcesRequest>(request),
        "resources/templates/list" => why::<ListResourceTemplatesRequest>(request),
        "resources/subscribe" => why::<SubscribeRequest>(request),
        "resources/unsubscribe" => why::<UnsubscribeRequest>(request),
        "prompts/list" => why::<ListPromptsRequest>(request),
        "prompts/get" => why::<GetPromptRequest>(request),
        "completion/complete" => why::<CompleteRequest>(request),
        "logging/setLevel" => why::<SetLevelRequest>(request),
        "subscriptions/listen" => why::<SubscriptionsListenRequest>(request),
        "server/discover" => why::<DiscoverRequest>(request),
        "initialize" => why::<InitializeRequest>(request),
        _ => return None,
    })
    .map(|why| {
        if absent {
            "the request has no params; this method takes an object (in 2026-07-28 with \
             `_meta` naming the protocol revision)"
                .to_owned()
        } else {
            why
        }
    })
}

/// How long a transport waits for `notifications/initialized` to be handled before it reads
/// on regardless (a safety net: the wait normally ends on the signal, within microseconds).
pub(crate) const INITIALIZED_GRACE: Duration = Duration::from_secs(2);

/// How long `load_modules` waits for its `tools/list_changed` to be written before it answers
/// anyway (it takes microseconds while the client's input is open).
const NOTIFY_WAIT: Duration = Duration::from_secs(1);
