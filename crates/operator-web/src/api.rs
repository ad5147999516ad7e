//! The operator's read API: versioned JSON at `/api/v1/...` for what an operator looks at
//! (overview, sessions, channels and their messages, one message with its delivery report,
//! schedules with their recent firings, reminders, conditions, the audit trail), behind the
//! same token, `Host` and `Origin` checks as `/mcp`.
//!
//! The OpenAPI document (`GET /api/v1/openapi.json`) is generated from these handlers and
//! types: each route is registered together with its description ([`utoipa_axum::routes!`]),
//! so the document lists exactly the routes served.
//!
//! Times are RFC 3339 strings in UTC. Lists that grow are paged: a page answers `next`, the
//! cursor to pass back (as `before` for messages, newest first; `after` for the audit trail,
//! oldest first; `offset` for sessions, most recently seen first), or `null` on the last one.

use std::sync::Arc;

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use store::{
    AuditQuery, MessageCursor, MessageQuery, ReportQuery, SessionQuery, StoreError, StoreHandle,
    to_rfc3339,
};
use utoipa::{IntoParams, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use server_full::now_ms;

use crate::context::{OperatorWeb, ReadError};
use crate::model;

/// The API's path prefix.
pub(crate) const PREFIX: &str = "/api/v1";
/// Most items one page holds.
const MAX_LIMIT: u32 = 500;
/// Items on a page when the request names no limit.
const DEFAULT_LIMIT: u32 = 100;
/// Firings listed with each schedule.
const FIRINGS_PER_SCHEDULE: u32 = 10;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "hooks-mcp read API",
        description = "What an operator of a hooks-mcp fleet looks at. Read only; every route \
                       takes the daemon's bearer token when one is set."
    ),
    tags(
        (name = "overview", description = "The daemon and the store at a glance"),
        (name = "sessions", description = "The agent sessions the store has heard of"),
        (name = "channels", description = "Broadcast channels and their messages"),
        (name = "scheduler", description = "Schedules and their firings"),
        (name = "enforcement", description = "Reminders"),
        (name = "conditions", description = "Operator scripts run on tool calls"),
        (name = "audit", description = "Who changed what, and when"),
    ),
    modifiers(&BearerToken),
    security(("bearer" = []))
)]
struct ApiDoc;

/// The document's security scheme: the daemon's bearer token.
struct BearerToken;

impl utoipa::Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(
                "The daemon's token (HOOKS_MCP_TOKEN or HOOKS_MCP_TOKEN_FILE), when one is set: \
                 without it every route answers 401 in plain text. A daemon without a token \
                 asks for none.",
            ))
            .build();
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}

/// What the handlers read.
type ApiState = Arc<OperatorWeb>;

/// The API's routes (and the document describing them).
pub(crate) fn router(state: ApiState) -> axum::Router {
    let (router, doc) = routes().with_state(state).split_for_parts();
    let doc = Arc::new(doc);
    router
        .route(
            &format!("{PREFIX}/openapi.json"),
            axum::routing::get(move || {
                let doc = doc.clone();
                async move { Json(doc.as_ref().clone()) }
            }),
        )
        .route(&format!("{PREFIX}/{{*rest}}"), axum::routing::any(no_route))
        .route(PREFIX, axum::routing::any(no_route))
        .route(&format!("{PREFIX}/"), axum::routing::any(no_route))
        .method_not_allowed_fallback(read_only)
}

/// A method other than GET (or HEAD) on a route: 405 in the API's shape.
async fn read_only(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    let mut response = error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} {}: the read API answers GET only", uri.path()),
    );
    response.headers_mut().insert(
        axum::http::header::ALLOW,
        axum::http::HeaderValue::from_static("GET, HEAD"),
    );
    response
}

/// Any other path under the prefix: a 404 in the API's shape, pointing at the route list.
async fn no_route(uri: axum::http::Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "no route {}; the routes are listed at {PREFIX}/openapi.json",
            uri.path()
        ),
    )
}

