//! Argument normalisation and validation.
//!
//! Models from different vendors spell the same argument differently (`file`, `file_path`,
//! `filePath`). Normalisation maps top-level keys onto the schema's names in the seed's order:
//! exact name → snake_case→camelCase → alias table → pass-through. Validation then checks the
//! result against the tool's JSON Schema, after a small set of safe coercions. Everything that
//! was renamed or coerced is reported, so the call's metadata can show it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The reference's 22 aliases (alias → canonical). Applied only when the canonical name is a
/// property of the tool's schema.
pub const PARAM_ALIASES: [(&str, &str); 22] = [
    ("file", "filePath"),
    ("filename", "filePath"),
    ("file_name", "filePath"),
    ("filepath", "filePath"),
    ("file_path", "filePath"),
    ("path", "filePath"),
    ("query", "pattern"),
    ("search", "pattern"),
    ("keyword", "pattern"),
    ("search_query", "pattern"),
    ("search_text", "pattern"),
    ("regex", "pattern"),
    ("is_regex", "isRegex"),
    ("file_filter", "fileFilter"),
    ("context_lines", "contextLines"),
    ("max_results", "maxResults"),
    ("start_line", "startLine"),
    ("end_line", "endLine"),
    ("max_lines", "maxLines"),
    ("candidate_id", "candidateId"),
    ("recipe_id", "recipeId"),
    ("skill_name", "skillName"),
];

/// How a key was mapped onto the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenameRule {
    CamelCase,
    Alias,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rename {
    pub from: String,
    pub to: String,
    pub rule: RenameRule,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coercion {
    /// Dotted path of the coerced value, e.g. `maxResults` or `filePaths[0]`.
    pub path: String,
    pub from: String,
    pub to: String,
}

/// One rejected argument: where, what was expected, what came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("argument \"{path}\": expected {expected}, got {got}")]
pub struct ArgumentError {
    pub path: String,
    pub expected: String,
    pub got: String,
}

/// All problems with one call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct ArgumentErrors(pub Vec<ArgumentError>);

/// Normalised, validated arguments plus what was changed on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedArgs {
    pub args: Value,
    pub renames: Vec<Rename>,
    pub coercions: Vec<Coercion>,
    /// Keys that matched nothing in the schema and were passed through.
    pub unmatched: Vec<String>,
}

/// Normalises then validates `raw` against `schema`.
pub fn prepare(
    raw: Value,
    schema: &Value,
    validator: &jsonschema::Validator,
) -> Result<PreparedArgs, ArgumentErrors> {
    let mut coercions = Vec::new();
    let object = into_object(raw, &mut coercions)?;
    let (mut args, renames, unmatched) = normalise_keys(object, schema)?;
    coerce(&mut args, schema, "", &mut coercions);
    if validator.is_valid(&args) {
        return Ok(PreparedArgs {
            args,
            renames,
            coercions,
            unmatched,
        });
    }
    let errors: Vec<ArgumentError> = validator
        .iter_errors(&args)
        .map(|e| describe_error(&e, schema, &args))
        .collect();
    if !errors.is_empty() {
        return Err(ArgumentErrors(errors));
    }
    Ok(PreparedArgs {
        args,
        renames,
        coercions,
        unmatched,
    })
}

/// Accepts an object, `null` (no arguments), or a string holding a JSON object (some models
/// send arguments double-encoded).
fn into_object(
    raw: Value,
    coercions: &mut Vec<Coercion>,
) -> Result<Map<String, Value>, ArgumentErrors> {
    match raw {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(m)) => {
                coercions.push(Coercion {
                    path: String::new(),
                    from: "string".into(),
                    to: "object".into(),
                });
                Ok(m)
            }
            _ => Err(not_an_object(&Value::String(s))),
        },
        other => Err(not_an_object(&other)),
    }
}

fn not_an_object(v: &Value) -> ArgumentErrors {
    ArgumentErrors(vec![ArgumentError {
        path: String::new(),
        expected: "a JSON object of named arguments".into(),
        got: show_value(v),
    }])
}

/// snake_case → camelCase: every `_` followed by a lower-case letter becomes that letter upper-cased.
pub fn snake_to_camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '_'
            && let Some(&next) = chars.peek()
            && next.is_ascii_lowercase()
        {
            out.push(next.to_ascii_uppercase());
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

type Normalised = (Value, Vec<Rename>, Vec<String>);

fn normalise_keys(
    object: Map<String, Value>,
    schema: &Value,
) -> Result<Normalised, ArgumentErrors> {
    let props = schema.get("properties").and_then(Value::as_object);
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        let keys = object.keys().cloned().collect();
        return Ok((Value::Object(object), Vec::new(), keys));
    };
    let mut out = Map::new();
    let mut renames = Vec::new();
    let mut unmatched = Vec::new();
    // Exact names first, so that an exact key always wins over a renamed one.
    let (exact, rest): (Vec<_>, Vec<_>) =
        object.into_iter().partition(|(k, _)| props.contains_key(k));
    out.extend(exact);
    let mut errors = Vec::new();
    for (key, value) in rest {
        let Some((target, rule)) = canonical_name(&key, props) else {
            unmatched.push(key.clone());
            out.insert(key, value);
            continue;
        };
        if let Some(existing) = out.get(&target) {
            if existing != &value {
                errors.push(ArgumentError {
                    path: key.clone(),
                    expected: format!("only one of the names for \"{target}\""),
                    got: format!("both \"{key}\" and \"{target}\" with different values"),
                });
            }
            continue;
        }
        renames.push(Rename {
            from: key,
            to: target.clone(),
            rule,
        });
        out.insert(target, value);
    }
    if !errors.is_empty() {
        return Err(ArgumentErrors(errors));
    }
    Ok((Value::Object(out), renames, unmatched))
}

