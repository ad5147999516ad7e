//! The console's HTML. Every value is inserted through `maud`, which escapes it: broadcast
//! bodies, channel names, scripts and working directories are user text and render as text.
//! No inline scripts or styles (the Content-Security-Policy forbids them); the charts are SVG
//! drawn with attributes only.

use std::collections::HashMap;

use axum::http::StatusCode;
use maud::{DOCTYPE, Markup, html};
use store::{
    AuditAction, AuditEntry, ChannelSummary, Condition, DeliveryReport, FiringRecord, Message,
    Millis, Reminder, Schedule, SessionRecord, Severity, to_rfc3339,
};

/// The htmx settings: no eval, no script tags from swapped content, no inline indicator
/// styles, no page snapshots kept in the browser's storage.
const HTMX_CONFIG: &str = r#"{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"historyCacheSize":0,"selfRequestsOnly":true,"defaultSwapStyle":"innerHTML"}"#;

/// What every page shows besides its content.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    /// The page's path and query, without a notice or problem (its live region re-reads it;
    /// forms come back to it).
    pub(crate) path: String,
    /// The session's CSRF token, for the forms.
    pub(crate) csrf: String,
    /// Whether sessions start with the token (then a sign-out button is shown).
    pub(crate) signed_in_with_token: bool,
    /// What the last action did.
    pub(crate) notice: Option<String>,
    /// Why the last action failed.
    pub(crate) problem: Option<String>,
    /// The change feed's version when the page was read (`None` while it cannot reach the
    /// store).
    pub(crate) version: Option<u64>,
    /// When the page was read (Unix ms).
    pub(crate) now: Millis,
}

/// The overview's figures: the read model and, with metrics on, the charts.
#[derive(Debug)]
pub(crate) struct Overview {
    pub(crate) model: crate::model::Overview,
    /// `None` with metrics off.
    pub(crate) charts: Option<crate::view::Charts>,
}

/// The channels page's content.
#[derive(Debug)]
pub(crate) struct Channels {
    pub(crate) channels: Vec<ChannelSummary>,
    pub(crate) filter: Option<String>,
    /// Messages, newest first, each alert or critical one with its delivery report.
    pub(crate) messages: Vec<(Message, Option<DeliveryReport>)>,
    /// The cursor of the next (older) page.
    pub(crate) older: Option<String>,
}

/// The sessions page's content.
#[derive(Debug)]
pub(crate) struct Sessions {
    pub(crate) all: bool,
    pub(crate) live_since: Millis,
    pub(crate) rows: Vec<SessionRecord>,
    pub(crate) unacked: HashMap<String, u64>,
    pub(crate) next_offset: Option<u32>,
}

/// The audit page's filters.
#[derive(Debug, Clone)]
pub(crate) struct AuditFilter {
    pub(crate) action: Option<AuditAction>,
    /// Matches `kind:name`, the kind, or the name.
    pub(crate) actor: Option<String>,
}

impl AuditFilter {
    /// Whether `entry` passes the filters.
    pub(crate) fn admits(&self, entry: &AuditEntry) -> bool {
        self.action.is_none_or(|a| a == entry.action)
            && self.actor.as_deref().is_none_or(|actor| {
                actor == entry.actor.to_string()
                    || actor == entry.actor.kind()
                    || actor == entry.actor.name()
            })
    }
}

/// A console page with what it shows.
#[derive(Debug)]
pub(crate) enum Page {
    Overview(Frame, Overview),
    Channels(Frame, Channels),
    Message(Frame, DeliveryReport, Option<String>),
    Sessions(Frame, Sessions),
    Schedules(Frame, Vec<(Schedule, Vec<FiringRecord>)>),
    Reminders(Frame, Vec<Reminder>),
    Conditions(Frame, Vec<Condition>),
    Audit(Frame, AuditFilter, Vec<AuditEntry>, Option<i64>),
}

/// The sections of the navigation: path, label.
const NAV: [(&str, &str); 7] = [
    ("/console/", "Overview"),
    ("/console/channels", "Channels"),
    ("/console/sessions", "Sessions"),
    ("/console/schedules", "Schedules"),
    ("/console/reminders", "Reminders"),
    ("/console/conditions", "Conditions"),
    ("/console/audit", "Audit"),
];

