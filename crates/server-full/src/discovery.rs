//! The discovery tools: `find_tools` searches the catalogue, `load_modules` loads categories or
//! tools into one session.

use std::collections::BTreeSet;

use catalogue::{Category, FindToolsArgs, LoadModulesArgs, ToolError, parse_args};
use serde_json::{Value, json};

use crate::registry::Registry;

/// Most results `find_tools` returns.
const FIND_LIMIT: usize = 10;
/// Largest edit distance at which `load_modules` suggests a name.
const SUGGEST_DISTANCE: usize = 3;

/// Runs `find_tools`: visible tools ranked by how well they match the query. Without a
/// session (`sessionless`) each result carries its input schema, for `call_tool`.
pub(crate) fn find_tools(
    registry: &Registry,
    loaded: &[bool],
    args: Value,
    sessionless: bool,
) -> Result<Value, ToolError> {
    let args: FindToolsArgs = parse_args(args)?;
    let words = catalogue::search::query_words(&args.query)?;
    let mut scored: Vec<(usize, usize)> = registry
        .entries
        .iter()
        .map(|e| catalogue::search::score(&e.spec, &words))
        .enumerate()
        .filter(|(_, score)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let tools: Vec<Value> = scored
        .iter()
        .take(FIND_LIMIT)
        .map(|&(i, _)| {
            let e = &registry.entries[i];
            let mut found = json!({
                "name": e.spec.name,
                "category": e.spec.category,
                "loaded": loaded.get(i).copied().unwrap_or(false),
                "description": e.spec.description,
            });
            if sessionless {
                found["inputSchema"] = Value::Object((*e.tool.input_schema).clone());
            }
            found
        })
        .collect();
    let unloaded = tools.iter().any(|t| t["loaded"] == false);
    let more = scored.len().saturating_sub(FIND_LIMIT);
    let mut hints: Vec<String> = Vec::new();
    if tools.is_empty() {
        hints.push(format!(
            "No tool matches; try a category ({}) or a word such as publish, read, \
             acknowledge, schedule or remind.",
            categories_served(registry).join(", ")
        ));
    }
    if more > 0 {
        hints.push(format!(
            "{more} more match; add or change words to narrow the query, or name a category."
        ));
    }
    if unloaded {
        hints.push(if sessionless {
            "Run a tool with loaded=false through call_tool {\"name\": ..., \"arguments\": \
             {...}}, its arguments as its inputSchema describes."
                .into()
        } else {
            "Tools with loaded=false are not in your tool list yet: call load_modules with \
             their names or categories first."
                .into()
        });
    }
    let mut result = json!({ "tools": tools });
    if more > 0 {
        result["more"] = json!(more);
    }
    if !hints.is_empty() {
        result["hint"] = json!(hints.join(" "));
    }
    Ok(result)
}

/// The categories that have a visible tool, in catalogue order.
fn categories_served(registry: &Registry) -> Vec<&'static str> {
    Category::ALL
        .iter()
        .filter(|c| registry.entries.iter().any(|e| e.spec.category == **c))
        .map(|c| c.as_str())
        .collect()
}

/// The tools `load_modules` resolved: registry indexes, in catalogue order.
pub(crate) fn resolve_modules(registry: &Registry, args: Value) -> Result<Vec<usize>, ToolError> {
    let args: LoadModulesArgs = parse_args(args)?;
    if args.modules.iter().all(|m| m.trim().is_empty()) {
        return Err(ToolError::InvalidArguments(
            "modules: name at least one category (channels, conditions, enforcement, \
             scheduler), tool, or \"all\""
                .into(),
        ));
    }
    let mut wanted = BTreeSet::new();
    for name in args
        .modules
        .iter()
        .map(|m| m.trim())
        .filter(|m| !m.is_empty())
    {
        if name.eq_ignore_ascii_case("all") {
            wanted.extend(0..registry.entries.len());
            continue;
        }
        if let Ok(category) = name.parse::<Category>() {
            let members: Vec<usize> = registry
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.spec.category == category)
                .map(|(i, _)| i)
                .collect();
            if members.is_empty() {
                return Err(ToolError::Refused(format!(
                    "modules: category `{category}` is not available on this server: its \
                     MCP_CATEGORIES/ALLOWED_TOOLS settings exclude every tool in it"
                )));
            }
            wanted.extend(members);
            continue;
        }
        if let Some(i) = registry
            .entries
            .iter()
            .position(|e| e.spec.name.eq_ignore_ascii_case(name))
        {
            wanted.insert(i);
            continue;
        }
        if let Some((tool, category)) = registry
            .excluded
            .iter()
            .find(|(t, _)| t.eq_ignore_ascii_case(name))
        {
            return Err(ToolError::Refused(format!(
                "modules: `{tool}` ({category}) exists but this server's MCP_CATEGORIES/\
                 ALLOWED_TOOLS settings exclude it; nothing can be loaded outside them"
            )));
        }
        return Err(ToolError::InvalidArguments(unknown_module(registry, name)));
    }
    Ok(wanted.into_iter().collect())
}

/// The error text for a name that is neither a category nor a visible tool.
fn unknown_module(registry: &Registry, name: &str) -> String {
    let lowered = name.to_ascii_lowercase();
    let mut candidates: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    candidates.push("all");
    candidates.extend(registry.entries.iter().map(|e| e.spec.name.as_str()));
    let closest = candidates
        .iter()
        .map(|c| (strsim::osa_distance(&lowered, c), *c))
        .min_by_key(|(distance, _)| *distance);
    match closest {
        Some((distance, candidate)) if distance <= SUGGEST_DISTANCE => {
            format!("modules: unknown name `{name}`; did you mean `{candidate}`?")
        }
        _ => {
            let categories = categories_served(registry);
            format!(
                "modules: unknown name `{name}`; valid names are the categories {}, \"all\", or \
                 a tool name from find_tools",
                categories.join(", ")
            )
        }
    }
}
