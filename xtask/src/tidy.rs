//! Tidy checks over the whole workspace (`crates/`, `xtask/`, `tests/`, `fuzz/`), run with the
//! test suite: module docs, no ignored tests, versioned internal dependencies, no mutual imports
//! between a crate's top-level modules, every crate named in `docs/ARCHITECTURE.md`, and line
//! budgets.
//!
//! Each check is its own test. A failure lists every offending file (and line) and says how to
//! fix it. Sources are read with a small lexer that blanks comments and string literals, which
//! is all these checks need: no parser, std only.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The folders the checks walk, relative to the workspace root.
const WALKED: [&str; 4] = ["crates", "xtask", "tests", "fuzz"];

/// Folders never walked: build output, data, version control, installed packages.
const SKIPPED_DIRS: [&str; 3] = ["target", "fixtures", "node_modules"];

/// Line budgets: (folder, most lines all its `.rs` files may add up to).
const LINE_BUDGETS: [(&str, usize); 2] = [
    // 3,200 until subscriptions learnt to cost nothing on a quiet store (the watcher's timing
    // by the next expiry, the change feed's fallback to polling); 3,300 until the 2026-07-28
    // edges (a served method's malformed params, removed methods, held subscriptions ended by
    // the end of input); 3,400 until the rest of them (a ping without a lifecycle answered as
    // the light path answers it, a list's cursor refused as the specification asks); 3,450
    // until a stdio session outlived what its client and its store do to it (a store that
    // cannot be opened at the hand-off, served once it opens; a broken stdout ending the
    // session; non-blocking pipes waited on through the blocking pool), the descriptors'
    // waiting itself in protocol-lite (`fdio`); 4,000 until the tool calls' sightings went to
    // a queue of their own, recorded after the answers and waited for at a session's end;
    // 4,100 until a client that leaves stopped being logged as an error (`logging::ClientGone`),
    // call_tool's arguments were read in one place for rmcp's path and the fast path, and
    // load_modules stopped waiting for its notification past the end of the client's input;
    // 4,250 until every 2026-07-28 result named the server in `_meta` (lists, reads, prompts,
    // completions and calls) and the resource listing child printed the next expiry (the stdio
    // reader's rules moved to protocol-lite the same day).
    ("crates/server-full/src", 4_300),
    ("crates/hooks-mcp/src", 1_200),
];

// ---------------------------------------------------------------------------------------------
// The checks.

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let root = project_root();
    let mut offenders = Vec::new();
    for file in rust_files(&root) {
        let text = read(&file);
        let first = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty());
        match first {
            Some((_, line)) if line.trim_start().starts_with("//!") => {}
            Some((n, line)) => offenders.push(format!(
                "{}:{}: starts with `{}`",
                shown(&root, &file),
                n + 1,
                line.trim()
            )),
            None => offenders.push(format!("{}:1: empty file", shown(&root, &file))),
        }
    }
    fail_if_any(
        "files that do not open with a `//!` module doc",
        "Begin each file with a `//!` line saying what the module is for (before any `#![...]` \
         attribute).",
        &offenders,
    );
}

#[test]
fn no_test_is_ignored() {
    let root = project_root();
    let mut offenders = Vec::new();
    for file in rust_files(&root) {
        let code = strip_comments_and_strings(&read(&file));
        for line in ignore_attribute_lines(&code) {
            offenders.push(format!("{}:{line}", shown(&root, &file)));
        }
    }
    fail_if_any(
        "ignored tests",
        "Do not ignore tests: make the test fast and self-contained, gate it on what it needs \
         at run time (and say why it skipped), or delete it.",
        &offenders,
    );
}

