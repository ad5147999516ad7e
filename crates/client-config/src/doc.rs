//! The clients' files, edited in place: JSON (with comments, as Gemini CLI, VS Code and Cursor
//! allow) through jsonc-parser's concrete syntax tree and TOML through toml_edit, so that the
//! user's comments, formatting and key order survive; each change planned first (nothing is
//! written when any file cannot be read), then written after a backup, through a temporary
//! file and a rename.
//!
//! A JSON change is computed on plain values and applied to the tree as the difference between
//! the document before and after: properties added at the end of their object, removed ones
//! taken out with their separators, changed values replaced. Removing what `init` added
//! restores the text byte for byte: when the result holds exactly what the file's newest backup
//! without hooks-mcp's entries holds, that backup's text is written back (an object the user
//! wrote on one line stays on one line); otherwise the edit keeps everything else as written,
//! and a container that was empty before `init` (`"mcpServers": {}`, as that backup has it)
//! stays when the removal empties it. A file
//! left empty by a removal (`{}`, or a TOML file with nothing in it) is deleted: `init` created
//! it.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstObject, CstRootNode};
use serde_json::{Map, Value};

/// What to do to one file.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// The file.
    pub path: PathBuf,
    /// Its text now (`None`: it does not exist).
    pub before: Option<String>,
    /// Its text after the change (`None`: delete it, or leave it absent).
    pub after: Option<String>,
    /// One line per change, for people.
    pub changes: Vec<String>,
}

impl FileChange {
    /// Whether the change writes nothing.
    pub fn is_unchanged(&self) -> bool {
        self.before == self.after
    }
}

/// A file's text: `Ok(None)` when it does not exist.
///
/// # Errors
/// A message naming the file when it cannot be read.
pub fn read_text(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// A JSON file (comments and trailing commas allowed), read for a change.
#[derive(Debug, Clone)]
pub struct JsonDoc {
    /// The file.
    pub path: PathBuf,
    /// Its text, `None` when it does not exist.
    pub text: Option<String>,
    /// Its top-level object (empty for a missing or blank file).
    pub value: Map<String, Value>,
    /// The file as its newest backup without hooks-mcp's entries holds it (`init` backs each
    /// file up before its first change): which containers were there, empty, before `init`.
    pub prior: Option<Map<String, Value>>,
    /// That backup's text, written back whole when a change restores exactly its content.
    pub prior_text: Option<String>,
}

impl JsonDoc {
    /// Reads `path`.
    ///
    /// # Errors
    /// A message naming the file when it cannot be read, is not JSON or not an object.
    pub fn load(path: &Path) -> Result<JsonDoc, String> {
        let text = read_text(path)?;
        let value = match text.as_deref() {
            None => Map::new(),
            Some(t) if t.trim().is_empty() => Map::new(),
            Some(t) => match parse_json(t) {
                Ok(Value::Object(map)) => map,
                Ok(_) => {
                    return Err(format!(
                        "{} is not a JSON object; fix or move it aside, then run again",
                        path.display()
                    ));
                }
                Err(e) => {
                    return Err(format!(
                        "{} {e}, then run again (nothing was changed)",
                        path.display()
                    ));
                }
            },
        };
        let (prior, prior_text) = match text.as_ref().and_then(|_| clean_backup(path)) {
            Some((map, backup)) => (Some(map), Some(backup)),
            None => (None, None),
        };
        Ok(JsonDoc {
            path: path.to_owned(),
            text,
            value,
            prior,
            prior_text,
        })
    }

    /// Whether the file is exactly what writing its present value over `backup` makes, as
    /// `init` wrote it: nobody added a comment or changed its layout since.
    fn untouched_since(&self, backup: &str) -> bool {
        rewrite_json(backup, &self.current()).as_deref() == self.text.as_deref()
    }

    /// The change that makes the document `after`, with `changes` described (no changes: the
    /// text stays as it is).
    pub fn change(&self, mut after: Map<String, Value>, changes: Vec<String>) -> FileChange {
        if let Some(prior) = &self.prior {
            keep_prior_containers(&mut after, &self.value, prior);
        }
        let restores_backup = self.prior.as_ref() == Some(&after);
        let after_text = if changes.is_empty() || Value::Object(after.clone()) == self.current() {
            self.text.clone()
        } else if let Some(backup) = self
            .prior_text
            .as_ref()
            .filter(|backup| restores_backup && self.untouched_since(backup))
        {
            // Back to what the file held before `init`, which is all it holds since: its own
            // bytes, formatting and all.
            Some(backup.clone())
        } else {
            match rewrite_json(self.text.as_deref().unwrap_or(""), &Value::Object(after)) {
                Some(text) if text.trim() == "{}" => None,
                Some(text) => Some(text),
                None => self.text.clone(),
            }
        };
        FileChange {
            path: self.path.clone(),
            before: self.text.clone(),
            after: after_text,
            changes,
        }
    }

    fn current(&self) -> Value {
        Value::Object(self.value.clone())
    }
}

/// The newest backup of `path` (`<file>.hooks-mcp-<unix ms>.bak`) that holds nothing of
/// hooks-mcp's, as a document and as its text.
fn clean_backup(path: &Path) -> Option<(Map<String, Value>, String)> {
    let path = std::fs::canonicalize(path).ok()?;
    let name = path.file_name()?.to_str()?.to_owned();
    let prefix = format!("{name}.hooks-mcp-");
    let mut backups: Vec<(u64, PathBuf)> = std::fs::read_dir(path.parent()?)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().into_string().ok()?;
            let ms = file
                .strip_prefix(&prefix)?
                .strip_suffix(".bak")?
                .parse()
                .ok()?;
            Some((ms, entry.path()))
        })
        .collect();
    backups.sort();
    backups.into_iter().rev().find_map(|(_, backup)| {
        let text = std::fs::read_to_string(backup).ok()?;
        if text.contains("hooks-mcp") {
            return None;
        }
        match parse_json(&text).ok()? {
            Value::Object(map) => Some((map, text)),
            _ => None,
        }
    })
}