impl Page {
    /// The whole page, or its live region alone (`live_only`: the region's own re-reads).
    pub(crate) fn render(&self, live_only: bool) -> Markup {
        let (frame, title, nav, before, live) = match self {
            Page::Overview(f, o) => (f, "Overview", "/console/", html! {}, overview(f, o)),
            Page::Channels(f, c) => (
                f,
                "Channels",
                "/console/channels",
                publish_form(f, c.filter.as_deref()),
                channels(f, c),
            ),
            Page::Message(f, r, next) => (
                f,
                "Message",
                "/console/channels",
                html! {},
                message_page(f, r, next.as_deref()),
            ),
            Page::Sessions(f, s) => (f, "Sessions", "/console/sessions", html! {}, sessions(f, s)),
            Page::Schedules(f, s) => (
                f,
                "Schedules",
                "/console/schedules",
                html! {},
                schedules(f, s),
            ),
            Page::Reminders(f, r) => (
                f,
                "Reminders",
                "/console/reminders",
                reminder_form(f),
                reminders(f, r),
            ),
            Page::Conditions(f, c) => (
                f,
                "Conditions",
                "/console/conditions",
                html! {},
                conditions(f, c),
            ),
            Page::Audit(f, filter, entries, older) => (
                f,
                "Audit log",
                "/console/audit",
                audit_form(filter),
                audit(f, filter, entries, *older),
            ),
        };
        if live_only {
            return live;
        }
        layout(frame, title, nav, before, live)
    }
}

fn head(title: &str) -> Markup {
    let v = protocol_lite::handshake::SERVER_VERSION;
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="color-scheme" content="light dark";
            meta name="htmx-config" content=(HTMX_CONFIG);
            title { (title) " · hooks-mcp console" }
            link rel="stylesheet" href={ "/console/assets/console.css?v=" (v) };
            script src={ "/console/assets/htmx.min.js?v=" (v) } defer {}
            script src={ "/console/assets/console.js?v=" (v) } defer {}
        }
    }
}

fn layout(frame: &Frame, title: &str, nav: &str, before: Markup, live: Markup) -> Markup {
    let events = match frame.version {
        Some(v) => format!("/console/events?v={v}"),
        None => "/console/events".to_owned(),
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#content" { "Skip to content" }
                header {
                    a.brand href="/console/" { "hooks-mcp" }
                    nav aria-label="Sections" {
                        ul {
                            @for (path, label) in NAV {
                                li {
                                    @if path == nav {
                                        a href=(path) aria-current="page" { (label) }
                                    } @else {
                                        a href=(path) { (label) }
                                    }
                                }
                            }
                        }
                    }
                    @if frame.signed_in_with_token {
                        form.logout method="post" action="/console/logout" {
                            input type="hidden" name="csrf" value=(frame.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main #content tabindex="-1" {
                    h1 { (title) }
                    @if let Some(notice) = &frame.notice {
                        p.notice role="status" { (notice) }
                    }
                    @if let Some(problem) = &frame.problem {
                        p.problem role="alert" { (problem) }
                    }
                    (before)
                    div #live hx-get=(frame.path) data-events=(events)
                        hx-trigger="refresh, every 15s" hx-swap="innerHTML" aria-live="polite" {
                        (live)
                    }
                }
                footer {
                    "hooks-mcp " (protocol_lite::handshake::SERVER_VERSION)
                    " · updated live · "
                    a href="/console/assets/LICENSE.htmx" { "htmx licence" }
                }
            }
        }
    }
}

/// A login page.
pub(crate) fn login(next: &str, problem: Option<&str>) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Sign in"))
            body {
                main #content.narrow {
                    h1 { "hooks-mcp console" }
                    @if let Some(problem) = problem {
                        p.problem role="alert" { (problem) }
                    }
                    form.card method="post" action="/console/login" {
                        input type="hidden" name="next" value=(next);
                        label for="token" { "The daemon's token" }
                        input #token type="password" name="token" required autocomplete="current-password" autofocus;
                        p.hint { "The value of HOOKS_MCP_TOKEN. The console keeps you signed in for 12 hours." }
                        button type="submit" { "Sign in" }
                    }
                }
            }
        }
    }
}

/// An error page.
pub(crate) fn problem(status: StatusCode, message: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Problem"))
            body {
                main #content.narrow {
                    h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
                    p.problem role="alert" { (message) }
                    p { a href="/console/" { "Back to the console" } }
                }
            }
        }
    }
}

// --- Helpers ---------------------------------------------------------------------------------

