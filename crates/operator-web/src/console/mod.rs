//! The operator console at `/console/`: the fleet, live, in a browser, on the daemon's listener.
//!
//! Server-rendered HTML (the templates in [`views`] escape everything they insert: stored text
//! is user text) with a small vendored library for live updates (htmx, embedded with its
//! licence under `assets/`) and a few lines of the console's own (`assets/console.js`: the
//! event stream). Each page's live region re-reads itself when `/console/events` says the
//! store changed (its change version moved), and every 15 seconds for what changes with time
//! alone (ages, expiries, the scheduler's lag).
//!
//! # Access
//!
//! With a token (`HOOKS_MCP_TOKEN`), the console asks for it once and keeps a signed session
//! cookie (`HttpOnly`, `SameSite=Strict`, path `/console`); a request carrying the daemon's
//! bearer token is let in too and gets the cookie. Without a token the daemon serves loopback
//! only, and the console hands every browser a session cookie on its first page. Sessions are
//! stateless: the cookie holds its expiry and a random nonce, signed (HMAC-SHA-256) with a key
//! kept in the store ([`store::DaemonStateStore::signing_keys`]), which every daemon of the
//! store shares: behind a load balancer any daemon accepts a session another one issued, and a
//! restart signs no one out; no client can make a daemon keep state. The key is rotated every
//! week (a new one signs, the old one still verifies for a day, longer than a session lasts);
//! each daemon reads the keys again every minute, and at once (at most once a second) for a
//! cookie signed with a key it does not know yet. Every state-changing request carries the
//! session's CSRF token (an HMAC of its nonce, with the key that signed the session) and passes
//! the same `Host` and `Origin` checks as `/mcp`; responses carry a Content-Security-Policy that
//! allows scripts and styles from the console's own assets only.
//!
//! # Actions
//!
//! Publishing, clearing a message, cancelling a schedule, adding and clearing reminders call
//! the same tools as an agent or the CLI would (same checks, same audit entry), as the actor
//! `token:console`. Conditions are shown, never edited.

mod views;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

use axum::extract::{Form, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};
use store::StoreHandle;

use server_full::now_ms;

use crate::context::{OperatorWeb, ReadError};
use crate::model;

pub(crate) use views::Page;

/// Where the console is served.
pub const PREFIX: &str = "/console";
/// The session cookie's name.
const COOKIE: &str = "hooks_mcp_console";
/// How long a console session lasts.
const SESSION_SECONDS: i64 = 12 * 3600;
/// While the store's change feed cannot reach the store, how often pages re-read anyway.
const BLIND_REFRESH: Duration = Duration::from_secs(1);
/// How soon an event stream first compares the page's version with the store's.
const FIRST_LOOK: Duration = Duration::from_millis(200);
/// The audit actor of the console's changes.
const ACTOR: &str = "console";
/// The policy every console page is served with.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                              img-src 'self'; connect-src 'self'; form-action 'self'; \
                              frame-ancestors 'none'; base-uri 'none'";

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// What the console's keys sign, in the store's table of keys.
const KEY_PURPOSE: &str = "console-session";
/// A new signing key every week.
const KEY_ROTATION_MS: i64 = 7 * 24 * 3600 * 1000;
/// A superseded key still verifies for a day (a session lasts 12 hours).
const KEY_GRACE_MS: i64 = 24 * 3600 * 1000;
/// How long a daemon uses the keys it read before it reads them again.
const KEY_REFRESH: Duration = Duration::from_secs(60);
/// At most one read of the keys this often for cookies signed with a key not seen yet.
const UNKNOWN_KEY_REFRESH: Duration = Duration::from_secs(1);

/// The console's state: what it reads and the keys that sign its sessions.
#[derive(Clone)]
pub(crate) struct Console {
    web: Arc<OperatorWeb>,
    keys: Arc<KeyRing>,
}

/// The signing keys as last read from the store, newest first.
#[derive(Default)]
struct KeyRing {
    read: std::sync::Mutex<Option<(Instant, Arc<[store::SigningKey]>)>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").finish_non_exhaustive()
    }
}

/// A signed-in browser: its CSRF token, and the cookie to set when the session is new.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// What every form of this session must send back as `csrf`.
    pub(crate) csrf: String,
    /// `Set-Cookie` for a session issued by this request.
    issued: Option<String>,
}

/// Why the console could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The system's random source failed.
    #[error("cannot draw the console's session secret from the system's random source: {0}")]
    Random(String),
    /// The signing keys could not be read from the store.
    #[error("cannot read the console's signing keys from the store: {0}")]
    Keys(String),
}

