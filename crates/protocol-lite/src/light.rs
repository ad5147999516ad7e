//! The lightweight front end's session: answer the handshake and discovery, or hand off.

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::handshake::{STATELESS_VERSION, ServerIdentity};
use crate::jsonrpc::{self, Incoming};
use crate::modern::{self, CacheHints, Listen};
use crate::setting::{SUPPRESS_ACKS_ENV, SUPPRESS_ID_ENV};

/// What to do with one line of input.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Write these bytes (one response line) to the client.
    Reply(Vec<u8>),
    /// Answer `tools/list` to the request with this id: write it with
    /// [`LightSession::write_tools_list`], straight from the stored list (no copy of it).
    ListTools(Value),
    /// Answer a 2026-07-28 `tools/list` to the request with this id: write it with
    /// [`LightSession::write_modern_tools_list`] (the stored list, `resultType` and the
    /// caching hints).
    ListModernTools(Value),
    /// Answer a 2026-07-28 `resources/list` to the request with this id: the store's listing
    /// (see `setting::LIST_RESOURCES_ARG`) as [`modern::raw_result_line`], or a
    /// [`modern::internal_error`] when it cannot be had.
    ListResources(Value),
    /// A 2026-07-28 `subscriptions/listen` the light path can hold: make ready what it needs
    /// (for `resources_list_changed`, a watch on the store), then [`LightSession::hold`] it and
    /// write the acknowledgement; if that cannot be done, hand off with this line as the
    /// trigger. The request gets no response while it is held.
    Listen(Listen),
    /// Nothing to write (a notification, a response, a blank line).
    Nothing,
    /// The full server must take over: see [`LightSession::handoff`].
    Handoff(String),
}

/// What the full server needs to take a session over: the bytes to read first and the
/// settings that tell it what the light path already answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    /// The replay, then the trigger line, then the bytes read ahead of it.
    pub replay: Vec<u8>,
    /// [`SUPPRESS_ID_ENV`] (the answered `initialize`'s id) or [`SUPPRESS_ACKS_ENV`] (the held
    /// subscriptions' ids, a JSON array), when there is one to suppress, and what the caller
    /// adds. [`Handoff::file`] carries the two suppression settings (a request id is as long
    /// as the client likes, and Linux caps one environment variable at 128 KiB);
    /// [`Handoff::environment`] is the rest.
    pub env: Vec<(&'static str, String)>,
}

/// The key of the replay file's first line, which holds the settings [`Handoff::file`]
/// carries: `{"hooks-mcp/handoff":{NAME: TEXT, ...}}`, each value the text the setting would
/// have in the environment.
pub const FILE_HEADER_KEY: &str = "hooks-mcp/handoff";

/// The settings the replay file carries instead of the environment.
const IN_FILE: [&str; 2] = [SUPPRESS_ID_ENV, SUPPRESS_ACKS_ENV];

impl Handoff {
    /// The replay file's bytes: one header line ([`FILE_HEADER_KEY`]) with the suppression
    /// settings, then [`Handoff::replay`]. [`read_file`] splits them again.
    pub fn file(&self) -> Vec<u8> {
        let settings: Map<String, Value> = self
            .env
            .iter()
            .filter(|(name, _)| IN_FILE.contains(name))
            .map(|(name, text)| ((*name).to_owned(), Value::String(text.clone())))
            .collect();
        let mut bytes = json!({ FILE_HEADER_KEY: settings })
            .to_string()
            .into_bytes();
        bytes.push(b'\n');
        bytes.extend_from_slice(&self.replay);
        bytes
    }

    /// The settings that go into the environment: [`Handoff::env`] but what
    /// [`Handoff::file`] carries.
    pub fn environment(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.env
            .iter()
            .filter(|(name, _)| !IN_FILE.contains(name))
            .map(|(name, text)| (*name, text.as_str()))
    }

    /// The id of the `initialize` request the light path answered, if it did.
    pub fn answered(&self) -> Option<Value> {
        self.env
            .iter()
            .find(|(name, _)| *name == SUPPRESS_ID_ENV)
            .and_then(|(_, text)| serde_json::from_str(text).ok())
    }
}