/// `12 s`, `3 min`, `2 h`, `4 d`.
fn span(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

fn ago(now: Millis, at: Millis) -> Markup {
    let text = if at > now {
        format!("in {}", span(at - now))
    } else {
        format!("{} ago", span(now - at))
    };
    html! { time datetime=(to_rfc3339(at)) title=(to_rfc3339(at)) { (text) } }
}

fn severity(s: Severity) -> Markup {
    let class = match s {
        Severity::Info => "sev info",
        Severity::Alert => "sev alert",
        Severity::Critical => "sev critical",
    };
    html! { span class=(class) { (s.as_str()) } }
}

fn csrf(frame: &Frame) -> Markup {
    html! { input type="hidden" name="csrf" value=(frame.csrf); }
}

fn back_to(frame: &Frame) -> Markup {
    html! { input type="hidden" name="back" value=(frame.path); }
}

fn empty(text: &str) -> Markup {
    html! { p.empty { (text) } }
}

// --- Overview --------------------------------------------------------------------------------

fn overview(frame: &Frame, overview: &Overview) -> Markup {
    let now = frame.now;
    let o = &overview.model;
    let d = &o.daemon;
    let s = &d.scheduler;
    html! {
        section.cards aria-label="At a glance" {
            div.card {
                h2 { "Daemon" }
                @if d.stopping {
                    p.status.bad { "stopping: finishing what is in flight" }
                } @else if d.degraded {
                    p.status.bad { "degraded: the scheduler lags" }
                } @else {
                    p.status.good { "ok" }
                }
                dl {
                    dt { "Version" } dd { (o.version) }
                    dt { "Up for" } dd { (span(i64::try_from(d.uptime_s).unwrap_or(i64::MAX).saturating_mul(1000))) }
                    dt { "Store" } dd { code { (o.store) } }
                    dt { "Start-up" } dd { "every phase completed (config, store open, store verify, registry, scheduler, listener)" }
                }
            }
            div.card {
                h2 { "Fleet" }
                dl {
                    dt { "Live sessions" } dd { (o.live_sessions) " (seen in the last " (span(o.live_window_s * 1000)) ")" }
                    dt { "Open MCP sessions" } dd { (d.sessions.streamable_http) " streamable HTTP, " (d.sessions.sse) " SSE (cap " (d.sessions.max) ")" }
                    dt { "Active messages" } dd { a href="/console/channels" { (o.counts.active_messages) } " on " (o.channels) " channels" }
                    dt { "Reminders" } dd { a href="/console/reminders" { (o.counts.reminders) } }
                    dt { "Conditions" } dd { a href="/console/conditions" { (o.counts.conditions) } }
                    dt { "Active schedules" } dd { a href="/console/schedules" { (o.counts.active_schedules) } }
                }
            }
            div.card {
                h2 { "Scheduler" }
                dl {
                    dt { "Tick" } dd { (s.tick_ms) " ms" }
                    dt { "Last tick" } dd { @if let Some(t) = s.last_tick_ms { (ago(now, t)) } @else { "not yet" } }
                    dt { "Lag" } dd { (s.lag_ms) " ms (limit " (s.max_lag_ms) " ms)" }
                    dt { "Fired since start" } dd { (s.fired) }
                    dt { "Next due" } dd { @if let Some(t) = o.next_due { (ago(now, t)) } @else { "nothing scheduled" } }
                    @if let Some(e) = &s.last_error {
                        dt { "Last error" } dd.problem { (e) }
                    }
                }
            }
        }
        section aria-label="Activity" {
            h2 { "The last hour" }
            @match &overview.charts {
                Some(c) => {
                    div.charts {
                        (chart("Tool calls per minute", "tool-calls", &c.tool_calls))
                        (chart("Hook events per minute", "hook-events", &c.hook_events))
                    }
                }
                None => { (empty("Metrics are off on this daemon (HOOKS_MCP_METRICS=off): no charts.")) }
            }
        }
    }
}

/// Chart width and height in SVG units; one bar per minute.
const CHART_W: u64 = 300;
const CHART_H: u64 = 80;

fn chart(title: &str, id: &str, counts: &[u64]) -> Markup {
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let total: u64 = counts.iter().sum();
    let n = counts.len().max(1) as u64;
    let bar = CHART_W / n;
    html! {
        figure.chart #(id) {
            figcaption { (title) ": " strong.total { (total) } " in the hour, at most " (counts.iter().copied().max().unwrap_or(0)) " a minute" }
            svg viewBox={ "0 0 " (CHART_W) " " (CHART_H) } role="img" aria-label={ (title) ", last 60 minutes, " (total) " in all" } preserveAspectRatio="none" {
                line.axis x1="0" y1=(CHART_H) x2=(CHART_W) y2=(CHART_H) {}
                @for (i, &count) in counts.iter().enumerate() {
                    @let h = count * (CHART_H - 4) / max;
                    @let minutes_ago = counts.len() - 1 - i;
                    rect.bar x=(i as u64 * bar) y=(CHART_H - h) width=(bar.saturating_sub(1).max(1)) height=(h) {
                        title { (count) " (" (minutes_ago) " min ago)" }
                    }
                }
            }
        }
    }
}