/// Every documented route, with its description.
fn routes() -> OpenApiRouter<ApiState> {
    let mut doc = ApiDoc::openapi();
    doc.info.version = protocol_lite::handshake::SERVER_VERSION.to_owned();
    OpenApiRouter::with_openapi(doc)
        .routes(routes!(overview))
        .routes(routes!(sessions))
        .routes(routes!(channels))
        .routes(routes!(channel_messages))
        .routes(routes!(message))
        .routes(routes!(delivery))
        .routes(routes!(schedules))
        .routes(routes!(reminders))
        .routes(routes!(conditions))
        .routes(routes!(audit))
}

/// The OpenAPI document, as the daemon serves it (for `cargo xtask` and tests).
pub fn openapi_json() -> String {
    let (_, doc) = routes().split_for_parts();
    doc.to_pretty_json().unwrap_or_default()
}

/// An error answer: what was wrong, in one line.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiError {
    /// What was wrong and how to fix it.
    error: String,
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        Json(ApiError {
            error: message.into(),
        }),
    )
        .into_response()
}

/// A request parameter that cannot be taken: answered 400 with what was wrong.
#[derive(Debug)]
struct BadParameter(String);

impl IntoResponse for BadParameter {
    fn into_response(self) -> Response {
        error(StatusCode::BAD_REQUEST, self.0)
    }
}

/// axum's [`axum::extract::Query`], its rejection answered as the API answers a bad
/// parameter (JSON `{"error"}`, 400) instead of axum's plain text.
struct Query<T>(T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = BadParameter;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Query(value))
            .map_err(|e| BadParameter(format!("{}; see GET {PREFIX}/openapi.json", e.body_text())))
    }
}

/// axum's [`axum::extract::Path`], its rejection answered as [`Query`]'s.
struct Path<T>(T);

impl<T: serde::de::DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = BadParameter;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(value)| Path(value))
            .map_err(|e| BadParameter(format!("{}; see GET {PREFIX}/openapi.json", e.body_text())))
    }
}

fn store_error(e: &StoreError) -> Response {
    match e {
        StoreError::NotFound { .. } => error(StatusCode::NOT_FOUND, e.to_string()),
        StoreError::Unavailable { .. } | StoreError::Refused { .. } | StoreError::Locked { .. } => {
            error(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
        }
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Runs `read` on the blocking pool; a store error becomes its answer.
async fn blocking<T: Send + 'static>(
    web: &OperatorWeb,
    read: impl FnOnce(&StoreHandle) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, Response> {
    web.read(read).await.map_err(|e| read_error(&e))
}

fn read_error(e: &ReadError) -> Response {
    match e {
        ReadError::Store(e) => store_error(e),
        ReadError::Task(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the read failed: {e}"),
        ),
    }
}

/// A list read from the store, each item shown as `view` makes it.
fn json_list<T, U: Serialize>(
    read: Result<Vec<T>, Response>,
    view: impl FnMut(T) -> U,
) -> Response {
    match read {
        Ok(list) => Json(list.into_iter().map(view).collect::<Vec<U>>()).into_response(),
        Err(response) => response,
    }
}

// --- Overview -------------------------------------------------------------------------------

/// The daemon and the store at a glance.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Overview {
    /// hooks-mcp's version.
    version: String,
    /// `ok`; `degraded` while the scheduler lags more than its limit; `stopping` once SIGTERM
    /// came (as `/health?level=full` says each).
    status: String,
    /// Seconds since the daemon started.
    uptime_s: u64,
    /// Where the store is (a path or a URL without credentials).
    store: String,
    /// Live records.
    counts: OverviewCounts,
    /// The scheduler's progress.
    scheduler: SchedulerState,
    /// Open MCP sessions by transport.
    sessions: OpenSessions,
    /// Agent sessions seen within the live window.
    live_sessions: u64,
    /// The live window, in seconds.
    live_window_s: i64,
}

/// Live records in the store.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OverviewCounts {
    /// Unexpired broadcasts.
    active_messages: u64,
    /// Channels with unexpired broadcasts.
    channels: u64,
    /// Reminders.
    reminders: u64,
    /// Conditions.
    conditions: u64,
    /// Active schedules.
    active_schedules: u64,
}

/// The daemon's scheduler.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SchedulerState {
    /// The time between periodic ticks now, in milliseconds: the configured tick, or a longer
    /// one (10 s by default) while the daemon hears the store's changes (schedules then fire
    /// from those and a timer).
    tick_ms: u64,
    /// When the last tick completed.
    last_tick: Option<String>,
    /// Milliseconds since the last completed tick.
    lag_ms: i64,
    /// Publications made since the daemon started.
    fired: u64,
    /// The next time an active schedule is due.
    next_due: Option<String>,
    /// The last tick's error, if it failed.
    last_error: Option<String>,
}

