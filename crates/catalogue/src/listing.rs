//! The catalogue in the form the stdio front end serves it from: every tool already as its MCP
//! JSON text, so filtering and answering `tools/list` build no JSON tree.
//!
//! The catalogue child prints [`Catalogue::listing_json`]; the front end reads it with
//! [`Listing::from_json`], applies the same [`Filter`] rules as [`Catalogue::filtered`] and
//! serves [`Listing::tools_list_json`] and [`Listing::instructions`], which are byte for byte
//! what [`crate::advertised_tools`] and [`crate::instructions`] give the full server.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::mode::instructions_for;
use crate::{Catalogue, CatalogueError, Category, Filter, FilterWarning, StartMode};

/// One tool of a [`Listing`]: what filtering needs, and its MCP object as JSON text, borrowed
/// from the dump.
#[derive(Debug, Serialize, Deserialize)]
struct ListedTool<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    category: Category,
    #[serde(borrow)]
    tool: &'a RawValue,
}

/// The listing dump: the catalogue's tools in catalogue order, and the discovery tools.
#[derive(Debug, Serialize, Deserialize)]
struct ListingDump<'a> {
    #[serde(borrow)]
    tools: Vec<ListedTool<'a>>,
    #[serde(borrow)]
    discovery: Vec<&'a RawValue>,
}

/// A catalogue as MCP JSON text, borrowed from a dump: the front end's light form of a
/// [`Catalogue`]. Reading one copies no schema.
#[derive(Debug)]
pub struct Listing<'a> {
    tools: Vec<ListedTool<'a>>,
    discovery: Vec<&'a RawValue>,
}

impl Catalogue {
    /// The catalogue as [`Listing::from_json`] reads it: each tool's name, category and MCP
    /// object ([`crate::ToolSpec::to_mcp`]), plus the discovery tools.
    pub fn listing_json(&self) -> String {
        let raw = |value: &serde_json::Value| serde_json::value::to_raw_value(value).ok();
        let tools: Vec<(&str, Category, Box<RawValue>)> = self
            .tools()
            .iter()
            .filter_map(|t| Some((t.name.as_str(), t.category, raw(&t.to_mcp())?)))
            .collect();
        let discovery: Vec<Box<RawValue>> =
            crate::discovery_tools().iter().filter_map(raw).collect();
        let dump = ListingDump {
            tools: tools
                .iter()
                .map(|(name, category, tool)| ListedTool {
                    name: Cow::Borrowed(name),
                    category: *category,
                    tool,
                })
                .collect(),
            discovery: discovery.iter().map(AsRef::as_ref).collect(),
        };
        // Strings and raw JSON always serialize.
        serde_json::to_string(&dump).unwrap_or_default()
    }
}

impl<'a> Listing<'a> {
    /// Reads a dump written by [`Catalogue::listing_json`], borrowing from `text`.
    ///
    /// # Errors
    /// [`CatalogueError::Malformed`] when the text is not such a dump, and
    /// [`CatalogueError::DuplicateTool`] when it lists a name twice.
    pub fn from_json(text: &'a str) -> Result<Listing<'a>, CatalogueError> {
        let dump: ListingDump<'a> = serde_json::from_str(text)?;
        let mut names: Vec<&str> = dump.tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(CatalogueError::DuplicateTool(pair[0].to_owned()));
        }
        Ok(Listing {
            tools: dump.tools,
            discovery: dump.discovery,
        })
    }

    /// Number of tools (the discovery tools not counted).
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the listing has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools `filter` lets through, with the same rules and warnings as
    /// [`Catalogue::filtered`].
    pub fn filtered(self, filter: &Filter) -> (Listing<'a>, Vec<FilterWarning>) {
        let keys: Vec<(Category, &str)> = self
            .tools
            .iter()
            .map(|t| (t.category, t.name.as_ref()))
            .collect();
        let (keep, warnings) = filter.select(&keys);
        drop(keys);
        let tools = self
            .tools
            .into_iter()
            .zip(keep)
            .filter(|&(_, keep)| keep)
            .map(|(tool, _)| tool)
            .collect();
        (
            Listing {
                tools,
                discovery: self.discovery,
            },
            warnings,
        )
    }

    /// The `tools/list` result a session in `mode` starts with (`{"tools": [...]}`), as JSON
    /// text: the same tools, in the same order and bytes, as [`crate::advertised_tools`].
    pub fn tools_list_json(&self, mode: &StartMode) -> String {
        let discovery = self.discovery.iter().filter(|_| mode.has_discovery());
        let loaded = self
            .tools
            .iter()
            .filter(|t| mode.loads_at_start(t.category))
            .map(|t| &t.tool);
        let parts = discovery.chain(loaded).map(|raw| raw.get());
        // Sized up front: the one allocation the session keeps.
        let length = parts.clone().map(|p| p.len() + 1).sum::<usize>() + 12;
        let mut text = String::with_capacity(length);
        text.push_str("{\"tools\":[");
        for (i, part) in parts.enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(part);
        }
        text.push_str("]}");
        text
    }

    /// The server instructions for `mode`, exactly as [`crate::instructions`] words them.
    pub fn instructions(&self, mode: &StartMode) -> Option<String> {
        instructions_for(
            mode,
            self.tools.iter().map(|t| (t.category, t.tool.get().len())),
        )
    }
}