// --- Channels --------------------------------------------------------------------------------

fn publish_form(frame: &Frame, channel: Option<&str>) -> Markup {
    html! {
        details.card.publish {
            summary { "Publish a broadcast" }
            form.publish method="post" action="/console/publish" {
                (csrf(frame))
                (back_to(frame))
                div.row {
                    label for="channel" { "Channel" }
                    input #channel name="channel" required maxlength="64" pattern="[A-Za-z0-9._\\-]+" value=(channel.unwrap_or("global")) title="Letters, digits, . _ - (max 64); global reaches every session";
                }
                div.row {
                    label for="message" { "Message" }
                    textarea #message name="message" required rows="3" maxlength="4096" {}
                }
                div.row.inline {
                    label for="severity" { "Severity" }
                    select #severity name="severity" {
                        option value="info" { "info: shown once" }
                        option value="alert" { "alert: every prompt until acknowledged" }
                        option value="critical" { "critical: also before every tool call" }
                    }
                    label for="ttl" { "Lifetime (s)" }
                    input #ttl name="ttl_seconds" type="number" min="1" max="2592000" value="3600";
                }
                div.row {
                    label for="to" { "Only to session" }
                    input #to name="to" maxlength="256" placeholder="every subscribed session" title="A session id: the message reaches that session alone";
                }
                button type="submit" { "Publish" }
            }
        }
    }
}