/// Open MCP sessions.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OpenSessions {
    /// Streamable HTTP sessions.
    streamable_http: u64,
    /// Legacy SSE sessions.
    sse: u64,
    /// The cap on both together.
    max: u64,
}

/// The overview.
#[utoipa::path(
    get,
    path = "/api/v1/overview",
    tag = "overview",
    responses(
        (status = 200, description = "The overview", body = Overview),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn overview(State(state): State<ApiState>) -> Response {
    let o = match model::overview(&state, now_ms()).await {
        Ok(o) => o,
        Err(e) => return read_error(&e),
    };
    let sched = &o.daemon.scheduler;
    Json(Overview {
        version: o.version,
        status: match (o.daemon.stopping, o.daemon.degraded) {
            (true, _) => "stopping",
            (false, true) => "degraded",
            (false, false) => "ok",
        }
        .into(),
        uptime_s: o.daemon.uptime_s,
        store: o.store,
        counts: OverviewCounts {
            active_messages: o.counts.active_messages,
            channels: o.channels,
            reminders: o.counts.reminders,
            conditions: o.counts.conditions,
            active_schedules: o.counts.active_schedules,
        },
        scheduler: SchedulerState {
            tick_ms: sched.tick_ms,
            last_tick: sched.last_tick_ms.map(to_rfc3339),
            lag_ms: sched.lag_ms,
            fired: sched.fired,
            next_due: o.next_due.map(to_rfc3339),
            last_error: sched.last_error.clone(),
        },
        sessions: OpenSessions {
            streamable_http: o.daemon.sessions.streamable_http,
            sse: o.daemon.sessions.sse,
            max: o.daemon.sessions.max,
        },
        live_sessions: o.live_sessions,
        live_window_s: o.live_window_s,
    })
    .into_response()
}

// --- Channels and messages ------------------------------------------------------------------

/// A channel with unexpired messages.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Channel {
    /// Its name.
    name: String,
    /// Unexpired messages on it.
    active: u64,
    /// When its newest unexpired message was published.
    latest_at: String,
}

/// Every channel with unexpired messages, most recently published first.
#[utoipa::path(
    get,
    path = "/api/v1/channels",
    tag = "channels",
    responses(
        (status = 200, description = "The channels", body = Vec<Channel>),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn channels(State(state): State<ApiState>) -> Response {
    let now = now_ms();
    let read = blocking(&state, move |store| {
        let mut list = store.channels(now)?;
        list.sort_by_key(|c| std::cmp::Reverse(c.latest_at));
        Ok(list)
    })
    .await;
    json_list(read, |c| Channel {
        name: c.channel,
        active: c.active,
        latest_at: to_rfc3339(c.latest_at),
    })
}

/// A broadcast.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiMessage {
    /// Its id.
    id: i64,
    /// Its channel.
    channel: String,
    /// Its text.
    body: String,
    /// `info`, `alert` or `critical`.
    severity: String,
    /// When it was published.
    created_at: String,
    /// When it expires.
    expires_at: String,
    /// Seconds until it expires.
    expires_in_s: i64,
    /// The one session it is for; `null` for a broadcast.
    to: Option<String>,
}

impl ApiMessage {
    fn new(m: &store::Message, now: i64) -> ApiMessage {
        ApiMessage {
            id: m.id,
            channel: m.channel.clone(),
            body: m.body.clone(),
            severity: m.severity.as_str().to_owned(),
            created_at: to_rfc3339(m.created_at),
            expires_at: to_rfc3339(m.expires_at),
            expires_in_s: (m.expires_at - now).max(0) / 1000,
            to: m.target.clone(),
        }
    }
}

