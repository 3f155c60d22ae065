//! The QuickJS sandbox that runs generated tool code.
//!
//! Contract (anchors §4.2): one fresh runtime and context per run; a heap limit and a stack
//! limit; an interrupt handler that enforces a CPU budget (uncatchable by the guest); a host
//! wall-clock backstop; an output cap and a log cap; no ambient capabilities (the context is
//! built from QuickJS intrinsics only: no `std`/`os` modules, no module loader, no `fetch`,
//! timers, `Worker`, `WeakRef`/`FinalizationRegistry` or `require`); and a single bridge,
//! `tools.call(name, args)`, that takes and returns JSON text.
//!
//! Threading: rquickjs `Runtime`/`Context` are `!Send` (the `parallel` feature is off), so each
//! run owns a dedicated OS thread. `tools.call` is a *synchronous* host function: it sends the
//! request to the async side over a channel and blocks on the reply with its own timeout. The
//! async side runs the request through the normal pipeline (`ToolContext::call_tool`), so a
//! nested call is gated and audited exactly like a direct one. Time spent blocked in a host call
//! does not count against the guest's CPU budget (the shared deadline is pushed back by it), but
//! it does count against the wall-clock backstop. When the backstop fires, the host stops
//! waiting, raises the abort flag that the interrupt handler reads, and returns a typed error;
//! the thread ends at the guest's next interrupt check. The flag is also raised when the run's
//! future is dropped unfinished.
//!
//! A guest blocked in `tools.call` keeps its thread while the nested call runs, and a nested
//! call of a generated tool starts another run: a recursion holds one thread per level. The
//! pipeline's nesting bounds (`alembic_tools::MAX_NESTING_DEPTH`, `MAX_NESTED_CALLS`) are what
//! keep that to a few threads per top-level call; a refused nested call reaches the guest as an
//! ordinary `Error` it may catch.

mod engine;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

pub use engine::HostRequest;

/// Resource limits of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxLimits {
    /// QuickJS heap limit (all allocations, including ArrayBuffers).
    pub heap_bytes: usize,
    /// QuickJS stack limit; the thread's native stack is larger than this.
    pub stack_bytes: usize,
    /// Guest execution time, enforced by the interrupt handler.
    pub cpu_budget: Duration,
    /// Whole-run backstop on the host, including time spent in nested tool calls.
    pub wall_clock: Duration,
    /// Largest JSON text a handler may return.
    pub max_output_bytes: usize,
    /// Total `console.log` text kept; the rest is dropped and flagged.
    pub max_log_bytes: usize,
    /// Nested `tools.call` calls allowed per run.
    pub max_tool_calls: u32,
    /// Time limit of one nested call, as seen from the guest.
    pub tool_call_timeout: Duration,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            heap_bytes: 64 * 1024 * 1024,
            stack_bytes: 512 * 1024,
            cpu_budget: Duration::from_secs(2),
            wall_clock: Duration::from_secs(30),
            max_output_bytes: 1024 * 1024,
            max_log_bytes: 64 * 1024,
            max_tool_calls: 32,
            tool_call_timeout: Duration::from_secs(20),
        }
    }
}

/// Why a run failed. Every failure of guest code ends in one of these; none panics the host.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SandboxError {
    #[error("the code has a syntax error: {message}")]
    Syntax { message: String },
    #[error("the code does not define a function named toolHandler")]
    MissingHandler,
    #[error("the handler threw: {message}")]
    Thrown { message: String },
    #[error("the handler used more than its CPU budget of {budget_ms} ms")]
    CpuBudget { budget_ms: u64 },
    #[error("the run took longer than the wall-clock limit of {limit_ms} ms")]
    WallClock { limit_ms: u64 },
    #[error("the handler exceeded the memory limit of {limit_bytes} bytes")]
    MemoryLimit { limit_bytes: usize },
    #[error("the handler exceeded the stack limit (too deep recursion)")]
    StackOverflow,
    #[error("the handler returned a promise that never settles")]
    NeverSettles,
    #[error("the handler's result is {bytes} bytes of JSON; at most {limit} are accepted")]
    OutputTooLarge { bytes: usize, limit: usize },
    #[error("the handler's result is not JSON: {reason}")]
    NotJson { reason: String },
    #[error("the sandbox engine failed: {0}")]
    Engine(String),
}

