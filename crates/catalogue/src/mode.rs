//! Start modes: which tools a session advertises at start, and the discovery tools that load
//! the rest.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Value, json};

use crate::{Catalogue, Category, Setting, schema_of};

/// Environment variable choosing the start mode: `eager`, `lazy` or `modules`.
pub const MODE_ENV: &str = "HOOKS_MCP_MODE";
/// Environment variable listing the categories loaded at start in `modules` mode.
pub const MODULES_ENV: &str = "HOOKS_MCP_MODULES";

/// The settings this module parses, for the generated configuration reference.
pub const MODE_SETTINGS: &[Setting] = &[
    Setting {
        env: MODE_ENV,
        flag: "--eager | --lazy | --modules LIST",
        default: "eager",
        effect: "Start mode. `eager` advertises every tool the filters allow; `lazy` only \
                 `find_tools` and `load_modules`; `modules` the categories in HOOKS_MCP_MODULES \
                 plus the two discovery tools. A flag wins over the variable.",
    },
    Setting {
        env: MODULES_ENV,
        flag: "--modules LIST",
        default: "unset",
        effect: "Comma-separated categories loaded at start; setting it (or the flag) implies \
                 `modules` mode. The rest stay loadable with `load_modules`.",
    },
];

/// Which tools a session advertises at start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StartMode {
    /// Every tool the filters allow; no discovery tools. The default: the whole catalogue costs
    /// about 1,700 tokens, under 1% of a 200K context, and every client sees every tool without
    /// a discovery round trip (see docs/configuration.md).
    #[default]
    Eager,
    /// Only the discovery tools; categories load on request.
    Lazy,
    /// These categories, plus the discovery tools.
    Modules(BTreeSet<Category>),
}

impl fmt::Display for StartMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartMode::Eager => f.write_str("eager"),
            StartMode::Lazy => f.write_str("lazy"),
            StartMode::Modules(set) => {
                let names: Vec<&str> = set.iter().map(|c| c.as_str()).collect();
                write!(f, "modules={}", names.join(","))
            }
        }
    }
}

/// A start-mode setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModeError {
    /// An unknown mode name.
    #[error(
        "{MODE_ENV}: unknown mode `{0}`; use eager, lazy or modules (with {MODULES_ENV} or \
         --modules a,b)"
    )]
    UnknownMode(String),
    /// `--modules` without its list.
    #[error(
        "--modules needs a comma-separated list of categories, e.g. --modules channels,scheduler"
    )]
    MissingModules,
    /// `HOOKS_MCP_MODE=modules` without a list in `HOOKS_MCP_MODULES`.
    #[error(
        "{MODE_ENV}=modules needs {MODULES_ENV}, a comma-separated list of categories, e.g. \
         {MODULES_ENV}=channels,scheduler"
    )]
    MissingModulesEnv,
    /// `HOOKS_MCP_MODE` names a mode that loads no start modules, while `HOOKS_MCP_MODULES`
    /// names some.
    #[error(
        "{MODE_ENV}={mode} cannot use {MODULES_ENV}={modules}: only `modules` mode loads start \
         modules; set {MODE_ENV}=modules (or unset it) to load them, or unset {MODULES_ENV}"
    )]
    ModulesIgnored {
        /// The mode named.
        mode: String,
        /// The modules named.
        modules: String,
    },
    /// A module name that is not a category.
    #[error(
        "unknown module `{0}` in the start modules; valid: channels, conditions, enforcement, \
         scheduler"
    )]
    UnknownModule(String),
}

