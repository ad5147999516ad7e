//! Token counts of the tools a client lists, with the o200k_base encoding.

use anyhow::anyhow;
use catalogue::{Catalogue, Category};

use crate::markdown::{Align, table};

/// One tool's token count.
#[derive(Debug)]
struct ToolTokens {
    category: Category,
    name: String,
    tokens: usize,
}

/// Token counts for a catalogue.
#[derive(Debug)]
pub(crate) struct Counts {
    tools: Vec<ToolTokens>,
}

/// Counts the o200k_base tokens of each tool's MCP object, serialized compactly (what a client
/// puts in the model's context for it).
pub(crate) fn count(catalogue: &Catalogue) -> anyhow::Result<Counts> {
    let bpe =
        tiktoken_rs::o200k_base().map_err(|e| anyhow!("loading the o200k_base tokenizer: {e}"))?;
    let mut tools = Vec::with_capacity(catalogue.len());
    for tool in catalogue.tools() {
        let text = serde_json::to_string(&tool.to_mcp())?;
        tools.push(ToolTokens {
            category: tool.category,
            name: tool.name.clone(),
            tokens: bpe.encode_ordinary(&text).len(),
        });
    }
    Ok(Counts { tools })
}

impl Counts {
    /// Two markdown tables: per tool, then per category with the total and averages.
    pub(crate) fn tables(&self) -> String {
        let per_tool: Vec<Vec<String>> = self
            .tools
            .iter()
            .map(|t| {
                vec![
                    t.category.to_string(),
                    format!("`{}`", t.name),
                    t.tokens.to_string(),
                ]
            })
            .collect();
        let mut per_category: Vec<Vec<String>> = Vec::new();
        for category in Category::ALL {
            let counts: Vec<usize> = self
                .tools
                .iter()
                .filter(|t| t.category == category)
                .map(|t| t.tokens)
                .collect();
            if !counts.is_empty() {
                per_category.push(summary_row(category.as_str(), &counts));
            }
        }
        let all: Vec<usize> = self.tools.iter().map(|t| t.tokens).collect();
        per_category.push(summary_row("**total**", &all));

        let mut out = table(
            &[
                ("Category", Align::Left),
                ("Tool", Align::Left),
                ("Tokens", Align::Right),
            ],
            &per_tool,
        );
        out.push('\n');
        out.push_str(&table(
            &[
                ("Category", Align::Left),
                ("Tools", Align::Right),
                ("Tokens", Align::Right),
                ("Average per tool", Align::Right),
            ],
            &per_category,
        ));
        out
    }
}

fn summary_row(label: &str, counts: &[usize]) -> Vec<String> {
    let sum: usize = counts.iter().sum();
    let average = if counts.is_empty() {
        0.0
    } else {
        sum as f64 / counts.len() as f64
    };
    vec![
        label.to_owned(),
        counts.len().to_string(),
        sum.to_string(),
        format!("{average:.1}"),
    ]
}
