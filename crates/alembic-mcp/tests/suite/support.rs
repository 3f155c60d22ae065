//! An in-process MCP session over an in-memory pipe, with a raw JSON-lines client, and a
//! registry of test tools.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use alembic_mcp::{AlembicServer, serve_lines};
use alembic_tools::{
    Allowlist, AuditEntry, AuditSink, EffectClass, Pipeline, ToolDefinition, ToolError, ToolModule,
    ToolOutput, ToolRegistry, handler_fn,
};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::sync::{Barrier, Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// Audit entries as the pipeline records them, observable by the test.
pub struct ChannelAudit(pub mpsc::UnboundedSender<AuditEntry>);

impl AuditSink for ChannelAudit {
    fn record(&self, entry: AuditEntry) {
        let _ = self.0.send(entry);
    }
}

/// Signals shared between the test and its tools.
#[derive(Default)]
pub struct Signals {
    /// Notified when `wait_for_cancel` has started.
    pub started: Notify,
    /// The cancellation token of each `wait_for_cancel` call, in start order. The test watches
    /// the token itself: once the caller cancels, the pipeline may drop the handler before it
    /// runs again, so the handler cannot be relied on to report the cancellation.
    pub tokens: Mutex<Vec<CancellationToken>>,
    pub seen_callers: Mutex<Vec<String>>,
}

impl Signals {
    /// Waits until a `wait_for_cancel` call has started; returns its cancellation token.
    pub async fn started_call(&self) -> CancellationToken {
        within(LIMIT, "wait_for_cancel to start", self.started.notified()).await;
        self.tokens.lock().unwrap().last().unwrap().clone()
    }
}

/// How long a test waits for something the server should do at once. Generous so that a
/// loaded machine does not fail a test; bounded so that a broken server fails it instead of
/// hanging it.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Awaits `fut`, failing the test with `what` if it takes longer than `limit`.
pub async fn within<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {} s waiting for {what}", limit.as_secs()),
    }
}

pub const BARRIER_WIDTH: usize = 16;

