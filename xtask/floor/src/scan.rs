//! The payload scan the hook floors share: a string member found by text, no JSON library.

/// The value of the string member `"key": "value"` (escapes left as they are).
pub(crate) fn string_member<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let quoted = format!("\"{key}\"");
    let after = &json[json.find(&quoted)? + quoted.len()..];
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    let body = after.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some(&body[..i]),
            _ => escaped = false,
        }
    }
    None
}
