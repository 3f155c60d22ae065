//! Argument templates: `${params.NAME}`, `${steps.N.path.to.value}` and, in a step that runs
//! `for_each` element of an array, `${item.path}` (`${item}` is the whole element). Data, not
//! code.
//!
//! A string that is exactly one template keeps the JSON type of what it refers to; templates
//! embedded in a longer string are interpolated as text (strings as-is, other values as JSON).
//! `$${` is a literal `${`.

use serde_json::Value;

/// Where a template reads from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Params,
    Step(usize),
    /// The current element of a `for_each` step.
    Item,
}

/// One `${...}` reference: a source and a path of keys or array indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub source: Source,
    pub path: Vec<String>,
    pub text: String,
}

/// A parsed string: literal text and references.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    Ref(Reference),
}

/// Parses one string into pieces, or says what is wrong with a template in it.
pub fn parse(s: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        text.push_str(&rest[..at]);
        let after = &rest[at..];
        if let Some(stripped) = after.strip_prefix("$${") {
            text.push_str("${");
            rest = stripped;
        } else if let Some(body_start) = after.strip_prefix("${") {
            let end = body_start
                .find('}')
                .ok_or_else(|| format!("unclosed template in \"{s}\": expected `}}`"))?;
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Ref(reference(&body_start[..end])?));
            rest = &body_start[end + 1..];
        } else {
            text.push('$');
            rest = &after[1..];
        }
    }
    text.push_str(rest);
    if !text.is_empty() || pieces.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

fn reference(body: &str) -> Result<Reference, String> {
    let text = format!("${{{body}}}");
    let bad = |why: &str| {
        format!(
            "bad template {text}: {why}; use ${{params.NAME}}, ${{steps.N.key}} or ${{item.key}}"
        )
    };
    let mut parts = body.trim().split('.');
    let source = match parts.next() {
        Some("params") => Source::Params,
        Some("steps") => {
            let n = parts.next().ok_or_else(|| bad("missing step number"))?;
            Source::Step(n.parse().map_err(|_| bad("step number is not a number"))?)
        }
        Some("item") => Source::Item,
        _ => return Err(bad("unknown source")),
    };
    let path: Vec<String> = parts.map(str::to_string).collect();
    if path.iter().any(|p| {
        p.is_empty()
            || !p
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    }) {
        return Err(bad("path segments are names or indices separated by dots"));
    }
    if source == Source::Params && path.is_empty() {
        return Err(bad("name the parameter"));
    }
    Ok(Reference { source, path, text })
}

/// Every reference inside a JSON value (strings at any depth).
pub fn references(value: &Value) -> Result<Vec<Reference>, String> {
    let mut out = Vec::new();
    collect(value, &mut out)?;
    Ok(out)
}

fn collect(value: &Value, out: &mut Vec<Reference>) -> Result<(), String> {
    match value {
        Value::String(s) => {
            for p in parse(s)? {
                if let Piece::Ref(r) = p {
                    out.push(r);
                }
            }
        }
        Value::Array(items) => items.iter().try_for_each(|v| collect(v, out))?,
        Value::Object(map) => map.values().try_for_each(|v| collect(v, out))?,
        _ => {}
    }
    Ok(())
}

/// Values the templates of one step can read.
#[derive(Debug)]
pub struct Scope<'a> {
    pub params: &'a Value,
    pub steps: &'a [Value],
    /// The element a `for_each` step is at.
    pub item: Option<&'a Value>,
}

/// Follows a path of keys and indices.
pub fn lookup<'v>(root: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(root, |v, key| match v {
        Value::Object(m) => m.get(key),
        Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