fn object(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

pub fn test_registry(signals: Arc<Signals>) -> Arc<ToolRegistry> {
    let registry = Arc::new(ToolRegistry::new());
    let s = Arc::clone(&signals);
    registry
        .register(ToolDefinition::new(
            "echo_text",
            "Echo the text back.",
            object(json!({"text": {"type": "string"}}), &["text"]),
            ToolModule::Composite,
            EffectClass::ReadOnly,
            handler_fn(move |args, ctx| {
                s.seen_callers.lock().unwrap().push(ctx.caller.id.clone());
                async move {
                    let text = args["text"].as_str().unwrap_or_default().to_string();
                    Ok(ToolOutput::new(json!({"echo": text}), text))
                }
            }),
        ))
        .unwrap();
    registry
        .register(ToolDefinition::new(
            "count_items",
            "Return a bare number.",
            object(json!({}), &[]),
            ToolModule::Composite,
            EffectClass::ReadOnly,
            handler_fn(|_, _| async { Ok(ToolOutput::new(json!(3), "3 items")) }),
        ))
        .unwrap();
    registry
        .register(ToolDefinition::new(
            "write_thing",
            "A tool with side effects that the read-only default safety refuses.",
            object(json!({}), &[]),
            ToolModule::SystemInteraction,
            EffectClass::WritesProjectFiles,
            handler_fn(|_, _| async { Ok(ToolOutput::new(json!({}), "written")) }),
        ))
        .unwrap();
    registry
        .register(ToolDefinition::new(
            "hidden_tool",
            "Registered but outside the test allowlist.",
            object(json!({}), &[]),
            ToolModule::Composite,
            EffectClass::ReadOnly,
            handler_fn(|_, _| async { Ok(ToolOutput::new(json!({}), "hidden")) }),
        ))
        .unwrap();
    registry
        .register(ToolDefinition::new(
            "report_steps",
            "Report three progress steps, then finish.",
            object(json!({}), &[]),
            ToolModule::Composite,
            EffectClass::ReadOnly,
            handler_fn(|_, ctx| async move {
                ctx.progress("scanning", Some(0.25));
                ctx.progress("indexing", Some(0.5));
                ctx.progress("ranking", None);
                Ok(ToolOutput::new(json!({"steps": 3}), "done"))
            }),
        ))
        .unwrap();
    let s = Arc::clone(&signals);
    registry
        .register(
            ToolDefinition::new(
                "wait_for_cancel",
                "Run until cancelled.",
                object(json!({}), &[]),
                ToolModule::Composite,
                EffectClass::ReadOnly,
                handler_fn(move |_, ctx| {
                    let s = Arc::clone(&s);
                    async move {
                        s.tokens.lock().unwrap().push(ctx.cancel.clone());
                        s.started.notify_one();
                        ctx.cancel.cancelled().await;
                        Err(ToolError::Cancelled)
                    }
                }),
            )
            .with_timeout(Duration::from_secs(3600)),
        )
        .unwrap();
    let barrier = Arc::new(Barrier::new(BARRIER_WIDTH));
    registry
        .register(ToolDefinition::new(
            "meet_at_barrier",
            "Finish only when BARRIER_WIDTH calls run at the same time.",
            object(json!({"n": {"type": "integer"}}), &["n"]),
            ToolModule::Composite,
            EffectClass::ReadOnly,
            handler_fn(move |args, _| {
                let b = Arc::clone(&barrier);
                async move {
                    b.wait().await;
                    Ok(ToolOutput::new(json!({"n": args["n"]}), "met"))
                }
            }),
        ))
        .unwrap();
    registry
}

pub const ALLOWED: [&str; 6] = [
    "echo_text",
    "count_items",
    "write_thing",
    "report_steps",
    "wait_for_cancel",
    "meet_at_barrier",
];

/// A test client wired to a running server.
pub struct Session {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    /// Notifications received while waiting for responses, in order.
    pub notifications: Vec<Value>,
    pub audit: mpsc::UnboundedReceiver<AuditEntry>,
    pub signals: Arc<Signals>,
    pub server: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

/// A server over the test registry, with what the test observes of it.
pub struct TestServer {
    pub server: AlembicServer,
    pub audit: mpsc::UnboundedReceiver<AuditEntry>,
    pub signals: Arc<Signals>,
    pub dir: tempfile::TempDir,
    registry: Arc<ToolRegistry>,
}

impl TestServer {
    /// The registry behind the server's pipeline.
    pub fn server_registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    pub fn new() -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let signals = Arc::new(Signals::default());
        let (tx, audit) = mpsc::unbounded_channel();
        let registry = test_registry(Arc::clone(&signals));
        let pipeline = Pipeline::builder(Arc::clone(&registry), dir.path())
            .audit(Arc::new(ChannelAudit(tx)))
            .build();
        let server = AlembicServer::from_parts(pipeline, Allowlist::only(ALLOWED), None);
        TestServer {
            server,
            audit,
            signals,
            dir,
            registry,
        }
    }
}

impl Session {
    pub fn start() -> Session {
        Session::start_with(TestServer::new())
    }

    /// A session over `test`'s server (tests that configure it first).
    pub fn start_with(test: TestServer) -> Session {
        let TestServer {
            server,
            audit,
            signals,
            dir,
            ..
        } = test;
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let (sr, sw) = tokio::io::split(server_end);
        let handle = tokio::spawn(async move {
            serve_lines(server, sr, sw).await.unwrap();
        });
        let (cr, cw) = tokio::io::split(client_end);
        Session {
            write: cw,
            lines: BufReader::new(cr).lines(),
            notifications: Vec::new(),
            audit,
            signals,
            server: handle,
            _dir: dir,
        }
    }

    /// A session that has completed the initialize handshake as client `name`.
    pub async fn initialized(name: &str) -> Session {
        let mut s = Session::start();
        let init = s.request(1, "initialize", init_params(name)).await;
        assert_eq!(init["result"]["serverInfo"]["name"], "alembic", "{init}");
        s.notify("notifications/initialized", json!({})).await;
        s
    }

    pub async fn send_raw(&mut self, line: &[u8]) {
        self.write.write_all(line).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
        self.write.flush().await.unwrap();
    }

    pub async fn send(&mut self, msg: Value) {
        self.send_raw(msg.to_string().as_bytes()).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next line the server writes.
    pub async fn next(&mut self) -> Value {
        let line = within(LIMIT, "a message from the server", self.lines.next_line())
            .await
            .unwrap()
            .expect("server closed its output");
        serde_json::from_str(&line).unwrap()
    }

    /// The next audit record the pipeline writes.
    pub async fn audited(&mut self) -> AuditEntry {
        within(LIMIT, "an audit record", self.audit.recv())
            .await
            .expect("the audit channel closed")
    }

    /// Reads until the response with `id`, keeping notifications.
    pub async fn response(&mut self, id: Value) -> Value {
        loop {
            let msg = self.next().await;
            if msg.get("id") == Some(&id) && msg.get("method").is_none() {
                return msg;
            }
            assert!(
                msg.get("method").is_some(),
                "unexpected message {msg} while waiting for {id}"
            );
            self.notifications.push(msg);
        }
    }

    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(json!(id)).await
    }

    pub async fn call(&mut self, id: i64, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))
            .await
    }

    /// Closes the client's side and waits for the server to stop.
    pub async fn close(mut self) {
        self.write.shutdown().await.unwrap();
        within(LIMIT, "the server to stop at end of input", self.server)
            .await
            .unwrap();
    }
}

pub fn init_params(name: &str) -> Value {
    json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": name, "version": "1.0"}
    })
}
