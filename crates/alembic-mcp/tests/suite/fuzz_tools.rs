//! Every registered tool of a real project runtime, called through the pipeline (the path
//! MCP calls take) with arguments generated from the tool's JSON Schema and then mutated:
//! wrong types, huge strings, deep nesting, odd Unicode, path tricks, missing or unknown
//! properties, arguments that are not an object.
//!
//! Properties: no call panics (the pipeline turns a panic into an outcome whose error says
//! "panicked"), none runs past its timeout (plus a little slack for the pipeline itself), and
//! every refusal or failure carries a short error text that names the problem.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alembic_runtime::ProjectRuntime;
use alembic_tools::{Allowlist, Caller, OutcomeStatus, ToolCall};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};

/// Generated calls per tool; with ~70 tools this is ~1,650 calls.
const CASES_PER_TOOL: u32 = 24;
/// The project's tool timeout for the run (`[tools] timeout_secs`).
const TIMEOUT_SECS: u64 = 8;
/// Time the pipeline may add around a handler's limit (hooks, audit, scheduling).
const SLACK: Duration = Duration::from_secs(5);
/// Longest error text accepted as "clear" (a refusal must not echo a megabyte of input).
const MAX_ERROR: usize = 2_000;

/// A value the schema accepts (roughly: enough to reach past validation most of the time).
fn valid(schema: &Value, depth: u32) -> BoxedStrategy<Value> {
    if let Some(values) = schema["enum"].as_array().filter(|v| !v.is_empty()) {
        return proptest::sample::select(values.clone()).boxed();
    }
    let ty = match &schema["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts.first().and_then(Value::as_str).unwrap_or("").to_string(),
        _ if schema.get("properties").is_some() => "object".into(),
        _ => String::new(),
    };
    match ty.as_str() {
        "string" => prop_oneof![
            Just(json!("README.md")),
            Just(json!("src/lib.rs")),
            "[a-zA-Z0-9_ ./-]{1,24}".prop_map(Value::from),
        ]
        .boxed(),
        "integer" => {
            let lo = schema["minimum"].as_i64().unwrap_or(-5);
            let hi = schema["maximum"]
                .as_i64()
                .unwrap_or(lo.saturating_add(500))
                .max(lo);
            (lo..=hi).prop_map(Value::from).boxed()
        }
        "number" => (-1000.0f64..1000.0).prop_map(Value::from).boxed(),
        "boolean" => any::<bool>().prop_map(Value::from).boxed(),
        "array" if depth < 4 => {
            let max = schema["maxItems"].as_u64().unwrap_or(3).min(3) as usize;
            proptest::collection::vec(valid(&schema["items"], depth + 1), 0..=max)
                .prop_map(Value::Array)
                .boxed()
        }
        "object" if depth < 4 => object(schema, depth),
        _ => prop_oneof![Just(Value::Null), Just(json!("x")), Just(json!(1))].boxed(),
    }
}

fn object(schema: &Value, depth: u32) -> BoxedStrategy<Value> {
    let required: Vec<String> = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut fields: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    if let Some(props) = schema["properties"].as_object() {
        for (name, sub) in props {
            let name = name.clone();
            let value = valid(sub, depth + 1);
            let field = if required.contains(&name) {
                value.prop_map(move |v| Some((name.clone(), v))).boxed()
            } else {
                proptest::option::of(value)
                    .prop_map(move |v| v.map(|v| (name.clone(), v)))
                    .boxed()
            };
            fields.push(field);
        }
    }
    fields
        .prop_map(|fs| Value::Object(fs.into_iter().flatten().collect::<Map<_, _>>()))
        .boxed()
}

const ODD_TEXT: &[&str] = &[
    "\u{202e}gnp.exe",
    "a\u{0000}b",
    "\u{200b}\u{200d}\u{feff}",
    "e\u{0301}\u{0301}\u{0301}",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🦀👩‍👩‍👧",
    "\u{ffff}\u{fffe}",
    "日本語のテキストと中文",
    "\r\n\t\u{7f}\u{1b}[31m",
];

const PATH_TRICKS: &[&str] = &[
    "../../etc/passwd",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    "src/../../../../tmp/x",
    "..\\..\\windows\\system32",
    "\\\\server\\share\\x",
    "file:///etc/passwd",
    ".git/config",
    ".alembic/alembic.db",
    ".env",
    "README.md\u{0}.txt",
    "%2e%2e/%2e%2e/etc/passwd",
    "",
    ".",
    "/",
];