/// The console's routes, or an error when its session secret cannot be drawn.
pub(crate) fn router(web: Arc<OperatorWeb>) -> Result<Router, ConsoleError> {
    let console = Console {
        web,
        keys: Arc::default(),
    };
    let signed_in = Router::new()
        .route("/console/", get(overview))
        .route("/console/channels", get(channels))
        .route("/console/messages/{id}", get(message))
        .route("/console/sessions", get(sessions))
        .route("/console/schedules", get(schedules))
        .route("/console/reminders", get(reminders).post(add_reminder))
        .route("/console/conditions", get(conditions))
        .route("/console/audit", get(audit))
        .route("/console/events", get(events))
        .route("/console/publish", post(publish))
        .route("/console/messages/{id}/clear", post(clear_message))
        .route("/console/schedules/{id}/cancel", post(cancel_schedule))
        .route("/console/reminders/{id}/clear", post(clear_reminder))
        .route("/console/logout", post(logout))
        .route_layer(axum::middleware::from_fn_with_state(
            console.clone(),
            authenticate,
        ));
    Ok(Router::new()
        .merge(signed_in)
        .route("/console", get(|| async { see_other("/console/") }))
        .route("/console/login", get(login_form).post(login))
        .route("/console/assets/{name}", get(asset))
        .fallback(not_found)
        .layer(axum::middleware::from_fn(protect))
        .with_state(console))
}

// --- Sessions, cookies and CSRF -------------------------------------------------------------

fn mac(key: &store::SigningKey, parts: &[&[u8]]) -> HmacSha256 {
    // HMAC takes keys of any length: this cannot fail.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&key.secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    for part in parts {
        mac.update(part);
        mac.update(b"\0");
    }
    mac
}

impl Console {
    /// The signing keys, newest first: as last read, or read again from the store when that
    /// was over [`KEY_REFRESH`] ago, or when `wanted` is a key id not among them (at most once
    /// per [`UNKNOWN_KEY_REFRESH`]). Reading makes and rotates the key when it is due.
    async fn keys(&self, wanted: Option<i64>) -> Result<Arc<[store::SigningKey]>, ConsoleError> {
        {
            let read = self.keys.read.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, keys)) = read.as_ref() {
                let age = at.elapsed();
                let known = wanted.is_none_or(|id| keys.iter().any(|k| k.id == id));
                if age < KEY_REFRESH && (known || age < UNKNOWN_KEY_REFRESH) {
                    return Ok(keys.clone());
                }
            }
        }
        let mut candidate = [0u8; 32];
        getrandom::fill(&mut candidate).map_err(|e| ConsoleError::Random(e.to_string()))?;
        let now = now_ms();
        let keys = self
            .web
            .read(move |store| {
                store.signing_keys(&store::KeyRequest {
                    purpose: KEY_PURPOSE,
                    candidate: &candidate,
                    now,
                    rotate_before: now - KEY_ROTATION_MS,
                    keep_since: now - KEY_GRACE_MS,
                })
            })
            .await
            .map_err(|e| {
                ConsoleError::Keys(match e {
                    ReadError::Store(e) => e.to_string(),
                    ReadError::Task(e) => e,
                })
            })?;
        if keys.is_empty() {
            return Err(ConsoleError::Keys("the store returned no key".into()));
        }
        let keys: Arc<[store::SigningKey]> = keys.into();
        *self.keys.read.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Instant::now(), keys.clone()));
        Ok(keys)
    }

    fn token_mode(&self) -> bool {
        self.web.view.token_set()
    }

    /// The MAC of a session cookie's fields under `key`, bound to the daemon's token as it
    /// is now (its digest, or that there is none): a cookie issued under another token, or
    /// before a token was set, does not verify.
    fn session_mac(
        &self,
        key: &store::SigningKey,
        key_id: &str,
        expires: &str,
        nonce: &str,
    ) -> HmacSha256 {
        let digest = self.web.view.token_digest();
        let token: &[u8] = match &digest {
            Some(digest) => digest,
            None => b"no-token",
        };
        mac(
            key,
            &[
                b"session",
                token,
                key_id.as_bytes(),
                expires.as_bytes(),
                nonce.as_bytes(),
            ],
        )
    }

    /// A new session: its cookie value (`KEY.EXPIRES.NONCE.TAG`) and CSRF token.
    async fn issue(&self, now_s: i64) -> Result<(String, String), ConsoleError> {
        let keys = self.keys(None).await?;
        let key = keys
            .first()
            .ok_or_else(|| ConsoleError::Keys("no signing key".into()))?;
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).map_err(|e| ConsoleError::Random(e.to_string()))?;
        let nonce = hex(&nonce);
        let expires = (now_s + SESSION_SECONDS).to_string();
        let key_id = key.id.to_string();
        let tag = hex(&self
            .session_mac(key, &key_id, &expires, &nonce)
            .finalize()
            .into_bytes());
        let csrf = csrf(key, &nonce);
        Ok((format!("{key_id}.{expires}.{nonce}.{tag}"), csrf))
    }

    /// The session a cookie value proves, if a key of the store signed it and it is unexpired.
    async fn verify(&self, value: &str, now_s: i64) -> Option<Session> {
        let mut parts = value.splitn(4, '.');
        let (key_id, expires, nonce, tag) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let id: i64 = key_id.parse().ok()?;
        let expires_at: i64 = expires.parse().ok()?;
        if expires_at <= now_s {
            return None;
        }
        let tag = unhex(tag)?;
        let keys = match self.keys(Some(id)).await {
            Ok(keys) => keys,
            Err(e) => {
                tracing::warn!("{e}");
                return None;
            }
        };
        let key = keys.iter().find(|k| k.id == id)?;
        self.session_mac(key, key_id, expires, nonce)
            .verify_slice(&tag)
            .ok()?;
        Some(Session {
            csrf: csrf(key, nonce),
            issued: None,
        })
    }

    /// The session of a request's cookie.
    async fn session_of(&self, headers: &HeaderMap, now_s: i64) -> Option<Session> {
        let values: Vec<String> = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == COOKIE)
            .map(|(_, value)| value.to_owned())
            .collect();
        for value in values {
            if let Some(session) = self.verify(&value, now_s).await {
                return Some(session);
            }
        }
        None
    }

    /// A fresh session for this request, with its `Set-Cookie`.
    async fn new_session(&self, now_s: i64, headers: &HeaderMap) -> Result<Session, ConsoleError> {
        let (value, csrf) = self.issue(now_s).await?;
        let secure = headers
            .get("x-forwarded-proto")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"));
        Ok(Session {
            csrf,
            issued: Some(format!(
                "{COOKIE}={value}; Path={PREFIX}; Max-Age={SESSION_SECONDS}; HttpOnly; \
                 SameSite=Strict{}",
                if secure { "; Secure" } else { "" }
            )),
        })
    }
}

