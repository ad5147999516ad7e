//! Serializable tool descriptions and the catalogue built from them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::{Filter, FilterWarning, registrations};

/// A tool category. Filters select tools by category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Broadcast messages to agent sessions.
    Channels,
    /// Operator scripts run on matching tool calls.
    Conditions,
    /// Reminders re-injected every N tool calls.
    Enforcement,
    /// Timed publications to channels.
    Scheduler,
}

impl Category {
    /// Every category, in catalogue order.
    pub const ALL: [Category; 4] = [
        Category::Channels,
        Category::Conditions,
        Category::Enforcement,
        Category::Scheduler,
    ];

    /// One line saying what the category's tools do.
    pub fn summary(self) -> &'static str {
        match self {
            Category::Channels => "broadcast messages to agent sessions",
            Category::Conditions => "operator scripts run on matching tool calls",
            Category::Enforcement => "reminders re-injected every N tool calls",
            Category::Scheduler => "one-shot, interval and cron publications",
        }
    }

    /// The category's name as configuration spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Channels => "channels",
            Category::Conditions => "conditions",
            Category::Enforcement => "enforcement",
            Category::Scheduler => "scheduler",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a category.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown category `{0}`; valid categories: channels, conditions, enforcement, scheduler")]
pub struct UnknownCategory(pub String);

impl FromStr for Category {
    type Err = UnknownCategory;

    /// Parses a category name, ignoring case and surrounding white space.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        Category::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| UnknownCategory(wanted.to_owned()))
    }
}

/// MCP tool annotations (behaviour hints for clients).
///
/// Serialized to MCP's `*Hint` fields, writing only what differs from the specification's
/// defaults, plus `openWorldHint: false` (no hooks-mcp tool reaches outside its store).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Annotations {
    /// The tool changes nothing.
    pub read_only: bool,
    /// The tool may delete or overwrite data (only meaningful when not read-only).
    pub destructive: bool,
    /// Repeating the call with the same arguments has no further effect.
    pub idempotent: bool,
}

impl Annotations {
    /// A read-only tool.
    pub const READ_ONLY: Annotations = Annotations {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
    /// A tool that adds data without removing any.
    pub const ADDITIVE: Annotations = Annotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    };
    /// A tool that removes or replaces data.
    pub const DESTRUCTIVE: Annotations = Annotations {
        read_only: false,
        destructive: true,
        idempotent: true,
    };

    /// The MCP `annotations` object for these hints.
    pub fn to_mcp(self) -> Value {
        let mut hints = Map::new();
        if self.read_only {
            hints.insert("readOnlyHint".into(), Value::Bool(true));
        } else {
            // The specification defaults destructiveHint to true and idempotentHint to false.
            if !self.destructive {
                hints.insert("destructiveHint".into(), Value::Bool(false));
            }
            if self.idempotent {
                hints.insert("idempotentHint".into(), Value::Bool(true));
            }
        }
        hints.insert("openWorldHint".into(), Value::Bool(false));
        Value::Object(hints)
    }
}

/// A tool as the catalogue serializes it: everything but the handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// Unique tool name.
    pub name: String,
    /// The tool's category.
    pub category: Category,
    /// Short human-readable title.
    pub title: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the arguments (`"type": "object"`).
    pub input_schema: Value,
    /// JSON Schema of the structured result, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default)]
    pub annotations: Annotations,
}

impl ToolSpec {
    /// The MCP `Tool` object for this spec, exactly as `tools/list` carries it.
    pub fn to_mcp(&self) -> Value {
        let mut tool = Map::new();
        tool.insert("name".into(), Value::String(self.name.clone()));
        tool.insert("title".into(), Value::String(self.title.clone()));
        tool.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        tool.insert("inputSchema".into(), self.input_schema.clone());
        if let Some(out) = &self.output_schema {
            tool.insert("outputSchema".into(), out.clone());
        }
        tool.insert("annotations".into(), self.annotations.to_mcp());
        Value::Object(tool)
    }
}

/// Why a catalogue dump could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogueError {
    /// The text is not a catalogue dump.
    #[error("catalogue dump is not valid JSON of the form {{\"tools\": [...]}}: {0}")]
    Malformed(#[from] serde_json::Error),
    /// Two tools share a name.
    #[error("catalogue lists the tool `{0}` twice; tool names must be unique")]
    DuplicateTool(String),
}

#[derive(Serialize, Deserialize)]
struct Dump {
    tools: Vec<ToolSpec>,
}

/// An ordered set of tools: sorted by category, then name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalogue {
    tools: Vec<ToolSpec>,
}

impl Catalogue {
    /// Builds a catalogue from specs, sorting them and rejecting duplicate names.
    ///
    /// # Errors
    /// [`CatalogueError::DuplicateTool`] when two specs share a name.
    pub fn new(mut tools: Vec<ToolSpec>) -> Result<Self, CatalogueError> {
        tools.sort_by(|a, b| (a.category, &a.name).cmp(&(b.category, &b.name)));
        for pair in tools.windows(2) {
            if pair[0].name == pair[1].name {
                return Err(CatalogueError::DuplicateTool(pair[0].name.clone()));
            }
        }
        Ok(Catalogue { tools })
    }

    /// Every tool registered in this program (no filter applied).
    ///
    /// # Errors
    /// [`CatalogueError::DuplicateTool`] when two linked crates register the same name.
    pub fn from_registry() -> Result<Self, CatalogueError> {
        Catalogue::new(registrations().into_iter().map(|r| r.spec()).collect())
    }

    /// Reads a dump written by [`Catalogue::to_json`].
    ///
    /// # Errors
    /// [`CatalogueError`] when the text is not a valid dump.
    pub fn from_json(text: &str) -> Result<Self, CatalogueError> {
        let dump: Dump = serde_json::from_str(text)?;
        Catalogue::new(dump.tools)
    }

    /// Serializes the catalogue, with categories, for [`Catalogue::from_json`].
    pub fn to_json(&self) -> String {
        // A struct of strings and JSON values always serializes.
        serde_json::to_string(&DumpRef { tools: &self.tools }).unwrap_or_default()
    }

    /// The tools, in catalogue order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The tools, in catalogue order, owned (for a server that keeps them without a copy).
    pub fn into_tools(self) -> Vec<ToolSpec> {
        self.tools
    }

    /// The tool with this exact name.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the catalogue has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools `filter` lets through, and what the caller should warn about
    /// ([`Filter::select`]).
    pub fn filtered(&self, filter: &Filter) -> (Catalogue, Vec<FilterWarning>) {
        let keys: Vec<(Category, &str)> = self
            .tools
            .iter()
            .map(|t| (t.category, t.name.as_str()))
            .collect();
        let (keep, warnings) = filter.select(&keys);
        let tools = self
            .tools
            .iter()
            .zip(keep)
            .filter(|&(_, keep)| keep)
            .map(|(tool, _)| tool.clone())
            .collect();
        (Catalogue { tools }, warnings)
    }

    /// The MCP `tools/list` result object: `{"tools": [...]}`.
    pub fn tools_list_result(&self) -> Value {
        json!({ "tools": self.tools.iter().map(ToolSpec::to_mcp).collect::<Vec<_>>() })
    }
}

#[derive(Serialize)]
struct DumpRef<'a> {
    tools: &'a [ToolSpec],
}
