//! The sandbox thread: builds a fresh QuickJS runtime and context, runs the guest, and maps
//! every way it can end to a [`SandboxError`].
//!
//! Runtime settings are applied before entering `ctx.with(..)`: calling a `Runtime` method
//! inside the context closure panics in rquickjs ("RefCell already borrowed"), so the interrupt
//! handler reads a shared deadline instead of being reconfigured during the run.

use alembic_base::lock;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rquickjs::context::intrinsic;
use rquickjs::{Context, Ctx, Exception, Function, Object, Runtime};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{SandboxError, SandboxLimits, SandboxRun};

const BOOTSTRAP: &str = include_str!("bootstrap.js");

/// Intrinsics of the guest realm: the language itself and nothing that reaches the outside.
/// Left out on purpose: `Performance` (a timer source), `WeakRef`/`FinalizationRegistry`
/// (callbacks that could run after the deadline) and `DOMException`.
type GuestIntrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
);

/// Globals of the base objects that are removed before guest code runs.
const UNSAFE_GLOBALS: &[&str] = &["SharedArrayBuffer", "Atomics", "queueMicrotask"];

const TRIP_NONE: u8 = 0;
const TRIP_CPU: u8 = 1;
const TRIP_ABORT: u8 = 2;

/// A nested call from the guest, answered on a synchronous channel.
#[derive(Debug)]
pub struct HostRequest {
    pub name: String,
    pub args: Value,
    pub reply: std::sync::mpsc::SyncSender<Result<String, String>>,
}

pub(super) struct Job {
    pub code: String,
    pub params: String,
    pub limits: SandboxLimits,
    pub abort: Arc<AtomicBool>,
    pub requests: mpsc::UnboundedSender<HostRequest>,
}

/// Shared between the interrupt handler and the host call (which pushes the deadline back by
/// the time it spent blocked).
struct Budget {
    deadline: Mutex<Instant>,
    tripped: AtomicU8,
    abort: Arc<AtomicBool>,
}

impl Budget {
    fn interrupt(&self) -> bool {
        if self.abort.load(Ordering::SeqCst) {
            self.tripped.store(TRIP_ABORT, Ordering::SeqCst);
            return true;
        }
        let deadline = *lock(&self.deadline);
        if Instant::now() >= deadline {
            self.tripped.store(TRIP_CPU, Ordering::SeqCst);
            return true;
        }
        false
    }

    fn extend(&self, by: std::time::Duration) {
        let mut d = lock(&self.deadline);
        *d += by;
    }
}

#[derive(Default)]
struct Logs {
    lines: Vec<String>,
    bytes: usize,
    truncated: bool,
    calls: u32,
}

pub(super) fn execute(job: Job) -> Result<SandboxRun, SandboxError> {
    let engine = |e: rquickjs::Error| SandboxError::Engine(e.to_string());
    let runtime = Runtime::new().map_err(engine)?;
    runtime.set_memory_limit(job.limits.heap_bytes);
    runtime.set_max_stack_size(job.limits.stack_bytes);
    runtime.set_gc_threshold(job.limits.heap_bytes / 4);
    let budget = Arc::new(Budget {
        deadline: Mutex::new(Instant::now() + job.limits.cpu_budget),
        tripped: AtomicU8::new(TRIP_NONE),
        abort: Arc::clone(&job.abort),
    });
    let handler_budget = Arc::clone(&budget);
    runtime.set_interrupt_handler(Some(Box::new(move || handler_budget.interrupt())));
    let context = Context::custom::<GuestIntrinsics>(&runtime).map_err(engine)?;
    let logs = Rc::new(RefCell::new(Logs::default()));
    let result = context.with(|ctx| guest_run(&ctx, &job, &budget, &logs));
    let result = result.map_err(|e| classify(e, &budget, &job.limits));
    drop(context);
    drop(runtime);
    let logs = Rc::try_unwrap(logs)
        .map(RefCell::into_inner)
        .unwrap_or_default();
    result.map(|output| SandboxRun {
        output,
        logs: logs.lines,
        logs_truncated: logs.truncated,
        tool_calls: logs.calls,
    })
}

/// A failure inside the context, before it is classified with the budget's trip state.
enum Raw {
    Syntax(String),
    MissingHandler,
    Thrown(String),
    NotJson(String),
    TooLarge(usize),
    NeverSettles,
    Engine(String),
}