/// Puts back the containers a removal emptied and took out of `after` that were there, empty,
/// before `init` (in `prior`): `"mcpServers": {}` stays as the user had it.
fn keep_prior_containers(
    after: &mut Map<String, Value>,
    before: &Map<String, Value>,
    prior: &Map<String, Value>,
) {
    for (key, was) in prior {
        let emptied_here = before.contains_key(key) && !after.contains_key(key);
        let empty = match was {
            Value::Object(o) => o.is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => false,
        };
        if emptied_here && empty {
            after.insert(key.clone(), was.clone());
        } else if let (Some(Value::Object(now)), Some(Value::Object(then)), Value::Object(was)) =
            (after.get_mut(key), before.get(key), was)
        {
            keep_prior_containers(now, then, was);
        }
    }
}

/// Why a client's JSON file cannot be read (said after the file's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    /// Not JSON (comments and trailing commas aside).
    #[error("is not valid JSON ({0}): fix it or move it aside")]
    Syntax(String),
    /// The text starts with U+FEFF.
    #[error(
        "starts with a byte order mark (BOM), which the clients' JSON readers refuse: save it \
         as UTF-8 without a BOM"
    )]
    ByteOrderMark,
    /// An object names a key twice.
    #[error(
        "has the key `{key}` twice{}: the client reads only the last one, so `init` would \
         change the other; merge the two into one",
        if within.is_empty() { String::new() } else { format!(" (in `{within}`)") }
    )]
    DuplicateKey {
        /// The key.
        key: String,
        /// Where the object is (`mcpServers`, `hooks.Stop[0]`), empty at the top.
        within: String,
    },
}

/// What the clients' files may hold beside JSON: comments and trailing commas (which their
/// readers skip), nothing else (no unquoted keys, single quotes, hexadecimal numbers or
/// missing commas: the clients' JSON readers refuse the file).
fn parse_options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Parses JSON with comments (and trailing commas) into a value.
///
/// # Errors
/// [`JsonError`]: not JSON, a byte order mark, or a key named twice in one object.
pub fn parse_json(text: &str) -> Result<Value, JsonError> {
    if text.starts_with('\u{feff}') {
        return Err(JsonError::ByteOrderMark);
    }
    let root =
        CstRootNode::parse(text, &parse_options()).map_err(|e| JsonError::Syntax(e.to_string()))?;
    if let Some(value) = root.value() {
        refuse_duplicates(&value, "")?;
    }
    Ok(root.to_serde_value().unwrap_or(Value::Null))
}

/// The first key an object under `node` names twice.
fn refuse_duplicates(node: &jsonc_parser::cst::CstNode, within: &str) -> Result<(), JsonError> {
    if let Some(object) = node.as_object() {
        let mut seen = std::collections::HashSet::new();
        for prop in object.properties() {
            let Some(key) = prop.decoded_name() else {
                continue;
            };
            if !seen.insert(key.clone()) {
                return Err(JsonError::DuplicateKey {
                    key,
                    within: within.to_owned(),
                });
            }
            if let Some(value) = prop.value() {
                let path = if within.is_empty() {
                    key
                } else {
                    format!("{within}.{key}")
                };
                refuse_duplicates(&value, &path)?;
            }
        }
    } else if let Some(array) = node.as_array() {
        for (index, element) in array.elements().iter().enumerate() {
            refuse_duplicates(element, &format!("{within}[{index}]"))?;
        }
    }
    Ok(())
}