/// A page of messages, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MessagePage {
    /// The messages.
    items: Vec<ApiMessage>,
    /// The `before` of the next page; `null` on the last page.
    next: Option<String>,
}

/// Paging parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// Items on the page (1 to 500; 100 by default).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// The `next` cursor of the previous page.
    before: Option<String>,
}

impl PageQuery {
    fn limit(&self) -> Result<u32, BadParameter> {
        check_limit(self.limit)
    }

    /// The cursor: `CREATED_AT_MS.ID`, as `next` gives it.
    fn cursor(&self) -> Result<Option<MessageCursor>, BadParameter> {
        let Some(text) = self.before.as_deref() else {
            return Ok(None);
        };
        let parsed = text
            .split_once('.')
            .and_then(|(t, id)| Some((t.parse().ok()?, id.parse().ok()?)));
        match parsed {
            Some((created_at, id)) => Ok(Some(MessageCursor { created_at, id })),
            None => Err(BadParameter(format!(
                "before: `{}` is not a cursor; pass the `next` of the previous page",
                text.escape_debug()
            ))),
        }
    }
}

fn cursor_text(cursor: MessageCursor) -> String {
    format!("{}.{}", cursor.created_at, cursor.id)
}

/// A channel's unexpired messages, newest first, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/channels/{channel}/messages",
    tag = "channels",
    params(("channel" = String, Path, description = "The channel's name"), PageQuery),
    responses(
        (status = 200, description = "A page of messages (empty for an unknown channel)",
         body = MessagePage),
        (status = 400, description = "A bad limit or cursor", body = ApiError),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn channel_messages(
    State(state): State<ApiState>,
    Path(channel): Path<String>,
    Query(page): Query<PageQuery>,
) -> Response {
    let (limit, before) = match (page.limit(), page.cursor()) {
        (Ok(limit), Ok(before)) => (limit, before),
        (Err(bad), _) | (_, Err(bad)) => return bad.into_response(),
    };
    let now = now_ms();
    let query = MessageQuery {
        channel: Some(channel),
        session_id: None,
        include_acknowledged: true,
        limit: limit + 1,
        now,
        before,
    };
    match blocking(&state, move |store| store.read_messages(&query)).await {
        Ok(mut views) => {
            let more = views.len() > limit as usize;
            views.truncate(limit as usize);
            let next = more
                .then(|| views.last().map(|v| cursor_text((&v.message).into())))
                .flatten();
            Json(MessagePage {
                items: views
                    .iter()
                    .map(|v| ApiMessage::new(&v.message, now))
                    .collect(),
                next,
            })
            .into_response()
        }
        Err(response) => response,
    }
}

/// One message (unexpired).
#[utoipa::path(
    get,
    path = "/api/v1/messages/{id}",
    tag = "channels",
    params(("id" = i64, Path, description = "The message's id")),
    responses(
        (status = 200, description = "The message", body = ApiMessage),
        (status = 400, description = "An id that is not a whole number", body = ApiError),
        (status = 404, description = "No unexpired message has this id", body = ApiError),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn message(State(state): State<ApiState>, Path(id): Path<i64>) -> Response {
    let now = now_ms();
    match blocking(&state, move |store| store.message(id, now)).await {
        Ok(Some(m)) => Json(ApiMessage::new(&m, now)).into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            format!("no unexpired message has id {id}; list a channel's messages for ids"),
        ),
        Err(response) => response,
    }
}

// --- Scheduler ------------------------------------------------------------------------------

/// A schedule and its recent firings.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiSchedule {
    /// Its id.
    id: i64,
    /// Its label.
    name: Option<String>,
    /// The channel it publishes to.
    channel: String,
    /// The message it publishes.
    message: String,
    /// The severity of each publication.
    severity: String,
    /// The lifetime of each publication, in seconds.
    ttl_seconds: u32,
    /// `at RFC3339`, `every N seconds` or `cron EXPR`.
    trigger: String,
    /// `active`, `completed` or `cancelled`.
    status: String,
    /// When it next fires.
    next_fire_at: Option<String>,
    /// When it last fired.
    last_fired_at: Option<String>,
    /// How many times it fired.
    fire_count: u64,
    /// Occurrences skipped while no process ran.
    skipped_count: u64,
    /// When it was created.
    created_at: String,
    /// Its latest firings, newest first.
    recent_firings: Vec<ApiFiring>,
}

