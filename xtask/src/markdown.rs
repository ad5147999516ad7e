//! Markdown rendering of a catalogue: a table per category and each tool's input fields.

use catalogue::{Annotations, Catalogue, Category, ToolSpec};
use serde_json::Value;

/// Column alignment in a markdown table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// A markdown table, cells padded so that the raw text reads as a table too.
pub(crate) fn table(columns: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = columns.iter().map(|(h, _)| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count()).max(3);
        }
    }
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let pad = |text: &str, width: usize, align: Align| {
        let fill = " ".repeat(width.saturating_sub(text.chars().count()));
        match align {
            Align::Left => format!("{text}{fill}"),
            Align::Right => format!("{fill}{text}"),
        }
    };
    let mut out = line(
        columns
            .iter()
            .zip(&widths)
            .map(|((h, a), &w)| pad(h, w, *a))
            .collect(),
    );
    out.push_str(&line(
        columns
            .iter()
            .zip(&widths)
            .map(|((_, a), &w)| match a {
                Align::Left => "-".repeat(w),
                Align::Right => format!("{}:", "-".repeat(w.saturating_sub(1))),
            })
            .collect(),
    ));
    for row in rows {
        out.push_str(&line(
            columns
                .iter()
                .zip(&widths)
                .zip(row)
                .map(|(((_, a), &w), cell)| pad(cell, w, *a))
                .collect(),
        ));
    }
    out
}

/// The catalogue as markdown: a summary table per category, then each tool's input fields.
pub(crate) fn catalogue(catalogue: &Catalogue) -> String {
    let mut out = String::from("# Tool catalogue\n\n");
    out.push_str(&format!(
        "{} tools. Annotations: *read-only* tools change nothing, *additive* ones only add \
         data, *destructive* ones remove or replace it, *idempotent* ones may be repeated \
         safely.\n",
        catalogue.len()
    ));
    for category in Category::ALL {
        let tools: Vec<&ToolSpec> = catalogue
            .tools()
            .iter()
            .filter(|t| t.category == category)
            .collect();
        if tools.is_empty() {
            continue;
        }
        out.push_str(&format!("\n## {category}\n\n"));
        let rows: Vec<Vec<String>> = tools
            .iter()
            .map(|t| {
                vec![
                    format!("`{}`", t.name),
                    cell(&t.title),
                    annotations(t.annotations),
                    cell(&t.description),
                ]
            })
            .collect();
        out.push_str(&table(
            &[
                ("Tool", Align::Left),
                ("Title", Align::Left),
                ("Annotations", Align::Left),
                ("Description", Align::Left),
            ],
            &rows,
        ));
        for tool in tools {
            out.push_str(&format!("\n### `{}`\n\n", tool.name));
            out.push_str(&fields(&tool.input_schema));
        }
    }
    out
}

/// The input fields of a tool as a table, or a sentence when it takes none.
fn fields(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "No arguments.\n".into();
    };
    if properties.is_empty() {
        return "No arguments.\n".into();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = properties
        .iter()
        .map(|(name, field)| {
            vec![
                format!("`{name}`"),
                cell(&type_of(field)),
                if required.contains(&name.as_str()) {
                    "yes".into()
                } else {
                    "no".into()
                },
                cell(
                    field
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
            ]
        })
        .collect();
    table(
        &[
            ("Field", Align::Left),
            ("Type", Align::Left),
            ("Required", Align::Left),
            ("Description", Align::Left),
        ],
        &rows,
    )
}

/// A short human reading of a field's schema: `integer (1 to 200)`, `string: info, alert`...
pub(crate) fn type_of(schema: &Value) -> String {
    let mut text = match schema.get("type") {
        Some(Value::String(t)) if t == "array" => match schema.get("items") {
            Some(items) => format!("array of {}", type_of(items)),
            None => "array".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => match schema.get("anyOf").or_else(|| schema.get("oneOf")) {
            Some(Value::Array(alternatives)) => alternatives
                .iter()
                .map(type_of)
                .collect::<Vec<_>>()
                .join(" or "),
            _ if schema.get("enum").is_some() => String::new(),
            _ => "any".into(),
        },
    };
    if let Some(Value::Array(values)) = schema.get("enum") {
        let values: Vec<String> = values.iter().map(plain).collect();
        if text.is_empty() {
            text = values.join(", ");
        } else {
            text = format!("{text}: {}", values.join(", "));
        }
    }
    let bounds = |low: &str, high: &str| match (schema.get(low), schema.get(high)) {
        (Some(l), Some(h)) => Some(format!("{} to {}", plain(l), plain(h))),
        (Some(l), None) => Some(format!("at least {}", plain(l))),
        (None, Some(h)) => Some(format!("at most {}", plain(h))),
        (None, None) => None,
    };
    let mut notes: Vec<String> = Vec::new();
    if let Some(range) = bounds("minimum", "maximum") {
        notes.push(range);
    }
    if let Some(length) = bounds("minLength", "maxLength") {
        notes.push(format!("{length} characters"));
    }
    if let Some(count) = bounds("minItems", "maxItems") {
        notes.push(format!("{count} items"));
    }
    if let Some(default) = schema.get("default") {
        notes.push(format!("default {}", plain(default)));
    }
    if !notes.is_empty() {
        text = format!("{text} ({})", notes.join(", "));
    }
    text
}

/// A JSON value as text, strings without quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The annotations in words.
pub(crate) fn annotations(a: Annotations) -> String {
    if a.read_only {
        return "read-only".into();
    }
    let kind = if a.destructive {
        "destructive"
    } else {
        "additive"
    };
    if a.idempotent {
        format!("{kind}, idempotent")
    } else {
        kind.into()
    }
}

/// Text made safe for one table cell: no line breaks, no bare `|`.
pub(crate) fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}