impl StartMode {
    /// Parses the mode from leading command-line flags (`--eager`, `--lazy`, `--modules LIST`,
    /// `--modules=LIST`) and, when no flag is given, from [`MODE_ENV`] and [`MODULES_ENV`].
    /// Returns the mode and the arguments after the flags.
    ///
    /// # Errors
    /// [`ModeError`] for an unknown mode or module, or `--modules` without a list.
    pub fn parse(
        args: &[String],
        mode_env: Option<&str>,
        modules_env: Option<&str>,
    ) -> Result<(StartMode, Vec<String>), ModeError> {
        let mut mode = None;
        let mut rest = args.iter();
        let mut remaining = Vec::new();
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "--eager" => mode = Some(StartMode::Eager),
                "--lazy" => mode = Some(StartMode::Lazy),
                "--modules" => {
                    let list = rest.next().ok_or(ModeError::MissingModules)?;
                    mode = Some(StartMode::Modules(parse_modules(list)?));
                }
                other => match other.strip_prefix("--modules=") {
                    Some(list) => mode = Some(StartMode::Modules(parse_modules(list)?)),
                    None => {
                        remaining.push(arg.clone());
                        remaining.extend(rest.by_ref().cloned());
                    }
                },
            }
        }
        if let Some(mode) = mode {
            return Ok((mode, remaining));
        }
        let modules = modules_env.map(str::trim).filter(|m| !m.is_empty());
        let mode = match (
            mode_env.map(|m| m.trim().to_ascii_lowercase()).as_deref(),
            modules,
        ) {
            (None | Some(""), None) => StartMode::default(),
            (None | Some("") | Some("modules"), Some(list)) => {
                StartMode::Modules(parse_modules(list).map_err(|e| match e {
                    ModeError::MissingModules => ModeError::MissingModulesEnv,
                    other => other,
                })?)
            }
            (Some("modules"), None) => return Err(ModeError::MissingModulesEnv),
            (Some(mode @ ("eager" | "lazy")), Some(modules)) => {
                return Err(ModeError::ModulesIgnored {
                    mode: mode.to_owned(),
                    modules: modules.to_owned(),
                });
            }
            (Some("eager"), None) => StartMode::Eager,
            (Some("lazy"), None) => StartMode::Lazy,
            (Some(other), _) => return Err(ModeError::UnknownMode(other.to_owned())),
        };
        Ok((mode, remaining))
    }

    /// The environment that reproduces this mode in another process: `(MODE_ENV, value)` and,
    /// for `modules`, `(MODULES_ENV, list)`.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        match self {
            StartMode::Eager => vec![(MODE_ENV, "eager".into())],
            StartMode::Lazy => vec![(MODE_ENV, "lazy".into())],
            StartMode::Modules(set) => vec![
                (MODE_ENV, "modules".into()),
                (
                    MODULES_ENV,
                    set.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(","),
                ),
            ],
        }
    }

    /// A warning for each start module of a category `filter` does not select (it would
    /// load nothing); none for other modes.
    pub fn excluded_by(&self, filter: &crate::Filter) -> Vec<crate::FilterWarning> {
        match self {
            StartMode::Modules(set) => set
                .iter()
                .filter(|c| !filter.selects_category(**c))
                .map(|&category| crate::FilterWarning::StartModuleExcluded { category })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether the discovery tools are advertised.
    pub fn has_discovery(&self) -> bool {
        !matches!(self, StartMode::Eager)
    }

    /// Whether tools of `category` are loaded at start.
    pub fn loads_at_start(&self, category: Category) -> bool {
        match self {
            StartMode::Eager => true,
            StartMode::Lazy => false,
            StartMode::Modules(set) => set.contains(&category),
        }
    }
}

fn parse_modules(list: &str) -> Result<BTreeSet<Category>, ModeError> {
    let mut set = BTreeSet::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if name.eq_ignore_ascii_case("all") {
            set.extend(Category::ALL);
        } else {
            set.insert(
                name.parse()
                    .map_err(|_| ModeError::UnknownModule(name.to_owned()))?,
            );
        }
    }
    if set.is_empty() {
        return Err(ModeError::MissingModules);
    }
    Ok(set)
}

/// Name of the discovery tool that searches the catalogue.
pub const FIND_TOOLS: &str = "find_tools";
/// Name of the discovery tool that loads categories or tools into the session.
pub const LOAD_MODULES: &str = "load_modules";
/// Name of the call-through tool that sessionless (2026-07-28 HTTP) lazy servers list instead
/// of [`LOAD_MODULES`]: with no session there is nothing to load tools into, so any allowed
/// tool is called through it by name.
pub const CALL_TOOL: &str = "call_tool";

/// Arguments of `find_tools`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindToolsArgs {
    /// Words to look for in tool names, categories and descriptions.
    pub query: String,
}

/// Arguments of `load_modules`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadModulesArgs {
    /// Categories (channels, conditions, enforcement, scheduler), tool names, or "all".
    pub modules: Vec<String>,
}

/// Arguments of `call_tool`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallToolArgs {
    /// The tool to run, as find_tools names it.
    pub name: String,
    /// Its arguments, as its input schema (from find_tools) describes them.
    #[serde(default)]
    pub arguments: Option<serde_json::Map<String, Value>>,
}