/// What a successful run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxRun {
    pub output: Value,
    pub logs: Vec<String>,
    pub logs_truncated: bool,
    pub tool_calls: u32,
}

/// Runs a nested tool call for the guest: name and decoded arguments in, result data or an
/// error message out. Implementations go through the pipeline.
pub type ToolBridge =
    Arc<dyn Fn(String, Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// A bridge that refuses every call (for code that must not call tools).
pub fn no_tools() -> ToolBridge {
    Arc::new(|name, _| {
        Box::pin(async move { Err(format!("tool \"{name}\" is not available in this run")) })
    })
}

/// Runs `code` (which must define `toolHandler(params, tools)`) with `params` in a fresh
/// sandbox. Nested calls go to `bridge`.
pub async fn run(
    code: &str,
    params: &Value,
    bridge: ToolBridge,
    limits: &SandboxLimits,
) -> Result<SandboxRun, SandboxError> {
    let abort = Arc::new(AtomicBool::new(false));
    // Dropped with this future (the caller gave up, a parent run ended): the guest thread
    // stops at its next interrupt check instead of running out its CPU budget.
    let _stop_guest = AbortOnDrop(Arc::clone(&abort));
    let (request_tx, mut request_rx) = mpsc::unbounded_channel::<HostRequest>();
    let (done_tx, done_rx) = oneshot::channel();
    let job = engine::Job {
        code: code.to_string(),
        params: params.to_string(),
        limits: limits.clone(),
        abort: Arc::clone(&abort),
        requests: request_tx,
    };
    std::thread::Builder::new()
        .name("forge-sandbox".into())
        .stack_size(limits.stack_bytes + 16 * 1024 * 1024)
        .spawn(move || {
            let _ = done_tx.send(engine::execute(job));
        })
        .map_err(|e| SandboxError::Engine(format!("cannot start the sandbox thread: {e}")))?;
    let deadline = tokio::time::Instant::now() + limits.wall_clock;
    let serve_until_done = async move {
        let mut done_rx = done_rx;
        loop {
            tokio::select! {
                finished = &mut done_rx => {
                    return finished.unwrap_or_else(|_| Err(SandboxError::Engine("the sandbox thread ended without a result".into())));
                }
                Some(request) = request_rx.recv() => {
                    serve(request, &bridge, limits.tool_call_timeout).await;
                }
            }
        }
    };
    match tokio::time::timeout_at(deadline, serve_until_done).await {
        Ok(result) => result,
        Err(_) => {
            // The guest may be parked in native code or blocked on a host call (whose reply
            // channel is dropped with the unfinished future); the flag makes its next interrupt
            // check fail, and the host stops waiting now.
            abort.store(true, Ordering::SeqCst);
            Err(SandboxError::WallClock {
                limit_ms: alembic_base::millis(limits.wall_clock),
            })
        }
    }
}

/// Raises the abort flag when dropped.
struct AbortOnDrop(Arc<AtomicBool>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Answers one nested call. The reply channel is synchronous: the guest thread blocks on it.
async fn serve(request: HostRequest, bridge: &ToolBridge, timeout: Duration) {
    let started = Instant::now();
    let result =
        match tokio::time::timeout(timeout, bridge(request.name.clone(), request.args)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "tool \"{}\" did not answer within {} ms",
                request.name,
                alembic_base::millis(timeout)
            )),
        };
    let text = result.and_then(|v| {
        serde_json::to_string(&v).map_err(|e| format!("tool result is not JSON: {e}"))
    });
    tracing::debug!(tool = %request.name, elapsed = ?started.elapsed(), "sandbox nested call");
    let _ = request.reply.send(text);
}