/// One firing of a schedule.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiFiring {
    /// The occurrence it fired for.
    scheduled_for: String,
    /// When it fired.
    fired_at: String,
    /// Milliseconds between the two.
    lag_ms: i64,
    /// The message it published, while it is stored.
    message_id: Option<i64>,
    /// Occurrences skipped by this firing.
    skipped: u64,
}

fn trigger_text(trigger: &store::Trigger) -> String {
    match trigger {
        store::Trigger::At(at) => format!("at {}", to_rfc3339(*at)),
        store::Trigger::Every(s) => format!("every {s} seconds"),
        store::Trigger::Cron(expr) => format!("cron {expr}"),
    }
}

/// Every schedule (by id), each with its latest firings.
#[utoipa::path(
    get,
    path = "/api/v1/schedules",
    tag = "scheduler",
    responses(
        (status = 200, description = "The schedules", body = Vec<ApiSchedule>),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn schedules(State(state): State<ApiState>) -> Response {
    let read = blocking(&state, |store| {
        let schedules = store.schedules()?;
        let mut out = Vec::with_capacity(schedules.len());
        for s in schedules {
            let firings = store.recent_firings(Some(s.id), FIRINGS_PER_SCHEDULE)?;
            out.push((s, firings));
        }
        Ok(out)
    })
    .await;
    json_list(read, |(s, firings)| ApiSchedule {
        id: s.id,
        name: s.name,
        channel: s.channel,
        message: s.message,
        severity: s.severity.as_str().to_owned(),
        ttl_seconds: s.ttl_seconds,
        trigger: trigger_text(&s.trigger),
        status: s.status.as_str().to_owned(),
        next_fire_at: s.next_fire_at.map(to_rfc3339),
        last_fired_at: s.last_fired_at.map(to_rfc3339),
        fire_count: s.fire_count,
        skipped_count: s.skipped_count,
        created_at: to_rfc3339(s.created_at),
        recent_firings: firings
            .into_iter()
            .map(|f| ApiFiring {
                scheduled_for: to_rfc3339(f.scheduled_for),
                fired_at: to_rfc3339(f.fired_at),
                lag_ms: f.fired_at - f.scheduled_for,
                message_id: f.message_id,
                skipped: f.skipped,
            })
            .collect(),
    })
}

// --- Reminders and conditions ---------------------------------------------------------------

/// A reminder re-injected every `cadence` tool calls of each session.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiReminder {
    /// Its id.
    id: i64,
    /// Its text.
    message: String,
    /// Every this many tool calls.
    cadence: u32,
    /// Its label.
    tag: Option<String>,
    /// When it was set.
    created_at: String,
}

/// Every reminder.
#[utoipa::path(
    get,
    path = "/api/v1/reminders",
    tag = "enforcement",
    responses(
        (status = 200, description = "The reminders", body = Vec<ApiReminder>),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn reminders(State(state): State<ApiState>) -> Response {
    let read = blocking(&state, |store| store.reminders()).await;
    json_list(read, |r| ApiReminder {
        id: r.id,
        message: r.message,
        cadence: r.cadence,
        tag: r.tag,
        created_at: to_rfc3339(r.created_at),
    })
}

/// An operator script run on matching tool calls.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiCondition {
    /// Its name.
    name: String,
    /// `pre` or `post` the tool call.
    step: String,
    /// Which tool calls it runs on.
    matcher: String,
    /// `bash` or `python`.
    language: String,
    /// The script, as text.
    script: String,
    /// Whether it runs detached.
    run_async: bool,
    /// The session that set it.
    set_by: String,
    /// When it was first set.
    created_at: String,
    /// When it was last replaced.
    updated_at: String,
}

