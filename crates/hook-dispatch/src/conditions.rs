//! Running condition scripts on a tool call, and folding their results into the hook's answer.
//!
//! The contract (docs/hooks.md): the script gets the hook payload as JSON on stdin and
//! `HOOKS_MCP_EVENT`, `HOOKS_MCP_TOOL_NAME`, `HOOKS_MCP_SESSION_ID` and `HOOKS_MCP_CONDITION` in
//! its environment, in the session's working directory. Exit 0 lets the call go ahead (stdout may
//! be JSON with `additionalContext`, `updatedInput`, `decision` and `reason` for `pre`;
//! `additionalContext` and `replaceOutput` for `post`; plain text is context). Exit 2 denies a
//! `pre` call with stderr as the reason (for `post`, the reason is shown to the agent). Anything
//! else, a timeout or a script that cannot start is reported as context and blocks nothing.
//! Conditions run one after the other, by name; a denial stops the rest; a rewritten input is
//! what the next condition sees. Each script runs in its own process group, which is killed on
//! timeout, or by [`kill_waited_scripts`] when a long-lived process (the daemon) exits while it
//! still waits for one.

use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use store::{Condition, ScriptLanguage};

use crate::output::{Decision, Response};
use crate::payload::{Event, Payload};
use crate::stdin_file::payload_file;

/// The time limit of one condition script, in milliseconds.
pub use tools_conditions::SCRIPT_TIMEOUT_ENV as TIMEOUT_ENV;
/// The default time limit: 10 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a script's stdout or stderr kept (the rest is read and dropped).
const OUTPUT_CAP: usize = 1024 * 1024;
/// The longest reason or context line taken from one script's stderr.
const STDERR_SHOWN: usize = 2000;

/// The process groups of the scripts being waited for now (each script leads its own group).
static WAITED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A script's process group listed in [`WAITED`] until this is dropped, after the script was
/// reaped.
struct Waited(i32);

impl Waited {
    /// Lists `child`'s process group.
    fn list(child: &Child) -> Waited {
        let group = rustix::process::Pid::from_child(child)
            .as_raw_nonzero()
            .get();
        WAITED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(group);
        Waited(group)
    }
}

impl Drop for Waited {
    fn drop(&mut self) {
        let mut waited = WAITED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = waited.iter().position(|g| *g == self.0) {
            waited.swap_remove(at);
        }
    }
}

/// Kills the process group of every condition script a hook is still waiting for, and
/// returns how many there were. A process that answers hooks for others (the daemon) calls
/// this as it exits, so that no script outlives the hook that waited for it; `async` scripts,
/// which nobody waits for, are left running, as a hook process leaves them.
pub fn kill_waited_scripts() -> usize {
    let waited = WAITED.lock().unwrap_or_else(PoisonError::into_inner);
    for group in waited.iter() {
        if let Some(pid) = rustix::process::Pid::from_raw(*group) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
    waited.len()
}

/// The time limit from [`TIMEOUT_ENV`], with a line for the operator when its value is not a
/// positive number of milliseconds (the default applies then).
pub fn timeout_from_env() -> (Duration, Option<String>) {
    match std::env::var(TIMEOUT_ENV) {
        Err(_) => (DEFAULT_TIMEOUT, None),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => (Duration::from_millis(ms), None),
            _ => (
                DEFAULT_TIMEOUT,
                Some(format!(
                    "hooks-mcp hook: {TIMEOUT_ENV}=`{text}` is not a positive number of \
                     milliseconds; using {} ms",
                    DEFAULT_TIMEOUT.as_millis()
                )),
            ),
        },
    }
}

/// How one script run ended.
#[derive(Debug)]
enum Ended {
    /// It exited (or was killed by a signal other than ours).
    Exited {
        status: ExitStatus,
        stdout: String,
        stderr: String,
    },
    /// It did not finish in time; its process group was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(io::Error),
}

/// Runs the `pre` conditions of one tool call, in order, into `response`.
pub fn run_pre(
    conditions: &[Condition],
    payload: &Payload,
    timeout: Duration,
    response: &mut Response,
) {
    let mut input = payload.tool_input();
    let mut rewritten = false;
    for condition in conditions {
        let mut raw = payload.raw.clone();
        raw.insert("tool_input".into(), input.clone());
        let stdin = Value::Object(raw).to_string();
        if condition.run_async {
            spawn_detached(condition, Event::PreToolUse, payload, &stdin, response);
            continue;
        }
        match run(condition, Event::PreToolUse, payload, &stdin, timeout) {
            Ended::Exited { status, stdout, .. } if status.code() == Some(0) => {
                apply_pre(condition, &stdout, &mut input, &mut rewritten, response);
            }
            Ended::Exited { status, stderr, .. } if status.code() == Some(2) => {
                let reason = excerpt(&stderr);
                let reason = if reason.is_empty() {
                    "denied (exit 2, no reason on stderr)".to_owned()
                } else {
                    reason
                };
                response.decide(
                    Decision::Deny,
                    Some(format!("condition `{}`: {reason}", condition.name)),
                );
            }
            ended => failed(condition, &ended, timeout, response),
        }
        if response.denied() {
            break;
        }
    }
    if rewritten {
        response.updated_input = Some(input);
    }
}