fn deep(levels: usize) -> Value {
    (0..levels).fold(json!("bottom"), |inner, i| {
        if i % 2 == 0 {
            json!([inner])
        } else {
            json!({ "k": inner })
        }
    })
}

/// One mutation of valid arguments.
#[derive(Debug, Clone)]
enum Mutation {
    None,
    WrongType(usize, Value),
    Huge(usize, usize),
    Deep(usize, usize),
    Odd(usize, &'static str),
    Path(usize, &'static str),
    DropProperty(usize),
    UnknownProperty,
    NotAnObject(Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let slot = any::<usize>();
    let wrong = prop_oneof![
        Just(json!(null)),
        Just(json!(true)),
        Just(json!(-1)),
        Just(json!(1e308)),
        Just(json!("text")),
        Just(json!([1, "a", null])),
        Just(json!({"nested": {"x": 1}})),
    ];
    prop_oneof![
        1 => Just(Mutation::None),
        3 => (slot, wrong.clone()).prop_map(|(i, v)| Mutation::WrongType(i, v)),
        2 => (slot, 65_536usize..262_144).prop_map(|(i, n)| Mutation::Huge(i, n)),
        2 => (slot, 64usize..400).prop_map(|(i, n)| Mutation::Deep(i, n)),
        2 => (slot, proptest::sample::select(ODD_TEXT)).prop_map(|(i, t)| Mutation::Odd(i, t)),
        3 => (slot, proptest::sample::select(PATH_TRICKS)).prop_map(|(i, t)| Mutation::Path(i, t)),
        1 => slot.prop_map(Mutation::DropProperty),
        1 => Just(Mutation::UnknownProperty),
        1 => wrong.prop_map(Mutation::NotAnObject),
    ]
}

/// Applies `m` to one property of `args` (chosen by index among the schema's properties).
fn apply(m: &Mutation, mut args: Value, schema: &Value) -> Value {
    let names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let pick = |i: usize| names.get(i % names.len().max(1)).cloned();
    let set = |args: &mut Value, i: usize, v: Value| {
        if let (Some(name), Some(obj)) = (pick(i), args.as_object_mut()) {
            obj.insert(name, v);
        }
    };
    match m {
        Mutation::None => {}
        Mutation::WrongType(i, v) => set(&mut args, *i, v.clone()),
        Mutation::Huge(i, n) => set(&mut args, *i, Value::String("A".repeat(*n))),
        Mutation::Deep(i, n) => set(&mut args, *i, deep(*n)),
        Mutation::Odd(i, t) => set(&mut args, *i, json!(t)),
        Mutation::Path(i, t) => set(&mut args, *i, json!(t)),
        Mutation::DropProperty(i) => {
            if let (Some(name), Some(obj)) = (pick(*i), args.as_object_mut()) {
                obj.remove(&name);
            }
        }
        Mutation::UnknownProperty => {
            if let Some(obj) = args.as_object_mut() {
                obj.insert("__proto__".into(), json!({"polluted": true}));
            }
        }
        Mutation::NotAnObject(v) => args = v.clone(),
    }
    args
}

/// The short non-blank strings anywhere in `v` (the values an error may name).
fn short_strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() && s.len() <= 200 => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(short_strings).collect(),
        Value::Object(map) => map.values().flat_map(short_strings).collect(),
        _ => Vec::new(),
    }
}

/// A seed per tool, so that a failure replays the same way on every run.
fn seed_for(tool: &str) -> [u8; 32] {
    let mut seed = [0x5a_u8; 32];
    for (i, b) in tool.bytes().enumerate() {
        seed[i % 32] = seed[i % 32].rotate_left(3) ^ b;
    }
    seed
}

/// What the run saw, for the closing note.
#[derive(Debug, Default)]
struct Tally {
    calls: usize,
    by_status: BTreeMap<String, usize>,
    slowest: (Duration, String),
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join(".alembic")).unwrap();
    std::fs::write(
        root.join("README.md"),
        "# fuzz\nA project for the fuzz test.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".alembic/config.toml"),
        format!("[tools]\ntimeout_secs = {TIMEOUT_SECS}\n"),
    )
    .unwrap();
    dir
}