/// A session's CSRF token: an HMAC of its nonce with the key that signed it.
fn csrf(key: &store::SigningKey, nonce: &str) -> String {
    hex(&mac(key, &[b"csrf", nonce.as_bytes()])
        .finalize()
        .into_bytes())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Compares two strings in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Lets signed-in requests through (with their [`Session`] as an extension); a request with
/// the daemon's bearer token, or any request on a daemon without a token, gets a new session.
/// Others are sent to the login page (pages) or refused with 401.
async fn authenticate(
    State(console): State<Console>,
    mut request: Request,
    next: Next,
) -> Response {
    let now_s = now_ms() / 1000;
    let session = match console.session_of(request.headers(), now_s).await {
        Some(session) => Some(session),
        None if !console.token_mode() || console.web.view.authorized(request.headers()) => {
            match console.new_session(now_s, request.headers()).await {
                Ok(session) => Some(session),
                Err(e) => {
                    tracing::error!("{e}");
                    return problem_page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string());
                }
            }
        }
        None => None,
    };
    request.headers_mut().remove(header::AUTHORIZATION);
    let Some(session) = session else {
        let is_page = request.method() == Method::GET
            && request.uri().path() != "/console/events"
            && !request.headers().contains_key("hx-request");
        if is_page {
            let next = request
                .uri()
                .path_and_query()
                .map_or("/console/", |p| p.as_str());
            return see_other(&format!("/console/login?{}", encode(&[("next", next)])));
        }
        return problem_page(
            StatusCode::UNAUTHORIZED,
            "sign in first: open /console/login and enter the daemon's token (HOOKS_MCP_TOKEN)",
        );
    };
    let issued = session.issued.clone();
    request.extensions_mut().insert(session);
    let mut response = next.run(request).await;
    if let Some(cookie) = issued.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Security headers on every console response, and the time it took (`Server-Timing`).
async fn protect(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let mut response = next.run(request).await;
    let took = started.elapsed().as_secs_f64() * 1000.0;
    let headers = response.headers_mut();
    let fixed = [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        // Not `no-referrer`: with it, browsers send `Origin: null` on form posts, which the
        // Origin check refuses.
        (header::REFERRER_POLICY, "same-origin"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if let Ok(value) = HeaderValue::from_str(&format!("app;dur={took:.2}")) {
        headers.insert("server-timing", value);
    }
    response
}

/// URL-encodes query pairs.
fn encode(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap_or_default()
}

fn see_other(location: &str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, location.to_owned())],
    )
        .into_response()
}

fn html(status: StatusCode, page: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page,
    )
        .into_response()
}

fn problem_page(status: StatusCode, message: &str) -> Response {
    html(status, views::problem(status, message).into_string())
}

async fn not_found() -> Response {
    problem_page(
        StatusCode::NOT_FOUND,
        "no console page is here; start from /console/",
    )
}

/// A page or, for the live region's own requests (`HX-Request`), its live part alone.
fn page_response(headers: &HeaderMap, page: Page) -> Response {
    let live_only = headers.contains_key("hx-request");
    html(StatusCode::OK, page.render(live_only).into_string())
}

// --- Reading ---------------------------------------------------------------------------------

/// Runs a page's `read` on the blocking pool, and records in `frame` the store's change version
/// at that read (for the page's event stream to compare with).
async fn read_page<T: Send + 'static>(
    web: &OperatorWeb,
    frame: &mut views::Frame,
    read: impl FnOnce(&StoreHandle) -> Result<T, store::StoreError> + Send + 'static,
) -> Result<T, Response> {
    let read = move |store: &StoreHandle| Ok((read(store)?, change_version(store)));
    match web.read(read).await {
        Ok((value, version)) => {
            frame.version = version;
            Ok(value)
        }
        Err(e) => Err(read_problem(&e)),
    }
}