/// Runs the `post` conditions of one tool call, in order, into `response`.
pub fn run_post(
    conditions: &[Condition],
    payload: &Payload,
    timeout: Duration,
    response: &mut Response,
) {
    let stdin = Value::Object(payload.raw.clone()).to_string();
    for condition in conditions {
        if condition.run_async {
            spawn_detached(condition, Event::PostToolUse, payload, &stdin, response);
            continue;
        }
        match run(condition, Event::PostToolUse, payload, &stdin, timeout) {
            Ended::Exited { status, stdout, .. } if status.code() == Some(0) => {
                apply_post(condition, &stdout, response);
            }
            Ended::Exited { status, stderr, .. } if status.code() == Some(2) => {
                let reason = excerpt(&stderr);
                response.block_reasons.push(format!(
                    "condition `{}`: {}",
                    condition.name,
                    if reason.is_empty() {
                        "flagged this call (exit 2, no reason on stderr)"
                    } else {
                        &reason
                    }
                ));
            }
            ended => failed(condition, &ended, timeout, response),
        }
    }
}

/// Reports a script that failed, timed out or did not start: context for the agent and a line
/// on stderr for the operator. The call goes ahead.
fn failed(condition: &Condition, ended: &Ended, timeout: Duration, response: &mut Response) {
    let what = match ended {
        Ended::Exited { status, stderr, .. } => {
            let how = match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => "ended abnormally".to_owned(),
            };
            let said = excerpt(stderr);
            if said.is_empty() {
                how
            } else {
                format!("{how}: {said}")
            }
        }
        Ended::TimedOut => format!(
            "did not finish within {} ms ({TIMEOUT_ENV}) and was stopped",
            timeout.as_millis()
        ),
        Ended::NotStarted(e) => format!(
            "could not start `{}` ({e})",
            interpreter(condition.language).0
        ),
    };
    let line = format!(
        "[condition {}] {what}; the call was not blocked",
        condition.name
    );
    response.note(format!("hooks-mcp hook: {line}"));
    response.add_context(line);
}

/// Folds a `pre` script's stdout into the answer.
fn apply_pre(
    condition: &Condition,
    stdout: &str,
    input: &mut Value,
    rewritten: &mut bool,
    response: &mut Response,
) {
    let Some(fields) = script_json(condition, stdout, response) else {
        return;
    };
    let mut problems = Vec::new();
    let mut decision = None;
    let mut reason = None;
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("additionalContext", Value::String(text)) => {
                response.add_context(format!("[condition {}] {text}", condition.name));
            }
            ("updatedInput", Value::Object(update)) => {
                if let Value::Object(current) = input {
                    current.extend(update);
                } else {
                    *input = Value::Object(update);
                }
                *rewritten = true;
            }
            ("decision", Value::String(text)) => match Decision::parse(&text) {
                Some(d) => decision = Some(d),
                None => problems.push(format!(
                    "`decision` must be allow, ask or deny (got `{text}`)"
                )),
            },
            ("reason", Value::String(text)) => reason = Some(text),
            ("additionalContext" | "updatedInput" | "decision" | "reason", other) => {
                problems.push(format!(
                    "`{key}` has the wrong type ({})",
                    catalogue::json_kind(&other)
                ))
            }
            _ => problems.push(format!(
                "unknown field `{key}` (pre: additionalContext, updatedInput, decision, reason)"
            )),
        }
    }
    if let Some(decision) = decision {
        let reason = reason.map(|r| format!("condition `{}`: {r}", condition.name));
        response.decide(decision, reason);
    }
    report_problems(condition, &problems, response);
}

/// Folds a `post` script's stdout into the answer.
fn apply_post(condition: &Condition, stdout: &str, response: &mut Response) {
    let Some(fields) = script_json(condition, stdout, response) else {
        return;
    };
    let mut problems = Vec::new();
    for (key, value) in fields {
        match (key.as_str(), value) {
            ("additionalContext", Value::String(text)) => {
                response.add_context(format!("[condition {}] {text}", condition.name));
            }
            ("replaceOutput", Value::Null) => {
                problems.push("`replaceOutput` is null; omit it to keep the output".into());
            }
            ("replaceOutput", value) => response.updated_output = Some(value),
            ("additionalContext", other) => problems.push(format!(
                "`additionalContext` has the wrong type ({})",
                catalogue::json_kind(&other)
            )),
            _ => problems.push(format!(
                "unknown field `{key}` (post: additionalContext, replaceOutput)"
            )),
        }
    }
    report_problems(condition, &problems, response);
}

