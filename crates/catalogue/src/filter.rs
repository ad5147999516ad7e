//! The category and allowlist rules, and their parsing from the environment.

use std::collections::BTreeSet;
use std::fmt;

use crate::Category;

/// Environment variable selecting categories: `all` (default) or a comma-separated list.
pub const CATEGORIES_ENV: &str = "MCP_CATEGORIES";
/// Environment variable restricting tools by name within the selected categories.
pub const ALLOWED_TOOLS_ENV: &str = "ALLOWED_TOOLS";

/// The settings this module parses, for the generated configuration reference.
pub const FILTER_SETTINGS: &[crate::Setting] = &[
    crate::Setting {
        env: CATEGORIES_ENV,
        flag: "",
        default: "all",
        effect: "Comma-separated categories: channels, conditions, enforcement, scheduler. \
                 Unknown names warn on stderr and are skipped; a selection with zero tools warns.",
    },
    crate::Setting {
        env: ALLOWED_TOOLS_ENV,
        flag: "",
        default: "unset",
        effect: "Comma-separated tool names within the selected categories; matching ignores \
                 case; unset or blank permits all. It never adds a tool from an excluded \
                 category, and bounds what load_modules can load.",
    },
];

/// Which tools a server exposes: a set of categories and an optional allowlist of names.
///
/// The allowlist only narrows: it can never add a tool from a category that is not selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    categories: BTreeSet<Category>,
    /// Lower-cased names; `None` permits every tool of the selected categories.
    allowed: Option<Vec<String>>,
}

impl Default for Filter {
    /// Every category, no allowlist.
    fn default() -> Self {
        Filter {
            categories: Category::ALL.into_iter().collect(),
            allowed: None,
        }
    }
}

/// Something about a filter setting the caller should tell the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterWarning {
    /// A name in `MCP_CATEGORIES` that is not a category; it was skipped.
    UnknownCategory {
        /// The name as given.
        name: String,
    },
    /// A name in `ALLOWED_TOOLS` that no registered tool has.
    UnknownTool {
        /// The name as given (lower-cased).
        name: String,
    },
    /// A tool named in `ALLOWED_TOOLS` whose category is not selected.
    ExcludedByCategory {
        /// The tool.
        tool: String,
        /// Its category.
        category: Category,
    },
    /// The settings select no tool at all.
    NoTools,
    /// A start module (`HOOKS_MCP_MODULES`) of a category `MCP_CATEGORIES` does not select:
    /// it loads nothing.
    StartModuleExcluded {
        /// The category.
        category: Category,
    },
}

impl fmt::Display for FilterWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterWarning::UnknownCategory { name } => write!(
                f,
                "{CATEGORIES_ENV}: unknown category `{name}` skipped; valid categories: \
                 all, channels, conditions, enforcement, scheduler"
            ),
            FilterWarning::UnknownTool { name } => write!(
                f,
                "{ALLOWED_TOOLS_ENV}: no tool is named `{name}`; check the spelling against \
                 `tools/list` or `cargo xtask catalogue`"
            ),
            FilterWarning::ExcludedByCategory { tool, category } => write!(
                f,
                "{ALLOWED_TOOLS_ENV}: `{tool}` belongs to category `{category}`, which \
                 {CATEGORIES_ENV} does not select; an allowlist cannot add it (add `{category}` \
                 to {CATEGORIES_ENV})"
            ),
            FilterWarning::NoTools => write!(
                f,
                "zero tools selected: {CATEGORIES_ENV} and {ALLOWED_TOOLS_ENV} together match \
                 no tool; correct them or unset them to expose every tool"
            ),
            FilterWarning::StartModuleExcluded { category } => write!(
                f,
                "{}: start module `{category}` loads nothing: {CATEGORIES_ENV} does not select \
                 it (add `{category}` to {CATEGORIES_ENV}, or take it out of the start modules)",
                crate::MODULES_ENV
            ),
        }
    }
}