/// The store's change version now (`None` where the store cannot say).
fn change_version(store: &StoreHandle) -> Option<u64> {
    store.change_version().ok().flatten()
}

/// The page for a read that did not answer.
fn read_problem(e: &ReadError) -> Response {
    match e {
        ReadError::Store(e) => problem_page(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("the store could not be read: {e}"),
        ),
        ReadError::Task(e) => problem_page(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the read failed: {e}"),
        ),
    }
}

/// What every page shows besides its content.
fn frame(console: &Console, session: &Session, query: &Params, path: &str) -> views::Frame {
    let kept: Vec<(&str, &str)> = query
        .iter()
        .filter(|(k, _)| !BANNER_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // Only a banner this session's own form produced: a link cannot put words in one.
    let banner = |kind: &str| {
        let text = query.get(kind)?;
        let tag = query.get("banner")?;
        same(tag, &banner_tag(session, kind, text)).then(|| text.clone())
    };
    let path = if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", encode(&kept))
    };
    views::Frame {
        path,
        csrf: session.csrf.clone(),
        signed_in_with_token: console.token_mode(),
        notice: banner("notice"),
        problem: banner("problem"),
        version: None,
        now: now_ms(),
    }
}

type Params = HashMap<String, String>;

async fn overview(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Query(query): Query<Params>,
) -> Response {
    let mut frame = frame(&console, &session, &query, "/console/");
    let web = &console.web;
    // Read before the overview: a change after this reading refreshes the page.
    frame.version = web.read(|s| Ok(change_version(s))).await.ok().flatten();
    let model = match model::overview(web, frame.now).await {
        Ok(model) => model,
        Err(e) => return read_problem(&e),
    };
    let overview = views::Overview {
        charts: web.view.charts(frame.now),
        model,
    };
    page_response(&headers, Page::Overview(frame, overview))
}

/// Messages listed on a page of the channels view.
const MESSAGES_PER_PAGE: u32 = 50;
/// Sessions read with each alert's delivery report on the channels view.
const REPORT_SESSIONS: u32 = 200;
/// Sessions listed on a message's page at a time.
const MESSAGE_SESSIONS: u32 = 500;

async fn channels(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Query(query): Query<Params>,
) -> Response {
    let mut frame = frame(&console, &session, &query, "/console/channels");
    let now = frame.now;
    let channel = query.get("channel").filter(|c| !c.is_empty()).cloned();
    let before = match query.get("before").map(|b| parse_cursor(b)) {
        Some(Some(cursor)) => Some(cursor),
        Some(None) => {
            return problem_page(
                StatusCode::BAD_REQUEST,
                "before: not a page cursor; follow the console's own “Older” link",
            );
        }
        None => None,
    };
    let live_since = console.web.retention.live_since(now);
    let filter = channel.clone();
    let read = read_page(&console.web, &mut frame, move |store| {
        let mut list = store.channels(now)?;
        list.sort_by_key(|c| std::cmp::Reverse(c.latest_at));
        let mut messages = store.read_messages(&store::MessageQuery {
            channel: filter,
            session_id: None,
            include_acknowledged: true,
            limit: MESSAGES_PER_PAGE + 1,
            now,
            before,
        })?;
        let more = messages.len() > MESSAGES_PER_PAGE as usize;
        messages.truncate(MESSAGES_PER_PAGE as usize);
        let mut rows = Vec::with_capacity(messages.len());
        for view in messages {
            let report = if view.message.severity == store::Severity::Info {
                None
            } else {
                store.delivery_report(&store::ReportQuery {
                    message_id: view.message.id,
                    live_since,
                    after_session: None,
                    limit: REPORT_SESSIONS,
                })?
            };
            rows.push((view.message, report));
        }
        Ok((list, rows, more))
    })
    .await;
    let (list, rows, more) = match read {
        Ok(read) => read,
        Err(response) => return response,
    };
    let older = more
        .then(|| {
            rows.last()
                .map(|(m, _)| format!("{}.{}", m.created_at, m.id))
        })
        .flatten();
    page_response(
        &headers,
        Page::Channels(
            frame,
            views::Channels {
                channels: list,
                filter: channel,
                messages: rows,
                older,
            },
        ),
    )
}

fn parse_cursor(text: &str) -> Option<store::MessageCursor> {
    let (at, id) = text.split_once('.')?;
    Some(store::MessageCursor {
        created_at: at.parse().ok()?,
        id: id.parse().ok()?,
    })
}