/// Splits a replay file ([`Handoff::file`]) into the settings of its header line (name, text)
/// and the replay. A file without that header (written by another build) is all replay.
pub fn read_file(bytes: &[u8]) -> (Vec<(String, String)>, &[u8]) {
    let (first, rest) = match bytes.iter().position(|&b| b == b'\n') {
        Some(end) => (&bytes[..end], &bytes[end + 1..]),
        None => (bytes, &bytes[bytes.len()..]),
    };
    let header = serde_json::from_slice::<Value>(first).ok().and_then(|v| {
        let Value::Object(mut top) = v else {
            return None;
        };
        match (top.len(), top.remove(FILE_HEADER_KEY)) {
            (1, Some(Value::Object(settings))) => Some(settings),
            _ => None,
        }
    });
    match header {
        Some(settings) => {
            let settings = settings
                .into_iter()
                .filter_map(|(name, text)| match text {
                    Value::String(text) => Some((name, text)),
                    _ => None,
                })
                .collect();
            (settings, rest)
        }
        None => (Vec::new(), bytes),
    }
}

/// A `subscriptions/listen` request the light path holds.
#[derive(Debug, Clone, PartialEq)]
struct Held {
    listen: Listen,
    /// The request as received, to replay at a handoff.
    line: Vec<u8>,
}

/// State of one stdio session on the light path.
///
/// A session that opens with `initialize` is served as before the 2026-07-28 revision (its
/// lines and their answers do not depend on [`crate::modern`]). Before any `initialize`,
/// every request but `ping` must carry the 2026-07-28 `_meta` (else `-32602`) with a supported
/// version (else `-32022`); those naming 2026-07-28 get `server/discover`, the lists and
/// `subscriptions/listen` answered here, the rest hand off.
#[derive(Debug)]
pub struct LightSession {
    identity: ServerIdentity,
    /// The `tools/list` result as JSON text: each answer writes these bytes.
    tools_list: String,
    /// The caching hints on a 2026-07-28 `tools/list`.
    tools_hints: CacheHints,
    /// Whether a `resourcesListChanged` subscription can be held (the front end can watch the
    /// store); otherwise it hands off.
    watches_resources: bool,
    replay: Vec<u8>,
    initialize_id: Option<Value>,
    /// An earlier request chose the stateless era for the process
    /// ([`modern::chooses_stateless`]): an `initialize` is refused.
    stateless: bool,
    held: Vec<Held>,
}

impl LightSession {
    /// A session that answers `tools/list` with `tools_list`, the result's JSON text
    /// (`{"tools": [...]}`, as `catalogue::Listing::tools_list_json` builds it from checked
    /// parts): a session that only lists tools holds no JSON tree, and the text is not parsed
    /// again.
    ///
    /// A 2026-07-28 `tools/list` gets [`CacheHints::STABLE`] and `resourcesListChanged`
    /// subscriptions hand off, unless [`Self::with_tools_hints`] and
    /// [`Self::with_resource_watch`] say otherwise.
    pub fn new(identity: ServerIdentity, tools_list: String) -> Self {
        LightSession {
            identity,
            tools_list,
            tools_hints: CacheHints::STABLE,
            watches_resources: false,
            replay: Vec::new(),
            initialize_id: None,
            stateless: false,
            held: Vec::new(),
        }
    }

    /// The caching hints of a 2026-07-28 `tools/list` ([`CacheHints::tools_list`]).
    pub fn with_tools_hints(mut self, hints: CacheHints) -> Self {
        self.tools_hints = hints;
        self
    }

    /// Whether the front end can watch the store's resource list, and so hold
    /// `resourcesListChanged` subscriptions itself.
    pub fn with_resource_watch(mut self, watches: bool) -> Self {
        self.watches_resources = watches;
        self
    }

    /// The bytes the full server must read before the line that triggered the handoff: the
    /// `initialize` request this session answered and every notification that followed it, or
    /// the `subscriptions/listen` requests it holds, each as received, one per line.
    pub fn replay(&self) -> &[u8] {
        &self.replay
    }