/// The fields of a script's JSON answer; plain text becomes context and yields `None`, as does
/// empty output.
fn script_json(
    condition: &Condition,
    stdout: &str,
    response: &mut Response,
) -> Option<Map<String, Value>> {
    let text = stdout.trim();
    if text.is_empty() {
        return None;
    }
    if !text.starts_with('{') {
        response.add_context(format!("[condition {}] {text}", condition.name));
        return None;
    }
    match serde_json::from_str::<Map<String, Value>>(text) {
        Ok(fields) => Some(fields),
        Err(e) => {
            report_problems(
                condition,
                &[format!(
                    "its stdout looks like JSON but does not parse ({e})"
                )],
                response,
            );
            None
        }
    }
}

fn report_problems(condition: &Condition, problems: &[String], response: &mut Response) {
    if problems.is_empty() {
        return;
    }
    let line = format!(
        "[condition {}] answered with {}; that part was ignored",
        condition.name,
        problems.join("; ")
    );
    response.note(format!("hooks-mcp hook: {line}"));
    response.add_context(line);
}

/// The first [`STDERR_SHOWN`] bytes of trimmed text, cut at a character boundary.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    if text.len() <= STDERR_SHOWN {
        return text.to_owned();
    }
    let mut end = STDERR_SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The interpreter and its flag for inline code.
fn interpreter(language: ScriptLanguage) -> (&'static str, &'static str) {
    match language {
        ScriptLanguage::Bash => ("bash", "-c"),
        ScriptLanguage::Python => ("python3", "-c"),
    }
}

/// The command for one script run: interpreter, environment, working directory, own process
/// group, the payload on stdin.
fn command(
    condition: &Condition,
    event: Event,
    payload: &Payload,
    stdin: &str,
) -> io::Result<Command> {
    let (program, flag) = interpreter(condition.language);
    let mut command = Command::new(program);
    command
        .arg(flag)
        .arg(&condition.script)
        .env("HOOKS_MCP_EVENT", event.name())
        .env("HOOKS_MCP_TOOL_NAME", &payload.tool_name)
        .env("HOOKS_MCP_SESSION_ID", &payload.session_id)
        .env("HOOKS_MCP_CONDITION", &condition.name)
        .env_remove(crate::open::HANDED_OVER_ENV)
        .stdin(payload_file(stdin)?)
        .process_group(0);
    if let Some(cwd) = payload.cwd().map(Path::new).filter(|p| p.is_dir()) {
        command.current_dir(cwd);
    }
    Ok(command)
}

/// Starts an `async` condition and leaves it running: nobody waits for it, its output is
/// discarded, and it has no time limit.
fn spawn_detached(
    condition: &Condition,
    event: Event,
    payload: &Payload,
    stdin: &str,
    response: &mut Response,
) {
    let started = command(condition, event, payload, stdin)
        .and_then(|mut c| c.stdout(Stdio::null()).stderr(Stdio::null()).spawn());
    match started {
        // A hook process exits soon and init reaps the child; a daemon lives on, so a thread
        // waits for it (no zombie either way).
        Ok(mut child) => {
            let _ = std::thread::Builder::new()
                .name("hooks-mcp-async-condition".into())
                .spawn(move || child.wait());
        }
        Err(e) => failed(condition, &Ended::NotStarted(e), Duration::ZERO, response),
    }
}

/// Runs one script to completion or until `timeout`.
fn run(
    condition: &Condition,
    event: Event,
    payload: &Payload,
    stdin: &str,
    timeout: Duration,
) -> Ended {
    let deadline = Instant::now() + timeout;
    let spawned = command(condition, event, payload, stdin)
        .and_then(|mut c| c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn());
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return Ended::NotStarted(e),
    };
    // Listed until the script is reaped (this is dropped after every wait below).
    let _waited = Waited::list(&child);
    // Both pipes are drained on their own threads, so a chatty script never stalls on a full
    // pipe while this thread waits for it.
    let (sender, receiver) = mpsc::channel::<(bool, String)>();
    for (is_stdout, pipe) in [
        (
            true,
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        (
            false,
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ] {
        if let Some(pipe) = pipe {
            let sender = sender.clone();
            std::thread::spawn(move || {
                let _ = sender.send((is_stdout, read_capped(pipe)));
            });
        }
    }
    drop(sender);
    let Some(status) = wait_until(&mut child, deadline) else {
        kill_group(&mut child);
        return Ended::TimedOut;
    };
    // The script exited; its output ends when every process holding the pipes is gone. A
    // background process it left behind holds them until the deadline, then is killed.
    let (mut stdout, mut stderr) = (None, None);
    while stdout.is_none() || stderr.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok((true, text)) => stdout = Some(text),
            Ok((false, text)) => stderr = Some(text),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                kill_group(&mut child);
                return Ended::TimedOut;
            }
        }
    }
    Ended::Exited {
        status,
        stdout: stdout.unwrap_or_default(),
        stderr: stderr.unwrap_or_default(),
    }
}

