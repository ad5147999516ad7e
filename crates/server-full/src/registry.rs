//! The tools a server exposes: the filtered registrations as rmcp tools.

use catalogue::{Catalogue, CatalogueError, Filter, FilterWarning, Handler, ToolSpec};
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

/// The filtered tools, in catalogue order, and the warnings the filter produced.
pub(crate) fn build(
    filter: &Filter,
) -> Result<(Vec<ToolEntry>, Vec<FilterWarning>), CatalogueError> {
    link_tools();
    let (catalogue, warnings) = Catalogue::from_registry()?.filtered(filter);
    let mut entries = Vec::with_capacity(catalogue.len());
    for spec in catalogue.tools() {
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
    Ok((entries, warnings))
}
