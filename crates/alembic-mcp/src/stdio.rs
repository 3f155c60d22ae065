//! The stdio transport: newline-delimited JSON-RPC with an answer for every request.
//!
//! rmcp's own async-rw transport silently drops lines that are not JSON, answers well-formed
//! but mistyped messages with an `Invalid Request` that has no `id` (so the client cannot tell
//! which request failed), lets a request reuse the id of one still running (the second never
//! gets an answer), and ends the whole session when a notification arrives before
//! `initialize`. This transport sits in front of rmcp's service loop and fixes those cases:
//!
//! - a line that is not JSON gets `-32700 parse error` with `"id": null` (JSON-RPC 2.0 §5.1);
//! - a well-formed message that is not a valid MCP message gets `-32602 invalid params` (it
//!   names a method) or `-32600 invalid request`, carrying the message's id when it has a
//!   usable one; a broken notification or response gets no answer, as JSON-RPC requires;
//! - a batch (JSON array) gets one `-32600` per element that is not a notification, with that
//!   element's id, since MCP 2025-06-18 removed batching;
//! - a line longer than [`MAX_LINE_BYTES`] is discarded without being buffered and answered
//!   with `-32600` and `"id": null`;
//! - a request whose id is still in use gets `-32600` with that id.
//!
//! Request ids are renamed on the way in: rmcp sees a fresh number for every request, and the
//! answer goes out under the client's own id. rmcp forgets a request when it is cancelled, so
//! without the renaming a client that reuses the id of a cancelled call (which this server
//! allows) could get the cancelled call's late answer in place of the new one, and the new
//! call's answer would be dropped. A `notifications/cancelled` is passed on under the id rmcp
//! knows; one for a request that is not in progress is ignored, as MCP says.
//!
//! [`serve_stdio`] restarts rmcp's handshake when it gives up before `initialize`, so only
//! end of input stops the server.

use alembic_base::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ErrorCode, ErrorData, GetMeta, JsonRpcMessage,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinSet;

/// Lines longer than this are discarded unread (an MCP request is at most a few hundred KiB).
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// Error messages quote at most this much of a serde error.
const MAX_DETAIL_CHARS: usize = 300;

/// Newline-delimited JSON-RPC over any reader and writer. Clones share the same streams, so
/// the server can restart its handshake on the same connection.
pub struct LineTransport<R, W> {
    reader: Arc<Mutex<ReaderState<R>>>,
    writer: Arc<Mutex<W>>,
    ids: Arc<StdMutex<RequestIds>>,
}

impl<R, W> Clone for LineTransport<R, W> {
    fn clone(&self) -> Self {
        LineTransport {
            reader: Arc::clone(&self.reader),
            writer: Arc::clone(&self.writer),
            ids: Arc::clone(&self.ids),
        }
    }
}

struct ReaderState<R> {
    input: BufReader<R>,
    line: Vec<u8>,
    discarding: bool,
    eof: bool,
    /// Error answers being written; awaited before end of input is reported.
    replies: JoinSet<()>,
}

/// What one complete input line turned out to be.
enum LineRead {
    Line,
    Oversized,
    Eof,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Self {
        LineTransport {
            reader: Arc::new(Mutex::new(ReaderState {
                input: BufReader::new(reader),
                line: Vec::new(),
                discarding: false,
                eof: false,
                replies: JoinSet::new(),
            })),
            writer: Arc::new(Mutex::new(writer)),
            ids: Arc::new(StdMutex::new(RequestIds::default())),
        }
    }

    /// Whether the input has ended.
    pub async fn is_closed(&self) -> bool {
        self.reader.lock().await.eof
    }

    /// The next valid message; answers and skips everything else. `None` at end of input.
    ///
    /// Cancel-safe: a partly read line stays in the shared state, and error answers are
    /// written by their own tasks.
    async fn next_message(&self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut state = self.reader.lock().await;
        loop {
            match read_line(&mut state).await {
                LineRead::Eof => {
                    state.eof = true;
                    while state.replies.join_next().await.is_some() {}
                    return None;
                }
                LineRead::Oversized => {
                    let msg = format!("message longer than {MAX_LINE_BYTES} bytes was discarded");
                    self.reply(
                        &mut state,
                        error_line(None, ErrorCode::INVALID_REQUEST, &msg),
                    );
                }
                LineRead::Line => {
                    let line = std::mem::take(&mut state.line);
                    let verdict = self.classify(&line);
                    state.line = line;
                    state.line.clear();
                    match verdict {
                        Verdict::Message(m) => return Some(*m),
                        Verdict::Answer(lines) => {
                            for l in lines {
                                self.reply(&mut state, l);
                            }
                        }
                        Verdict::Ignore => {}
                    }
                }
            }
        }
    }