async fn message(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<Params>,
) -> Response {
    let Ok(id) = id.parse::<i64>() else {
        return problem_page(
            StatusCode::BAD_REQUEST,
            "a message's id is a number; pick a message from the channels page",
        );
    };
    let path = format!("/console/messages/{id}");
    let mut frame = frame(&console, &session, &query, &path);
    let now = frame.now;
    let live_since = console.web.retention.live_since(now);
    let after = query.get("after").cloned();
    let read = read_page(&console.web, &mut frame, move |store| {
        let report = store.delivery_report(&store::ReportQuery {
            message_id: id,
            live_since,
            after_session: after,
            limit: MESSAGE_SESSIONS + 1,
        })?;
        Ok(report)
    })
    .await;
    let report = match read {
        Ok(read) => read,
        Err(response) => return response,
    };
    let Some(mut report) = report else {
        return problem_page(
            StatusCode::NOT_FOUND,
            &format!("no stored message has id {id}; it may have been cleared or pruned"),
        );
    };
    let more = report.sessions.len() > MESSAGE_SESSIONS as usize;
    report.sessions.truncate(MESSAGE_SESSIONS as usize);
    let next = more
        .then(|| report.sessions.last().map(|s| s.session_id.clone()))
        .flatten();
    page_response(&headers, Page::Message(frame, report, next))
}

/// Sessions on one page of the sessions view.
const SESSIONS_PER_PAGE: u32 = 100;

async fn sessions(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Query(query): Query<Params>,
) -> Response {
    let mut frame = frame(&console, &session, &query, "/console/sessions");
    let now = frame.now;
    let all = query.get("all").is_some_and(|v| v == "1");
    let offset: u32 = match query.get("offset").map(|o| o.trim().parse()) {
        None => 0,
        Some(Ok(offset)) => offset,
        Some(Err(_)) => {
            return problem_page(
                StatusCode::BAD_REQUEST,
                "offset: not a whole number of sessions to skip; follow the page's own links",
            );
        }
    };
    let live_since = console.web.retention.live_since(now);
    let read = read_page(&console.web, &mut frame, move |store| {
        let mut list = store.sessions(&store::SessionQuery {
            seen_since: (!all).then_some(live_since),
            include_ended: all,
            offset,
            limit: SESSIONS_PER_PAGE + 1,
        })?;
        let more = list.len() > SESSIONS_PER_PAGE as usize;
        list.truncate(SESSIONS_PER_PAGE as usize);
        let ids: Vec<String> = list.iter().map(|s| s.session_id.clone()).collect();
        let unacked: HashMap<String, u64> = store
            .unacknowledged_alerts(&ids, now)?
            .into_iter()
            .collect();
        Ok((list, unacked, more))
    })
    .await;
    let (list, unacked, more) = match read {
        Ok(read) => read,
        Err(response) => return response,
    };
    page_response(
        &headers,
        Page::Sessions(
            frame,
            views::Sessions {
                all,
                live_since,
                rows: list,
                unacked,
                next_offset: more.then(|| offset.saturating_add(SESSIONS_PER_PAGE)),
            },
        ),
    )
}

/// Firings shown with each schedule.
const FIRINGS_PER_SCHEDULE: u32 = 5;

async fn schedules(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Query(query): Query<Params>,
) -> Response {
    let mut frame = frame(&console, &session, &query, "/console/schedules");
    let read = read_page(&console.web, &mut frame, |store| {
        let mut list = Vec::new();
        for schedule in store.schedules()? {
            let firings = store.recent_firings(Some(schedule.id), FIRINGS_PER_SCHEDULE)?;
            list.push((schedule, firings));
        }
        // Active ones first, then the most recent.
        list.sort_by_key(|(s, _)| {
            (
                s.status != store::ScheduleStatus::Active,
                std::cmp::Reverse(s.id),
            )
        });
        Ok(list)
    })
    .await;
    let list = match read {
        Ok(read) => read,
        Err(response) => return response,
    };
    page_response(&headers, Page::Schedules(frame, list))
}

async fn reminders(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Query(query): Query<Params>,
) -> Response {
    let mut frame = frame(&console, &session, &query, "/console/reminders");
    let read = read_page(&console.web, &mut frame, |store| store.reminders()).await;
    let list = match read {
        Ok(read) => read,
        Err(response) => return response,
    };
    page_response(&headers, Page::Reminders(frame, list))
}

async fn conditions(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Query(query): Query<Params>,
) -> Response {
    let mut frame = frame(&console, &session, &query, "/console/conditions");
    let read = read_page(&console.web, &mut frame, |store| store.conditions()).await;
    let list = match read {
        Ok(read) => read,
        Err(response) => return response,
    };
    page_response(&headers, Page::Conditions(frame, list))
}

/// Audit entries on one page.
const AUDIT_PER_PAGE: u32 = 100;