/// The discovery tools of a server without sessions (stateless HTTP in the 2026-07-28
/// revision): `find_tools`, which then shows each tool's input schema, and [`CALL_TOOL`].
pub fn sessionless_discovery_tools() -> Vec<Value> {
    let mut tools = discovery_tools();
    tools.truncate(1);
    tools.push(json!({
        "name": CALL_TOOL,
        "title": "Call a tool",
        "description": "Run any tool find_tools shows, by name, with the arguments its input \
                        schema describes.",
        "inputSchema": schema_of::<CallToolArgs>(),
        "annotations": {"openWorldHint": false},
    }));
    tools
}

/// The first line of the lazy instructions when tools are reached through [`CALL_TOOL`].
pub const SESSIONLESS_LEAD: &str = "More tools are reached on demand: find_tools searches every \
                                    tool and shows its input schema; call_tool runs it by name.";

/// The MCP tool objects of the discovery tools, in advertised order.
pub fn discovery_tools() -> Vec<Value> {
    vec![
        json!({
            "name": FIND_TOOLS,
            "title": "Find tools",
            "description": "Search all tools, loaded or not, by name, category or description.",
            "inputSchema": schema_of::<FindToolsArgs>(),
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        }),
        json!({
            "name": LOAD_MODULES,
            "title": "Load tools",
            "description": "Add tool categories or single tools to this session; the tool list \
                            then changes.",
            "inputSchema": schema_of::<LoadModulesArgs>(),
            "annotations": {"destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
        }),
    ]
}

/// The tools a session advertises at start: the discovery tools (unless eager), then the
/// `visible` tools of the categories `mode` loads at start, in catalogue order. The light path
/// and the full server both use this, so they list the same tools.
pub fn advertised_tools(visible: &Catalogue, mode: &StartMode) -> Vec<Value> {
    let mut tools = if mode.has_discovery() {
        discovery_tools()
    } else {
        Vec::new()
    };
    tools.extend(
        visible
            .tools()
            .iter()
            .filter(|t| mode.loads_at_start(t.category))
            .map(|t| t.to_mcp()),
    );
    tools
}

/// A rough o200k token count of a JSON value: its compact byte length divided by
/// [`BYTES_PER_TOKEN`]. `cargo xtask catalogue --tokens` measures the real count and a test
/// keeps this estimate within 15% of it for every category.
pub fn estimate_tokens(value: &Value) -> usize {
    tokens_of(serde_json::to_vec(value).map_or(0, |b| b.len()))
}

/// The estimate for a compact JSON text of `bytes` bytes.
fn tokens_of(bytes: usize) -> usize {
    (bytes as f64 / BYTES_PER_TOKEN).round() as usize
}

/// Average bytes per o200k token of this catalogue's compact tool JSON (measured).
pub const BYTES_PER_TOKEN: f64 = 4.0;

/// The server instructions for `mode`: for lazy and modules modes, how to load tools and one
/// line per category still to load, with its tool count and estimated token cost. `None` in
/// eager mode (nothing to explain, nothing to pay).
pub fn instructions(visible: &Catalogue, mode: &StartMode) -> Option<String> {
    instructions_for(
        mode,
        visible.tools().iter().map(|t| {
            let bytes = serde_json::to_vec(&t.to_mcp()).map_or(0, |b| b.len());
            (t.category, bytes)
        }),
    )
}

/// [`instructions`] from each visible tool's category and the length of its compact MCP JSON,
/// which is all the wording depends on (the token estimate is that length over
/// [`BYTES_PER_TOKEN`], per tool).
pub fn instructions_for(
    mode: &StartMode,
    tools: impl Iterator<Item = (Category, usize)> + Clone,
) -> Option<String> {
    if !mode.has_discovery() {
        return None;
    }
    let mut lines = vec![
        "More tools load on demand: call load_modules with category names (or \"all\"); \
         find_tools searches every tool."
            .to_owned(),
    ];
    for category in Category::ALL {
        if mode.loads_at_start(category) {
            continue;
        }
        let (count, tokens) = tools
            .clone()
            .filter(|&(c, _)| c == category)
            .fold((0usize, 0usize), |(count, tokens), (_, bytes)| {
                (count + 1, tokens + tokens_of(bytes))
            });
        if count == 0 {
            continue;
        }
        let tools = if count == 1 { "tool" } else { "tools" };
        lines.push(format!(
            "- {category}: {count} {tools}, ~{tokens} tokens; {}",
            category.summary()
        ));
    }
    lines.push(RESOURCES_LINE.to_owned());
    Some(lines.join("\n"))
}

/// The instructions' one line about resources (at most 30 o200k tokens).
pub const RESOURCES_LINE: &str =
    "Channels are also resources (hooks://channels/{channel}); subscribe to hear of new messages.";
