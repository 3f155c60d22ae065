//! Generate: an LLM writes a JavaScript tool, the sandbox proves it on its own test cases, and
//! only then is it registered.
//!
//! Off unless `ALEMBIC_ENABLE_FORGE_GENERATE=true` or `[forge] generate = true` in the project
//! config ([`generate_enabled`]). Each call of a generated tool runs in a fresh sandbox; its
//! `tools.call` goes through the pipeline as a nested call of the generated tool's call.

use std::sync::{Arc, Mutex};

use alembic_base::lock;
use alembic_llm::{ChatRequest, LlmProvider, Message};
use alembic_tools::pipeline::nesting::is_nesting_rule;
use alembic_tools::{
    Caller, EffectClass, HandlerFuture, OutcomeStatus, Pipeline, ToolCall, ToolContext,
    ToolDefinition, ToolError, ToolHandler, ToolModule, ToolOutput, ToolSchema, is_snake_case,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::ForgeError;
use crate::sandbox::{self, SandboxError, SandboxLimits, ToolBridge};

/// The environment variable that turns generate mode on.
pub const GENERATE_ENV: &str = "ALEMBIC_ENABLE_FORGE_GENERATE";

/// Largest accepted source text.
pub const MAX_CODE_BYTES: usize = 64 * 1024;

/// One test case: input parameters and the exact JSON expected back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxTestCase {
    pub description: String,
    #[serde(default)]
    pub input: Value,
    #[serde(alias = "expectedOutput")]
    pub expected_output: Value,
}

/// A tool as the LLM writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratedTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    /// JavaScript defining `function toolHandler(params, tools)` (may be async).
    pub code: String,
    #[serde(alias = "testCases")]
    pub test_cases: Vec<SandboxTestCase>,
}

/// How one test case went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub description: String,
    pub passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Whether generate mode is on: the environment variable (`true`/`1`/`yes`) or the config's
/// `[forge] generate = true`.
pub fn generate_enabled(env_value: Option<&str>, forge_section: Option<&toml::Value>) -> bool {
    let env_on = env_value
        .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes"));
    let config_on = forge_section
        .and_then(|s| s.get("generate"))
        .and_then(toml::Value::as_bool)
        .unwrap_or(false);
    env_on || config_on
}

/// [`generate_enabled`] with the process environment.
pub fn generate_enabled_here(forge_section: Option<&toml::Value>) -> bool {
    generate_enabled(std::env::var(GENERATE_ENV).ok().as_deref(), forge_section)
}

impl GeneratedTool {
    /// Checks the shape before anything runs.
    pub fn check(&self) -> Result<(), ForgeError> {
        let bad = |reason: String| ForgeError::InvalidGenerated { reason };
        if !is_snake_case(&self.name) {
            return Err(bad(format!("name \"{}\" is not snake_case", self.name)));
        }
        if self.description.trim().is_empty() {
            return Err(bad("the description is empty".into()));
        }
        if self.parameters.get("type") != Some(&json!("object")) {
            return Err(bad(
                "parameters must be a JSON Schema with \"type\": \"object\"".into(),
            ));
        }
        if self.code.len() > MAX_CODE_BYTES {
            return Err(bad(format!(
                "the code is {} bytes; at most {MAX_CODE_BYTES} are accepted",
                self.code.len()
            )));
        }
        if self.test_cases.is_empty() {
            return Err(bad("at least one test case is required".into()));
        }
        Ok(())
    }
}

/// JSON equality that treats `1` and `1.0` as equal (JavaScript has one number type).
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Runs every test case in its own fresh sandbox. `Ok` only when all pass.
pub async fn verify(
    tool: &GeneratedTool,
    bridge: ToolBridge,
    limits: &SandboxLimits,
) -> Result<Vec<TestResult>, ForgeError> {
    tool.check()?;
    let mut results = Vec::with_capacity(tool.test_cases.len());
    for case in &tool.test_cases {
        let run = sandbox::run(&tool.code, &case.input, Arc::clone(&bridge), limits).await;
        results.push(match run {
            Ok(r) => TestResult {
                description: case.description.clone(),
                passed: json_equal(&r.output, &case.expected_output),
                actual: Some(r.output),
                error: None,
            },
            Err(e) => TestResult {
                description: case.description.clone(),
                passed: false,
                actual: None,
                error: Some(e.to_string()),
            },
        });
    }
    let failed: Vec<&TestResult> = results.iter().filter(|r| !r.passed).collect();
    if failed.is_empty() {
        return Ok(results);
    }
    Err(ForgeError::TestsFailed {
        failed: failed.len(),
        total: results.len(),
        details: failed
            .iter()
            .map(|r| describe_failure(r, tool))
            .collect::<Vec<_>>()
            .join("; "),
    })
}