/// `text` (JSON with comments) rewritten to hold `after`, everything that did not change kept
/// as written. `None` when the text does not parse.
pub fn rewrite_json(text: &str, after: &Value) -> Option<String> {
    let root = CstRootNode::parse(text, &parse_options()).ok()?;
    match (root.value(), after) {
        (Some(node), Value::Object(after)) if node.as_object().is_some() => {
            let before = node.to_serde_value().unwrap_or(Value::Null);
            let object = node.as_object()?;
            apply_object(&object, before.as_object()?, after);
        }
        _ => root.set_value(input(after)),
    }
    let mut out = root.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

/// Makes the object `node` (now `before`) hold `after`.
fn apply_object(node: &CstObject, before: &Map<String, Value>, after: &Map<String, Value>) {
    for key in before.keys().filter(|k| !after.contains_key(*k)) {
        if let Some(prop) = node.get(key) {
            prop.remove();
        }
    }
    for (key, new) in after {
        match (before.get(key), node.get(key)) {
            (Some(old), _) if old == new => {}
            (Some(Value::Object(old)), Some(prop)) if new.is_object() => {
                if let (Some(object), Some(new)) = (prop.object_value(), new.as_object()) {
                    apply_object(&object, old, new);
                } else {
                    prop.set_value(input(new));
                }
            }
            (Some(Value::Array(old)), Some(prop)) if new.is_array() => {
                match (prop.array_value(), new.as_array()) {
                    (Some(array), Some(new)) => apply_array(&array, old, new),
                    _ => prop.set_value(input(new)),
                }
            }
            (Some(_), Some(prop)) => prop.set_value(input(new)),
            _ => {
                node.append(key, input(new));
            }
        }
    }
}

/// Makes the array `node` (now `before`) hold `after`: the fewest elements removed, added and
/// changed in place (an element is changed in place only where that saves removing it and
/// adding another: an element that is not there any more is removed, not overwritten by its
/// neighbour), so that every element that stays keeps its text, comments and numbers as
/// written.
fn apply_array(node: &CstArray, before: &[Value], after: &[Value]) {
    if after.len() >= before.len() && after.starts_with(before) {
        for value in &after[before.len()..] {
            node.append(input(value));
        }
        return;
    }
    let elements = node.elements();
    let Some(steps) = array_steps(before, after).filter(|_| elements.len() == before.len()) else {
        // Too large to compare element by element: the whole array is written anew.
        let _ = node
            .clone()
            .replace_with(input(&Value::Array(after.to_vec())));
        return;
    };
    let mut removed = Vec::new();
    for step in &steps {
        match *step {
            Step::Keep(..) | Step::Add(_) => {}
            Step::Change(old, new) => {
                let element = elements[old].clone();
                match (
                    &before[old],
                    &after[new],
                    element.as_object(),
                    element.as_array(),
                ) {
                    (Value::Object(was), Value::Object(now), Some(object), _) => {
                        apply_object(&object, was, now)
                    }
                    (Value::Array(was), Value::Array(now), _, Some(array)) => {
                        apply_array(&array, was, now)
                    }
                    _ => replace_node(element, &after[new]),
                }
            }
            Step::Remove(old) => removed.push(elements[old].clone()),
        }
    }
    for element in removed {
        remove_node(element);
    }
    // What is left are the kept and changed elements in their order: each new one goes where
    // `after` has it.
    for step in &steps {
        if let Step::Add(new) = *step {
            node.insert(new, input(&after[new]));
        }
    }
}

/// One step of turning an array into another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// `before[.0]` stays as it is, as `after[.1]`.
    Keep(usize, usize),
    /// `before[.0]` (an object or an array) is changed in place into `after[.1]`.
    Change(usize, usize),
    /// `before[.0]` is removed.
    Remove(usize),
    /// `after[.0]` is added.
    Add(usize),
}