#[test]
fn internal_dependencies_carry_a_version() {
    let root = project_root();
    let manifests = manifests(&root);
    let workspace = workspace_dependencies(&root);
    let mut offenders = Vec::new();
    for manifest in &manifests {
        for dep in dependencies(&read(manifest)) {
            if dep.path.is_some() && dep.version.is_none() {
                offenders.push(format!(
                    "{}:{}: `{}` has a path and no version",
                    shown(&root, manifest),
                    dep.line,
                    dep.name
                ));
            } else if dep.workspace && dep.path.is_none() && dep.version.is_none() {
                let inherited = workspace.iter().find(|w| w.name == dep.name);
                if let Some(w) = inherited.filter(|w| w.path.is_some() && w.version.is_none()) {
                    offenders.push(format!(
                        "{}:{}: `{}` inherits the workspace entry (Cargo.toml:{}), which has \
                         a path and no version",
                        shown(&root, manifest),
                        dep.line,
                        dep.name,
                        w.line
                    ));
                }
            }
        }
    }
    fail_if_any(
        "internal dependencies without a version",
        "Give each internal dependency `version = \"<the crate's version>\"` next to its \
         `path`, or use `<name>.workspace = true` with the root Cargo.toml's \
         [workspace.dependencies] entry (which carries one): `cargo package` needs it.",
        &offenders,
    );
}

#[test]
fn internal_dependency_versions_match_the_crates() {
    let root = project_root();
    let workspace_version = workspace_package_version(&root);
    let mut offenders = Vec::new();
    for manifest in manifests(&root) {
        let dir = manifest.parent().unwrap_or(&root);
        for dep in dependencies(&read(&manifest)) {
            let (Some(path), Some(wanted)) = (&dep.path, &dep.version) else {
                continue;
            };
            let target = dir.join(path).join("Cargo.toml");
            let Ok(text) = fs::read_to_string(&target) else {
                continue;
            };
            let Some(version) = package_version(&text, workspace_version.as_deref()) else {
                continue;
            };
            if !requirement_matches(wanted, &version) {
                offenders.push(format!(
                    "{}:{}: `{}` asks for version {wanted}, and {} is {version}",
                    shown(&root, &manifest),
                    dep.line,
                    dep.name,
                    shown(&root, &target)
                ));
            }
        }
    }
    fail_if_any(
        "internal dependencies whose version the crate does not have",
        "Internal crates take the workspace's version (`version.workspace = true`); write that \
         version in every internal dependency.",
        &offenders,
    );
}

#[test]
fn no_two_modules_of_a_crate_import_each_other() {
    let root = project_root();
    let mut offenders = Vec::new();
    for crate_dir in crate_dirs(&root) {
        for tree in module_trees(&crate_dir) {
            for cycle in mutual_imports(&tree) {
                offenders.push(format!("{} ({})", cycle, shown(&root, &tree.dir)));
            }
        }
    }
    fail_if_any(
        "top-level modules that import each other",
        "Move what both modules use into a third module (or into the one that owns it), so \
         that the dependency goes one way only.",
        &offenders,
    );
}

#[test]
fn every_crate_is_named_in_the_architecture_doc() {
    let root = project_root();
    let doc = read(&root.join("docs/ARCHITECTURE.md"));
    let mut crates: Vec<PathBuf> = list_dir(&root.join("crates"))
        .into_iter()
        .filter(|d| d.join("Cargo.toml").is_file())
        .collect();
    crates.push(root.join("xtask"));
    let mut offenders = Vec::new();
    for dir in crates {
        let dir_name = file_name(&dir);
        let package = package_name(&read(&dir.join("Cargo.toml"))).unwrap_or_default();
        let named = doc.contains(&format!("crates/{dir_name}"))
            || doc.contains(&format!("`{dir_name}`"))
            || (!package.is_empty() && doc.contains(&format!("`{package}`")));
        if !named {
            offenders.push(shown(&root, &dir));
        }
    }
    fail_if_any(
        "crates that docs/ARCHITECTURE.md does not name",
        "Add a section for each crate to docs/ARCHITECTURE.md's code map (a `### crates/<name>` \
         heading): what it owns, its invariants and its API boundary.",
        &offenders,
    );
}

