//! Reading the fields of a JSON answer or report leniently: what is absent reads as empty.

use serde_json::Value;

/// A string field, or "" when absent.
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A field as text, whatever its type ("" when absent or null).
pub(crate) fn t(v: &Value, key: &str) -> String {
    match v.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// The items of an array field.
pub(crate) fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A text field written on one line, or "" when absent: each line break (`\r\n`, `\n`, `\r`,
/// U+0085, U+2028, U+2029) as the two characters `\n`, as the hooks write message bodies
/// (`store::rules::on_one_line`), so that no message can start a line of its own and pass for
/// another item of the listing.
pub(crate) fn one_line(v: &Value, key: &str) -> String {
    const BREAKS: [char; 5] = ['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'];
    s(v, key).replace("\r\n", "\n").replace(BREAKS, "\\n")
}
