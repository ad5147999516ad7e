//! Static tool registrations collected across every linked crate.

use serde_json::Value;

use crate::{Annotations, CallContext, Category, ToolError, ToolSpec};

/// A tool handler: validated arguments in, a JSON object (the call's structured result) out.
///
/// Handlers are synchronous; the async server runs them on a blocking thread.
pub type Handler = fn(&CallContext<'_>, Value) -> Result<Value, ToolError>;

/// One tool, as a tools crate registers it with [`crate::submit!`].
///
/// Linking the crate that submits a registration is what makes the tool exist: a binary that
/// never names a tools crate silently has none of its tools, so assemble catalogues in one place
/// and test the registered count.
#[derive(Debug)]
pub struct ToolRegistration {
    /// Unique tool name, `snake_case`.
    pub name: &'static str,
    /// The category the tool belongs to; filters select by it.
    pub category: Category,
    /// Short human-readable title.
    pub title: &'static str,
    /// What the tool does, for the model. Every token is paid by every session that lists it.
    pub description: &'static str,
    /// Builds the input JSON Schema, usually [`crate::schema_of`]`::<Args>`.
    pub input_schema: fn() -> Value,
    /// Builds the output JSON Schema, when declaring one is worth its token cost.
    pub output_schema: Option<fn() -> Value>,
    /// MCP behaviour hints.
    pub annotations: Annotations,
    /// The entry point that runs the tool.
    pub handler: Handler,
}

impl ToolRegistration {
    /// The serializable description of this tool.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.to_owned(),
            category: self.category,
            title: self.title.to_owned(),
            description: self.description.to_owned(),
            input_schema: (self.input_schema)(),
            output_schema: self.output_schema.map(|f| f()),
            annotations: self.annotations,
        }
    }
}

inventory::collect!(ToolRegistration);

/// Every registration linked into this program, sorted by category then name.
pub fn registrations() -> Vec<&'static ToolRegistration> {
    let mut all: Vec<&'static ToolRegistration> =
        inventory::iter::<ToolRegistration>.into_iter().collect();
    all.sort_by(|a, b| (a.category, a.name).cmp(&(b.category, b.name)));
    all
}

/// The linked registration named exactly `name`.
pub fn find(name: &str) -> Option<&'static ToolRegistration> {
    inventory::iter::<ToolRegistration>
        .into_iter()
        .find(|r| r.name == name)
}

/// Runs the linked tool named `name` with `args` in `ctx`.
///
/// # Errors
/// [`ToolError::NotFound`] when no linked tool has that name; otherwise the tool's own error.
pub fn call(name: &str, ctx: &CallContext<'_>, args: Value) -> Result<Value, ToolError> {
    let registration =
        find(name).ok_or_else(|| ToolError::NotFound(format!("no tool is named `{name}`")))?;
    (registration.handler)(ctx, args)
}
