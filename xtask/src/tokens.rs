//! Token counts of the tools a client lists, with the o200k_base encoding.

use anyhow::anyhow;
use catalogue::{Catalogue, Category, StartMode};
use serde_json::Value;
use tiktoken_rs::CoreBPE;

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
    let bpe = tokenizer()?;
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

/// The o200k_base tokens of `text`.
#[cfg(test)]
pub(crate) fn count_text(text: &str) -> anyhow::Result<usize> {
    Ok(tokenizer()?.encode_ordinary(text).len())
}

fn tokenizer() -> anyhow::Result<CoreBPE> {
    tiktoken_rs::o200k_base().map_err(|e| anyhow!("loading the o200k_base tokenizer: {e}"))
}

/// What one start mode costs a client that loads every advertised schema.
#[derive(Debug)]
pub(crate) struct ModeCost {
    /// The mode.
    pub(crate) mode: StartMode,
    /// Tools advertised at start.
    pub(crate) tools: usize,
    /// Tokens of the advertised tools' MCP objects.
    pub(crate) tool_tokens: usize,
    /// Tokens of the server instructions (0 when there are none).
    pub(crate) instruction_tokens: usize,
    /// Priced as a server without sessions lists it (a 2026-07-28 request over HTTP: the lazy
    /// discovery tools are `find_tools` and `call_tool`).
    pub(crate) sessionless: bool,
}

/// The o200k_base cost of each mode over `visible`; a lazy mode is followed by its cost on a
/// server without sessions (`find_tools` and `call_tool`, and instructions that say so).
pub(crate) fn mode_costs(
    visible: &Catalogue,
    modes: &[StartMode],
) -> anyhow::Result<Vec<ModeCost>> {
    let bpe = tokenizer()?;
    let tokens_of = |v: &Value| -> anyhow::Result<usize> {
        Ok(bpe.encode_ordinary(&serde_json::to_string(v)?).len())
    };
    let mut costs = Vec::with_capacity(modes.len());
    for mode in modes {
        let mut tool_tokens = 0;
        let advertised = catalogue::advertised_tools(visible, mode);
        for tool in &advertised {
            tool_tokens += tokens_of(tool)?;
        }
        let instruction_tokens = catalogue::instructions(visible, mode)
            .map(|text| bpe.encode_ordinary(&text).len())
            .unwrap_or(0);
        costs.push(ModeCost {
            mode: mode.clone(),
            tools: advertised.len(),
            tool_tokens,
            instruction_tokens,
            sessionless: false,
        });
        if *mode == StartMode::Lazy {
            let tools = catalogue::sessionless_discovery_tools();
            let mut tool_tokens = 0;
            for tool in &tools {
                tool_tokens += tokens_of(tool)?;
            }
            let instructions = catalogue::instructions(visible, mode).map(|text| {
                let rest = text.split_once('\n').map_or("", |(_, rest)| rest);
                format!("{}\n{rest}", catalogue::SESSIONLESS_LEAD)
            });
            costs.push(ModeCost {
                mode: mode.clone(),
                tools: tools.len(),
                tool_tokens,
                instruction_tokens: instructions
                    .map(|text| bpe.encode_ordinary(&text).len())
                    .unwrap_or(0),
                sessionless: true,
            });
        }
    }
    Ok(costs)
}

/// A markdown table of mode costs.
pub(crate) fn mode_table(costs: &[ModeCost]) -> String {
    let rows: Vec<Vec<String>> = costs
        .iter()
        .map(|c| {
            vec![
                if c.sessionless {
                    format!("`{}`, 2026-07-28 over HTTP", c.mode)
                } else {
                    format!("`{}`", c.mode)
                },
                c.tools.to_string(),
                c.tool_tokens.to_string(),
                c.instruction_tokens.to_string(),
                (c.tool_tokens + c.instruction_tokens).to_string(),
            ]
        })
        .collect();
    table(
        &[
            ("Mode", Align::Left),
            ("Tools at start", Align::Right),
            ("Tool tokens", Align::Right),
            ("Instruction tokens", Align::Right),
            ("Total", Align::Right),
        ],
        &rows,
    )
}

/// The modes every report shows: eager, lazy, and each single category as `modules`.
pub(crate) fn standard_modes() -> Vec<StartMode> {
    let mut modes = vec![StartMode::Eager, StartMode::Lazy];
    modes.extend(
        Category::ALL
            .iter()
            .map(|c| StartMode::Modules([*c].into_iter().collect())),
    );
    modes
}