async fn audit(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
    Query(query): Query<Params>,
) -> Response {
    let mut frame = frame(&console, &session, &query, "/console/audit");
    let action = match query.get("action").filter(|a| !a.is_empty()) {
        None => None,
        Some(text) => match text.parse::<store::AuditAction>() {
            Ok(action) => Some(action),
            Err(e) => return problem_page(StatusCode::BAD_REQUEST, &format!("action: {e}")),
        },
    };
    let actor = query
        .get("actor")
        .map(|a| a.trim().to_owned())
        .filter(|a| !a.is_empty());
    let before: Option<i64> = match query.get("before").map(|b| b.parse()) {
        Some(Ok(id)) => Some(id),
        Some(Err(_)) => {
            return problem_page(
                StatusCode::BAD_REQUEST,
                "before: not an entry id; follow the console's own “Older” link",
            );
        }
        None => None,
    };
    let filter = views::AuditFilter {
        action,
        actor: actor.clone(),
    };
    let wanted = filter.clone();
    // Filters apply to the pages the store returns, newest first, until one is full or the
    // trail ends (at most 50 store pages per request).
    let read = read_page(&console.web, &mut frame, move |store| {
        let mut out = Vec::new();
        let mut cursor = before;
        let mut ended = false;
        for _ in 0..50 {
            let page = store.recent_audit(cursor, AUDIT_PER_PAGE + 1)?;
            ended = page.len() <= AUDIT_PER_PAGE as usize;
            cursor = page.last().map(|e| e.id).or(cursor);
            out.extend(page.into_iter().filter(|e| wanted.admits(e)));
            if ended || out.len() > AUDIT_PER_PAGE as usize {
                break;
            }
        }
        let more = out.len() > AUDIT_PER_PAGE as usize || !ended;
        out.truncate(AUDIT_PER_PAGE as usize);
        Ok((out, more))
    })
    .await;
    let (entries, more) = match read {
        Ok(read) => read,
        Err(response) => return response,
    };
    let older = more.then(|| entries.last().map(|e| e.id)).flatten();
    page_response(&headers, Page::Audit(frame, filter, entries, older))
}

// --- Live updates ----------------------------------------------------------------------------