/// Every condition, scripts included.
#[utoipa::path(
    get,
    path = "/api/v1/conditions",
    tag = "conditions",
    responses(
        (status = 200, description = "The conditions", body = Vec<ApiCondition>),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn conditions(State(state): State<ApiState>) -> Response {
    let read = blocking(&state, |store| store.conditions()).await;
    json_list(read, |c| ApiCondition {
        name: c.name,
        step: c.step.as_str().to_owned(),
        matcher: c.matcher,
        language: c.language.as_str().to_owned(),
        script: c.script,
        run_async: c.run_async,
        set_by: c.session_id,
        created_at: to_rfc3339(c.created_at),
        updated_at: to_rfc3339(c.updated_at),
    })
}

// --- Sessions -------------------------------------------------------------------------------

/// An agent session the store heard of.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiSession {
    /// Its id.
    session_id: String,
    /// Whether it was seen within the live window.
    live: bool,
    /// When it was first seen.
    first_seen: String,
    /// When it was last seen.
    last_seen: String,
    /// The last event heard: a hook event, or `tools/call` for a tool call.
    last_event: String,
    /// How it was last reached: `stdio`, `streamable-http`, `sse` or `hook`.
    transport: String,
    /// Its working directory, from its hooks.
    cwd: Option<String>,
    /// The channels it receives (`null`: not reported; `["*"]`: every channel).
    channels: Option<Vec<String>>,
    /// Tool calls counted.
    tool_calls: u64,
    /// When it ended (`SessionEnd`); `null` while it has not.
    ended: Option<String>,
    /// The session a subagent's recipient works for.
    parent: Option<String>,
}

/// A page of sessions, most recently seen first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SessionPage {
    /// The sessions.
    items: Vec<ApiSession>,
    /// The `offset` of the next page; `null` on the last page.
    next: Option<u32>,
}

/// Which sessions.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SessionsQuery {
    /// `true` (the default): only sessions seen within the live window that did not end;
    /// `false`: every session still kept, the ended ones too.
    live: Option<bool>,
    /// Sessions on the page (1 to 500; 100 by default).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// How many to skip: the `next` of the previous page.
    offset: Option<u32>,
}

fn channels_of(subscribed: Option<&store::Subscribed>) -> Option<Vec<String>> {
    subscribed.map(|s| match s {
        store::Subscribed::All => vec!["*".to_owned()],
        store::Subscribed::Channels(list) => list.clone(),
    })
}

/// A page's size: read as any whole number, so that a negative or huge one is refused as out
/// of range rather than as "invalid digit".
fn check_limit(limit: Option<i64>) -> Result<u32, BadParameter> {
    match limit.map(u32::try_from) {
        None => Ok(DEFAULT_LIMIT),
        Some(Ok(n)) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(_) => Err(BadParameter(format!(
            "limit: {} is out of range; pass 1 to {MAX_LIMIT}",
            limit.unwrap_or_default()
        ))),
    }
}