/// Checks one outcome; returns why it is wrong, if it is.
fn judge(
    status: OutcomeStatus,
    error: Option<&str>,
    elapsed: Duration,
    limit: Duration,
    properties: &[String],
    values: &[String],
) -> Result<(), String> {
    if elapsed > limit + SLACK {
        return Err(format!("ran {elapsed:?}, past its limit of {limit:?}"));
    }
    if status == OutcomeStatus::Ok {
        return Ok(());
    }
    let error = error.unwrap_or("");
    if error.contains("panicked") {
        return Err(format!("panicked: {error}"));
    }
    if error.trim().is_empty() {
        return Err(format!("{} without an error text", status.as_str()));
    }
    // Argument refusals say what was wrong: they name the argument (`argument "path":
    // expected …, got …`, or the properties to give instead) or the value refused, or they
    // say what is accepted.
    let names_one = error.contains("argument")
        || properties.iter().any(|p| error.contains(p.as_str()))
        || values.iter().any(|v| error.contains(v.as_str()));
    let says_accepted = ["accepted", "expected", "must", "give ", "supported"]
        .iter()
        .any(|w| error.contains(w));
    if status == OutcomeStatus::InvalidArguments && !(names_one || says_accepted) {
        return Err(format!(
            "an argument refusal that names neither the argument, nor the value, nor what is accepted: {error}"
        ));
    }
    if error.len() > MAX_ERROR {
        return Err(format!(
            "an error of {} bytes: {}…",
            error.len(),
            &error[..200]
        ));
    }
    Ok(())
}

#[test]
fn every_tool_survives_generated_and_mutated_arguments() {
    let dir = project();
    let runtime = ProjectRuntime::open(dir.path()).unwrap();
    let pipeline = runtime.pipeline();
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let tools = runtime.registry.definitions(&Allowlist::All);
    assert!(tools.len() > 50, "only {} tools registered", tools.len());
    let default_limit = Duration::from_secs(TIMEOUT_SECS);
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    for def in &tools {
        let schema = def.parameters.clone();
        let limit = def.timeout.unwrap_or(default_limit);
        let properties: Vec<String> = schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let strategy = (valid(&schema, 0), mutation());
        let config = Config {
            cases: CASES_PER_TOOL,
            failure_persistence: None,
            max_shrink_iters: 0,
            ..Config::default()
        };
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_for(&def.name));
        let mut runner = TestRunner::new_with_rng(config, rng);
        let result = runner.run(&strategy, |(args, m)| {
            let args = apply(&m, args, &schema);
            let values = short_strings(&args);
            let call = ToolCall::new(def.name.clone(), args, Caller::new("fuzz", Allowlist::All));
            let t0 = Instant::now();
            let outcome = tokio
                .block_on(async {
                    tokio::time::timeout(limit + SLACK * 2, pipeline.execute(call)).await
                })
                .map_err(|_| {
                    TestCaseError::fail(format!(
                        "{}: hung past {:?} ({m:?})",
                        def.name,
                        limit + SLACK * 2
                    ))
                })?;
            let elapsed = t0.elapsed();
            let verdict = judge(
                outcome.status,
                outcome.error.as_deref(),
                elapsed,
                limit,
                &properties,
                &values,
            );
            let mut t = tally.lock().unwrap();
            t.calls += 1;
            *t.by_status
                .entry(outcome.status.as_str().to_string())
                .or_default() += 1;
            if elapsed > t.slowest.0 {
                t.slowest = (elapsed, def.name.clone());
            }
            verdict
                .map_err(|why| TestCaseError::fail(format!("{}: {why} (mutation {m:?})", def.name)))
        });
        if let Err(e) = result {
            panic!("{e}");
        }
    }
    let t = tally.lock().unwrap();
    // Counts for the closing note: `cargo test ... fuzz -- --nocapture` prints them.
    println!(
        "fuzz: {} tools, {} calls in {:?}; outcomes {:?}; slowest {:?} ({}); 0 panics, 0 hangs",
        tools.len(),
        t.calls,
        started.elapsed(),
        t.by_status,
        t.slowest.0,
        t.slowest.1
    );
    assert_eq!(t.calls, tools.len() * CASES_PER_TOOL as usize);
    // The runtime still serves a plain call afterwards.
    let call = ToolCall::new(
        "read_project_file",
        json!({"filePath": "README.md"}),
        Caller::new("fuzz", Allowlist::All),
    );
    let outcome = tokio.block_on(pipeline.execute(call));
    assert_eq!(outcome.status, OutcomeStatus::Ok, "{:?}", outcome.error);
}