/// `GET /console/events?v=VERSION`: a `change` event whenever the store's change version moves
/// (at once if it already differs from the page's `VERSION`), and every second when the store
/// has no version to compare.
async fn events(State(console): State<Console>, Query(query): Query<Params>) -> Response {
    let seen: Option<u64> = query.get("v").and_then(|v| v.parse().ok());
    let web = console.web.clone();
    let state = Watching {
        rx: web.changes.subscribe(),
        seen,
        first: true,
        blind: false,
        recheck: false,
    };
    let stream = futures_util::stream::unfold(state, move |mut w| {
        let web = web.clone();
        async move {
            loop {
                // Each pass waits for the store-change feed or, while the store cannot say its
                // version, a second; the first one at most FIRST_LOOK, so that a change between
                // the page's read and this stream's start is reported soon after the head.
                // After a wake that found the version unchanged, one more look as soon: the
                // feed that woke the stream may hear of a change before the store's version
                // does (on PostgreSQL each has a listening connection of its own).
                let soon = w.first || w.recheck;
                let wait = if soon { FIRST_LOOK } else { BLIND_REFRESH };
                let woken = tokio::select! {
                    () = web.stop.cancelled() => return None,
                    changed = w.rx.changed() => {
                        if changed.is_err() {
                            return None;
                        }
                        true
                    }
                    () = tokio::time::sleep(wait), if soon || w.blind => false,
                };
                let first = std::mem::replace(&mut w.first, false);
                w.recheck = false;
                let data = match web.read(|s| Ok(change_version(s))).await.ok().flatten() {
                    Some(v) => {
                        w.blind = false;
                        let previous = w.seen.replace(v);
                        // The first version heard is the baseline when the page had none.
                        match previous {
                            Some(p) if p != v => v.to_string(),
                            _ => {
                                w.recheck = woken;
                                continue;
                            }
                        }
                    }
                    None => {
                        w.blind = true;
                        if first {
                            continue;
                        }
                        "?".to_owned()
                    }
                };
                let event = Event::default().event("change").data(data);
                return Some((Ok::<_, std::convert::Infallible>(event), w));
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// An event stream's state: the feed, the version the page last heard of, and whether the
/// store could say its version.
struct Watching {
    rx: tokio::sync::watch::Receiver<server_full::ChangeVersion>,
    seen: Option<u64>,
    first: bool,
    blind: bool,
    /// Woken by the feed, the version had not moved yet: look again after [`FIRST_LOOK`].
    recheck: bool,
}

// --- Signing in ------------------------------------------------------------------------------

/// Where to go after signing in: a console page, never elsewhere.
fn safe_next(next: Option<&String>) -> String {
    match next {
        Some(n)
            if n.starts_with("/console/")
                && !n.contains("//")
                && !n.contains('\\')
                && !n.chars().any(char::is_control) =>
        {
            n.clone()
        }
        _ => "/console/".to_owned(),
    }
}

async fn login_form(State(console): State<Console>, Query(query): Query<Params>) -> Response {
    if !console.token_mode() {
        return see_other("/console/");
    }
    let next = safe_next(query.get("next"));
    html(StatusCode::OK, views::login(&next, None).into_string())
}

async fn login(
    State(console): State<Console>,
    headers: HeaderMap,
    Form(form): Form<Params>,
) -> Response {
    let next = safe_next(form.get("next"));
    if !console.web.view.token_set() {
        return see_other("/console/");
    }
    let given = form.get("token").map(|t| t.trim()).unwrap_or("");
    if !console.web.view.token_matches(given.as_bytes()) {
        tracing::warn!("refused a console sign-in with a wrong token");
        return html(
            StatusCode::UNAUTHORIZED,
            views::login(
                &next,
                Some("That is not this daemon's token. Enter the value of HOOKS_MCP_TOKEN."),
            )
            .into_string(),
        );
    }
    match console.new_session(now_ms() / 1000, &headers).await {
        Ok(session) => {
            let mut response = see_other(&next);
            if let Some(cookie) = session.issued.and_then(|c| HeaderValue::from_str(&c).ok()) {
                response.headers_mut().append(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(e) => problem_page(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

async fn logout(Extension(session): Extension<Session>, Form(form): Form<Params>) -> Response {
    if let Some(refused) = check_csrf(&session, &form) {
        return refused;
    }
    let mut response = see_other(if session.issued.is_some() {
        "/console/"
    } else {
        "/console/login"
    });
    if let Ok(cookie) = HeaderValue::from_str(&format!(
        "{COOKIE}=; Path={PREFIX}; Max-Age=0; HttpOnly; SameSite=Strict"
    )) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

// --- Actions ---------------------------------------------------------------------------------

/// The refusal of a form without this session's CSRF token; `None` when it has it.
fn check_csrf(session: &Session, form: &Params) -> Option<Response> {
    match form.get("csrf") {
        Some(given) if same(given, &session.csrf) => None,
        _ => {
            tracing::warn!("refused a console form without a valid CSRF token");
            Some(problem_page(
                StatusCode::FORBIDDEN,
                "Forbidden: the form's CSRF token is missing or belongs to another console \
                 session; reload the page and submit the form again",
            ))
        }
    }
}

/// Calls `tool` as the console's actor; its answer, or its error as text.
async fn call_tool(console: &Console, tool: &'static str, args: Value) -> Result<Value, String> {
    let store = console.web.store.clone();
    let call = tokio::task::spawn_blocking(move || {
        let mut extensions = server_full::Settings::extensions(store);
        extensions.insert(store::Actor::Token(ACTOR.to_owned()));
        let policy = catalogue::SessionPolicy::Fallback(None);
        let ctx = catalogue::CallContext::new(now_ms(), &policy, &extensions);
        catalogue::call(tool, &ctx, args).map_err(|e| e.to_string())
    });
    match call.await {
        Ok(result) => result,
        Err(e) => Err(format!("the call failed: {e}")),
    }
}

/// Back to the page the form came from (its `back` field, a console page) with a notice or a
/// problem to show.
/// The query keys of a banner: its text (`notice` or `problem`) and its tag.
const BANNER_KEYS: [&str; 3] = ["notice", "problem", "banner"];

/// The tag that shows a banner's text came from `session`'s own form: a MAC keyed by the
/// session's CSRF secret, which no other page knows.
fn banner_tag(session: &Session, kind: &str, text: &str) -> String {
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(session.csrf.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    for part in [b"banner".as_slice(), kind.as_bytes(), text.as_bytes()] {
        mac.update(part);
        mac.update(b"\0");
    }
    hex(&mac.finalize().into_bytes()[..16])
}

fn back(session: &Session, form: &Params, result: Result<String, String>) -> Response {
    let page = safe_next(form.get("back"));
    let (page, anchor) = match page.split_once('#') {
        Some((p, a)) => (p.to_owned(), format!("#{a}")),
        None => (page, String::new()),
    };
    let (path, query) = page.split_once('?').unwrap_or((&page, ""));
    let mut pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    pairs.retain(|(k, _)| !BANNER_KEYS.contains(&k.as_str()));
    let (kind, text) = match result {
        Ok(notice) => ("notice", notice),
        Err(problem) => ("problem", problem),
    };
    let tag = banner_tag(session, kind, &text);
    pairs.extend([(kind.to_owned(), text), ("banner".to_owned(), tag)]);
    let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
    see_other(&format!("{path}?{query}{anchor}"))
}

fn field<'a>(form: &'a Params, name: &str) -> &'a str {
    form.get(name).map_or("", |v| v.as_str())
}

async fn publish(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Form(form): Form<Params>,
) -> Response {
    if let Some(refused) = check_csrf(&session, &form) {
        return refused;
    }
    let mut args = json!({
        "channel": field(&form, "channel").trim(),
        "message": field(&form, "message"),
    });
    let severity = field(&form, "severity").trim();
    if !severity.is_empty() {
        args["severity"] = severity.into();
    }
    let to = field(&form, "to").trim();
    if !to.is_empty() {
        args["to"] = to.into();
    }
    let ttl = field(&form, "ttl_seconds").trim();
    if !ttl.is_empty() {
        match ttl.parse::<u64>() {
            Ok(n) => args["ttl_seconds"] = n.into(),
            Err(_) => {
                return back(
                    &session,
                    &form,
                    Err(format!(
                        "Not published: the lifetime `{ttl}` is not a whole number of seconds"
                    )),
                );
            }
        }
    }
    let result = call_tool(&console, "channel_publish", args).await;
    back(
        &session,
        &form,
        result
            .map(|answer| {
                let to = answer["to"]
                    .as_str()
                    .map(|to| format!(" to session {to}"))
                    .unwrap_or_default();
                format!(
                    "Published message #{} on {}{to}",
                    answer["id"],
                    answer["channel"].as_str().unwrap_or("")
                )
            })
            .map_err(|e| format!("Not published: {e}")),
    )
}

/// An action on one record named by its id in the path: what it is.
struct IdAction {
    /// What the id names, for messages (`message`, `schedule`, `reminder`).
    what: &'static str,
    /// The tool that acts.
    tool: &'static str,
    /// The tool's argument that takes the id.
    argument: &'static str,
    /// What was done (`Cleared`, `Cancelled`).
    done: &'static str,
    /// What did not happen (`Not cleared`).
    failed: &'static str,
}

/// Checks the form, calls the action's tool on the path's id, and goes back with the outcome.
async fn act_on_id(
    console: &Console,
    session: &Session,
    id: &str,
    form: &Params,
    action: IdAction,
) -> Response {
    if let Some(refused) = check_csrf(session, form) {
        return refused;
    }
    let Ok(id) = id.parse::<i64>() else {
        return back(
            session,
            form,
            Err(format!(
                "{}: `{id}` is not a {} id",
                action.failed, action.what
            )),
        );
    };
    let mut args = serde_json::Map::new();
    args.insert(action.argument.to_owned(), id.into());
    let result = call_tool(console, action.tool, Value::Object(args)).await;
    let outcome = match result {
        // `channel_clear` answers an unknown id with `removed: 0`, not an error.
        Ok(answer) if answer["removed"] == 0 => Err(format!(
            "{}: there is no {} #{id} (removed already, expired, or never made)",
            action.failed, action.what
        )),
        Ok(_) => Ok(format!("{} {} #{id}", action.done, action.what)),
        Err(e) => Err(format!("{}: {e}", action.failed)),
    };
    back(session, form, outcome)
}

async fn clear_message(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<Params>,
) -> Response {
    let action = IdAction {
        what: "message",
        tool: "channel_clear",
        argument: "message_id",
        done: "Cleared",
        failed: "Not cleared",
    };
    act_on_id(&console, &session, &id, &form, action).await
}

async fn cancel_schedule(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<Params>,
) -> Response {
    let action = IdAction {
        what: "schedule",
        tool: "schedule_cancel",
        argument: "schedule_id",
        done: "Cancelled",
        failed: "Not cancelled",
    };
    act_on_id(&console, &session, &id, &form, action).await
}

async fn add_reminder(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Form(form): Form<Params>,
) -> Response {
    if let Some(refused) = check_csrf(&session, &form) {
        return refused;
    }
    let cadence = field(&form, "cadence").trim();
    let Ok(cadence) = cadence.parse::<u64>() else {
        return back(
            &session,
            &form,
            Err(format!(
                "Not added: the cadence `{cadence}` is not a whole number of tool calls"
            )),
        );
    };
    let mut args = json!({ "message": field(&form, "message"), "cadence": cadence });
    let tag = field(&form, "tag").trim();
    if !tag.is_empty() {
        args["tag"] = tag.into();
    }
    let result = call_tool(&console, "enforcement_set", args).await;
    back(
        &session,
        &form,
        result
            .map(|answer| format!("Added reminder #{}", answer["id"]))
            .map_err(|e| format!("Not added: {e}")),
    )
}

async fn clear_reminder(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<Params>,
) -> Response {
    let action = IdAction {
        what: "reminder",
        tool: "enforcement_clear",
        argument: "enforcement_id",
        done: "Cleared",
        failed: "Not cleared",
    };
    act_on_id(&console, &session, &id, &form, action).await
}

// --- Assets ----------------------------------------------------------------------------------

/// The embedded files: name, content type, bytes.
const ASSETS: [(&str, &str, &[u8]); 4] = [
    (
        "htmx.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/htmx.min.js"),
    ),
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/console.js"),
    ),
    (
        "console.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/console.css"),
    ),
    (
        "LICENSE.htmx",
        "text/plain; charset=utf-8",
        include_bytes!("assets/LICENSE.htmx"),
    ),
];

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, bytes)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "public, max-age=3600"),
            ],
            *bytes,
        )
            .into_response(),
        None => not_found().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_odd_or_foreign_text() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(unhex("000fff"), Some(vec![0, 15, 255]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("éé"), None);
    }

    #[test]
    fn next_pages_stay_on_the_console() {
        let s = |v: &str| safe_next(Some(&v.to_owned()));
        assert_eq!(
            s("/console/channels?channel=a"),
            "/console/channels?channel=a"
        );
        assert_eq!(s("https://evil.example/"), "/console/");
        assert_eq!(s("//evil.example/console/"), "/console/");
        assert_eq!(s("/console//evil.example"), "/console/");
        assert_eq!(s("/console/\\evil"), "/console/");
        assert_eq!(s("/mcp"), "/console/");
        assert_eq!(safe_next(None), "/console/");
    }

    #[test]
    fn strings_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
    }
}
