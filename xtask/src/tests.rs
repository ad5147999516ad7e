//! Tests of the catalogue command's rendering and of the linked registrations.

use catalogue::{Annotations, Category};
use serde_json::json;

use crate::catalogue_cmd::{DOC_HEADER, doc_text, linked_catalogue};
use crate::markdown::{Align, annotations, cell, table, type_of};

#[test]
fn field_types_read_plainly() {
    let cases = [
        (json!({"type": "string"}), "string"),
        (
            json!({"type": "integer", "minimum": 1, "maximum": 200}),
            "integer (1 to 200)",
        ),
        (
            json!({"type": "integer", "minimum": 0}),
            "integer (at least 0)",
        ),
        (
            json!({"type": "string", "enum": ["info", "alert"], "default": "info"}),
            "string: info, alert (default info)",
        ),
        (json!({"enum": ["pre", "post"]}), "pre, post"),
        (
            json!({"type": "array", "items": {"type": "string"}}),
            "array of string",
        ),
        (json!({"type": ["string", "integer"]}), "string or integer"),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            "string or integer",
        ),
        (
            json!({"type": "string", "maxLength": 64}),
            "string (at most 64 characters)",
        ),
        (
            json!({"type": "boolean", "default": false}),
            "boolean (default false)",
        ),
        (json!({}), "any"),
    ];
    for (schema, expected) in cases {
        assert_eq!(type_of(&schema), expected, "{schema}");
    }
}

#[test]
fn cells_stay_on_one_line_and_escape_pipes() {
    assert_eq!(cell("a | b\n  c"), "a \\| b c");
}

#[test]
fn annotations_read_as_words() {
    assert_eq!(annotations(Annotations::READ_ONLY), "read-only");
    assert_eq!(annotations(Annotations::ADDITIVE), "additive");
    assert_eq!(
        annotations(Annotations::DESTRUCTIVE),
        "destructive, idempotent"
    );
}

#[test]
fn tables_pad_and_align_columns() {
    let rows = vec![
        vec!["`a`".to_owned(), "7".to_owned()],
        vec!["`long_name`".to_owned(), "1234".to_owned()],
    ];
    let text = table(&[("Tool", Align::Left), ("Tokens", Align::Right)], &rows);
    assert_eq!(
        text,
        "| Tool        | Tokens |\n\
         | ----------- | -----: |\n\
         | `a`         |      7 |\n\
         | `long_name` |   1234 |\n"
    );
}

#[test]
fn every_category_is_linked_and_documented() {
    let all = linked_catalogue().unwrap();
    for category in Category::ALL {
        assert!(
            all.tools().iter().any(|t| t.category == category),
            "{category}"
        );
    }
    let doc = doc_text(&all).unwrap();
    assert!(doc.starts_with(DOC_HEADER));
    for tool in all.tools() {
        assert!(
            doc.contains(&format!("### `{}`", tool.name)),
            "{}",
            tool.name
        );
    }
    assert!(doc.contains("| **total**"));
}

#[test]
fn the_instructions_token_estimate_stays_within_15_percent_of_o200k() {
    let all = crate::catalogue_cmd::linked_catalogue().unwrap();
    let bpe = tiktoken_rs::o200k_base().unwrap();
    for category in catalogue::Category::ALL {
        let tools: Vec<serde_json::Value> = all
            .tools()
            .iter()
            .filter(|t| t.category == category)
            .map(|t| t.to_mcp())
            .collect();
        let estimate: usize = tools.iter().map(catalogue::estimate_tokens).sum();
        let real: usize = tools
            .iter()
            .map(|t| {
                bpe.encode_ordinary(&serde_json::to_string(t).unwrap())
                    .len()
            })
            .sum();
        let ratio = estimate as f64 / real as f64;
        assert!(
            (0.85..=1.15).contains(&ratio),
            "{category}: estimate {estimate} vs o200k {real} (ratio {ratio:.2}); adjust \
             catalogue::BYTES_PER_TOKEN"
        );
    }
}

#[test]
fn the_instructions_mention_the_resources_in_at_most_30_tokens() {
    let tokens = crate::tokens::count_text(catalogue::RESOURCES_LINE).unwrap();
    assert!(
        tokens <= 30,
        "{tokens} tokens: {}",
        catalogue::RESOURCES_LINE
    );
    let mode = catalogue::StartMode::Lazy;
    let text = catalogue::instructions(&linked_catalogue().unwrap(), &mode).unwrap();
    assert!(text.contains("hooks://channels/{channel}"), "{text}");
}
