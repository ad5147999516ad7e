//! The tools a server exposes: the filtered registrations as rmcp tools.

use catalogue::{
    Catalogue, CatalogueError, Category, Filter, FilterWarning, Handler, StartMode, ToolSpec,
};
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
    /// The catalogue's description: name, category, title, description, annotations. Its
    /// schemas were moved into [`ToolEntry::tool`] (`input_schema` is null here), so a server
    /// keeps each schema once.
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
    /// Registered tools the filters exclude: loading them is refused with the reason.
    pub(crate) excluded: Vec<(String, Category)>,
    /// The start mode's instructions for these tools (`None` when every tool loads at start).
    pub(crate) instructions: Option<String>,
}

/// The filtered tools, the instructions `mode` gives for them, and the warnings the filter
/// produced. Each registered tool's description is moved, never copied, into the registry (a
/// server keeps them for its life).
pub(crate) fn build(
    filter: &Filter,
    mode: &StartMode,
) -> Result<(Registry, Vec<FilterWarning>), CatalogueError> {
    link_tools();
    let all = Catalogue::from_registry()?;
    let keys: Vec<(Category, &str)> = all
        .tools()
        .iter()
        .map(|t| (t.category, t.name.as_str()))
        .collect();
    let (keep, mut warnings) = filter.select(&keys);
    warnings.extend(mode.excluded_by(filter));
    drop(keys);
    let mut entries = Vec::new();
    let mut excluded = Vec::new();
    let mut sizes = Vec::new();
    for (mut spec, keep) in all.into_tools().into_iter().zip(keep) {
        if !keep {
            excluded.push((spec.name, spec.category));
            continue;
        }
        let Some(registration) = catalogue::find(&spec.name) else {
            continue;
        };
        let mcp = spec.to_mcp();
        sizes.push((
            spec.category,
            serde_json::to_vec(&mcp).map_or(0, |b| b.len()),
        ));
        let tool: Tool = serde_json::from_value(mcp)?;
        spec.input_schema = serde_json::Value::Null;
        spec.output_schema = None;
        entries.push(ToolEntry {
            spec,
            tool,
            handler: registration.handler,
        });
    }
    let instructions = catalogue::instructions_for(mode, sizes.into_iter());
    Ok((
        Registry {
            entries,
            excluded,
            instructions,
        },
        warnings,
    ))
}