/// Live (or all kept) sessions, most recently seen first.
#[utoipa::path(
    get,
    path = "/api/v1/sessions",
    tag = "sessions",
    params(SessionsQuery),
    responses(
        (status = 200, description = "A page of sessions", body = SessionPage),
        (status = 400, description = "A bad limit", body = ApiError),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn sessions(State(state): State<ApiState>, Query(q): Query<SessionsQuery>) -> Response {
    let limit = match check_limit(q.limit) {
        Ok(limit) => limit,
        Err(bad) => return bad.into_response(),
    };
    let now = now_ms();
    let live_since = state.retention.live_since(now);
    let live_only = q.live.unwrap_or(true);
    let query = SessionQuery {
        seen_since: live_only.then_some(live_since),
        include_ended: !live_only,
        offset: q.offset.unwrap_or(0),
        limit: limit + 1,
    };
    let offset = query.offset;
    match blocking(&state, move |store| store.sessions(&query)).await {
        Ok(mut list) => {
            let more = list.len() > limit as usize;
            list.truncate(limit as usize);
            Json(SessionPage {
                next: more.then(|| offset.saturating_add(limit)),
                items: list
                    .into_iter()
                    .map(|r| ApiSession {
                        live: r.last_seen >= live_since && r.ended_at.is_none(),
                        ended: r.ended_at.map(to_rfc3339),
                        parent: r.parent_id,
                        channels: channels_of(r.subscriptions.as_ref()),
                        first_seen: to_rfc3339(r.first_seen),
                        last_seen: to_rfc3339(r.last_seen),
                        last_event: r.last_event,
                        transport: r.transport.as_str().to_owned(),
                        cwd: r.cwd,
                        tool_calls: r.tool_calls,
                        session_id: r.session_id,
                    })
                    .collect(),
            })
            .into_response()
        }
        Err(response) => response,
    }
}

// --- Delivery reports -----------------------------------------------------------------------

/// Who a message reached: counts over every session, and a page of the sessions.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiDelivery {
    /// The message.
    message: ApiMessage,
    /// Live sessions subscribed to its channel.
    live_subscribed: u64,
    /// Of those, how many it was delivered to.
    delivered_live: u64,
    /// Sessions it was delivered to, live or not.
    delivered: u64,
    /// Sessions that acknowledged it.
    acknowledged: u64,
    /// Of the live subscribed sessions, how many acknowledged it.
    acknowledged_live: u64,
    /// One line: `critical #12 deploys: delivered 9 of 9 live sessions, acknowledged 7`.
    summary: String,
    /// Sessions it was delivered to, or that are live and subscribed, by session id.
    sessions: Vec<ApiSessionDelivery>,
    /// The `after` of the next page of sessions; `null` on the last page.
    next: Option<String>,
}

/// One session's part in a delivery report.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiSessionDelivery {
    /// The session.
    session_id: String,
    /// When the message was delivered to it.
    delivered_at: Option<String>,
    /// When it acknowledged the message.
    acknowledged_at: Option<String>,
    /// Whether it is live.
    live: bool,
    /// Whether it receives the message's channel.
    subscribed: bool,
}

/// A page of a delivery report.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DeliveryQuery {
    /// Sessions on the page (1 to 500; 100 by default).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// The `next` of the previous page.
    after: Option<String>,
}

/// A message's delivery report: delivered and acknowledged, against the live sessions
/// subscribed to its channel.
#[utoipa::path(
    get,
    path = "/api/v1/messages/{id}/delivery",
    tag = "channels",
    params(("id" = i64, Path, description = "The message's id"), DeliveryQuery),
    responses(
        (status = 200, description = "The delivery report", body = ApiDelivery),
        (status = 400, description = "A bad limit", body = ApiError),
        (status = 404, description = "No stored message has this id", body = ApiError),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn delivery(
    State(state): State<ApiState>,
    Path(id): Path<i64>,
    Query(q): Query<DeliveryQuery>,
) -> Response {
    let limit = match check_limit(q.limit) {
        Ok(limit) => limit,
        Err(bad) => return bad.into_response(),
    };
    let now = now_ms();
    let query = ReportQuery {
        message_id: id,
        live_since: state.retention.live_since(now),
        after_session: q.after,
        limit: limit + 1,
    };
    match blocking(&state, move |store| store.delivery_report(&query)).await {
        Ok(Some(mut report)) => {
            let more = report.sessions.len() > limit as usize;
            report.sessions.truncate(limit as usize);
            let m = &report.message;
            Json(ApiDelivery {
                summary: format!(
                    "{} #{} {}: delivered {} of {} live sessions, acknowledged {}",
                    m.severity,
                    m.id,
                    m.channel,
                    report.delivered_live,
                    report.live_subscribed,
                    report.acknowledged
                ),
                message: ApiMessage::new(m, now),
                live_subscribed: report.live_subscribed,
                delivered_live: report.delivered_live,
                delivered: report.delivered,
                acknowledged: report.acknowledged,
                acknowledged_live: report.acknowledged_live,
                next: more
                    .then(|| report.sessions.last().map(|s| s.session_id.clone()))
                    .flatten(),
                sessions: report
                    .sessions
                    .into_iter()
                    .map(|s| ApiSessionDelivery {
                        delivered_at: s.delivered_at.map(to_rfc3339),
                        acknowledged_at: s.acknowledged_at.map(to_rfc3339),
                        live: s.live,
                        subscribed: s.subscribed,
                        session_id: s.session_id,
                    })
                    .collect(),
            })
            .into_response()
        }
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            format!("no stored message has id {id}; list a channel's messages for ids"),
        ),
        Err(response) => response,
    }
}

