//! Searching the catalogue by words: how well a tool matches a `find_tools` query.

use crate::{ToolError, ToolSpec};

/// A query's words: split at anything that is not a letter or a digit (in any script),
/// lower-cased.
///
/// # Errors
/// [`ToolError::InvalidArguments`] when the query has no word at all.
pub fn query_words(query: &str) -> Result<Vec<String>, ToolError> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return Err(ToolError::InvalidArguments(
            "query: give at least one word, e.g. \"broadcast\" or \"schedule\"".into(),
        ));
    }
    Ok(words)
}

/// How well `spec` matches `words` (from [`query_words`]): 0 for not at all. A word (or its
/// singular) in the name counts most, then the category and the title, then the description.
/// A query word matches the start of a word of those texts: `sched` finds `scheduler`, `all`
/// does not find `call`.
pub fn score(spec: &ToolSpec, words: &[String]) -> usize {
    let name = spec.name.to_lowercase();
    let title = spec.title.to_lowercase();
    let description = spec.description.to_lowercase();
    let category = spec.category.as_str();
    words
        .iter()
        .map(|w| {
            3 * usize::from(mentions(&name, w))
                + 2 * usize::from(category.starts_with(singular(w)))
                + 2 * usize::from(mentions(&title, w))
                + usize::from(mentions(&description, w))
        })
        .sum()
}

/// Whether a word of `text` (lowercase; its words split as [`query_words`] splits a query)
/// starts with `word` (lowercase) or its singular.
fn mentions(text: &str, word: &str) -> bool {
    // The singular is a prefix of the word: a text word starting with the word starts with it.
    let stem = singular(word);
    text.split(|c: char| !c.is_alphanumeric())
        .any(|token| token.starts_with(stem))
}

/// `word` without a plural ending (`schedules` → `schedule`, `searches` → `search`), or
/// `word` itself when it is short or has none.
fn singular(word: &str) -> &str {
    for ending in ["ches", "shes", "sses", "xes", "s"] {
        if let Some(stem) = word.strip_suffix(ending)
            && stem.chars().count() >= if ending == "s" { 3 } else { 2 }
            && !stem.ends_with('s')
        {
            // Drop only the plural's own letters: "es" after ch/sh/ss/x, "s" otherwise.
            let keep = ending.len() - if ending == "s" { 1 } else { 2 };
            return &word[..stem.len() + keep];
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_lose_only_their_own_letters() {
        for (plural, one) in [
            ("schedules", "schedule"),
            ("broadcasts", "broadcast"),
            ("searches", "search"),
            ("classes", "class"),
            ("boxes", "box"),
            ("bus", "bus"),
            ("class", "class"),
            ("通知", "通知"),
        ] {
            assert_eq!(singular(plural), one, "{plural}");
        }
    }

    #[test]
    fn a_word_matches_the_start_of_a_word_not_its_middle() {
        let text = "re-inject a reminder every n tool calls (channel_list, scheduler's jobs)";
        for (word, found) in [
            ("all", false),
            ("call", true),
            ("calls", true),
            ("remind", true),
            ("reminders", true),
            ("inject", true),
            ("list", true),
            ("sched", true),
            ("jobs", true),
            ("minder", false),
            ("hedule", false),
        ] {
            assert_eq!(mentions(text, word), found, "{word}");
        }
        assert!(mentions("list all channels", "all"));
    }

    #[test]
    fn words_of_any_script_and_no_words() {
        assert_eq!(
            query_words("Schedules, 通知!").unwrap(),
            ["schedules", "通知"]
        );
        assert!(query_words(" -- ").is_err());
    }
}