/// The cheapest steps from `before` to `after` (removing or adding an element costs 200;
/// changing an object or an array in place costs 200 more the more it differs, up to 400 for
/// one that has nothing left in common, so that an element is changed only into the one it
/// most resembles), `None` when the arrays are too large to compare element by element.
fn array_steps(before: &[Value], after: &[Value]) -> Option<Vec<Step>> {
    const LIMIT: usize = 250_000;
    const ONE: u32 = 200;
    let (n, m) = (before.len(), after.len());
    if (n + 1).saturating_mul(m + 1) > LIMIT {
        return None;
    }
    // cost[i * width + j]: turning before[i..] into after[j..].
    let width = m + 1;
    let mut cost = vec![0u32; (n + 1) * width];
    for i in (0..=n).rev() {
        for j in (0..=m).rev() {
            let here = i * width + j;
            let mut best = u32::MAX;
            if i == n && j == m {
                best = 0;
            }
            if i < n {
                best = best.min(cost[here + width] + ONE);
            }
            if j < m {
                best = best.min(cost[here + 1] + ONE);
            }
            if i < n && j < m {
                if before[i] == after[j] {
                    best = best.min(cost[here + width + 1]);
                } else if let Some(change) = change_cost(&before[i], &after[j]) {
                    best = best.min(cost[here + width + 1] + change);
                }
            }
            cost[here] = best;
        }
    }
    let mut steps = Vec::with_capacity(n.max(m));
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        let here = i * width + j;
        let diagonal = (i < n && j < m).then(|| cost[here + width + 1]);
        if diagonal.is_some_and(|rest| before[i] == after[j] && cost[here] == rest) {
            steps.push(Step::Keep(i, j));
            (i, j) = (i + 1, j + 1);
        } else if diagonal.is_some_and(|rest| {
            change_cost(&before[i], &after[j]).is_some_and(|c| cost[here] == rest + c)
        }) {
            steps.push(Step::Change(i, j));
            (i, j) = (i + 1, j + 1);
        } else if i < n && cost[here] == cost[here + width] + ONE {
            steps.push(Step::Remove(i));
            i += 1;
        } else {
            steps.push(Step::Add(j));
            j += 1;
        }
    }
    Some(steps)
}

/// What changing `a` into `b` in place costs (200 to 400: see [`array_steps`]); `None` when
/// they are not both objects or both arrays.
fn change_cost(a: &Value, b: &Value) -> Option<u32> {
    let differs = match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys = a.len() + b.keys().filter(|k| !a.contains_key(*k)).count();
            let same = a.iter().filter(|(k, v)| b.get(*k) == Some(v)).count();
            1.0 - same as f64 / keys.max(1) as f64
        }
        (Value::Array(a), Value::Array(b)) => 1.0 - shared_fraction(a, b),
        _ => return None,
    };
    // One level down too: an object whose values are arrays sharing elements resembles.
    let nested = match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let shared: f64 = a
                .iter()
                .filter_map(|(k, v)| match (v, b.get(k)) {
                    (Value::Array(x), Some(Value::Array(y))) if x != y => {
                        Some(shared_fraction(x, y))
                    }
                    _ => None,
                })
                .sum();
            let keys = a.len() + b.keys().filter(|k| !a.contains_key(*k)).count();
            shared / keys.max(1) as f64
        }
        _ => 0.0,
    };
    let differs = (differs - nested).clamp(0.0, 1.0);
    Some(200 + (200.0 * differs).round() as u32)
}

