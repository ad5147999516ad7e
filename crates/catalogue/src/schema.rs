//! Input schemas from Rust types, trimmed of what a model does not need.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The JSON Schema (2020-12 dialect, `"type": "object"`) of `T`, for a registration's
/// `input_schema`.
///
/// Sub-schemas are inlined and the noise every session would pay for is dropped: `$schema`,
/// `title`, `format` and `additionalProperties: false` (handlers reject unknown fields anyway,
/// naming them). `Option<T>` fields are plain optional fields rather than `T | null`.
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    strip(&mut schema);
    if let Value::Object(map) = &mut schema {
        map.entry("type")
            .or_insert_with(|| Value::String("object".into()));
    }
    schema
}

/// Removes noise keywords from a schema object and, recursively, from its sub-schemas.
fn strip(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    map.remove("$schema");
    map.remove("title");
    map.remove("format");
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        map.remove("additionalProperties");
    }
    drop_null(map);
    // Only keywords whose values are schemas are walked, so a property that happens to be
    // called `title` or `format` is kept.
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "properties" | "$defs" | "patternProperties" => {
                if let Value::Object(props) = value {
                    props.values_mut().for_each(strip);
                }
            }
            "items" | "additionalProperties" | "not" | "contains" => strip(value),
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(list) = value {
                    list.iter_mut().for_each(strip);
                }
            }
            _ => {}
        }
    }
}

/// Turns the `T | null` that schemars writes for `Option<T>` into plain `T`: an absent field
/// already means "none", and `null` alternatives cost tokens in every session.
fn drop_null(map: &mut serde_json::Map<String, Value>) {
    let is_null = |v: &Value| v.get("type") == Some(&Value::String("null".into()));
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    if let Some(Value::Array(alternatives)) = map.get_mut("anyOf") {
        alternatives.retain(|a| !is_null(a));
        if alternatives.len() == 1
            && let Some(Value::Object(only)) = alternatives.pop()
        {
            map.remove("anyOf");
            for (k, v) in only {
                map.entry(k).or_insert(v);
            }
        }
    }
}