    /// The id of the `initialize` request this session answered; the full server's own answer
    /// to the replayed request must be suppressed.
    pub fn initialize_id(&self) -> Option<&Value> {
        self.initialize_id.as_ref()
    }

    /// Whether the client opened a session that may be pushed into: `initialize` was
    /// answered. A 2026-07-28 session never is: that revision sends notifications only on a
    /// subscription the client holds (`subscriptions/listen`), and Claude Code does not load
    /// such a session as a channel.
    pub fn is_open(&self) -> bool {
        self.initialize_id.is_some()
    }

    /// The ids of the subscriptions this session holds, oldest first; the full server's own
    /// acknowledgements of the replayed requests must be suppressed.
    pub fn held(&self) -> impl Iterator<Item = &Value> {
        self.held.iter().map(|h| &h.listen.id)
    }

    /// The ids of the held subscriptions that asked for `resourcesListChanged`: each gets a
    /// [`modern::resources_list_changed_line`] when the store's resource list changes.
    pub fn resource_listeners(&self) -> impl Iterator<Item = &Value> {
        self.held
            .iter()
            .filter(|h| h.listen.resources_list_changed)
            .map(|h| &h.listen.id)
    }

    /// Holds the subscription `listen` (a [`Step::Listen`] of the request `line`, as received)
    /// and returns its acknowledgement line, to be written at once.
    pub fn hold(&mut self, line: &[u8], listen: Listen) -> Vec<u8> {
        let ack = listen.acknowledgement_line();
        self.replay.extend_from_slice(line);
        self.replay.push(b'\n');
        self.held.push(Held {
            listen,
            line: line.to_vec(),
        });
        ack
    }

    /// What the full server needs when `trigger` (the line that handed off, as read, newline
    /// included or not) and `read_ahead` (what followed it) are its to serve.
    pub fn handoff(&self, trigger: &[u8], read_ahead: &[u8]) -> Handoff {
        let mut replay = Vec::with_capacity(self.replay.len() + trigger.len() + read_ahead.len());
        replay.extend_from_slice(&self.replay);
        replay.extend_from_slice(trigger);
        if !trigger.ends_with(b"\n") {
            replay.push(b'\n');
        }
        replay.extend_from_slice(read_ahead);
        let mut env = Vec::new();
        if let Some(id) = &self.initialize_id {
            env.push((SUPPRESS_ID_ENV, id.to_string()));
        }
        if !self.held.is_empty() {
            let ids: Vec<&Value> = self.held().collect();
            env.push((SUPPRESS_ACKS_ENV, json!(ids).to_string()));
        }
        Handoff { replay, env }
    }

    /// Writes the `tools/list` response to the request `id` as one line.
    ///
    /// # Errors
    /// What writing to `out` fails with.
    pub fn write_tools_list(&self, id: &Value, out: &mut impl Write) -> io::Result<()> {
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
        serde_json::to_writer(&mut *out, id)?;
        out.write_all(b",\"result\":")?;
        out.write_all(self.tools_list.as_bytes())?;
        out.write_all(b"}\n")
    }

