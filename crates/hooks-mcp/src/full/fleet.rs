//! The operator's view of the fleet: `audit`, `sessions` and `channel status`. These read the
//! store directly (they are no agent tools), page by page, and hand the rows to `operator`,
//! which builds each report and prints it for people, or as its JSON with `--json`.

use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use hook_dispatch::open;
use operator::{Since, SinceError};

use store::{AuditQuery, ReportQuery, Retention, SessionQuery, StoreHandle};

/// A store value as JSON (the store's types serialize infallibly: plain fields, string keys).
macro_rules! to_json {
    ($value:expr) => {
        serde_json::to_value($value).unwrap_or(Value::Null)
    };
}

/// Audit entries (or sessions) read per page: the commands page through the whole trail.
const PAGE: u32 = 500;

/// `hooks-mcp audit [--since T] [--json]`
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// Only changes made since T: an RFC 3339 time, or a duration back from now (`90s`,
    /// `30m`, `1h`, `7d`).
    #[arg(long, value_parser = parse_since)]
    since: Option<Since>,
    /// Print the entries as JSON.
    #[arg(long)]
    json: bool,
}

/// `hooks-mcp sessions [--all] [--json]`
#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    /// Every recorded session, not only the live ones (seen within
    /// HOOKS_MCP_SESSION_LIVE_MINUTES and not ended), the ended ones too.
    #[arg(long)]
    all: bool,
    /// Print the sessions as JSON.
    #[arg(long)]
    json: bool,
}

/// Parses `2026-01-01T00:00:00Z` or `90s`, `30m`, `1h`, `7d`.
fn parse_since(text: &str) -> Result<Since, SinceError> {
    Since::parse(text, |text| store::from_rfc3339(text).ok())
}

/// Opens the store (never creating it: there is nothing to show then).
fn open_store() -> Result<StoreHandle, ExitCode> {
    match open::store_from_env(false) {
        Ok((store, _)) => Ok(store),
        Err(e) => {
            protocol_lite::diag!("hooks-mcp: cannot open the store: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

fn retention() -> Result<Retention, ExitCode> {
    Retention::from_env().map_err(|e| {
        protocol_lite::diag!("hooks-mcp: {e}");
        ExitCode::FAILURE
    })
}

fn store_failed(e: store::StoreError) -> ExitCode {
    protocol_lite::diag!("hooks-mcp: {e}");
    ExitCode::FAILURE
}

fn print(value: &Value, json: bool, text: impl FnOnce(&Value) -> String) -> ExitCode {
    print_out(&operator::render(value, json, text))
}

/// Runs `hooks-mcp audit`.
pub(crate) fn audit(args: AuditArgs) -> ExitCode {
    let store = match open_store() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let since = args.since.map(|s| s.instant(open::now_ms()));
    let pages = operator::all_pages(
        PAGE as usize,
        Vec::len,
        |read: &[Vec<store::AuditEntry>]| {
            let after_id = read.last().and_then(|page| page.last()).map(|e| e.id);
            store.audit(&AuditQuery {
                since,
                after_id,
                limit: PAGE,
            })
        },
    );
    let entries = match pages {
        Ok(pages) => pages.into_iter().flatten().map(|e| to_json!(e)),
        Err(e) => return store_failed(e),
    };
    let report = operator::audit_report(entries, store::to_rfc3339);
    print(&report, args.json, operator::audit)
}

/// Runs `hooks-mcp sessions`.
pub(crate) fn sessions(args: SessionsArgs) -> ExitCode {
    let (store, retention) = match (open_store(), retention()) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let now = open::now_ms();
    let live_since = retention.live_since(now);
    let pages = operator::all_pages(PAGE as usize, Vec::len, |read: &[Vec<_>]| {
        store.sessions(&SessionQuery {
            seen_since: (!args.all).then_some(live_since),
            include_ended: args.all,
            offset: PAGE.saturating_mul(u32::try_from(read.len()).unwrap_or(u32::MAX)),
            limit: PAGE,
        })
    });
    let rows = match pages {
        Ok(pages) => pages.into_iter().flatten().map(|s| to_json!(s)),
        Err(e) => return store_failed(e),
    };
    let report = operator::sessions_report(args.all, now, live_since, rows, store::to_rfc3339);
    print(&report, args.json, operator::sessions)
}

/// Runs `hooks-mcp channel status ID`.
pub(crate) fn channel_status(message_id: i64, json: bool) -> ExitCode {
    let (store, retention) = match (open_store(), retention()) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let now = open::now_ms();
    let len = |page: &store::DeliveryReport| page.sessions.len();
    let pages = operator::all_pages(PAGE as usize, len, |read: &[store::DeliveryReport]| {
        let after_session = read.last().and_then(|page| page.sessions.last());
        match store.delivery_report(&ReportQuery {
            message_id,
            live_since: retention.live_since(now),
            after_session: after_session.map(|s| s.session_id.clone()),
            limit: PAGE,
        }) {
            Ok(Some(page)) => Ok(page),
            Ok(None) => {
                protocol_lite::diag!(
                    "hooks-mcp: no message has id {message_id}; `hooks-mcp channel read` lists \
                     the unexpired ones"
                );
                Err(ExitCode::FAILURE)
            }
            Err(e) => Err(store_failed(e)),
        }
    });
    let pages = match pages {
        Ok(pages) => pages.into_iter().map(|page| to_json!(page)),
        Err(code) => return code,
    };
    match operator::delivery_report(pages, now, store::to_rfc3339) {
        Some(report) => print(&report, json, operator::delivery),
        None => ExitCode::FAILURE,
    }
}

/// Writes a command's output on stdout (every operator command, `init` and `status` print
/// through it): success, or a failure said on stderr when the text could not be written whole
/// (a full disk behind `> file`; a reader that left is no failure).
pub(crate) fn print_out(text: &str) -> ExitCode {
    match operator::print_out(text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            protocol_lite::diag!("hooks-mcp: cannot write the output on stdout ({e})");
            ExitCode::FAILURE
        }
    }
}