/// Waits for `child` until `deadline`; `None` when it is still running then.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_micros(250);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            // Not waitable (should not happen for our own child): treat as still running.
            Err(_) => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

/// Kills the script's whole process group (the script and whatever it started) and reaps it.
fn kill_group(child: &mut Child) {
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads a pipe to its end, keeping at most [`OUTPUT_CAP`] bytes; a line at the end says how
/// much was dropped, when anything was.
fn read_capped(mut pipe: impl Read) -> String {
    let mut kept = Vec::new();
    let mut dropped = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                dropped = dropped.saturating_add(n.saturating_sub(room));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        text.push_str(&format!(
            "\n[hooks-mcp: the output was cut at {OUTPUT_CAP} bytes; {dropped} more were dropped]"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn output_past_the_cap_is_cut_and_says_so() {
        let small = read_capped(&b"fine\n"[..]);
        assert_eq!(small, "fine\n");
        let big = vec![b'x'; OUTPUT_CAP + 10];
        let cut = read_capped(&big[..]);
        assert!(cut.starts_with(&"x".repeat(OUTPUT_CAP)));
        assert!(
            cut.ends_with("10 more were dropped]"),
            "{}",
            &cut[OUTPUT_CAP..]
        );
    }

    fn condition(name: &str, script: &str) -> Condition {
        Condition {
            name: name.into(),
            step: store::Step::Pre,
            matcher: "Bash".into(),
            script: script.into(),
            language: ScriptLanguage::Bash,
            run_async: false,
            session_id: "s".into(),
            created_at: 0,
            updated_at: 0,
        }
    }

    fn payload(cwd: &Path) -> Payload {
        let text = serde_json::json!({
            "session_id": "s", "tool_name": "Bash", "cwd": cwd,
            "tool_input": {"command": "ls"},
        })
        .to_string();
        Payload::parse(Event::PreToolUse, &text).unwrap()
    }

    #[test]
    fn scripts_never_see_the_hand_over_flag() {
        let dir = tempfile::tempdir().unwrap();
        let command = command(
            &condition("c", "true"),
            Event::PreToolUse,
            &payload(dir.path()),
            "{}",
        )
        .unwrap();
        let removed: Vec<_> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(key, _)| key.to_owned())
            .collect();
        assert_eq!(removed, [crate::open::HANDED_OVER_ENV], "{removed:?}");
    }

    #[test]
    fn a_late_script_is_killed_with_its_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        // The script leaves a background child that would write the marker after 1 s.
        let script = format!("(sleep 1; touch '{}') & sleep 5", marker.display());
        let mut response = Response::default();
        let started = Instant::now();
        run_pre(
            &[condition("slow", &script)],
            &payload(dir.path()),
            Duration::from_millis(200),
            &mut response,
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        assert!(
            response
                .context
                .iter()
                .any(|c| c.contains("did not finish within 200 ms")),
            "{:?}",
            response.context
        );
        assert!(!response.denied(), "a time-out blocks nothing");
        assert_eq!(response.notes.len(), 1, "{:?}", response.notes);
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the background child outlived the kill");
    }

    #[test]
    fn scripts_run_in_the_payloads_cwd_and_exit_2_denies() {
        let dir = tempfile::tempdir().unwrap();
        let mut response = Response::default();
        run_pre(
            &[
                condition(
                    "a_where",
                    "printf '{\"additionalContext\":\"%s\"}' \"$PWD\"",
                ),
                condition("b_deny", "echo no >&2; exit 2"),
                condition("c_never", "echo ran"),
            ],
            &payload(dir.path()),
            Duration::from_secs(10),
            &mut response,
        );
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(
            response.context,
            vec![format!("[condition a_where] {}", cwd.display())]
        );
        assert_eq!(
            response.decision,
            Some((Decision::Deny, vec!["condition `b_deny`: no".to_owned()]))
        );
    }
}