    /// Writes the 2026-07-28 `tools/list` response to the request `id` as one line: the stored
    /// list with `resultType` and the session's caching hints ([`modern::write_complete`]).
    ///
    /// # Errors
    /// What writing to `out` fails with.
    pub fn write_modern_tools_list(&self, id: &Value, out: &mut impl Write) -> io::Result<()> {
        out.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":")?;
        serde_json::to_writer(&mut *out, id)?;
        out.write_all(b",\"result\":")?;
        modern::write_complete(out, self.tools_hints, self.tools_list.as_bytes())?;
        out.write_all(b"}\n")
    }

    /// Handles one line (without its newline).
    pub fn handle(&mut self, line: &[u8]) -> Step {
        if jsonrpc::is_blank(line) {
            return Step::Nothing;
        }
        let (value, incoming) = match jsonrpc::parse_line(line) {
            Ok(parsed) => parsed,
            Err(reply) => return Step::Reply(reply.to_line()),
        };
        match incoming {
            Incoming::Response => Step::Nothing,
            Incoming::Notification { .. } => {
                // Before initialize there is no session to notify: the specification lets the
                // server ignore it, and replaying it would break the full server's handshake.
                if self.initialize_id.is_some() {
                    self.replay.extend_from_slice(line);
                    self.replay.push(b'\n');
                } else if let Some(id) = modern::cancelled_request(&value) {
                    self.cancel(id);
                }
                Step::Nothing
            }
            Incoming::Request { id, method, params } => {
                if self.initialize_id.is_some() || method == "initialize" {
                    self.request(line, id, &method, params)
                } else {
                    self.stateless_request(id, &method, params.as_ref())
                }
            }
        }
    }

    /// What the session has chosen so far.
    fn era(&self) -> modern::Era {
        modern::Era {
            initialized: self.initialize_id.is_some(),
            stateless: self.stateless,
        }
    }

    /// Forgets the held subscription `id`, if there is one (its `notifications/cancelled`).
    fn cancel(&mut self, id: &Value) {
        let before = self.held.len();
        self.held.retain(|h| h.listen.id != *id);
        if self.held.len() != before {
            self.replay.clear();
            for held in &self.held {
                self.replay.extend_from_slice(&held.line);
                self.replay.push(b'\n');
            }
        }
    }

    /// A request of a session that opened with `initialize`, or an `initialize`.
    fn request(
        &mut self,
        line: &[u8],
        id: Value,
        method: &str,
        params: Option<Map<String, Value>>,
    ) -> Step {
        let initialized = self.initialize_id.is_some();
        if method == "ping" {
            return Step::Reply(modern::ping_reply_line(&id, params.as_ref()));
        }
        if let Some(refused) = modern::answered_alike(&id, method, params.as_ref(), self.era()) {
            return Step::Reply(refused);
        }
        if initialized
            && let Some(version) = modern::requested_version(params.as_ref())
            && version == STATELESS_VERSION
        {
            // Its `_meta` asks for the stateless rules, whatever came before on the
            // connection: the full server answers it by them.
            return Step::Handoff(format!("`{method}` for protocol version {version}"));
        }
        let result = match method {
            "initialize" if initialized => {
                return Step::Handoff("a second `initialize` request".into());
            }
            "initialize" => match initialize_version(params.as_ref()) {
                Some(version) => {
                    let result = self.identity.initialize_result(version);
                    self.replay.extend_from_slice(line);
                    self.replay.push(b'\n');
                    self.initialize_id = Some(id.clone());
                    result
                }
                None => {
                    let refused = modern::initialize_refusal(&id, params.as_ref());
                    return Step::Reply(refused.to_line());
                }
            },
            "tools/list" => return Step::ListTools(id),
            "resources/templates/list" => resource_templates(),
            "prompts/list" => json!({ "prompts": [] }),
            other => return Step::Handoff(format!("`{other}` needs the full server")),
        };
        Step::Reply(jsonrpc::result_line(&id, &result))
    }

    /// A request before any `initialize`: the 2026-07-28 rules.
    fn stateless_request(
        &mut self,
        id: Value,
        method: &str,
        params: Option<&Map<String, Value>>,
    ) -> Step {
        // A ping, removed methods, versions not served, malformed `_meta` and a list's cursor,
        // answered as the full server's reader answers them; a refused request chooses no era.
        if let Some(refused) = modern::answered_alike(&id, method, params, self.era()) {
            return Step::Reply(refused);
        }
        let version = modern::requested_version(params).unwrap_or_default();
        self.stateless |= modern::chooses_stateless(method, params);
        if version != STATELESS_VERSION {
            return Step::Handoff(format!("`{method}` for protocol version {version}"));
        }
        let result = match method {
            "server/discover" => {
                return Step::Reply(jsonrpc::result_line(&id, &self.identity.discover_result()));
            }
            "tools/list" => return Step::ListModernTools(id),
            "resources/list" => return Step::ListResources(id),
            "resources/templates/list" => resource_templates(),
            "prompts/list" => json!({ "prompts": [] }),
            "subscriptions/listen" => return self.listen(id, params),
            other => return Step::Handoff(format!("`{other}` needs the full server")),
        };
        Step::Reply(modern::complete_result_line(
            &id,
            CacheHints::STABLE,
            &result,
        ))
    }

    fn listen(&self, id: Value, params: Option<&Map<String, Value>>) -> Step {
        if self.held.iter().any(|h| h.listen.id == id) {
            return Step::Handoff("`subscriptions/listen` reusing a held request's id".into());
        }
        match modern::listen_filter(&id, params) {
            Ok(listen) if listen.resources_list_changed && !self.watches_resources => {
                Step::Handoff("`resourcesListChanged` without a watch on the store".into())
            }
            Ok(listen) => Step::Listen(listen),
            Err(reason) => Step::Handoff(reason),
        }
    }
}

