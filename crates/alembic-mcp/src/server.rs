//! The MCP server handler: `tools/list` from the registry filtered by the preset,
//! `tools/call` through the whole pipeline with cancellation and progress; resources,
//! prompts, completion and logging are answered by `surface.rs`, notifications by
//! `notify.rs`.

use std::sync::Arc;

use alembic_runtime::ProjectRuntime;
use alembic_tools::{Allowlist, Caller, Pipeline, ToolCall, ToolEvent, ToolEventKind};
#[allow(
    deprecated,
    reason = "MCP logging (SEP-2577 deprecates it) is still in 2025-11-25"
)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::McpError;
use crate::auth::{HttpCaller, PresetResolver};
use crate::convert::{caller_id, result_for_outcome, tool_for_mcp};
use crate::notify::{self, SessionState, WatchSources};
use crate::resources::ProjectContent;
use crate::skills::{SkillDir, SkillSource};

const INSTRUCTIONS: &str = "Alembic exposes this project's code-intelligence, memory and guard tools. \
Every call runs through Alembic's pipeline: the preset's allowlist, path confinement beneath the \
project root, the safety policy and a tamper-evident audit log. A refused or failed call comes back \
as an error result that names the rule.";

/// Waits for audit records to reach the disk; the runtime's audit log in production.
pub type AuditFlush = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// Alembic's MCP server. Cheap to clone: clones share the pipeline and the session state;
/// [`AlembicServer::for_session`] gives a new session (log level, subscriptions) over the
/// same pipeline, as each HTTP session and each stdio handshake gets.
#[derive(Clone)]
pub struct AlembicServer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) session: Arc<SessionState>,
}

pub(crate) struct Shared {
    pub(crate) pipeline: Arc<Pipeline>,
    allowlist: Allowlist,
    flush: Option<AuditFlush>,
    pub(crate) watch: WatchSources,
    /// The allowlists of authenticated HTTP callers' presets.
    presets: Option<PresetResolver>,
}

/// A skill source with no skills (servers built from parts).
struct NoSkills;

impl SkillSource for NoSkills {
    fn list(&self) -> Vec<crate::skills::Skill> {
        Vec::new()
    }
    fn read(
        &self,
        _name: &str,
    ) -> Result<Option<crate::skills::Skill>, crate::skills::SkillReadError> {
        Ok(None)
    }
}

impl std::fmt::Debug for AlembicServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlembicServer")
            .field("pipeline", &self.shared.pipeline)
            .finish_non_exhaustive()
    }
}

impl AlembicServer {
    /// A server over a project runtime, exposing the tools of `preset` (the project's default
    /// preset when `None`).
    pub fn new(runtime: Arc<ProjectRuntime>, preset: Option<&str>) -> Result<Self, McpError> {
        let allowlist = runtime
            .caller("mcp", preset)
            .map_err(|e| McpError::Setup(e.to_string()))?
            .allowlist;
        let pipeline = runtime.pipeline();
        let services = runtime.services();
        let content = ProjectContent {
            knowledge: Some(Arc::clone(&services.knowledge)),
            memory: Some(Arc::clone(&services.memory)),
            skills: Arc::new(SkillDir::for_project(&runtime.root)),
        };
        let temporary = runtime.temporary_tools().clone();
        let for_presets = Arc::clone(&runtime);
        let presets: PresetResolver = Arc::new(move |id, preset| {
            for_presets
                .caller(id, Some(preset))
                .map(|c| c.allowlist)
                .map_err(|e| e.to_string())
        });
        let flush: AuditFlush = Arc::new(move || runtime.flush_audit().map_err(|e| e.to_string()));
        Ok(Self::from_parts(pipeline, allowlist, Some(flush))
            .with_content(content)
            .with_temporary(temporary)
            .with_presets(presets))
    }

    /// Resolves the presets of authenticated HTTP callers (tokens, OAuth) to allowlists.
    pub fn with_presets(self, presets: PresetResolver) -> Self {
        let mut server = self.map_watch(|_| {});
        if let Some(shared) = Arc::get_mut(&mut server.shared) {
            shared.presets = Some(presets);
        }
        server
    }

    /// The resolver the HTTP guard uses; without one every preset is refused by name.
    pub fn preset_resolver(&self) -> PresetResolver {
        match &self.shared.presets {
            Some(p) => Arc::clone(p),
            None => {
                Arc::new(|_, preset| Err(format!("this server resolves no presets ({preset:?})")))
            }
        }
    }

