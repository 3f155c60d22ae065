//! The values a call is made of: the request ([`ToolCall`], its [`Caller`]), what a handler
//! produces ([`ToolOutput`], [`CallResult`]) and what the caller receives ([`ToolOutcome`] with
//! its [`ToolMetadata`]). Plain data, at the bottom of the module graph: every other module
//! may use it and it uses none of them but argument normalisation and capabilities.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::args::{Coercion, Rename};
use crate::capability::Allowlist;
use crate::extensions::Extensions;

/// Who is calling, and which tools that caller may use.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// Stable identity for the audit log, e.g. `cli`, `mcp:claude-code`, `agent:chat`.
    pub id: String,
    /// The tools this caller may invoke. Enforced by the AllowlistGate.
    pub allowlist: Allowlist,
    /// Whether a person is present to approve calls; non-interactive callers refuse instead.
    pub interactive: bool,
}

impl Caller {
    pub fn new(id: impl Into<String>, allowlist: Allowlist) -> Self {
        Caller {
            id: id.into(),
            allowlist,
            interactive: false,
        }
    }
}

/// Where a call sits among nested calls: the names of the calls above it (outermost first)
/// and a counter shared by every call under one top-level call.
///
/// It exists so that the pipeline can bound recursion (a generated tool calling itself) and
/// fan-out before any handler runs; see `pipeline::nesting`. Cloning is cheap: the names and
/// the counter are shared.
#[derive(Debug, Clone)]
pub struct CallChain {
    ancestors: Arc<[String]>,
    nested_calls: Arc<AtomicU32>,
}

impl Default for CallChain {
    fn default() -> Self {
        Self::top_level()
    }
}

impl CallChain {
    /// The chain of a top-level call: no ancestors, a fresh counter.
    pub fn top_level() -> Self {
        CallChain {
            ancestors: Arc::from(Vec::new()),
            nested_calls: Arc::new(AtomicU32::new(0)),
        }
    }

    /// The chain of the calls that a call named `name`, with this chain, makes: `name` is
    /// appended and the counter stays shared.
    pub fn below(&self, name: &str) -> Self {
        let mut names = self.ancestors.to_vec();
        names.push(name.to_string());
        CallChain {
            ancestors: Arc::from(names),
            nested_calls: Arc::clone(&self.nested_calls),
        }
    }

    /// The names of the calls above this one, outermost first.
    pub fn ancestors(&self) -> &[String] {
        &self.ancestors
    }

    /// How deep a call with this chain sits: 1 for a top-level call.
    pub fn depth(&self) -> usize {
        self.ancestors.len() + 1
    }

    /// Whether a call with this chain is a top-level call (not made by a handler).
    pub fn is_top_level(&self) -> bool {
        self.ancestors.is_empty()
    }

    /// Counts one more nested call under the top-level call; returns the new count.
    pub fn count_nested_call(&self) -> u32 {
        self.nested_calls
            .fetch_add(1, Ordering::SeqCst)
            .saturating_add(1)
    }

    /// Nested calls made so far under the top-level call (refused ones included).
    pub fn nested_calls(&self) -> u32 {
        self.nested_calls.load(Ordering::SeqCst)
    }
}

/// A request to run a tool.
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
    pub caller: Caller,
    pub parent_call_id: Option<String>,
    /// The calls above this one; a top-level call's chain is empty.
    pub chain: CallChain,
}

impl ToolCall {
    pub fn new(name: impl Into<String>, args: Value, caller: Caller) -> Self {
        ToolCall {
            id: uuid::Uuid::now_v7().to_string(),
            name: name.into(),
            args,
            caller,
            parent_call_id: None,
            chain: CallChain::top_level(),
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    pub fn with_parent(mut self, parent: &str) -> Self {
        self.parent_call_id = Some(parent.to_string());
        self
    }

    /// Places the call below others (a nested call inherits its parent's chain).
    pub fn with_chain(mut self, chain: CallChain) -> Self {
        self.chain = chain;
        self
    }
}

/// A tool's successful result: structured data for programs plus a compact text for the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub data: Value,
    pub text: String,
}

impl ToolOutput {
    pub fn new(data: Value, text: impl Into<String>) -> Self {
        ToolOutput {
            data,
            text: text.into(),
        }
    }

    /// Output whose text rendering is the pretty-printed JSON itself.
    pub fn json(data: Value) -> Self {
        let text = serde_json::to_string_pretty(&data).unwrap_or_default();
        ToolOutput { data, text }
    }
}

/// Flags and measurements that middlewares read and write during one call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolMetadata {
    pub cache_hit: bool,
    pub blocked: bool,
    #[serde(with = "duration_ms")]
    pub duration: Duration,
    /// Typed entries of other crates' middlewares (alembic-context's `IsNew`, `IsSubmit`,
    /// `DedupMessage`), each serialised under its own key at this level.
    #[serde(flatten)]
    pub extensions: Extensions,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub renames: Vec<Rename>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub coercions: Vec<Coercion>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub unmatched: Vec<String>,
    /// Problems inside `after` hooks; they never change the outcome.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub hook_errors: Vec<String>,
}

mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Ok(Duration::from_secs_f64(ms.max(0.0) / 1000.0))
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    Ok,
    Error,
    Blocked,
    InvalidArguments,
    UnknownTool,
    TimedOut,
    Cancelled,
}

impl OutcomeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeStatus::Ok => "ok",
            OutcomeStatus::Error => "error",
            OutcomeStatus::Blocked => "blocked",
            OutcomeStatus::InvalidArguments => "invalid_arguments",
            OutcomeStatus::UnknownTool => "unknown_tool",
            OutcomeStatus::TimedOut => "timed_out",
            OutcomeStatus::Cancelled => "cancelled",
        }
    }

    /// CLI exit code: 0 ok, 1 tool error, 2 usage or validation error, 3 refused by policy.
    pub fn exit_code(self) -> i32 {
        match self {
            OutcomeStatus::Ok => 0,
            OutcomeStatus::Error | OutcomeStatus::TimedOut | OutcomeStatus::Cancelled => 1,
            OutcomeStatus::InvalidArguments | OutcomeStatus::UnknownTool => 2,
            OutcomeStatus::Blocked => 3,
        }
    }
}

/// What the handler (or a short-circuiting hook) produced, as `after` hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    Ok(ToolOutput),
    Failed {
        status: OutcomeStatus,
        error: String,
        rule: Option<String>,
    },
}

/// The result of one call as its caller receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub call_id: String,
    pub tool: String,
    pub status: OutcomeStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<ToolOutput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rule that decided a refusal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// "Did you mean" names for an unknown tool.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub suggestions: Vec<String>,
    pub metadata: ToolMetadata,
}

impl ToolOutcome {
    pub fn is_ok(&self) -> bool {
        self.status == OutcomeStatus::Ok
    }

    /// The text a model should see: an extension's replacement text (a dedup refusal's
    /// warning), else the compact rendering, or the error with its rule.
    pub fn text_for_model(&self) -> String {
        if let Some(text) = self.metadata.extensions.text_for_model() {
            return text.to_string();
        }
        match (&self.output, &self.error) {
            (Some(out), _) if self.is_ok() => out.text.clone(),
            (_, Some(err)) => format!("error ({}): {err}", self.status.as_str()),
            _ => format!("error ({})", self.status.as_str()),
        }
    }

    pub(crate) fn with_suggestions(mut self, s: Vec<String>) -> Self {
        self.suggestions = s;
        self
    }
}