/// The `resources/templates/list` result: hooks-mcp's one template, the channels. It is static,
/// so the light path answers it; listing and reading channels needs the store and hands off.
/// (A test in server-full compares it with what the full server lists.)
pub fn resource_templates() -> Value {
    json!({ "resourceTemplates": [{
        "uriTemplate": "hooks://channels/{channel}",
        "name": "channel",
        "title": "Channel messages",
        "description": "A channel's unexpired messages, newest first (as channel_read returns \
                        them); subscribe to be told when they change.",
        "mimeType": "application/json",
    }] })
}

/// The protocol version an `initialize` request names (its completeness is
/// [`modern::answered_alike`]'s to check, before this is asked).
fn initialize_version(params: Option<&Map<String, Value>>) -> Option<&str> {
    params?.get("protocolVersion")?.as_str()
}

/// A handed-over session that the process taking it over cannot serve yet (the full server
/// whose store cannot be opened): what it keeps, to start the session later as if it had been
/// handed over then. That is what the light path answered or holds, in order: the `initialize`
/// line and the notifications, and the held `subscriptions/listen` requests but those
/// cancelled since. A `notifications/cancelled` is not kept: what it names was answered.
#[derive(Debug, Clone, Default)]
pub struct Unserved {
    kept: Vec<u8>,
    /// The id of the `initialize` the light path answered.
    initialize: Option<Value>,
    /// The ids of the subscriptions it holds.
    held: Vec<Value>,
}

/// What one line is to an [`Unserved`] session.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    /// A request to answer, or to serve once the session can be.
    Request(Value),
    /// A bad line's answer (as [`jsonrpc::parse_line`] gives it), to write at once.
    Reply(Vec<u8>),
    /// Nothing to answer (kept, or skipped).
    Nothing,
}

impl Unserved {
    /// A session whose `initialize` (with this id) the light path answered, or which holds the
    /// subscriptions `held` (their ids).
    pub fn new(initialize: Option<Value>, held: Vec<Value>) -> Unserved {
        Unserved {
            kept: Vec::new(),
            initialize,
            held,
        }
    }

    /// Sorts one line (as read, newline or not).
    pub fn take(&mut self, raw: &[u8]) -> Taken {
        let line = raw.strip_suffix(b"\n").unwrap_or(raw);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if jsonrpc::is_blank(line) {
            return Taken::Nothing;
        }
        let (value, incoming) = match jsonrpc::parse_line(line) {
            Ok(parsed) => parsed,
            Err(reply) => return Taken::Reply(reply.to_line()),
        };
        let keep = match incoming {
            Incoming::Response => false,
            Incoming::Notification { .. } => match modern::cancelled_request(&value) {
                Some(id) => {
                    if let Some(at) = self.held.iter().position(|held| held == id) {
                        let id = self.held.remove(at);
                        self.forget(&id);
                    }
                    false
                }
                None => true,
            },
            Incoming::Request { id, method, .. } => {
                let answered = method == "initialize" && self.initialize.as_ref() == Some(&id);
                let held = method == "subscriptions/listen" && self.held.contains(&id);
                if !(answered || held) {
                    return Taken::Request(id);
                }
                true
            }
        };
        if keep {
            self.kept.extend_from_slice(line);
            self.kept.push(b'\n');
        }
        Taken::Nothing
    }