fn describe_failure(r: &TestResult, tool: &GeneratedTool) -> String {
    let expected = tool
        .test_cases
        .iter()
        .find(|c| c.description == r.description)
        .map(|c| c.expected_output.to_string())
        .unwrap_or_default();
    match (&r.error, &r.actual) {
        (Some(e), _) => format!("\"{}\": {e}", r.description),
        (None, Some(a)) => format!("\"{}\": expected {expected}, got {a}", r.description),
        _ => format!("\"{}\": no result", r.description),
    }
}

/// A bridge whose calls are nested calls of `ctx`'s call (same caller, gated, audited).
pub fn context_bridge(ctx: ToolContext) -> ToolBridge {
    nesting_aware_bridge(ctx, Arc::default())
}

/// The first nested call of a run refused for nesting (`nesting.depth`, `nesting.budget`): its
/// rule and message.
type NestingRefusal = Arc<Mutex<Option<(String, String)>>>;

/// [`context_bridge`], keeping the first nesting refusal in `refusal` so that a run that dies of
/// it can report the refusal itself instead of a pile of "the handler threw" wrappers.
fn nesting_aware_bridge(ctx: ToolContext, refusal: NestingRefusal) -> ToolBridge {
    Arc::new(move |name, args| {
        let ctx = ctx.clone();
        let refusal = Arc::clone(&refusal);
        Box::pin(async move {
            let outcome = ctx.call_tool(&name, args).await;
            if outcome.status == OutcomeStatus::Blocked
                && let (Some(rule), Some(error)) = (&outcome.rule, &outcome.error)
                && is_nesting_rule(rule)
            {
                lock(&refusal).get_or_insert_with(|| (rule.clone(), error.clone()));
            }
            bridge_result(outcome)
        })
    })
}

/// A bridge for test runs at forge time: calls go through `pipeline` as `caller`. Each is a
/// top-level call with its own nesting bounds; the sandbox's per-run quota bounds how many.
pub fn pipeline_bridge(pipeline: Arc<Pipeline>, caller: Caller) -> ToolBridge {
    Arc::new(move |name, args| {
        let pipeline = Arc::clone(&pipeline);
        let call = ToolCall::new(name, args, caller.clone());
        Box::pin(async move { bridge_result(pipeline.execute(call).await) })
    })
}

fn bridge_result(outcome: alembic_tools::ToolOutcome) -> Result<Value, String> {
    let tool = outcome.tool.clone();
    crate::nested::outcome_to_result(outcome)
        .map(|o| o.data)
        .map_err(|e| format!("tool \"{tool}\" failed: {e}"))
}

/// The registered form of a generated tool. Its own effect is pure computation; every tool it
/// calls is gated on its own.
pub fn generated_tool_definition(tool: &GeneratedTool, limits: SandboxLimits) -> ToolDefinition {
    // The pipeline's own timeout sits a little behind the sandbox's backstop, so the sandbox's
    // typed error is what callers normally see.
    let timeout = limits.wall_clock + std::time::Duration::from_secs(5);
    ToolDefinition::new(
        tool.name.clone(),
        tool.description.clone(),
        tool.parameters.clone(),
        ToolModule::Composite,
        EffectClass::ReadOnly,
        Arc::new(GeneratedHandler {
            code: Arc::from(tool.code.as_str()),
            limits,
        }),
    )
    .with_timeout(timeout)
}

struct GeneratedHandler {
    code: Arc<str>,
    limits: SandboxLimits,
}

impl ToolHandler for GeneratedHandler {
    fn call(&self, args: Value, ctx: ToolContext) -> HandlerFuture {
        let code = Arc::clone(&self.code);
        let limits = self.limits.clone();
        Box::pin(async move {
            let refusal = NestingRefusal::default();
            let bridge = nesting_aware_bridge(ctx, Arc::clone(&refusal));
            let run = sandbox::run(&code, &args, bridge, &limits)
                .await
                .map_err(|e| run_error(e, &refusal))?;
            // The text is JSON, so control characters and ANSI escapes in guest strings arrive
            // escaped (`\u001b`), never raw, in the model's observation or a terminal.
            Ok(ToolOutput::json(run.output))
        })
    }
}

/// A run that threw after a nested call was refused for nesting ends as that refusal (same
/// rule, same message naming the chain), so a recursion reports `nesting.depth` at the top
/// instead of eight nested "the handler threw" texts. A guest that caught the refusal and
/// then failed for another reason keeps its own error.
fn run_error(e: SandboxError, refusal: &NestingRefusal) -> ToolError {
    match (&e, lock(refusal).take()) {
        (SandboxError::Thrown { .. }, Some((rule, reason))) => ToolError::Refused { reason, rule },
        _ => ToolError::Failed(e.to_string()),
    }
}