    /// Publishes `content` as resources and prompts.
    pub fn with_content(self, content: ProjectContent) -> Self {
        self.map_watch(|w| w.content = content)
    }

    /// Runs `temporary`'s expiry cleanup on the poll timer, and lists and allows its tools
    /// (a forged tool's steps are nested calls checked against the same allowlist).
    pub fn with_temporary(self, temporary: alembic_runtime::forge::TemporaryToolRegistry) -> Self {
        self.map_watch(|w| w.temporary = Some(temporary))
    }

    /// How often stores are polled for changes and expired tools cleaned up.
    pub fn with_poll_interval(self, poll: std::time::Duration) -> Self {
        self.map_watch(|w| w.poll = poll)
    }

    fn map_watch(self, f: impl FnOnce(&mut WatchSources)) -> Self {
        let mut watch = self.shared.watch.clone();
        f(&mut watch);
        let shared = Shared {
            pipeline: Arc::clone(&self.shared.pipeline),
            allowlist: self.shared.allowlist.clone(),
            flush: self.shared.flush.clone(),
            watch,
            presets: self.shared.presets.clone(),
        };
        AlembicServer {
            shared: Arc::new(shared),
            session: self.session,
        }
    }

    /// A new session over the same pipeline and stores.
    pub fn for_session(&self) -> Self {
        AlembicServer {
            shared: Arc::clone(&self.shared),
            session: Arc::new(SessionState::default()),
        }
    }

    /// The caller of a request and its allowlist: the authenticated HTTP caller when the
    /// request came through the HTTP guard, else `mcp:<clientInfo.name>` with the server's preset.
    pub(crate) fn caller_of(&self, context: &RequestContext<RoleServer>) -> Caller {
        let authed = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<HttpCaller>());
        match authed {
            Some(c) => Caller::new(c.id.clone(), self.with_temporary_tools(c.allowlist.clone())),
            None => {
                let client = context.client_info().map(|i| i.name);
                Caller::new(caller_id(client.as_deref()), self.allowlist())
            }
        }
    }

    /// The preset's tools plus the live temporary forged tools.
    pub(crate) fn allowlist(&self) -> Allowlist {
        self.with_temporary_tools(self.shared.allowlist.clone())
    }

    fn with_temporary_tools(&self, allowlist: Allowlist) -> Allowlist {
        let mut allowlist = allowlist;
        if let Some(t) = &self.shared.watch.temporary {
            for info in t.list() {
                allowlist.insert(info.name);
            }
        }
        allowlist
    }

    /// A server over any pipeline (tests and embedders build their own).
    pub fn from_parts(
        pipeline: Arc<Pipeline>,
        allowlist: Allowlist,
        flush: Option<AuditFlush>,
    ) -> Self {
        let watch = WatchSources {
            registry: Arc::clone(pipeline.registry()),
            temporary: None,
            content: ProjectContent {
                knowledge: None,
                memory: None,
                skills: Arc::new(NoSkills),
            },
            poll: notify::DEFAULT_POLL,
        };
        AlembicServer {
            shared: Arc::new(Shared {
                pipeline,
                allowlist,
                flush,
                watch,
                presets: None,
            }),
            session: Arc::new(SessionState::default()),
        }
    }

    /// Waits until every audit record written so far is on disk.
    pub async fn flush_audit(&self) -> Result<(), McpError> {
        let Some(flush) = self.shared.flush.clone() else {
            return Ok(());
        };
        // The audit writer answers over a blocking channel.
        tokio::task::spawn_blocking(move || flush())
            .await
            .map_err(|e| McpError::Audit(e.to_string()))?
            .map_err(McpError::Audit)
    }

    /// Runs one `tools/call`: the pipeline call, progress forwarding, the audit flush.
    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let caller = self.caller_of(&context);
        let args = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Default::default()));
        let call = ToolCall::new(request.name.to_string(), args, caller);
        let progress = progress_token(&request.meta, &context).map(|token| {
            ProgressForwarder::start(&self.shared.pipeline, &call.id, token, context.peer.clone())
        });
        let outcome = self
            .shared
            .pipeline
            .execute_with_cancel(call, context.ct.child_token())
            .await;
        if let Some(p) = progress {
            p.finish().await;
        }
        // An answered call is an audited call: the record is on disk before the client hears back.
        if let Err(e) = self.flush_audit().await {
            tracing::error!("audit flush failed: {e}");
        }
        result_for_outcome(&outcome).into()
    }
}