#[test]
fn crates_stay_within_their_line_budgets() {
    let root = project_root();
    let mut offenders = Vec::new();
    for (folder, budget) in LINE_BUDGETS {
        let mut files: Vec<(usize, String)> = rust_files_under(&root.join(folder))
            .iter()
            .map(|f| (read(f).lines().count(), shown(&root, f)))
            .collect();
        let total: usize = files.iter().map(|(n, _)| n).sum();
        if total > budget {
            files.sort_by(|a, b| b.cmp(a));
            let mut entry = format!("{folder}: {total} lines, budget {budget}:");
            for (lines, file) in files {
                let _ = write!(entry, "\n      {file}: {lines}");
            }
            offenders.push(entry);
        }
    }
    fail_if_any(
        "folders over their line budget",
        "Move code out into the crate that owns it (or delete what is no longer used) until the \
         folder fits; raise its budget (LINE_BUDGETS in xtask/src/tidy.rs) only when the \
         crate's scope grew on purpose.",
        &offenders,
    );
}

// ---------------------------------------------------------------------------------------------
// Reporting and walking.

/// Panics with every offender, one per line, and how to fix them.
fn fail_if_any(what: &str, fix: &str, offenders: &[String]) {
    if offenders.is_empty() {
        return;
    }
    let mut message = format!("\n{} {what}:\n", offenders.len());
    for offender in offenders {
        let _ = writeln!(message, "    {offender}");
    }
    let _ = writeln!(message, "\nHow to fix: {fix}");
    panic!("{message}");
}

/// The workspace root (xtask's parent folder).
fn project_root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `path` relative to the workspace root, with `/`.
fn shown(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<_> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The entries of a folder, sorted (none when it cannot be read).
fn list_dir(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

/// Every file under `dir` (skipping [`SKIPPED_DIRS`] and hidden folders), sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in list_dir(&dir) {
            let name = file_name(&entry);
            if entry.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                    pending.push(entry);
                }
            } else {
                found.push(entry);
            }
        }
    }
    found.sort();
    found
}

fn rust_files_under(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .collect()
}

/// Every `.rs` file of the walked folders.
fn rust_files(root: &Path) -> Vec<PathBuf> {
    WALKED
        .iter()
        .flat_map(|dir| rust_files_under(&root.join(dir)))
        .collect()
}

/// The root manifest and every `Cargo.toml` of the walked folders.
fn manifests(root: &Path) -> Vec<PathBuf> {
    let mut found = vec![root.join("Cargo.toml")];
    for dir in WALKED {
        found.extend(
            files_under(&root.join(dir))
                .into_iter()
                .filter(|f| file_name(f) == "Cargo.toml"),
        );
    }
    found
}

/// Every folder of the walked ones that holds a `Cargo.toml` with a `[package]`.
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    manifests(root)
        .into_iter()
        .filter(|m| read(m).lines().any(|l| l.trim() == "[package]"))
        .filter_map(|m| m.parent().map(Path::to_path_buf))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A lexer just good enough for these checks.