/// What the generator is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateRequest {
    pub description: String,
    /// Tools the generated code may call (name, description, parameters).
    pub available_tools: Vec<ToolSchema>,
    /// Why the previous attempt failed, for a repair round.
    pub feedback: Option<String>,
}

/// Produces a tool for a description: an LLM in production, a fixed answer in tests.
#[async_trait::async_trait]
pub trait CodeGenerator: Send + Sync {
    async fn generate(&self, request: &GenerateRequest) -> Result<GeneratedTool, ForgeError>;
}

/// The instructions the LLM gets. Kept as data so it can be reviewed and snapshot-tested.
pub const GENERATOR_SYSTEM_PROMPT: &str = "You write small tools for a code-analysis agent. \
Reply with one JSON object and nothing else: {\"name\": snake_case string, \"description\": string, \
\"parameters\": JSON Schema with \"type\": \"object\", \"code\": string, \"testCases\": [{\"description\": string, \
\"input\": object, \"expectedOutput\": any JSON}]}. The code is plain JavaScript (ES2023, no modules) that defines \
`function toolHandler(params, tools)` (it may be async) and returns JSON data. There is no file system, network, \
process, timers, require or import. The only way to reach the project is `tools.call(name, args)`, which is \
synchronous and returns the tool's JSON result or throws an Error. Give at least one test case; every test case must \
pass without calling tools whose results you cannot predict.";

/// A [`CodeGenerator`] backed by an [`LlmProvider`].
#[derive(Debug, Clone)]
pub struct LlmCodeGenerator {
    provider: Arc<dyn LlmProvider>,
}

impl LlmCodeGenerator {
    pub fn new(provider: Arc<dyn LlmProvider>) -> Self {
        LlmCodeGenerator { provider }
    }

    /// The chat request for one attempt.
    pub fn chat_request(&self, request: &GenerateRequest) -> ChatRequest {
        let catalog: Vec<Value> = request
            .available_tools
            .iter()
            .take(40)
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        let mut user = format!(
            "Tool to write: {}\n\nTools you may call:\n{}",
            request.description,
            Value::Array(catalog)
        );
        if let Some(f) = &request.feedback {
            user.push_str(&format!("\n\nYour previous attempt failed: {f}\nFix it and reply with the whole JSON object again."));
        }
        let mut chat = ChatRequest::new(String::new(), vec![Message::user(user)]);
        chat.system = GENERATOR_SYSTEM_PROMPT.to_string();
        chat
    }
}

#[async_trait::async_trait]
impl CodeGenerator for LlmCodeGenerator {
    async fn generate(&self, request: &GenerateRequest) -> Result<GeneratedTool, ForgeError> {
        let reply = self
            .provider
            .chat(&self.chat_request(request), &CancellationToken::new())
            .await
            .map_err(|e| ForgeError::Generator(e.to_string()))?;
        parse_generated(&reply.text)
    }
}

/// Reads the JSON object out of a model reply (tolerating a Markdown fence around it).
pub fn parse_generated(reply: &str) -> Result<GeneratedTool, ForgeError> {
    let start = reply.find('{');
    let end = reply.rfind('}');
    let (Some(start), Some(end)) = (start, end) else {
        return Err(ForgeError::Generator(
            "the reply holds no JSON object".into(),
        ));
    };
    serde_json::from_str(&reply[start..=end])
        .map_err(|e| ForgeError::Generator(format!("the reply is not a valid tool object: {e}")))
}

/// Generates, verifies (with up to `attempts` rounds, feeding failures back) and returns a tool
/// whose test cases all pass, with the test results. Registration is the caller's next step.
pub async fn generate_verified(
    generator: &dyn CodeGenerator,
    mut request: GenerateRequest,
    bridge: ToolBridge,
    limits: &SandboxLimits,
    attempts: usize,
) -> Result<(GeneratedTool, Vec<TestResult>), ForgeError> {
    let mut last = ForgeError::Generator("no attempt was made".into());
    for _ in 0..attempts.max(1) {
        let tool = generator.generate(&request).await?;
        match verify(&tool, Arc::clone(&bridge), limits).await {
            Ok(results) => return Ok((tool, results)),
            Err(e @ (ForgeError::TestsFailed { .. } | ForgeError::InvalidGenerated { .. })) => {
                request.feedback = Some(e.to_string());
                last = e;
            }
            Err(e) => return Err(e),
        }
    }
    Err(last)
}