fn classify(raw: Raw, budget: &Budget, limits: &SandboxLimits) -> SandboxError {
    match budget.tripped.load(Ordering::SeqCst) {
        TRIP_CPU => {
            return SandboxError::CpuBudget {
                budget_ms: alembic_base::millis(limits.cpu_budget),
            };
        }
        TRIP_ABORT => {
            return SandboxError::WallClock {
                limit_ms: alembic_base::millis(limits.wall_clock),
            };
        }
        _ => {}
    }
    let by_message = |m: String| {
        // A single string or buffer beyond the engine's maximum is the same class of failure.
        if m.contains("out of memory")
            || m.contains("string too long")
            || m.contains("invalid array buffer length")
        {
            SandboxError::MemoryLimit {
                limit_bytes: limits.heap_bytes,
            }
        } else if m.contains("stack overflow") || m.contains("call stack size exceeded") {
            SandboxError::StackOverflow
        } else {
            SandboxError::Thrown { message: m }
        }
    };
    match raw {
        Raw::Syntax(m) => SandboxError::Syntax { message: m },
        Raw::MissingHandler => SandboxError::MissingHandler,
        Raw::Thrown(m) => by_message(m),
        Raw::NotJson(m) => match by_message(m) {
            SandboxError::Thrown { message } => SandboxError::NotJson { reason: message },
            other => other,
        },
        Raw::TooLarge(bytes) => SandboxError::OutputTooLarge {
            bytes,
            limit: limits.max_output_bytes,
        },
        Raw::NeverSettles => SandboxError::NeverSettles,
        Raw::Engine(m) => by_message(m),
    }
}

fn guest_run(
    ctx: &Ctx<'_>,
    job: &Job,
    budget: &Arc<Budget>,
    logs: &Rc<RefCell<Logs>>,
) -> Result<Value, Raw> {
    let drive = install(ctx, job, budget, logs)?;
    if let Err(e) = ctx.eval::<(), _>(job.code.as_bytes()) {
        let message = caught(ctx, e);
        return Err(if message.starts_with("SyntaxError") {
            Raw::Syntax(message)
        } else {
            Raw::Thrown(message)
        });
    }
    let handler: Function = match ctx.globals().get::<_, rquickjs::Value>("toolHandler") {
        Ok(v) if v.is_function() => v.into_function().ok_or(Raw::MissingHandler)?,
        _ => return Err(Raw::MissingHandler),
    };
    let state: Object = drive
        .call((handler, job.params.as_str()))
        .map_err(|e| Raw::Thrown(caught(ctx, e)))?;
    // Drive promise jobs until the handler settles. Each job runs guest bytecode under the
    // interrupt handler, so a microtask flood ends at the CPU budget.
    while !state.get::<_, bool>("done").unwrap_or(false) {
        if budget.tripped.load(Ordering::SeqCst) != TRIP_NONE {
            return Err(Raw::Thrown("interrupted".into()));
        }
        if !ctx.execute_pending_job() {
            if budget.tripped.load(Ordering::SeqCst) != TRIP_NONE {
                return Err(Raw::Thrown("interrupted".into()));
            }
            return Err(Raw::NeverSettles);
        }
    }
    read_state(&state, job.limits.max_output_bytes)
}

/// The handler's result. The cap is on the UTF-8 bytes of the JSON text, counted here where
/// the text has crossed into Rust.
fn read_state(state: &Object<'_>, max_output_bytes: usize) -> Result<Value, Raw> {
    let text = |key: &str| state.get::<_, Option<String>>(key).ok().flatten();
    let kind = text("kind").unwrap_or_default();
    match kind.as_str() {
        "ok" => {
            // A text that does not convert is an error, not a silent `null`.
            let out = state
                .get::<_, Option<String>>("out")
                .map_err(|e| Raw::NotJson(e.to_string()))?
                .unwrap_or_else(|| "null".into());
            if out.len() > max_output_bytes {
                return Err(Raw::TooLarge(out.len()));
            }
            serde_json::from_str(&out).map_err(|e| Raw::NotJson(e.to_string()))
        }
        "not_json" => Err(Raw::NotJson(text("err").unwrap_or_default())),
        _ => Err(Raw::Thrown(text("err").unwrap_or_default())),
    }
}