fn progress_token(
    params_meta: &Option<rmcp::model::RequestMetaObject>,
    context: &RequestContext<RoleServer>,
) -> Option<ProgressToken> {
    context
        .meta
        .get_progress_token()
        .or_else(|| params_meta.as_ref().and_then(|m| m.get_progress_token()))
}

/// Forwards the pipeline's Progress events of one call as MCP progress notifications.
struct ProgressForwarder {
    done: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressForwarder {
    fn start(
        pipeline: &Arc<Pipeline>,
        call_id: &str,
        token: ProgressToken,
        peer: rmcp::Peer<RoleServer>,
    ) -> Self {
        // Subscribe before the call starts so that no event is missed.
        let rx = pipeline.events().subscribe();
        let done = CancellationToken::new();
        let task = tokio::spawn(forward_progress(
            rx,
            call_id.to_string(),
            token,
            peer,
            done.clone(),
        ));
        ProgressForwarder { done, task }
    }

    /// Sends what is still queued for the call, then stops. The pipeline has sent every event
    /// of the call by the time `execute` returns, so nothing is lost and every notification
    /// precedes the response.
    async fn finish(self) {
        self.done.cancel();
        if let Err(e) = self.task.await {
            tracing::warn!("progress forwarder stopped abnormally: {e}");
        }
    }
}

async fn forward_progress(
    mut rx: broadcast::Receiver<ToolEvent>,
    call_id: String,
    token: ProgressToken,
    peer: Peer<RoleServer>,
    done: CancellationToken,
) {
    let mut last = 0.0_f64;
    loop {
        let event = tokio::select! {
            biased;
            r = rx.recv() => r,
            _ = done.cancelled() => match rx.try_recv() {
                Ok(e) => Ok(e),
                Err(_) => return,
            },
        };
        let event = match event {
            Ok(e) => e,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("progress forwarder lagged, {n} events skipped");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        if event.call_id != call_id {
            continue;
        }
        match event.kind {
            ToolEventKind::Progress { message, fraction } => {
                let (value, total) = progress_value(last, fraction);
                last = value;
                let mut param =
                    ProgressNotificationParam::new(token.clone(), value).with_message(message);
                if let Some(t) = total {
                    param = param.with_total(t);
                }
                if let Err(e) = peer.notify_progress(param).await {
                    tracing::debug!("cannot send a progress notification: {e}");
                }
            }
            ToolEventKind::Finished { .. } => return,
            ToolEventKind::Started => {}
        }
    }
}

/// MCP requires progress to increase: a fraction maps to percent (never going back), an
/// unquantified step counts one up.
fn progress_value(last: f64, fraction: Option<f64>) -> (f64, Option<f64>) {
    match fraction {
        Some(f) if f.is_finite() => ((f.clamp(0.0, 1.0) * 100.0).max(last), Some(100.0)),
        _ => (last + 1.0, None),
    }
}

impl ServerHandler for AlembicServer {
    #[allow(
        deprecated,
        reason = "MCP logging (SEP-2577 deprecates it) is still in 2025-11-25"
    )]
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_resources()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts_list_changed()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.server_info = Implementation::new("alembic", env!("CARGO_PKG_VERSION"))
            .with_title("Alembic tool runtime");
        info.instructions = Some(INSTRUCTIONS.to_string());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .shared
            .pipeline
            .registry()
            .definitions(&self.caller_of(&context).allowlist)
            .iter()
            .map(tool_for_mcp)
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        notify::start(
            self.shared.watch.clone(),
            Arc::clone(&self.session),
            context.peer,
        );
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.resource_list().await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            ProjectContent::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.resource_read(request.uri, context)
            .await
            .map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resource_subscribe(request.uri).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resource_unsubscribe(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.prompt_list().await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompt_get(request).await.map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.completion(request).await
    }

    #[allow(
        deprecated,
        reason = "MCP logging (SEP-2577 deprecates it) is still in 2025-11-25"
    )]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tracing::debug!(level = ?request.level, "client set the log level");
        self.session.level.send_replace(Some(request.level));
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(self.run_call(request, context).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn progress_never_goes_back() {
        assert_eq!(progress_value(0.0, Some(0.5)), (50.0, Some(100.0)));
        assert_eq!(progress_value(50.0, Some(0.2)), (50.0, Some(100.0)));
        assert_eq!(progress_value(50.0, None), (51.0, None));
        assert_eq!(progress_value(3.0, Some(f64::NAN)), (4.0, None));
        assert_eq!(progress_value(0.0, Some(7.0)), (100.0, Some(100.0)));
    }
}