impl Filter {
    /// Parses the two settings as given (`None` for unset).
    ///
    /// Categories: unset, blank or `all` select every category; otherwise a comma-separated
    /// list, case-insensitive, where unknown names are skipped with a warning. If every name was
    /// unknown, no category is selected (and [`crate::Catalogue::filtered`] warns of zero tools).
    /// Allowlist: unset or blank permits all; otherwise comma-separated names, case-insensitive.
    pub fn parse(
        categories: Option<&str>,
        allowed_tools: Option<&str>,
    ) -> (Filter, Vec<FilterWarning>) {
        let mut warnings = Vec::new();
        let categories = match categories.map(str::trim) {
            None | Some("") => Category::ALL.into_iter().collect(),
            Some(list) => {
                let mut set = BTreeSet::new();
                for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    if name.eq_ignore_ascii_case("all") {
                        set.extend(Category::ALL);
                    } else {
                        match name.parse::<Category>() {
                            Ok(c) => {
                                set.insert(c);
                            }
                            Err(_) => warnings.push(FilterWarning::UnknownCategory {
                                name: name.to_owned(),
                            }),
                        }
                    }
                }
                set
            }
        };
        let allowed = allowed_tools.and_then(|list| {
            let mut names: Vec<String> = list
                .split(',')
                .map(|n| n.trim().to_ascii_lowercase())
                .filter(|n| !n.is_empty())
                .collect();
            names.sort();
            names.dedup();
            (!names.is_empty()).then_some(names)
        });
        (
            Filter {
                categories,
                allowed,
            },
            warnings,
        )
    }

    /// Parses [`CATEGORIES_ENV`] and [`ALLOWED_TOOLS_ENV`] from the process environment.
    pub fn from_env() -> (Filter, Vec<FilterWarning>) {
        let categories = std::env::var(CATEGORIES_ENV).ok();
        let allowed = std::env::var(ALLOWED_TOOLS_ENV).ok();
        Filter::parse(categories.as_deref(), allowed.as_deref())
    }

    /// Whether `category` is selected.
    pub fn selects_category(&self, category: Category) -> bool {
        self.categories.contains(&category)
    }

    /// The selected categories, in catalogue order.
    pub fn categories(&self) -> impl Iterator<Item = Category> + '_ {
        self.categories.iter().copied()
    }

    /// The allowlist (lower-cased, sorted), or `None` when every selected tool is permitted.
    pub fn allowed_tools(&self) -> Option<&[String]> {
        self.allowed.as_deref()
    }

    /// Whether a tool of `category` named `name` passes the filter.
    pub fn allows(&self, category: Category, name: &str) -> bool {
        self.selects_category(category)
            && self
                .allowed
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n.eq_ignore_ascii_case(name)))
    }

    /// Applies the filter to tools given as `(category, name)`: whether each passes, in order,
    /// and what the caller should warn about (allowlisted names that match no tool or a tool of
    /// an unselected category; a selection of zero tools). Every catalogue form filters through
    /// this, so the light path and the full server agree.
    pub fn select(&self, tools: &[(Category, &str)]) -> (Vec<bool>, Vec<FilterWarning>) {
        let mut warnings = Vec::new();
        if let Some(allowed) = self.allowed_tools() {
            for name in allowed {
                match tools.iter().find(|(_, t)| t.eq_ignore_ascii_case(name)) {
                    None => warnings.push(FilterWarning::UnknownTool { name: name.clone() }),
                    Some(&(category, tool)) if !self.selects_category(category) => {
                        warnings.push(FilterWarning::ExcludedByCategory {
                            tool: tool.to_owned(),
                            category,
                        })
                    }
                    Some(_) => {}
                }
            }
        }
        let keep: Vec<bool> = tools
            .iter()
            .map(|&(category, name)| self.allows(category, name))
            .collect();
        if !keep.contains(&true) {
            warnings.push(FilterWarning::NoTools);
        }
        (keep, warnings)
    }
}