/// Evaluates the bootstrap, installs `console`, and returns the driver function.
fn install<'js>(
    ctx: &Ctx<'js>,
    job: &Job,
    budget: &Arc<Budget>,
    logs: &Rc<RefCell<Logs>>,
) -> Result<Function<'js>, Raw> {
    let engine = |e: rquickjs::Error| Raw::Engine(e.to_string());
    let factory: Function = ctx.eval(BOOTSTRAP).map_err(engine)?;
    let host_call = host_call_fn(ctx, job, budget, logs).map_err(engine)?;
    let host_log = host_log_fn(ctx, job.limits.max_log_bytes, logs).map_err(engine)?;
    let parts: Object = factory.call((host_call, host_log)).map_err(engine)?;
    let console: Object = parts.get("console").map_err(engine)?;
    let globals = ctx.globals();
    globals.set("console", console).map_err(engine)?;
    // Shared memory is how a guest could block its thread outside the interpreter
    // (`Atomics.wait`); nothing a tool needs.
    for name in UNSAFE_GLOBALS {
        globals.remove(*name).map_err(engine)?;
    }
    parts.get("drive").map_err(engine)
}

fn host_log_fn<'js>(
    ctx: &Ctx<'js>,
    max_bytes: usize,
    logs: &Rc<RefCell<Logs>>,
) -> rquickjs::Result<Function<'js>> {
    let logs = Rc::clone(logs);
    Function::new(ctx.clone(), move |line: String| {
        let mut logs = logs.borrow_mut();
        if logs.bytes + line.len() > max_bytes {
            logs.truncated = true;
            return;
        }
        logs.bytes += line.len();
        logs.lines.push(line);
    })
}

fn host_call_fn<'js>(
    ctx: &Ctx<'js>,
    job: &Job,
    budget: &Arc<Budget>,
    logs: &Rc<RefCell<Logs>>,
) -> rquickjs::Result<Function<'js>> {
    let requests = job.requests.clone();
    let limits = job.limits.clone();
    let budget = Arc::clone(budget);
    let logs = Rc::clone(logs);
    Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, name: String, args: String| -> rquickjs::Result<String> {
            let calls = {
                let mut l = logs.borrow_mut();
                l.calls += 1;
                l.calls
            };
            if calls > limits.max_tool_calls {
                return Err(Exception::throw_message(
                    &ctx,
                    &format!(
                        "tool call quota exceeded: at most {} calls per run",
                        limits.max_tool_calls
                    ),
                ));
            }
            let started = Instant::now();
            let reply = blocking_call(&requests, name, &args, &limits);
            // Time spent waiting on the host is not guest CPU time.
            budget.extend(started.elapsed());
            reply.map_err(|m| Exception::throw_message(&ctx, &m))
        },
    )
}

/// Sends one nested call to the async side and waits for its reply. The arguments are parsed
/// here, once: the pipeline checks and the tool use the same decoded value.
fn blocking_call(
    requests: &mpsc::UnboundedSender<HostRequest>,
    name: String,
    args: &str,
    limits: &SandboxLimits,
) -> Result<String, String> {
    let args: Value = serde_json::from_str(args)
        .map_err(|e| format!("tools.call: arguments are not JSON: {e}"))?;
    if !args.is_object() {
        return Err("tools.call: arguments must be a JSON object".into());
    }
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    let tool = name.clone();
    requests
        .send(HostRequest { name, args, reply })
        .map_err(|_| "tools.call: the host stopped serving calls".to_string())?;
    // A little more than the host's own timeout, so the host's message normally wins.
    let wait = limits.tool_call_timeout + std::time::Duration::from_millis(500);
    match answer.recv_timeout(wait) {
        Ok(r) => r,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "tool \"{tool}\" did not answer within {} ms",
            alembic_base::millis(limits.tool_call_timeout)
        )),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err("tools.call: the host stopped serving calls".into())
        }
    }
}

/// The pending exception as `Name: message` text. Reading it may run guest getters; that is
/// still under the interrupt handler.
fn caught(ctx: &Ctx<'_>, err: rquickjs::Error) -> String {
    if !matches!(err, rquickjs::Error::Exception) {
        return err.to_string();
    }
    let value = ctx.catch();
    if let Some(ex) = value
        .as_object()
        .and_then(|o| Exception::from_object(o.clone()))
    {
        let name: String = ex
            .get::<_, Option<String>>("name")
            .ok()
            .flatten()
            .unwrap_or_else(|| "Error".into());
        let message = ex.message().unwrap_or_default();
        return truncate(format!("{name}: {message}"));
    }
    if let Some(s) = value.as_string().and_then(|s| s.to_string().ok()) {
        return truncate(format!("thrown value: {s}"));
    }
    if value.is_null() || value.is_undefined() {
        // QuickJS reports an interrupt and some internal failures with no exception value.
        return "uncatchable error".into();
    }
    "a value that is not an Error was thrown".into()
}

fn truncate(mut s: String) -> String {
    if s.len() > 2000 {
        let mut cut = 2000;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}