/// The share of elements two arrays have in common (0 to 1).
fn shared_fraction(a: &[Value], b: &[Value]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut unused: Vec<&Value> = b.iter().collect();
    let mut common = 0usize;
    for value in a {
        if let Some(at) = unused.iter().position(|other| *other == value) {
            unused.swap_remove(at);
            common += 1;
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

fn remove_node(node: jsonc_parser::cst::CstNode) {
    if let Some(object) = node.as_object() {
        object.remove();
    } else if let Some(array) = node.as_array() {
        array.remove();
    } else if let Some(string) = node.as_string_lit() {
        string.remove();
    } else if let Some(number) = node.as_number_lit() {
        number.remove();
    } else if let Some(boolean) = node.as_boolean_lit() {
        boolean.remove();
    } else if let Some(null) = node.as_null_keyword() {
        null.remove();
    }
}

fn replace_node(node: jsonc_parser::cst::CstNode, value: &Value) {
    if let Some(object) = node.as_object() {
        object.replace_with(input(value));
    } else if let Some(array) = node.as_array() {
        array.replace_with(input(value));
    } else if let Some(string) = node.as_string_lit() {
        string.replace_with(input(value));
    } else if let Some(number) = node.as_number_lit() {
        number.replace_with(input(value));
    } else if let Some(boolean) = node.as_boolean_lit() {
        boolean.replace_with(input(value));
    } else if let Some(null) = node.as_null_keyword() {
        null.replace_with(input(value));
    }
}

/// A JSON value as the tree's input.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// A TOML file, read for a change.
#[derive(Debug, Clone)]
pub struct TomlDoc {
    /// The file.
    pub path: PathBuf,
    /// Its text, `None` when it does not exist.
    pub text: Option<String>,
    /// The editable document.
    pub doc: toml_edit::DocumentMut,
}

impl TomlDoc {
    /// Reads `path`.
    ///
    /// # Errors
    /// A message naming the file when it cannot be read or is not TOML.
    pub fn load(path: &Path) -> Result<TomlDoc, String> {
        let text = read_text(path)?;
        let doc = text
            .as_deref()
            .unwrap_or("")
            .parse::<toml_edit::DocumentMut>()
            .map_err(|e| {
                format!(
                    "{} is not valid TOML ({}); fix or move it aside, then run again (nothing \
                     was changed)",
                    path.display(),
                    e.to_string().trim()
                )
            })?;
        Ok(TomlDoc {
            path: path.to_owned(),
            text,
            doc,
        })
    }

    /// The change to the document as edited, with `changes` described.
    pub fn change(&self, changes: Vec<String>) -> FileChange {
        let text = self.doc.to_string();
        let after = if changes.is_empty() {
            self.text.clone()
        } else if text.trim().is_empty() {
            None
        } else {
            Some(text)
        };
        FileChange {
            path: self.path.clone(),
            before: self.text.clone(),
            after,
            changes,
        }
    }
}

/// Whether a file name is one of `init`'s backups (`<file>.hooks-mcp-<unix ms>.bak`).
pub fn is_backup_name(name: &str) -> bool {
    name.strip_suffix(".bak")
        .and_then(|stem| stem.rsplit_once(".hooks-mcp-"))
        .is_some_and(|(_, ms)| !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes every planned change, all or none: each file is first backed up
/// (`<file>.hooks-mcp-<unix ms>.bak`, when it existed) and its new text written to a temporary
/// file beside it; only when every file got that far are the temporary files renamed over
/// theirs (or the files deleted). A file reached through a symbolic link is written at the
/// link's target, so the link stays one (even one whose target does not exist yet). Returns
/// the backups' paths.
///
/// # Errors
/// A message naming the file and the step that failed; every file is then as it was (the
/// backups and temporary files made so far are removed).
pub fn write_all(changes: &[&FileChange], now_ms: i64) -> Result<Vec<PathBuf>, String> {
    let mut staged: Vec<Staged> = Vec::new();
    for change in changes {
        match Staged::new(change, now_ms) {
            Ok(one) => staged.push(one),
            Err(why) => {
                staged.iter().for_each(Staged::abandon);
                return Err(format!("{why} (nothing was changed)"));
            }
        }
    }
    for (done, one) in staged.iter().enumerate() {
        if let Err(why) = one.commit() {
            // Rare (the directory was writable a moment ago): put back what was replaced.
            staged[..done].iter().for_each(Staged::restore);
            staged.iter().for_each(Staged::abandon);
            return Err(format!("{why} (every file was put back as it was)"));
        }
    }
    Ok(staged.into_iter().filter_map(|one| one.backup).collect())
}

/// One file's change, ready to take effect: its backup and its new text written beside it.
struct Staged {
    /// The file written (a symbolic link's target).
    path: PathBuf,
    /// Whether it existed before.
    existed: bool,
    backup: Option<PathBuf>,
    /// The new text, beside the file; `None` when the file is deleted.
    tmp: Option<PathBuf>,
}

impl Staged {
    fn new(change: &FileChange, now_ms: i64) -> Result<Staged, String> {
        let path = link_target(&change.path);
        let failed =
            |what: &str, p: &Path, e: std::io::Error| format!("cannot {what} {}: {e}", p.display());
        let existed = change.before.is_some();
        let old = if existed {
            std::fs::metadata(&path).ok()
        } else {
            None
        };
        if let Some(old) = &old
            && old.permissions().readonly()
        {
            return Err(format!(
                "{} is read-only (mode {:o}), so `init` leaves it: make it writable (`chmod u+w \
                 {}`) to let `init` change it",
                path.display(),
                old.permissions().mode() & 0o7777,
                path.display()
            ));
        }
        let backup = if existed {
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(format!(".hooks-mcp-{now_ms}.bak"));
            let backup = path.with_file_name(name);
            std::fs::copy(&path, &backup).map_err(|e| failed("back up", &path, e))?;
            if let Some(old) = &old {
                // Run as root over a user's file: the backup stays the user's.
                let _ = std::os::unix::fs::chown(&backup, Some(old.uid()), Some(old.gid()));
            }
            Some(backup)
        } else {
            None
        };
        let mut staged = Staged {
            path,
            existed,
            backup,
            tmp: None,
        };
        let Some(text) = &change.after else {
            return Ok(staged);
        };
        if let Some(dir) = staged.path.parent()
            && let Err(e) = std::fs::create_dir_all(dir)
        {
            staged.abandon();
            return Err(failed("create", dir, e));
        }
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(staged.path.file_name().unwrap_or_default());
        tmp_name.push(".hooks-mcp-tmp");
        let tmp = staged.path.with_file_name(tmp_name);
        let written = new_file_like(&tmp, old.as_ref())
            .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            staged.abandon();
            return Err(failed("write", &tmp, e));
        }
        staged.tmp = Some(tmp);
        Ok(staged)
    }

    /// Puts the new text in place (or deletes the file).
    fn commit(&self) -> Result<(), String> {
        let done = match &self.tmp {
            Some(tmp) => std::fs::rename(tmp, &self.path),
            None if self.existed => std::fs::remove_file(&self.path),
            None => Ok(()),
        };
        done.map_err(|e| format!("cannot replace {}: {e}", self.path.display()))
    }

    /// Undoes a commit: the backup copied back, or the file made here deleted.
    fn restore(&self) {
        match &self.backup {
            Some(backup) => {
                let _ = std::fs::copy(backup, &self.path);
            }
            None => {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }

    /// Removes what staging made: the temporary file and the backup.
    fn abandon(&self) {
        for made in [&self.tmp, &self.backup].into_iter().flatten() {
            let _ = std::fs::remove_file(made);
        }
    }
}

/// Creates `path` (removing a stale one first) with the owner, group and permissions of the
/// file it will replace (`like`), before anything is written to it: a private file (0600)
/// never shows its new text to others, and a user's file rewritten by root stays the user's.
/// Without `like`, the file is created as any new file (0666 less the umask). An owner this
/// process may not give (not root) is left as it is.
fn new_file_like(path: &Path, like: Option<&std::fs::Metadata>) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;

    let _ = std::fs::remove_file(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    if let Some(like) = like {
        // The umask may take bits off, never add any; `set_permissions` below restores them.
        options.mode(like.permissions().mode() & 0o777);
    }
    let file = options.open(path)?;
    if let Some(like) = like {
        let _ = std::os::unix::fs::fchown(&file, Some(like.uid()), Some(like.gid()));
        file.set_permissions(like.permissions())?;
    }
    Ok(file)
}

/// Where writing `path` must go so that a symbolic link stays one: the end of its chain of
/// links (the target need not exist), or `path` itself.
fn link_target(path: &Path) -> PathBuf {
    let mut path = path.to_owned();
    // Bounded as the kernel bounds a chain of links.
    for _ in 0..40 {
        match std::fs::read_link(&path) {
            Ok(target) => {
                path = match path.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Err(_) => break,
        }
    }
    path
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn round_trip(text: &str, edit: impl Fn(&mut Map<String, Value>)) -> (String, String) {
        let before = parse_json(text).unwrap();
        let mut after = before.as_object().unwrap().clone();
        edit(&mut after);
        let added = rewrite_json(text, &Value::Object(after)).unwrap();
        let removed = rewrite_json(&added, &before).unwrap();
        (added, removed)
    }

    #[test]
    fn adding_then_removing_restores_the_text() {
        let text = "{\n  // the user's note\n  \"theme\": \"dark\", /* keep */\n  \"mcpServers\": {\n    \"other\": { \"command\": \"x\" }\n  },\n  \"hooks\": {\"BeforeTool\": [\n    {\"matcher\": \"x\", \"hooks\": []}\n  ]}\n}\n";
        let (added, removed) = round_trip(text, |doc| {
            doc["mcpServers"]["hooks"] = json!({"command": "/bin/hooks-mcp", "args": []});
            doc["hooks"]["BeforeTool"]
                .as_array_mut()
                .unwrap()
                .push(json!({"matcher": "*", "hooks": [{"type": "command", "command": "h"}]}));
            doc.insert("security".into(), json!({"a": [1]}));
        });
        assert!(added.contains("// the user's note") && added.contains("/* keep */"));
        assert!(added.contains("\"command\": \"/bin/hooks-mcp\""), "{added}");
        assert_eq!(
            parse_json(&added).unwrap()["hooks"]["BeforeTool"][1]["matcher"],
            "*"
        );
        assert_eq!(removed, text);
    }

    #[test]
    fn a_changed_value_is_replaced_in_place() {
        let text = "{\n  \"a\": {\"b\": 1, \"c\": [1, 2, 3]},\n  \"d\": true\n}\n";
        let (added, _) = round_trip(text, |doc| {
            doc["a"]["b"] = json!(2);
            doc["a"]["c"] = json!([1, 3]);
            doc.remove("d");
        });
        assert_eq!(added, "{\n  \"a\": {\"b\": 2, \"c\": [1, 3]}\n}\n");
    }

    #[test]
    fn removing_what_init_added_restores_an_object_written_on_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let original = "{\"theme\": \"dark\", \"mcpServers\": {\"other\": {\"command\": \"x\"}}}\n";
        std::fs::write(&path, original).unwrap();
        let doc = JsonDoc::load(&path).unwrap();
        let mut after = doc.value.clone();
        after["mcpServers"]["hooks"] = json!({"command": "/bin/hooks-mcp"});
        let added = doc.change(after, vec!["add".into()]);
        assert_eq!(
            write_all(&[&added], 10).unwrap().len(),
            1,
            "init backs the file up"
        );
        let added_text = std::fs::read_to_string(&path).unwrap();
        assert!(added_text.contains("/bin/hooks-mcp"), "{added_text}");
        // What `init --remove` writes over the file as it stands: `hooks` taken out.
        let removal = || {
            let doc = JsonDoc::load(&path).unwrap();
            let mut after = doc.value.clone();
            after["mcpServers"].as_object_mut().unwrap().remove("hooks");
            doc.change(after, vec!["remove".into()]).after.unwrap()
        };
        assert_eq!(removal(), original);
        // A user's own edit since init is kept: the backup is not written over it.
        std::fs::write(&path, added_text.replace("dark", "light")).unwrap();
        let removal_text = removal();
        assert!(
            removal_text.contains("light") && !removal_text.contains("hooks-mcp"),
            "{removal_text}"
        );
        // Nor is a comment the user added since init, though the values are the backup's.
        let commented = added_text.replacen('{', "{\n  // mine\n", 1);
        std::fs::write(&path, &commented).unwrap();
        let removal_text = removal();
        assert!(
            removal_text.contains("// mine") && !removal_text.contains("hooks-mcp"),
            "{removal_text}"
        );
    }

    #[test]
    fn documents_left_empty_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        let doc = JsonDoc::load(&path).unwrap();
        let mut after = Map::new();
        after.insert("servers".into(), json!({"hooks": {"command": "x"}}));
        let change = doc.change(after, vec!["add".into()]);
        std::fs::write(&path, change.after.as_deref().unwrap()).unwrap();
        let doc = JsonDoc::load(&path).unwrap();
        let removal = doc.change(Map::new(), vec!["remove".into()]);
        assert_eq!(removal.after, None);
        assert!(removal.before.is_some());
        write_all(&[&removal], 1).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn replacing_our_group_leaves_the_users_neighbouring_group_as_written() {
        let user = "{\n        // audit every shell command -- do not remove, ticket SEC-42\n        \"matcher\": \"run_shell_command\",\n        \"hooks\": [{\"type\": \"command\", \"command\": \"/opt/audit.sh\", \"timeout\": 1.50, \"id\": 12345678901234567890123}]\n      }";
        let text = format!(
            "{{\n  \"hooks\": {{\n    \"BeforeTool\": [\n      {{\"matcher\": \"*\", \"hooks\": [{{\"type\": \"command\", \"command\": \"/old/hooks-mcp-hook hook BeforeTool\"}}]}},\n      {user}\n    ]\n  }}\n}}\n"
        );
        let before = parse_json(&text).unwrap();
        let mut after = before.clone();
        let groups = after["hooks"]["BeforeTool"].as_array_mut().unwrap();
        groups.remove(0);
        groups.push(json!({"matcher": "*", "hooks": [{"type": "command", "command": "/new/hooks-mcp-hook hook BeforeTool"}]}));
        let updated = rewrite_json(&text, &after).unwrap();
        assert!(updated.contains(user), "{updated}");
        assert!(!updated.contains("/old/"), "{updated}");
        assert_eq!(
            parse_json(&updated).unwrap()["hooks"]["BeforeTool"][1]["hooks"][0]["command"],
            "/new/hooks-mcp-hook hook BeforeTool"
        );
        // Taking hooks-mcp's group out again leaves the user's group, comment and numbers.
        let mut removed = after.clone();
        removed["hooks"]["BeforeTool"].as_array_mut().unwrap().pop();
        let removed = rewrite_json(&updated, &removed).unwrap();
        assert!(removed.contains(user), "{removed}");
        assert!(!removed.contains("hooks-mcp"), "{removed}");
        // A group whose hooks-mcp hook is taken out while the user's stays is changed in place.
        let shared = "{\"hooks\": {\"Stop\": [\n  {\"hooks\": [{\"command\": \"/opt/a.sh\", \"timeout\": 1.50}, {\"command\": \"/old/hooks-mcp-hook hook Stop\"}]}\n]}}\n";
        let after = json!({"hooks": {"Stop": [
            {"hooks": [{"command": "/opt/a.sh", "timeout": 1.5}]},
            {"hooks": [{"command": "/new/hooks-mcp-hook hook Stop"}]}
        ]}});
        let updated = rewrite_json(shared, &after).unwrap();
        assert!(
            updated.contains("{\"command\": \"/opt/a.sh\", \"timeout\": 1.50}"),
            "{updated}"
        );
        assert_eq!(parse_json(&updated).unwrap(), after);
    }

    #[test]
    fn a_key_named_twice_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude.json");
        std::fs::write(
            &path,
            "{\n  \"mcpServers\": {\"a\": {\"command\": \"a\"}},\n  \"numStartups\": 3,\n  \"mcpServers\": {\"b\": {\"command\": \"b\"}}\n}\n",
        )
        .unwrap();
        let why = JsonDoc::load(&path).unwrap_err();
        assert!(why.contains("the key `mcpServers` twice"), "{why}");
        assert!(why.contains(&path.display().to_string()), "{why}");
        let nested = "{\"hooks\": {\"Stop\": [{\"hooks\": [], \"hooks\": []}]}}";
        assert_eq!(
            parse_json(nested).unwrap_err(),
            JsonError::DuplicateKey {
                key: "hooks".into(),
                within: "hooks.Stop[0]".into()
            }
        );
        // The same name in different objects is no duplicate.
        parse_json("{\"a\": {\"x\": 1}, \"b\": {\"x\": 1}}").unwrap();
    }

    #[test]
    fn only_comments_and_trailing_commas_are_allowed_beside_json() {
        parse_json("{\n  // note\n  \"a\": [1, 2,], /* b */\n  \"b\": {\"c\": true,},\n}\n")
            .unwrap();
        for text in [
            "{numStartups: 3}",
            "{'theme': 'dark'}",
            "{\"n\": 0x10}",
            "{\"m\": 1 \"k\": 2}",
            "{\"p\": +1}",
            "{\"q\": .5}",
            "{\"r\": NaN}",
        ] {
            assert!(
                matches!(parse_json(text), Err(JsonError::Syntax(_))),
                "{text}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, "\u{feff}{\"numStartups\": 3}\n").unwrap();
        let why = JsonDoc::load(&path).unwrap_err();
        assert!(why.contains("byte order mark (BOM)"), "{why}");
    }

    #[test]
    fn a_replaced_file_keeps_its_owner_and_mode_and_a_read_only_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude.json");
        std::fs::write(&path, "{\"a\": 1}\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        // As root (provisioning, `sudo -E`), over another user's file.
        let foreign = std::os::unix::fs::chown(&path, Some(65534), Some(65534)).is_ok();
        let change = FileChange {
            path: path.clone(),
            before: Some("{\"a\": 1}\n".into()),
            after: Some("{\"a\": 2}\n".into()),
            changes: vec!["change".into()],
        };
        let backups = write_all(&[&change], 5).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\": 2}\n");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
        if foreign {
            assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
            let backup = std::fs::metadata(&backups[0]).unwrap();
            assert_eq!((backup.uid(), backup.gid()), (65534, 65534));
        }
        // The temporary file is private from its creation, before its text is written.
        let tmp = dir.path().join("tmp");
        let file = new_file_like(&tmp, Some(&meta)).unwrap();
        assert_eq!(
            file.metadata().unwrap().permissions().mode() & 0o7777,
            0o600
        );

        // A read-only file stops `init`: nothing written, no backup or temporary file left.
        let locked = dir.path().join("settings.json");
        std::fs::write(&locked, "{}\n").unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();
        let change = FileChange {
            path: locked.clone(),
            before: Some("{}\n".into()),
            after: Some("{\"a\": 2}\n".into()),
            changes: vec!["change".into()],
        };
        let why = write_all(&[&change], 6).unwrap_err();
        assert!(
            why.contains("is read-only (mode 444)") && why.contains("chmod u+w"),
            "{why}"
        );
        assert_eq!(std::fs::read_to_string(&locked).unwrap(), "{}\n");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .filter(|n| n.starts_with("settings.json.") || n.starts_with(".settings.json"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