impl Scope<'_> {
    /// `None` when the reference leads nowhere.
    pub fn resolve(&self, r: &Reference) -> Option<&Value> {
        match r.source {
            Source::Params => lookup(self.params, &r.path),
            Source::Step(n) => self.steps.get(n).and_then(|v| lookup(v, &r.path)),
            Source::Item => self.item.and_then(|v| lookup(v, &r.path)),
        }
    }

    /// Fills the templates of `value`. Object entries whose whole-string template reads a
    /// parameter that was not given are dropped (so optional parameters stay optional); any
    /// other reference that leads nowhere is an error.
    pub fn fill(&self, value: &Value) -> Result<Option<Value>, String> {
        match value {
            Value::String(s) => self.fill_string(s),
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for v in items {
                    out.push(self.fill(v)?.unwrap_or(Value::Null));
                }
                Ok(Some(Value::Array(out)))
            }
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    if let Some(filled) = self.fill(v)? {
                        out.insert(k.clone(), filled);
                    }
                }
                Ok(Some(Value::Object(out)))
            }
            other => Ok(Some(other.clone())),
        }
    }

    fn fill_string(&self, s: &str) -> Result<Option<Value>, String> {
        let pieces = parse(s)?;
        if let [Piece::Ref(r)] = pieces.as_slice() {
            return match self.resolve(r) {
                Some(v) => Ok(Some(v.clone())),
                None if r.source == Source::Params => Ok(None),
                None if r.source == Source::Item => {
                    Err(format!("{} is not in the for_each element", r.text))
                }
                None => Err(format!(
                    "{} is not in the result of step {}",
                    r.text,
                    step_of(r)
                )),
            };
        }
        let mut out = String::new();
        for p in pieces {
            match p {
                Piece::Text(t) => out.push_str(&t),
                Piece::Ref(r) => match self.resolve(&r) {
                    Some(Value::String(v)) => out.push_str(v),
                    Some(v) => out.push_str(&v.to_string()),
                    None => return Err(format!("{} has no value", r.text)),
                },
            }
        }
        Ok(Some(Value::String(out)))
    }
}

fn step_of(r: &Reference) -> usize {
    match r.source {
        Source::Step(n) => n,
        Source::Params | Source::Item => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn whole_templates_keep_types_and_embedded_ones_interpolate() {
        let params = json!({"module": "NetworkKit", "depth": 2});
        let steps = vec![json!({"classes": ["A", "B"], "meta": {"count": 2}})];
        let scope = Scope {
            params: &params,
            steps: &steps,
            item: None,
        };
        let args = json!({
            "classes": "${steps.0.classes}",
            "first": "${steps.0.classes.1}",
            "depth": "${params.depth}",
            "label": "module ${params.module} has ${steps.0.meta.count} classes: ${steps.0.classes}",
            "literal": "cost $5 and $${params.module}",
            "optional": "${params.missing}",
            "nested": [{"m": "${params.module}"}],
        });
        assert_eq!(
            scope.fill(&args).unwrap().unwrap(),
            json!({
                "classes": ["A", "B"],
                "first": "B",
                "depth": 2,
                "label": "module NetworkKit has 2 classes: [\"A\",\"B\"]",
                "literal": "cost $5 and ${params.module}",
                "nested": [{"m": "NetworkKit"}],
            })
        );
        assert_eq!(
            scope.fill(&json!({"x": "${steps.0.nope}"})).unwrap_err(),
            "${steps.0.nope} is not in the result of step 0"
        );
        assert_eq!(
            scope.fill(&json!({"x": "a ${params.gone}"})).unwrap_err(),
            "${params.gone} has no value"
        );
    }

    #[test]
    fn bad_templates_say_what_is_accepted() {
        for (input, why) in [
            ("${steps.x.y}", "step number is not a number"),
            ("${env.HOME}", "unknown source"),
            ("${params}", "name the parameter"),
            (
                "${params.a..b}",
                "path segments are names or indices separated by dots",
            ),
        ] {
            let err = parse(input).unwrap_err();
            assert!(err.contains(why), "{input}: {err}");
        }
        assert_eq!(
            parse("${params.a").unwrap_err(),
            "unclosed template in \"${params.a\": expected `}`"
        );
    }
}