fn channels(frame: &Frame, c: &Channels) -> Markup {
    let now = frame.now;
    html! {
        section aria-label="Channels" {
            h2 { "Channels" }
            @if c.channels.is_empty() {
                (empty("No channel has unexpired messages."))
            } @else {
                ul.chips {
                    @if c.filter.is_some() {
                        li { a href="/console/channels" { "all channels" } }
                    }
                    @for ch in &c.channels {
                        li {
                            a href={ "/console/channels?" (super::encode(&[("channel", &ch.channel)])) }
                              aria-current=[(c.filter.as_deref() == Some(ch.channel.as_str())).then_some("true")] {
                                (ch.channel) " " span.count { (ch.active) }
                            }
                        }
                    }
                }
            }
        }
        section aria-label="Messages" {
            h2 {
                "Messages"
                @if let Some(f) = &c.filter { " on " code { (f) } }
            }
            @if c.messages.is_empty() {
                (empty("No unexpired messages."))
            } @else {
                div.scroll {
                    table.messages.stack {
                        thead { tr {
                            th scope="col" { "#" } th scope="col" { "Channel" } th scope="col" { "Severity" }
                            th scope="col" { "Message" } th scope="col" { "Age" } th scope="col" { "Expires" }
                            th scope="col" { "Delivery" } th scope="col" { span.visually-hidden { "Actions" } }
                        } }
                        tbody {
                            @for (m, report) in &c.messages {
                                tr #{ "message-" (m.id) } data-severity=(m.severity.as_str()) {
                                    td data-label="#" { a href={ "/console/messages/" (m.id) } { (m.id) } }
                                    td data-label="Channel" { code { (m.channel) } }
                                    td data-label="Severity" { (severity(m.severity)) }
                                    td.body data-label="Message" { (m.body) }
                                    td data-label="Age" { (ago(now, m.created_at)) }
                                    td data-label="Expires" { (ago(now, m.expires_at)) }
                                    td data-label="Delivery" { @if let Some(r) = report { (delivery(r, 5)) } @else { span.muted { "shown once" } } }
                                    td {
                                        form method="post" action={ "/console/messages/" (m.id) "/clear" } {
                                            (csrf(frame)) (back_to(frame))
                                            button.danger type="submit" aria-label={ "Clear message " (m.id) } { "Clear" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                @if let Some(older) = &c.older {
                    @let pairs: Vec<(&str, &str)> = [("before", Some(older.as_str())), ("channel", c.filter.as_deref())]
                        .into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
                    p { a.more href={ "/console/channels?" (super::encode(&pairs)) } { "Older messages" } }
                }
            }
        }
    }
}

/// Delivery and acknowledgement bars of one alert or critical message, with up to
/// `list` of the live subscribed sessions that have not acknowledged it.
fn delivery(r: &DeliveryReport, list: usize) -> Markup {
    let of = r.live_subscribed;
    let pending: Vec<&str> = r
        .sessions
        .iter()
        .filter(|s| s.live && s.subscribed && s.acknowledged_at.is_none())
        .map(|s| s.session_id.as_str())
        .collect();
    let missing = of.saturating_sub(r.acknowledged_live);
    html! {
        div.delivery {
            label { "delivered " span.delivered-count { (r.delivered_live) "/" (of) }
                progress.delivered value=(r.delivered_live) max=(of.max(1)) { (r.delivered_live) " of " (of) } }
            label { "acknowledged " span.acked-count { (r.acknowledged_live) "/" (of) }
                progress.acked value=(r.acknowledged_live) max=(of.max(1)) { (r.acknowledged_live) " of " (of) } }
            @if missing > 0 {
                p.pending {
                    "not acknowledged: "
                    @for (i, s) in pending.iter().take(list).enumerate() {
                        @if i > 0 { ", " }
                        code.session { (s) }
                    }
                    @if missing as usize > list.min(pending.len()) {
                        " and " a href={ "/console/messages/" (r.message.id) } { (missing as usize - list.min(pending.len())) " more" }
                    }
                }
            }
        }
    }
}

fn message_page(frame: &Frame, r: &DeliveryReport, next: Option<&str>) -> Markup {
    let now = frame.now;
    let m = &r.message;
    html! {
        section.card {
            h2 { "Message " (m.id) " on " code { (m.channel) } " " (severity(m.severity)) }
            p.body { (m.body) }
            p { "Published " (ago(now, m.created_at)) ", expires " (ago(now, m.expires_at)) "." }
            @if m.severity != Severity::Info { (delivery(r, 0)) }
            p { (r.delivered) " sessions received it in all; " (r.acknowledged) " acknowledged it." }
        }
        section aria-label="Sessions" {
            h2 { "Sessions" }
            @if r.sessions.is_empty() {
                (empty("No session received it yet, and no live session is subscribed to its channel."))
            } @else {
                div.scroll { table {
                    thead { tr { th scope="col" { "Session" } th scope="col" { "Live" } th scope="col" { "Subscribed" } th scope="col" { "Delivered" } th scope="col" { "Acknowledged" } } }
                    tbody {
                        @for s in &r.sessions {
                            tr {
                                td { code { (s.session_id) } }
                                td { @if s.live { "yes" } @else { "no" } }
                                td { @if s.subscribed { "yes" } @else { "no" } }
                                td { @if let Some(t) = s.delivered_at { (ago(now, t)) } @else { "—" } }
                                td { @if let Some(t) = s.acknowledged_at { (ago(now, t)) } @else { strong { "not yet" } } }
                            }
                        }
                    }
                } }
                @if let Some(next) = next {
                    p { a.more href={ "/console/messages/" (m.id) "?" (super::encode(&[("after", next)])) } { "More sessions" } }
                }
            }
        }
    }
}

// --- Sessions --------------------------------------------------------------------------------

fn sessions(frame: &Frame, s: &Sessions) -> Markup {
    let now = frame.now;
    html! {
        p.filters {
            @if s.all {
                a href="/console/sessions" { "Live only" } " · " strong { "All recorded" }
            } @else {
                strong { "Live only" } " · " a href="/console/sessions?all=1" { "All recorded" }
            }
        }
        @if s.rows.is_empty() {
            (empty(if s.all { "No session was recorded." } else { "No session was seen within the live window." }))
        } @else {
            div.scroll { table.sessions.stack {
                thead { tr {
                    th scope="col" { "Session" } th scope="col" { "State" } th scope="col" { "Last seen" }
                    th scope="col" { "Last event" } th scope="col" { "Tool calls" } th scope="col" { "Working directory" }
                    th scope="col" { "Unacknowledged alerts" }
                } }
                tbody {
                    @for r in &s.rows {
                        @let unacked = s.unacked.get(&r.session_id).copied().unwrap_or(0);
                        tr {
                            td data-label="Session" { code { (r.session_id) } }
                            td data-label="State" { @if r.ended_at.is_some() { span.muted { "ended" } } @else if r.last_seen >= s.live_since { span.live { "live" } } @else { span.muted { "gone" } } }
                            td data-label="Last seen" { (ago(now, r.last_seen)) }
                            td data-label="Last event" { (r.last_event) " " span.muted { "(" (r.transport.as_str()) ")" } }
                            td.num data-label="Tool calls" { (r.tool_calls) }
                            td data-label="Directory" { @if let Some(cwd) = &r.cwd { code { (cwd) } } @else { span.muted { "—" } } }
                            td.num data-label="Unacknowledged" { @if unacked > 0 { strong.bad { (unacked) } } @else { "0" } }
                        }
                    }
                }
            } }
            @if let Some(offset) = s.next_offset {
                p { a.more href={ "/console/sessions?" (super::encode(&[("all", if s.all { "1" } else { "0" }), ("offset", &offset.to_string())])) } { "More sessions" } }
            }
        }
    }
}

// --- Schedules -------------------------------------------------------------------------------

fn schedules(frame: &Frame, list: &[(Schedule, Vec<FiringRecord>)]) -> Markup {
    let now = frame.now;
    html! {
        @if list.is_empty() {
            (empty("No schedules. Agents create them with schedule_create; the CLI with `hooks-mcp schedule create`."))
        } @else {
            div.scroll { table.schedules {
                thead { tr {
                    th scope="col" { "#" } th scope="col" { "Name" } th scope="col" { "Publishes" } th scope="col" { "Trigger" }
                    th scope="col" { "Status" } th scope="col" { "Next" } th scope="col" { "Last" } th scope="col" { "Recent firings" }
                    th scope="col" { span.visually-hidden { "Actions" } }
                } }
                tbody {
                    @for (s, firings) in list {
                        tr #{ "schedule-" (s.id) } data-status=(s.status.as_str()) {
                            td { (s.id) }
                            td { @if let Some(n) = &s.name { (n) } @else { span.muted { "—" } } }
                            td { (severity(s.severity)) " on " code { (s.channel) } ": " span.body { (s.message) } }
                            td { (trigger(&s.trigger)) }
                            td.status { (s.status.as_str()) }
                            td { @if let Some(t) = s.next_fire_at { (ago(now, t)) } @else { "—" } }
                            td { @if let Some(t) = s.last_fired_at { (ago(now, t)) } @else { "never" } }
                            td {
                                (s.fire_count) " fired, " (s.skipped_count) " skipped"
                                @if !firings.is_empty() {
                                    ul.firings {
                                        @for f in firings {
                                            li {
                                                (ago(now, f.fired_at)) ", " (f.fired_at - f.scheduled_for) " ms late"
                                                @if f.skipped > 0 { ", skipped " (f.skipped) }
                                                @if let Some(id) = f.message_id { " → " a href={ "/console/messages/" (id) } { "#" (id) } }
                                            }
                                        }
                                    }
                                }
                            }
                            td {
                                @if s.status == store::ScheduleStatus::Active {
                                    form method="post" action={ "/console/schedules/" (s.id) "/cancel" } {
                                        (csrf(frame)) (back_to(frame))
                                        button.danger type="submit" aria-label={ "Cancel schedule " (s.id) } { "Cancel" }
                                    }
                                }
                            }
                        }
                    }
                }
            } }
        }
    }
}

fn trigger(t: &store::Trigger) -> String {
    match t {
        store::Trigger::At(at) => format!("once at {}", to_rfc3339(*at)),
        store::Trigger::Every(s) => format!("every {}", span(i64::from(*s) * 1000)),
        store::Trigger::Cron(expr) => format!("cron {expr} (UTC)"),
    }
}

// --- Reminders and conditions ----------------------------------------------------------------

fn reminder_form(frame: &Frame) -> Markup {
    html! {
        details.card.add-reminder {
            summary { "Add a reminder" }
            form method="post" action="/console/reminders" {
                (csrf(frame)) (back_to(frame))
                div.row {
                    label for="reminder" { "Reminder" }
                    textarea #reminder name="message" required rows="2" maxlength="4096" {}
                }
                div.row.inline {
                    label for="cadence" { "Every N tool calls" }
                    input #cadence name="cadence" type="number" min="1" max="10000" value="10" required;
                    label for="tag" { "Tag (optional)" }
                    input #tag name="tag" maxlength="64" pattern="[A-Za-z0-9._\\-]*";
                }
                button type="submit" { "Add" }
            }
        }
    }
}

fn reminders(frame: &Frame, list: &[Reminder]) -> Markup {
    let now = frame.now;
    html! {
        @if list.is_empty() {
            (empty("No reminders."))
        } @else {
            div.scroll { table.reminders {
                thead { tr { th scope="col" { "#" } th scope="col" { "Reminder" } th scope="col" { "Every" } th scope="col" { "Tag" } th scope="col" { "Added" } th scope="col" { span.visually-hidden { "Actions" } } } }
                tbody {
                    @for r in list {
                        tr #{ "reminder-" (r.id) } {
                            td { (r.id) }
                            td.body { (r.message) }
                            td { (r.cadence) " tool calls" }
                            td { @if let Some(t) = &r.tag { code { (t) } } @else { span.muted { "—" } } }
                            td { (ago(now, r.created_at)) }
                            td {
                                form method="post" action={ "/console/reminders/" (r.id) "/clear" } {
                                    (csrf(frame)) (back_to(frame))
                                    button.danger type="submit" aria-label={ "Clear reminder " (r.id) } { "Clear" }
                                }
                            }
                        }
                    }
                }
            } }
        }
    }
}

fn conditions(frame: &Frame, list: &[Condition]) -> Markup {
    let now = frame.now;
    html! {
        p.hint { "Conditions are shown, not edited here: installing code that runs on every tool call stays behind the operator's own prompt (condition_set)." }
        @if list.is_empty() {
            (empty("No conditions."))
        } @else {
            @for c in list {
                article.card.condition #{ "condition-" (c.name) } {
                    h2 { code { (c.name) } " " span.muted { (c.step.as_str()) " · " (c.language.as_str()) @if c.run_async { " · async" } } }
                    dl {
                        dt { "Matcher" } dd { code { (c.matcher) } }
                        dt { "Set by" } dd { code { (c.session_id) } }
                        dt { "Created" } dd { (ago(now, c.created_at)) }
                        dt { "Updated" } dd { (ago(now, c.updated_at)) }
                    }
                    pre.script { code { (c.script) } }
                }
            }
        }
    }
}

// --- Audit -----------------------------------------------------------------------------------

fn audit_form(filter: &AuditFilter) -> Markup {
    html! {
        form.filters method="get" action="/console/audit" {
            label for="action" { "Action" }
            select #action name="action" {
                option value="" { "any" }
                @for a in AuditAction::ALL {
                    option value=(a.as_str()) selected[filter.action == Some(*a)] { (a.as_str()) }
                }
            }
            label for="actor" { "Actor" }
            input #actor name="actor" value=(filter.actor.as_deref().unwrap_or("")) placeholder="session:ID, operator, token:console…";
            button type="submit" { "Filter" }
        }
    }
}

fn audit(
    frame: &Frame,
    filter: &AuditFilter,
    entries: &[AuditEntry],
    older: Option<i64>,
) -> Markup {
    let now = frame.now;
    html! {
        @if entries.is_empty() {
            (empty("No audit entries match."))
        } @else {
            div.scroll { table.audit {
                thead { tr { th scope="col" { "When" } th scope="col" { "Who" } th scope="col" { "Action" } th scope="col" { "Subject" } th scope="col" { "Detail" } } }
                tbody {
                    @for e in entries {
                        tr {
                            td { (ago(now, e.at)) }
                            td { code { (e.actor.to_string()) } }
                            td { (e.action.as_str()) }
                            td { code { (e.subject) } }
                            td.detail { code { (e.detail.to_string()) } }
                        }
                    }
                }
            } }
            @if let Some(id) = older {
                @let id = id.to_string();
                @let pairs: Vec<(&str, &str)> = [
                    ("before", Some(id.as_str())),
                    ("action", filter.action.map(|a| a.as_str())),
                    ("actor", filter.actor.as_deref()),
                ].into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
                p { a.more href={ "/console/audit?" (super::encode(&pairs)) } { "Older entries" } }
            }
        }
    }
}