    fn reply(&self, state: &mut ReaderState<R>, line: Vec<u8>) {
        let writer = Arc::clone(&self.writer);
        state.replies.spawn(async move {
            if let Err(e) = write_line(&writer, &line).await {
                tracing::debug!("cannot write an error answer: {e}");
            }
        });
        // Finished replies need not be kept.
        while state.replies.try_join_next().is_some() {}
    }

    fn classify(&self, raw: &[u8]) -> Verdict {
        let line = trim_line(raw);
        if line.is_empty() {
            return Verdict::Ignore;
        }
        match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
            Ok(msg) => self.admit(msg),
            Err(e) => diagnose(line, &e),
        }
    }

    /// Tracks request ids in use: refuses a request that reuses one, gives rmcp its own id
    /// for each request, and points a cancellation at that id.
    fn admit(&self, mut msg: ClientJsonRpcMessage) -> Verdict {
        let mut ids = lock(&self.ids);
        match &mut msg {
            JsonRpcMessage::Request(req) => match ids.start(&req.id) {
                Some(internal) => req.id = internal,
                None => {
                    let id = serde_json::to_value(&req.id).unwrap_or(Value::Null);
                    let text = "request id is already used by a request in progress; use a new id";
                    return Verdict::Answer(vec![error_line(
                        Some(id),
                        ErrorCode::INVALID_REQUEST,
                        text,
                    )]);
                }
            },
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &mut n.notification
                    && let Some(id) = &c.params.request_id
                {
                    // A cancelled request is never answered, so its id is free again at once.
                    match ids.cancel(id) {
                        Some(internal) => c.params.request_id = Some(internal),
                        None => {
                            tracing::debug!(%id, "ignoring the cancellation of a request not in progress");
                            return Verdict::Ignore;
                        }
                    }
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        Verdict::Message(Box::new(msg))
    }

    /// Puts the client's ids back on a message: an answer's id, which is freed, and the
    /// subscription id (the id of a `subscriptions/listen` request) that a notification or
    /// the listen result carries. `None` when the answer is for a request that was cancelled:
    /// the client no longer waits for it, and may have reused its id already.
    ///
    /// The id is free before the answer is written: the client cannot learn that the request
    /// ended, and so reuse its id, any earlier.
    fn outgoing(&self, mut msg: ServerJsonRpcMessage) -> Option<ServerJsonRpcMessage> {
        let mut ids = lock(&self.ids);
        match &mut msg {
            JsonRpcMessage::Response(r) => {
                let Some(client) = ids.finish(&r.id) else {
                    tracing::debug!(id = %r.id, "dropping the answer to a cancelled request");
                    return None;
                };
                if let ServerResult::SubscriptionsListenResult(listen) = &mut r.result
                    && listen.meta.subscription_id().as_ref() == Some(&r.id)
                {
                    listen.meta.set_subscription_id(client.clone());
                }
                r.id = client;
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &mut e.id {
                    let Some(client) = ids.finish(id) else {
                        tracing::debug!(%id, "dropping the error answer to a cancelled request");
                        return None;
                    };
                    *id = client;
                }
            }
            JsonRpcMessage::Notification(n) => {
                let client = (n.notification.get_meta().subscription_id())
                    .and_then(|internal| ids.client_id(&internal));
                if let Some(client) = client {
                    n.notification.get_meta_mut().set_subscription_id(client);
                }
            }
            JsonRpcMessage::Request(_) => {}
        }
        Some(msg)
    }
}

/// The requests in progress: the client's id (as its JSON text) and the id rmcp knows.
#[derive(Default)]
struct RequestIds {
    next: i64,
    by_client: HashMap<String, RequestId>,
    by_internal: HashMap<RequestId, RequestId>,
}

impl RequestIds {
    /// Registers a new request; `None` when its id is already in use.
    fn start(&mut self, client: &RequestId) -> Option<RequestId> {
        let key = id_key(client);
        if self.by_client.contains_key(&key) {
            return None;
        }
        self.next += 1;
        let internal = RequestId::Number(self.next);
        self.by_client.insert(key, internal.clone());
        self.by_internal.insert(internal.clone(), client.clone());
        Some(internal)
    }

    /// Forgets a cancelled request; the id rmcp knows it by, if it was in progress.
    fn cancel(&mut self, client: &RequestId) -> Option<RequestId> {
        let internal = self.by_client.remove(&id_key(client))?;
        self.by_internal.remove(&internal);
        Some(internal)
    }

    fn client_id(&self, internal: &RequestId) -> Option<RequestId> {
        self.by_internal.get(internal).cloned()
    }

    /// Forgets an answered request; the client's id for it, if it was in progress.
    fn finish(&mut self, internal: &RequestId) -> Option<RequestId> {
        let client = self.by_internal.remove(internal)?;
        self.by_client.remove(&id_key(&client));
        Some(client)
    }
}

enum Verdict {
    Message(Box<ClientJsonRpcMessage>),
    Answer(Vec<Vec<u8>>),
    Ignore,
}

fn id_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

async fn read_line<R: AsyncRead + Unpin>(state: &mut ReaderState<R>) -> LineRead {
    loop {
        let (consumed, done) = {
            let available = match state.input.fill_buf().await {
                Ok(a) => a,
                Err(e) => {
                    tracing::debug!("stdin read failed: {e}");
                    return LineRead::Eof;
                }
            };
            if available.is_empty() {
                // A last line without a newline still counts.
                return if state.line.is_empty() || state.discarding {
                    LineRead::Eof
                } else {
                    LineRead::Line
                };
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let mut outcome = newline.map(|_| LineRead::Line);
            if state.discarding {
                if newline.is_some() {
                    state.discarding = false;
                }
                outcome = None;
            } else if state.line.len() + take > MAX_LINE_BYTES {
                state.line.clear();
                state.discarding = newline.is_none();
                outcome = Some(LineRead::Oversized);
            } else {
                state.line.extend_from_slice(&available[..take]);
            }
            (take, outcome)
        };
        state.input.consume(consumed);
        if let Some(r) = done {
            return r;
        }
    }
}

fn trim_line(raw: &[u8]) -> &[u8] {
    let line = raw.strip_suffix(b"\n").unwrap_or(raw);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    line.trim_ascii()
}

/// Explains why a line is not a valid MCP message, as the answers it deserves.
fn diagnose(line: &[u8], err: &serde_json::Error) -> Verdict {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(parse) => {
            let text = format!("parse error: {}", clip(&parse.to_string()));
            return Verdict::Answer(vec![error_line(None, ErrorCode::PARSE_ERROR, &text)]);
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => Verdict::Answer(vec![error_line(
            None,
            ErrorCode::INVALID_REQUEST,
            "empty batch; send one JSON-RPC message per line",
        )]),
        Value::Array(items) => Verdict::Answer(
            items
                .iter()
                .filter(|item| !is_notification(item))
                .map(|item| {
                    let text = "batches are not supported (MCP 2025-06-18 removed them); send one JSON-RPC message per line";
                    error_line(usable_id(item), ErrorCode::INVALID_REQUEST, text)
                })
                .collect(),
        ),
        other => diagnose_object(&other, err),
    }
}

fn diagnose_object(value: &Value, err: &serde_json::Error) -> Verdict {
    if is_notification(value) || is_response(value) {
        tracing::debug!("ignoring an invalid notification or response: {err}");
        return Verdict::Ignore;
    }
    let id = usable_id(value);
    let method = value.get("method").and_then(Value::as_str);
    let version_ok = value.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    let line = match (method, id.is_some() && version_ok) {
        (Some(m), true) => {
            let text = format!(
                "invalid params for \"{}\": {}",
                clip(m),
                clip(&err.to_string())
            );
            error_line(id, ErrorCode::INVALID_PARAMS, &text)
        }
        _ => {
            let text = "invalid request: expected a JSON-RPC 2.0 object with \"jsonrpc\": \"2.0\", a string or integer \"id\" and a string \"method\"";
            error_line(id, ErrorCode::INVALID_REQUEST, text)
        }
    };
    Verdict::Answer(vec![line])
}

fn is_notification(v: &Value) -> bool {
    v.get("method").is_some_and(Value::is_string) && v.get("id").is_none()
}

fn is_response(v: &Value) -> bool {
    v.get("method").is_none() && (v.get("result").is_some() || v.get("error").is_some())
}

/// The message's id when JSON-RPC allows it (a string or an integer).
fn usable_id(v: &Value) -> Option<Value> {
    match v.get("id")? {
        id @ Value::String(_) => Some(id.clone()),
        id @ Value::Number(n) if n.is_i64() => Some(id.clone()),
        _ => None,
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_DETAIL_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_DETAIL_CHARS).collect();
    out.push('…');
    out
}

fn error_line(id: Option<Value>, code: ErrorCode, message: &str) -> Vec<u8> {
    let error = ErrorData::new(code, message.to_string(), None);
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": error,
    }))
    .unwrap_or_default();
    line.push(b'\n');
    line
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &Mutex<W>, line: &[u8]) -> std::io::Result<()> {
    let mut w = writer.lock().await;
    w.write_all(line).await?;
    w.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        let outgoing = self.outgoing(item);
        async move {
            let Some(item) = outgoing else {
                return Ok(());
            };
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            write_line(&writer, &line).await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.next_message()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use rmcp::model::{SubscriptionsListenResult, ToolListChangedNotification};

    type Duplex = tokio::io::DuplexStream;

    fn transport() -> LineTransport<Duplex, Duplex> {
        let (reader, _) = tokio::io::duplex(64);
        let (writer, _) = tokio::io::duplex(64);
        LineTransport::new(reader, writer)
    }

    /// Admits a client message; the message rmcp gets.
    fn admit(t: &LineTransport<Duplex, Duplex>, msg: Value) -> Value {
        let parsed: ClientJsonRpcMessage = serde_json::from_value(msg).unwrap();
        match t.admit(parsed) {
            Verdict::Message(m) => serde_json::to_value(*m).unwrap(),
            Verdict::Answer(_) => panic!("answered instead of admitted"),
            Verdict::Ignore => Value::Null,
        }
    }

    fn internal(id: &Value) -> RequestId {
        serde_json::from_value(id.clone()).unwrap()
    }

    fn ping(id: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
    }

    #[test]
    fn answers_go_out_under_the_clients_id_and_free_it() {
        let t = transport();
        let a = admit(&t, ping(json!("a")));
        let b = admit(&t, ping(json!(7)));
        assert_ne!(a["id"], b["id"]);
        let answer = ServerJsonRpcMessage::response(ServerResult::empty(()), internal(&b["id"]));
        let out = serde_json::to_value(t.outgoing(answer).unwrap()).unwrap();
        assert_eq!(out["id"], json!(7));
        // The id is free again; the next request under it gets a new internal id.
        let again = admit(&t, ping(json!(7)));
        assert_ne!(again["id"], b["id"]);
    }

    #[test]
    fn a_cancelled_requests_late_answer_is_dropped() {
        let t = transport();
        let first = admit(&t, ping(json!(1)));
        let cancel = admit(
            &t,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        );
        assert_eq!(cancel["params"]["requestId"], first["id"]);
        let reuse = admit(&t, ping(json!(1)));
        let late = ServerJsonRpcMessage::response(ServerResult::empty(()), internal(&first["id"]));
        assert!(t.outgoing(late).is_none());
        let answer =
            ServerJsonRpcMessage::response(ServerResult::empty(()), internal(&reuse["id"]));
        assert_eq!(
            serde_json::to_value(t.outgoing(answer).unwrap()).unwrap()["id"],
            json!(1)
        );
        // Cancelling what is not in progress reaches nothing.
        let stray = admit(
            &t,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        );
        assert_eq!(stray, Value::Null);
    }

    #[test]
    fn subscription_ids_are_the_clients_listen_request_id() {
        let t = transport();
        let listen = internal(&admit(&t, ping(json!("listen-1")))["id"]);
        let mut changed = ToolListChangedNotification::default();
        let mut meta = rmcp::model::NotificationMetaObject::new();
        meta.set_subscription_id(listen.clone());
        changed.extensions.insert(meta);
        let note = ServerJsonRpcMessage::notification(
            rmcp::model::ServerNotification::ToolListChangedNotification(changed),
        );
        let out = serde_json::to_value(t.outgoing(note).unwrap()).unwrap();
        assert_eq!(
            out["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!("listen-1")
        );
        let done = ServerJsonRpcMessage::response(
            ServerResult::SubscriptionsListenResult(SubscriptionsListenResult::complete(
                listen.clone(),
            )),
            listen,
        );
        let out = serde_json::to_value(t.outgoing(done).unwrap()).unwrap();
        assert_eq!(
            (
                out["id"].clone(),
                out["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone()
            ),
            (json!("listen-1"), json!("listen-1"))
        );
    }
}