/// `source` with comments and the contents of string and character literals blanked (newlines
/// kept, so line numbers stay), and lifetimes left alone.
fn strip_comments_and_strings(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    out.push(' ');
                    i += 1;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
            if i < chars.len() {
                out.push('"');
                i += 1;
            }
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'), else a lifetime or a label.
            let end = if next == Some('\\') {
                (i + 3..chars.len()).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push('\'');
                    out.extend(chars[i + 1..end].iter().map(|&c| blank(c)));
                    out.push('\'');
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push_str(&word);
            // Raw strings: r"..", r#".."#, br"..", cr#".."#.
            if matches!(word.as_str(), "r" | "br" | "cr") {
                let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
                if chars.get(i + hashes) == Some(&'"') {
                    let closing: Vec<char> = std::iter::once('"')
                        .chain(std::iter::repeat_n('#', hashes))
                        .collect();
                    let body = i + hashes + 1;
                    let end = (body..chars.len())
                        .find(|&j| chars[j..].starts_with(&closing))
                        .unwrap_or(chars.len());
                    out.extend(std::iter::repeat_n('#', hashes));
                    out.push('"');
                    out.extend(chars[body..end].iter().map(|&c| blank(c)));
                    i = (end + closing.len()).min(chars.len());
                    out.extend(chars[end..i].iter());
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The lines (1-based) of stripped code that hold an attribute ignoring a test: the plain
/// attribute, or one inside `cfg_attr(...)`.
fn ignore_attribute_lines(code: &str) -> Vec<usize> {
    let tokens = tokens(code);
    let mut lines = Vec::new();
    for (k, token) in tokens.iter().enumerate() {
        if token.text != "#" {
            continue;
        }
        let mut j = k + 1;
        if tokens.get(j).is_some_and(|t| t.text == "!") {
            j += 1;
        }
        if tokens.get(j).is_none_or(|t| t.text != "[") {
            continue;
        }
        let attribute = &tokens[j + 1..];
        let ignored = match attribute.first().map(|t| t.text.as_str()) {
            Some("ignore") => true,
            Some("cfg_attr") => {
                // `cfg_attr(predicate, attr, ...)`: any `ignore` after the first top-level comma.
                let mut depth = 0usize;
                let mut after_comma = false;
                let mut found = false;
                for t in attribute.iter().skip(1) {
                    match t.text.as_str() {
                        "(" | "[" | "{" => depth += 1,
                        ")" | "]" | "}" => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                break;
                            }
                        }
                        "," if depth == 1 => after_comma = true,
                        "ignore" if after_comma => found = true,
                        _ => {}
                    }
                }
                found
            }
            _ => false,
        };
        if ignored {
            lines.push(token.line);
        }
    }
    lines
}

/// One token of stripped code: an identifier (keywords included), `::`, or one other
/// character.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    text: String,
    line: usize,
}

fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            let mut text: String = chars[start..i].iter().collect();
            // A raw identifier is the identifier.
            if text == "r" && chars.get(i) == Some(&'#') {
                let rest = i + 1;
                let mut end = rest;
                while end < chars.len() && is_ident_char(chars[end]) {
                    end += 1;
                }
                if end > rest {
                    text = chars[rest..end].iter().collect();
                    i = end;
                }
            }
            tokens.push(Token { text, line });
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push(Token {
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            tokens.push(Token {
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    tokens
}

// ---------------------------------------------------------------------------------------------
// Module graphs.

/// The top-level modules of one crate root's folder (`src/` for most crates).
#[derive(Debug)]
struct ModuleTree {
    /// The folder holding the root file(s).
    dir: PathBuf,
    /// Each top-level module's name and its files, with each file's depth (1 for `a.rs` and
    /// `a/mod.rs`, 2 for `a/b.rs`, ...).
    modules: BTreeMap<String, Vec<(PathBuf, usize)>>,
}

/// A reference from one file to a top-level module.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Reference {
    module: String,
    line: usize,
}

/// The module trees of a crate: one per folder holding a crate root (`lib.rs`, `main.rs`, a
/// target's `path`, `src/bin/*`). Folders holding a root of their own are not modules of the
/// folder above.
fn module_trees(crate_dir: &Path) -> Vec<ModuleTree> {
    let mut roots: BTreeSet<PathBuf> = BTreeSet::new();
    let src = crate_dir.join("src");
    for name in ["lib.rs", "main.rs"] {
        if src.join(name).is_file() {
            roots.insert(src.join(name));
        }
    }
    for file in rust_files_under(&src.join("bin")) {
        roots.insert(file);
    }
    for target in target_paths(&read(&crate_dir.join("Cargo.toml"))) {
        let path = crate_dir.join(target);
        if path.starts_with(&src) && path.is_file() {
            roots.insert(path);
        }
    }
    let root_dirs: BTreeSet<PathBuf> = roots
        .iter()
        .filter_map(|r| r.parent().map(Path::to_path_buf))
        .filter(|d| !d.starts_with(src.join("bin")))
        .collect();
    let mut trees = Vec::new();
    for dir in &root_dirs {
        let mut modules: BTreeMap<String, Vec<(PathBuf, usize)>> = BTreeMap::new();
        for entry in list_dir(dir) {
            let name = file_name(&entry);
            if entry.is_dir() {
                if entry == src.join("bin") || root_dirs.contains(&entry) {
                    continue;
                }
                let files = rust_files_under(&entry)
                    .into_iter()
                    .map(|f| {
                        let depth = module_depth(dir, &f);
                        (f, depth)
                    })
                    .collect::<Vec<_>>();
                if !files.is_empty() {
                    modules.entry(name).or_default().extend(files);
                }
            } else if let Some(stem) = name.strip_suffix(".rs")
                && !roots.contains(&entry)
            {
                modules.entry(stem.to_owned()).or_default().push((entry, 1));
            }
        }
        trees.push(ModuleTree {
            dir: dir.clone(),
            modules,
        });
    }
    trees
}

/// How deep the module of `file` sits below the crate root in `dir`.
fn module_depth(dir: &Path, file: &Path) -> usize {
    let parts = file.strip_prefix(dir).map_or(1, |p| p.components().count());
    if file_name(file) == "mod.rs" {
        parts.saturating_sub(1)
    } else {
        parts
    }
}

/// Every mutual import in `tree`, as a sentence naming each reference's file and line.
fn mutual_imports(tree: &ModuleTree) -> Vec<String> {
    let names: BTreeSet<&str> = tree.modules.keys().map(String::as_str).collect();
    // importer -> imported -> where.
    let mut edges: BTreeMap<&str, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
    for (module, files) in &tree.modules {
        let module = module.as_str();
        for (file, depth) in files {
            let code = strip_comments_and_strings(&read(file));
            for reference in top_level_references(&code, *depth) {
                let Some(&target) = names.get(reference.module.as_str()) else {
                    continue;
                };
                if target == module {
                    continue;
                }
                edges
                    .entry(module)
                    .or_default()
                    .entry(target)
                    .or_default()
                    .push(format!("{}:{}", file.display(), reference.line));
            }
        }
    }
    let mut found = Vec::new();
    for (&a, targets) in &edges {
        for (&b, a_to_b) in targets {
            let Some(b_to_a) = edges.get(b).and_then(|t| t.get(a)) else {
                continue;
            };
            if a < b {
                found.push(format!(
                    "`{a}` <-> `{b}`: `{a}` uses `{b}` at {}; `{b}` uses `{a}` at {}",
                    relative_all(&tree.dir, a_to_b),
                    relative_all(&tree.dir, b_to_a)
                ));
            }
        }
    }
    found
}

/// The places, relative to `dir`, joined.
fn relative_all(dir: &Path, places: &[String]) -> String {
    let prefix = format!("{}/", dir.display());
    places
        .iter()
        .map(|p| p.strip_prefix(&prefix).unwrap_or(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The top-level modules stripped code in a file at `depth` refers to: `crate::a`,
/// `crate::{a, b}`, `$crate::a`, and `super::` chains that reach the crate root
/// (`super::super::a` from `x/y.rs`), inline `mod m { ... }` blocks counted.
fn top_level_references(code: &str, depth: usize) -> Vec<Reference> {
    let tokens = tokens(code);
    let mut found = Vec::new();
    // Brace depth, and the brace depths at which inline modules were opened.
    let mut braces = 0usize;
    let mut inline_modules: Vec<usize> = Vec::new();
    let mut k = 0;
    while k < tokens.len() {
        let text = tokens[k].text.as_str();
        match text {
            "{" => braces += 1,
            "}" => {
                braces = braces.saturating_sub(1);
                if inline_modules.last() == Some(&braces) {
                    inline_modules.pop();
                }
            }
            "mod" if tokens.get(k + 2).is_some_and(|t| t.text == "{") => {
                inline_modules.push(braces);
            }
            _ => {}
        }
        let starts_path = k == 0 || tokens[k - 1].text != "::";
        let at_root = if text == "crate" && starts_path {
            tokens
                .get(k + 1)
                .is_some_and(|t| t.text == "::")
                .then_some(k + 2)
        } else if text == "super" && starts_path {
            let mut supers = 0;
            let mut j = k;
            while tokens.get(j).is_some_and(|t| t.text == "super")
                && tokens.get(j + 1).is_some_and(|t| t.text == "::")
            {
                supers += 1;
                j += 2;
            }
            (supers > 0 && supers == depth + inline_modules.len()).then_some(j)
        } else {
            None
        };
        if let Some(j) = at_root {
            found.extend(path_heads(&tokens, j));
        }
        k += 1;
    }
    found
}

/// The first segment(s) of a path whose tail starts at token `j`: one identifier, or each
/// item's first identifier in a `{...}` group.
fn path_heads(tokens: &[Token], j: usize) -> Vec<Reference> {
    let reference = |t: &Token| Reference {
        module: t.text.clone(),
        line: t.line,
    };
    let Some(first) = tokens.get(j) else {
        return Vec::new();
    };
    if first.text != "{" {
        return if first.text.chars().next().is_some_and(is_ident_start) {
            vec![reference(first)]
        } else {
            Vec::new()
        };
    }
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item_start = true;
    for t in &tokens[j..] {
        match t.text.as_str() {
            "{" => {
                depth += 1;
                item_start = depth == 1;
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => item_start = true,
            _ => {
                if item_start && depth == 1 && t.text.chars().next().is_some_and(is_ident_start) {
                    heads.push(reference(t));
                }
                item_start = false;
            }
        }
    }
    heads
}

// ---------------------------------------------------------------------------------------------
// Manifests, read line by line: enough TOML for dependency tables.

/// One dependency entry of a manifest.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Dependency {
    /// The name it is listed under (the table key).
    name: String,
    path: Option<String>,
    version: Option<String>,
    /// `workspace = true`.
    workspace: bool,
    /// Where it is written (1-based).
    line: usize,
}

/// One `key = value` of a manifest, with its table's header.
#[derive(Debug)]
struct Entry {
    table: String,
    key: String,
    value: String,
    line: usize,
}

/// Every `key = value` of a TOML text, comments dropped, multi-line arrays joined.
fn entries(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut table = String::new();
    let mut pending: Option<Entry> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = strip_toml_comment(raw);
        let line = line.trim();
        if let Some(mut entry) = pending.take() {
            entry.value.push(' ');
            entry.value.push_str(line);
            if balanced(&entry.value) {
                entries.push(entry);
            } else {
                pending = Some(entry);
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            table = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_owned();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let entry = Entry {
            table: table.clone(),
            key: key.trim().trim_matches('"').to_owned(),
            value: value.trim().to_owned(),
            line: n + 1,
        };
        if balanced(&entry.value) {
            entries.push(entry);
        } else {
            pending = Some(entry);
        }
    }
    entries.extend(pending);
    entries
}

/// A TOML line without its `#` comment (a `#` inside a string stays).
fn strip_toml_comment(line: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in line.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '#' => break,
            None if c == '"' || c == '\'' => quote = Some(c),
            None => {}
        }
        out.push(c);
    }
    out
}

/// Whether the brackets and braces of a value (outside strings) are all closed.
fn balanced(value: &str) -> bool {
    let mut depth = 0i32;
    for part in split_outside_strings(value, None) {
        for c in part.chars() {
            match c {
                '[' | '{' => depth += 1,
                ']' | '}' => depth -= 1,
                _ => {}
            }
        }
    }
    depth <= 0
}

/// `value` cut at `separator` (when given) outside strings and nested brackets, with string
/// contents blanked when `separator` is `None` (for counting brackets).
fn split_outside_strings(value: &str, separator: Option<char>) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut depth = 0i32;
    for c in value.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            if let Some(last) = parts.last_mut() {
                last.push(if separator.is_none() && quote.is_some() {
                    ' '
                } else {
                    c
                });
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            _ => {}
        }
        if Some(c) == separator && depth == 0 {
            parts.push(String::new());
        } else if let Some(last) = parts.last_mut() {
            last.push(c);
        }
    }
    parts
}

/// A TOML string value's text (quotes removed), if it is one.
fn toml_string(value: &str) -> Option<String> {
    let value = value.trim();
    let inner = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))?;
    Some(inner.to_owned())
}

/// The `key = value` pairs of an inline table `{ ... }`.
fn inline_table(value: &str) -> Option<Vec<(String, String)>> {
    let inner = value.trim().strip_prefix('{')?.strip_suffix('}')?;
    Some(
        split_outside_strings(inner, Some(','))
            .into_iter()
            .filter_map(|pair| {
                let (k, v) = pair.split_once('=')?;
                Some((k.trim().trim_matches('"').to_owned(), v.trim().to_owned()))
            })
            .collect(),
    )
}

/// Whether a table header is a dependency table (`dependencies`, `dev-dependencies`,
/// `build-dependencies`, `workspace.dependencies`, `target.<cfg>.dependencies`).
fn is_dependency_table(table: &str) -> bool {
    table.ends_with("dependencies")
}

/// Every dependency a manifest lists, in any dependency table.
fn dependencies(text: &str) -> Vec<Dependency> {
    let mut deps: Vec<Dependency> = Vec::new();
    // `[dependencies.foo]` tables, by header.
    let mut by_table: BTreeMap<String, usize> = BTreeMap::new();
    for entry in entries(text) {
        if is_dependency_table(&entry.table) {
            let (name, attribute) = match entry.key.split_once('.') {
                Some((name, attribute)) => (name.trim().trim_matches('"'), Some(attribute.trim())),
                None => (entry.key.as_str(), None),
            };
            let mut dep = Dependency {
                name: name.to_owned(),
                line: entry.line,
                ..Dependency::default()
            };
            match attribute {
                Some(attribute) => apply(&mut dep, attribute, &entry.value),
                None => match inline_table(&entry.value) {
                    Some(pairs) => {
                        for (k, v) in pairs {
                            apply(&mut dep, &k, &v);
                        }
                    }
                    None => dep.version = toml_string(&entry.value),
                },
            }
            deps.push(dep);
        } else if let Some((table, name)) = entry.table.rsplit_once('.') {
            if !is_dependency_table(table) {
                continue;
            }
            let index = *by_table.entry(entry.table.clone()).or_insert_with(|| {
                deps.push(Dependency {
                    name: name.trim().trim_matches('"').to_owned(),
                    line: entry.line,
                    ..Dependency::default()
                });
                deps.len() - 1
            });
            apply(&mut deps[index], &entry.key, &entry.value);
        }
    }
    deps
}

/// Sets one attribute of a dependency entry from its TOML value.
fn apply(dep: &mut Dependency, key: &str, value: &str) {
    match key {
        "path" => dep.path = toml_string(value),
        "version" => dep.version = toml_string(value),
        "workspace" => dep.workspace = value.trim() == "true",
        _ => {}
    }
}

/// The root manifest's `[workspace.dependencies]`.
fn workspace_dependencies(root: &Path) -> Vec<Dependency> {
    let text = read(&root.join("Cargo.toml"));
    let workspace_tables: BTreeSet<usize> = entries(&text)
        .iter()
        .filter(|e| e.table.starts_with("workspace.dependencies"))
        .map(|e| e.line)
        .collect();
    dependencies(&text)
        .into_iter()
        .filter(|d| workspace_tables.contains(&d.line))
        .collect()
}

/// The root manifest's `[workspace.package] version`.
fn workspace_package_version(root: &Path) -> Option<String> {
    entries(&read(&root.join("Cargo.toml")))
        .into_iter()
        .find(|e| e.table == "workspace.package" && e.key == "version")
        .and_then(|e| toml_string(&e.value))
}

/// A manifest's `[package] name`.
fn package_name(text: &str) -> Option<String> {
    entries(text)
        .into_iter()
        .find(|e| e.table == "package" && e.key == "name")
        .and_then(|e| toml_string(&e.value))
}

/// A manifest's `[package]` version, the workspace's when it inherits it.
fn package_version(text: &str, workspace: Option<&str>) -> Option<String> {
    let entries = entries(text);
    let package = |key: &str| {
        entries
            .iter()
            .find(|e| e.table == "package" && e.key == key)
    };
    if let Some(entry) = package("version") {
        return match inline_table(&entry.value) {
            Some(pairs) if pairs.iter().any(|(k, v)| k == "workspace" && v == "true") => {
                workspace.map(str::to_owned)
            }
            _ => toml_string(&entry.value),
        };
    }
    package("version.workspace")
        .filter(|e| e.value.trim() == "true")
        .and(workspace.map(str::to_owned))
}

/// The `path` of every `[lib]`, `[[bin]]`, `[[example]]`, `[[test]]` and `[[bench]]` target.
fn target_paths(text: &str) -> Vec<String> {
    entries(text)
        .into_iter()
        .filter(|e| {
            matches!(
                e.table.as_str(),
                "lib" | "bin" | "example" | "test" | "bench"
            ) && e.key == "path"
        })
        .filter_map(|e| toml_string(&e.value))
        .collect()
}

/// Whether a version requirement (`0.1.0`, `^0.1`, `=0.1.0`, `~0.1.0`) accepts `version`: its
/// numbers must be `version`'s first ones.
fn requirement_matches(requirement: &str, version: &str) -> bool {
    let wanted = requirement
        .trim()
        .trim_start_matches(['^', '=', '~'])
        .trim();
    let wanted: Vec<&str> = wanted.split('.').collect();
    let have: Vec<&str> = version.split(['.', '-', '+']).collect();
    !wanted.is_empty()
        && wanted.len() <= have.len()
        && wanted.iter().zip(&have).all(|(w, h)| w == h)
}

// ---------------------------------------------------------------------------------------------
// The checks' own tests.

#[test]
fn the_lexer_blanks_comments_strings_and_chars_only() {
    let source = "use crate::a; // crate::b\n/* crate::c /* nested */ crate::d */ let s = \
                  \"crate::e \\\" crate::f\"; let r = r#\"crate::g \"# ; let c = '\"'; \
                  fn f<'a>(x: &'a str) {} crate::h";
    let code = strip_comments_and_strings(source);
    assert_eq!(code.lines().count(), source.lines().count());
    let heads: Vec<String> = top_level_references(&code, 1)
        .into_iter()
        .map(|r| r.module)
        .collect();
    assert_eq!(heads, ["a", "h"], "{code}");
}

#[test]
fn grouped_imports_and_super_chains_reach_top_level_modules() {
    let code = strip_comments_and_strings(
        "use crate::{a::{x, y}, b, self};\nuse super::c;\nuse super::super::d;\n\
         mod tests { use super::super::super::e; use super::f; }\npub(crate) fn g() {}",
    );
    let refs: Vec<(String, usize)> = top_level_references(&code, 2)
        .into_iter()
        .map(|r| (r.module, r.line))
        .collect();
    assert_eq!(
        refs,
        [
            ("a".to_owned(), 1),
            ("b".to_owned(), 1),
            ("self".to_owned(), 1),
            ("d".to_owned(), 3),
            ("e".to_owned(), 4),
        ]
    );
}

#[test]
fn ignore_attributes_are_found_in_code_only() {
    let code = strip_comments_and_strings(concat!(
        "#[test]\n#[",
        "ignore]\nfn a() {}\n// #[",
        "ignore]\nconst S: &str = \"#[",
        "ignore]\";\n#[cfg_attr(miri, ",
        "ignore = \"slow\")]\nfn b() {}\n#[cfg_attr(ignore, test)]\nfn c() {}"
    ));
    assert_eq!(ignore_attribute_lines(&code), [2, 6]);
}

#[test]
fn dependency_tables_are_read_in_every_form() {
    let manifest = "[package]\nname = \"x\"\nversion.workspace = true\n\n[dependencies]\n\
                    a = { path = \"../a\", version = \"0.1.0\" } # a comment\n\
                    b.workspace = true\nc = \"1\"\nd = { path = \"../d\", features = [\n  \
                    \"x\",\n] }\n\n[target.'cfg(unix)'.dev-dependencies.e]\npath = \"../e\"\n\
                    version = \"=0.1.0\"\n";
    let deps = dependencies(manifest);
    let dep = |name: &str, path: Option<&str>, version: Option<&str>, workspace, line| Dependency {
        name: name.into(),
        path: path.map(str::to_owned),
        version: version.map(str::to_owned),
        workspace,
        line,
    };
    assert_eq!(
        deps,
        [
            dep("a", Some("../a"), Some("0.1.0"), false, 6),
            dep("b", None, None, true, 7),
            dep("c", None, Some("1"), false, 8),
            dep("d", Some("../d"), None, false, 9),
            dep("e", Some("../e"), Some("=0.1.0"), false, 14),
        ]
    );
    assert_eq!(
        package_version(manifest, Some("0.1.0")).as_deref(),
        Some("0.1.0")
    );
    assert!(requirement_matches("=0.1.0", "0.1.0"));
    assert!(requirement_matches("0.1", "0.1.0"));
    assert!(!requirement_matches("0.0.0", "0.1.0"));
}