    /// The replay that starts the session at `trigger` (a request as read), then `rest` (what
    /// was read after it), and the ids of the subscriptions still held.
    pub fn resume(self, trigger: &[u8], rest: &[u8]) -> (Vec<u8>, Vec<Value>) {
        let mut replay = self.kept;
        replay.extend_from_slice(trigger);
        if !trigger.ends_with(b"\n") {
            replay.push(b'\n');
        }
        replay.extend_from_slice(rest);
        (replay, self.held)
    }

    /// Drops the kept `subscriptions/listen` request `id`.
    fn forget(&mut self, id: &Value) {
        let mut rest = Vec::with_capacity(self.kept.len());
        for line in self.kept.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let listen = matches!(
                jsonrpc::parse_line(line),
                Ok((_, Incoming::Request { id: ref held, ref method, .. }))
                    if held == id && method == "subscriptions/listen"
            );
            if !listen {
                rest.extend_from_slice(line);
                rest.push(b'\n');
            }
        }
        self.kept = rest;
    }
}

#[cfg(test)]
mod handoff_tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn the_replay_file_carries_the_suppressed_ids_and_the_environment_the_rest() {
        let id = "x".repeat(200_000);
        let handoff = Handoff {
            replay: b"{\"a\":1}\nrest".to_vec(),
            env: vec![
                (SUPPRESS_ID_ENV, json!(id).to_string()),
                (SUPPRESS_ACKS_ENV, "[1]".to_owned()),
                ("OTHER", "2".to_owned()),
            ],
        };
        let file = handoff.file();
        let (settings, replay) = read_file(&file);
        assert_eq!(replay, handoff.replay);
        assert_eq!(
            settings,
            [
                (SUPPRESS_ID_ENV.to_owned(), json!(id).to_string()),
                (SUPPRESS_ACKS_ENV.to_owned(), "[1]".to_owned())
            ]
        );
        assert_eq!(handoff.environment().collect::<Vec<_>>(), [("OTHER", "2")]);
        assert_eq!(handoff.answered(), Some(json!(id)));
        // A file without the header (another build's) is all replay.
        let (settings, replay) = read_file(b"{\"jsonrpc\":\"2.0\"}\nmore");
        assert!(settings.is_empty());
        assert_eq!(replay, b"{\"jsonrpc\":\"2.0\"}\nmore");
    }

    fn line(v: Value) -> Vec<u8> {
        format!("{v}\n").into_bytes()
    }

    #[test]
    fn an_unserved_session_keeps_what_the_light_path_answered_or_holds() {
        let init = line(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}));
        let note = line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let listen = |id: i64| {
            line(
                json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {}}),
            )
        };
        let cancel = |id: i64| {
            line(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}),
            )
        };
        let call = line(
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "x"}}),
        );
        let mut s = Unserved::new(Some(json!(1)), vec![json!(5), json!(6)]);
        for kept in [&init, &note, &listen(5), &listen(6)] {
            assert_eq!(s.take(kept), Taken::Nothing);
        }
        assert_eq!(s.take(&call), Taken::Request(json!(9)));
        // A listen not held, and an initialize not answered, are requests like any other.
        assert_eq!(s.take(&listen(7)), Taken::Request(json!(7)));
        assert!(matches!(s.take(b"{oops"), Taken::Reply(_)));
        assert_eq!(s.take(b"  \r\n"), Taken::Nothing);
        assert_eq!(s.take(&cancel(5)), Taken::Nothing);
        assert_eq!(s.take(&cancel(9)), Taken::Nothing);
        let (replay, held) = s.resume(b"trigger", b"rest");
        let mut expected = [init, note, listen(6)].concat();
        expected.extend_from_slice(b"trigger\nrest");
        assert_eq!(String::from_utf8(replay), String::from_utf8(expected));
        assert_eq!(held, [json!(6)]);
    }
}

#[cfg(test)]
mod tests;
