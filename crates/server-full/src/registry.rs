//! The tools a server exposes: the filtered registrations as rmcp tools.

use catalogue::{Catalogue, CatalogueError, Category, Filter, FilterWarning, Handler, ToolSpec};
use rmcp::model::Tool;

/// Names every tools crate so that its registrations are linked, and returns how many tools
/// are registered in total. Binaries call it (directly or through [`crate::HooksServer`]) so a
/// missing crate shows up as a wrong count in tests, not as silently absent tools.
pub fn link_tools() -> usize {
    use tools_channels as _;
    use tools_conditions as _;
    use tools_enforcement as _;
    use tools_scheduler as _;
    catalogue::registrations().len()
}

/// One exposed tool: its MCP description and its handler.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// The catalogue's description.
    pub spec: ToolSpec,
    /// The rmcp tool, built from the same JSON the light path serves.
    pub tool: Tool,
    /// The handler to run.
    pub handler: Handler,
}

/// What the filters let through, and what they kept out.
#[derive(Debug)]
pub(crate) struct Registry {
    /// The visible tools, in catalogue order.
    pub(crate) entries: Vec<ToolEntry>,
    /// The same tools as a catalogue (for the advertised list and the instructions).
    pub(crate) visible: Catalogue,
    /// Registered tools the filters exclude: loading them is refused with the reason.
    pub(crate) excluded: Vec<(String, Category)>,
}

/// The filtered tools and the warnings the filter produced.
pub(crate) fn build(filter: &Filter) -> Result<(Registry, Vec<FilterWarning>), CatalogueError> {
    link_tools();
    let all = Catalogue::from_registry()?;
    let (visible, warnings) = all.filtered(filter);
    let mut entries = Vec::with_capacity(visible.len());
    for spec in visible.tools() {
        let Some(registration) = catalogue::find(&spec.name) else {
            continue;
        };
        let tool: Tool = serde_json::from_value(spec.to_mcp())?;
        entries.push(ToolEntry {
            spec: spec.clone(),
            tool,
            handler: registration.handler,
        });
    }
    let excluded = all
        .tools()
        .iter()
        .filter(|t| visible.get(&t.name).is_none())
        .map(|t| (t.name.clone(), t.category))
        .collect();
    Ok((
        Registry {
            entries,
            visible,
            excluded,
        },
        warnings,
    ))
}