fn canonical_name(key: &str, props: &Map<String, Value>) -> Option<(String, RenameRule)> {
    let camel = snake_to_camel(key);
    if camel != key && props.contains_key(&camel) {
        return Some((camel, RenameRule::CamelCase));
    }
    PARAM_ALIASES
        .iter()
        .find(|(alias, target)| *alias == key && props.contains_key(*target))
        .map(|(_, target)| ((*target).to_string(), RenameRule::Alias))
}

fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Applies the safe coercions where the schema asks for another type than the one given.
fn coerce(value: &mut Value, schema: &Value, path: &str, log: &mut Vec<Coercion>) {
    let types = schema_types(schema);
    if !types.is_empty() && !types.iter().any(|t| type_matches(value, t)) {
        for t in &types {
            if let Some(new) = coerce_to(value, t) {
                log.push(Coercion {
                    path: path.to_string(),
                    from: json_type(value).into(),
                    to: (*t).into(),
                });
                *value = new;
                break;
            }
        }
    }
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in map.iter_mut() {
                    if let Some(sub) = props.get(k) {
                        coerce(v, sub, &join_key(path, k), log);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items").filter(|s| s.is_object()) {
                for (i, v) in items.iter_mut().enumerate() {
                    coerce(v, sub, &format!("{path}[{i}]"), log);
                }
            }
        }
        _ => {}
    }
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn type_matches(value: &Value, t: &str) -> bool {
    match t {
        "integer" => value.as_i64().is_some() || value.as_u64().is_some(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn coerce_to(value: &Value, t: &str) -> Option<Value> {
    match (t, value) {
        ("integer", Value::String(s)) => s.trim().parse::<i64>().ok().map(Value::from),
        ("integer", Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| Value::from(f as i64)),
        ("number", Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number)),
        ("boolean", Value::String(s)) => match s.trim() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("array", v) if !v.is_null() => Some(Value::Array(vec![v.clone()])),
        _ => None,
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Compact rendering of a value for error messages, cut at 80 characters.
pub fn show_value(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        let cut: String = s.chars().take(77).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn describe_error(
    err: &jsonschema::ValidationError<'_>,
    schema: &Value,
    args: &Value,
) -> ArgumentError {
    use jsonschema::error::ValidationErrorKind as K;
    let pointer = err.instance_path().to_string();
    let mut path = pointer_to_path(&pointer);
    let got_value = args.pointer(&pointer);
    let sub = subschema_at(schema, &pointer);
    match err.kind() {
        K::Required { property } => {
            let name = property.as_str().unwrap_or_default().to_string();
            let sub = subschema_at(schema, &format!("{pointer}/{name}"));
            path = join_key(&path, &name);
            ArgumentError {
                path,
                expected: sub.map_or_else(|| "a value".into(), describe_schema),
                got: "nothing (it is required)".into(),
            }
        }
        K::AdditionalProperties { unexpected } => ArgumentError {
            path,
            expected: format!(
                "only the properties {}",
                schema_property_names(sub.unwrap_or(schema))
            ),
            got: format!("unexpected {}", unexpected.join(", ")),
        },
        _ => ArgumentError {
            path,
            expected: sub.map_or_else(|| err.to_string(), describe_schema),
            got: got_value.map_or_else(|| "nothing".into(), show_value),
        },
    }
}

fn schema_property_names(schema: &Value) -> String {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.keys()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn pointer_to_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            out = join_key(&out, &seg);
        }
    }
    out
}

/// Finds the sub-schema that governs the value at a JSON pointer (properties and items only).
fn subschema_at<'a>(schema: &'a Value, pointer: &str) -> Option<&'a Value> {
    let mut cur = schema;
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        cur = if seg.parse::<usize>().is_ok() && cur.get("items").is_some() {
            cur.get("items")?
        } else {
            cur.get("properties")?.get(&seg)?
        };
    }
    Some(cur)
}

/// A short human description of what a schema accepts: `integer 1..=200`, `one of "a", "b"`.
pub fn describe_schema(schema: &Value) -> String {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = options.iter().map(show_value).collect();
        return format!("one of {}", list.join(", "));
    }
    let types = schema_types(schema);
    let mut base = if types.is_empty() {
        "a value".to_string()
    } else {
        types.join(" or ")
    };
    if types.contains(&"array")
        && let Some(items) = schema.get("items")
        && !schema_types(items).is_empty()
    {
        base = format!("array of {}", describe_schema(items));
    }
    let min = schema.get("minimum").and_then(Value::as_f64);
    let max = schema.get("maximum").and_then(Value::as_f64);
    let range = match (min, max) {
        (Some(a), Some(b)) => format!(" {}..={}", num(a), num(b)),
        (Some(a), None) => format!(" >= {}", num(a)),
        (None, Some(b)) => format!(" <= {}", num(b)),
        (None, None) => String::new(),
    };
    let len = match (
        schema.get("minLength").and_then(Value::as_u64),
        schema.get("maxLength").and_then(Value::as_u64),
    ) {
        (Some(a), Some(b)) => format!(" of {a}..={b} characters"),
        (Some(a), None) => format!(" of at least {a} characters"),
        (None, Some(b)) => format!(" of at most {b} characters"),
        (None, None) => String::new(),
    };
    let items = match (
        schema.get("minItems").and_then(Value::as_u64),
        schema.get("maxItems").and_then(Value::as_u64),
    ) {
        (Some(a), Some(b)) => format!(" with {a}..={b} items"),
        (Some(a), None) => format!(" with at least {a} items"),
        (None, Some(b)) => format!(" with at most {b} items"),
        (None, None) => String::new(),
    };
    format!("{base}{range}{len}{items}")
}

fn num(f: f64) -> String {
    if f.fract() == 0.0 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}