// --- Audit ----------------------------------------------------------------------------------

/// One recorded change.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApiAuditEntry {
    /// Its id (increasing).
    id: i64,
    /// When the change was made.
    at: String,
    /// Who made it: `session`, `operator`, `token`, `daemon` or `unknown`.
    actor_kind: String,
    /// The session id, user name or token label.
    actor: String,
    /// What kind of change (`publish`, `clear`, `acknowledge`, `reminder_set`, ...).
    action: String,
    /// What it changed.
    subject: String,
    /// The change's particulars (a script's hash, a message's channel...).
    #[schema(value_type = Object)]
    detail: serde_json::Value,
}

/// A page of the audit trail, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AuditPage {
    /// The entries.
    items: Vec<ApiAuditEntry>,
    /// The `after` of the next page; `null` on the last page.
    next: Option<i64>,
}

/// Which audit entries.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AuditParams {
    /// Only changes made at or after this RFC 3339 time.
    since: Option<String>,
    /// Only entries after this id: the `next` of the previous page.
    after: Option<i64>,
    /// Only this action (`publish`, `clear`, `acknowledge`, ...).
    action: Option<String>,
    /// Entries on the page (1 to 500; 100 by default).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// The audit trail, oldest first, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/audit",
    tag = "audit",
    params(AuditParams),
    responses(
        (status = 200, description = "A page of audit entries", body = AuditPage),
        (status = 400, description = "A bad time, action or limit", body = ApiError),
        (status = 503, description = "The store cannot be reached", body = ApiError),
    )
)]
async fn audit(State(state): State<ApiState>, Query(q): Query<AuditParams>) -> Response {
    let limit = match check_limit(q.limit) {
        Ok(limit) => limit,
        Err(bad) => return bad.into_response(),
    };
    let since = match q.since.as_deref().map(store::from_rfc3339).transpose() {
        Ok(since) => since,
        Err(problem) => return error(StatusCode::BAD_REQUEST, format!("since: {problem}")),
    };
    let action = match q.action.as_deref().map(str::parse::<store::AuditAction>) {
        Some(Err(e)) => return error(StatusCode::BAD_REQUEST, format!("action: {e}")),
        Some(Ok(action)) => Some(action),
        None => None,
    };
    // The filter on the action is applied to each page the store returns; pages are read
    // until one is full or the trail ends.
    let store_query = AuditQuery {
        since,
        after_id: q.after,
        limit: limit + 1,
    };
    let read = blocking(&state, move |store| {
        let mut query = store_query;
        let mut out = Vec::new();
        loop {
            let page = store.audit(&query)?;
            let ended = page.len() < query.limit as usize;
            query.after_id = page.last().map(|e| e.id).or(query.after_id);
            out.extend(
                page.into_iter()
                    .filter(|e| action.is_none_or(|a| e.action == a)),
            );
            if ended || out.len() > limit as usize {
                return Ok(out);
            }
        }
    })
    .await;
    match read {
        Ok(mut entries) => {
            let more = entries.len() > limit as usize;
            entries.truncate(limit as usize);
            Json(AuditPage {
                next: more.then(|| entries.last().map(|e| e.id)).flatten(),
                items: entries
                    .into_iter()
                    .map(|e| ApiAuditEntry {
                        id: e.id,
                        at: to_rfc3339(e.at),
                        actor_kind: e.actor.kind().to_owned(),
                        actor: e.actor.name().to_owned(),
                        action: e.action.as_str().to_owned(),
                        subject: e.subject,
                        detail: e.detail,
                    })
                    .collect(),
            })
            .into_response()
        }
        Err(response) => response,
    }
}
