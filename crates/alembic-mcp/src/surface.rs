//! The MCP surface beyond tools: resources, prompts and completion, answered from the
//! project's stores (see `resources.rs`, `prompts.rs`). Store reads are synchronous, so they
//! run on the blocking pool.

use alembic_base::lock;
use alembic_tools::{OutcomeStatus, ToolCall};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourcesResult, ReadResourceResult, Reference,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::json;

use crate::AlembicServer;
use crate::prompts;
use crate::resources::{Body, ProjectContent, ResourceUri};

/// The tool whose text is the overview resource.
const OVERVIEW_TOOL: &str = "get_project_overview";

async fn blocking<T: Send + 'static>(
    content: &ProjectContent,
    f: impl FnOnce(&ProjectContent) -> T + Send + 'static,
) -> Result<T, ErrorData> {
    let content = content.clone();
    tokio::task::spawn_blocking(move || f(&content))
        .await
        .map_err(|e| ErrorData::internal_error(format!("store read failed: {e}"), None))
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!("resource \"{uri}\" does not exist; resources/list shows what does"),
        Some(json!({"uri": uri})),
    )
}

impl AlembicServer {
    fn content(&self) -> &ProjectContent {
        &self.shared.watch.content
    }

    pub(crate) async fn resource_list(&self) -> Result<ListResourcesResult, ErrorData> {
        let list = blocking(self.content(), ProjectContent::list).await?;
        Ok(ListResourcesResult::with_all_items(list))
    }

    pub(crate) async fn resource_read(
        &self,
        uri: String,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, ErrorData> {
        let parsed = ResourceUri::parse(&uri).map_err(|e| ErrorData::invalid_params(e, None))?;
        let body = match parsed {
            ResourceUri::Overview => self.overview(context).await?,
            other => blocking(self.content(), move |c| c.read(&other))
                .await?
                .map_err(|e| ErrorData::internal_error(format!("cannot read {uri}: {e}"), None))?
                .ok_or_else(|| not_found(&uri))?,
        };
        Ok(ReadResourceResult::new(vec![body.contents(&uri)]))
    }

    /// The overview is the overview tool's text, run as this client through the pipeline.
    async fn overview(&self, context: RequestContext<RoleServer>) -> Result<Body, ErrorData> {
        let caller = self.caller_of(&context);
        let call = ToolCall::new(OVERVIEW_TOOL, json!({}), caller);
        let outcome = self.shared.pipeline.execute(call).await;
        if let Err(e) = self.flush_audit().await {
            tracing::error!("audit flush failed: {e}");
        }
        match (outcome.status, outcome.output) {
            (OutcomeStatus::Ok, Some(output)) => Ok(Body {
                mime: "text/plain",
                text: output.text,
            }),
            (status, _) => Err(ErrorData::internal_error(
                format!(
                    "the project overview ({OVERVIEW_TOOL}) {}: {}",
                    status.as_str(),
                    outcome.error.unwrap_or_default()
                ),
                None,
            )),
        }
    }

    pub(crate) async fn resource_subscribe(&self, uri: String) -> Result<(), ErrorData> {
        let parsed = ResourceUri::parse(&uri).map_err(|e| ErrorData::invalid_params(e, None))?;
        if parsed == ResourceUri::Overview {
            return Err(ErrorData::invalid_params(
                "the project overview is computed when read and sends no updates; subscribe to a recipe, skill or memories resource",
                None,
            ));
        }
        let fingerprint = blocking(self.content(), move |c| c.body_fingerprint(&parsed)).await?;
        if fingerprint.is_none() {
            return Err(not_found(&uri));
        }
        tracing::debug!(%uri, "resource subscribed");
        lock(&self.session.subscriptions).insert(uri, fingerprint);
        Ok(())
    }

    pub(crate) fn resource_unsubscribe(&self, uri: &str) {
        lock(&self.session.subscriptions).remove(uri);
    }

    pub(crate) async fn prompt_list(&self) -> Result<ListPromptsResult, ErrorData> {
        let list = blocking(self.content(), |c| prompts::list(c.skills.as_ref())).await?;
        Ok(ListPromptsResult::with_all_items(list))
    }

    pub(crate) async fn prompt_get(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, ErrorData> {
        blocking(self.content(), move |c| {
            prompts::get(c.skills.as_ref(), &request.name, request.arguments)
        })
        .await?
    }

    /// Values for a prompt argument or a resource template variable; an unknown prompt or
    /// template has no values (an empty list, not an error).
    pub(crate) async fn completion(
        &self,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let arg = request.argument;
        let values = blocking(self.content(), move |c| match &request.r#ref {
            Reference::Prompt(p) => {
                prompts::complete_argument(c.skills.as_ref(), &p.name, &arg.name, &arg.value)
            }
            Reference::Resource(r) => c.complete_variable(&r.uri, &arg.name, &arg.value),
            _ => Vec::new(),
        })
        .await?;
        Ok(CompleteResult::new(completion_info(values)))
    }
}

/// At most [`CompletionInfo::MAX_VALUES`] values, with the total and whether there are more.
fn completion_info(mut values: Vec<String>) -> CompletionInfo {
    let total = values.len();
    values.truncate(CompletionInfo::MAX_VALUES);
    let mut info = CompletionInfo::default();
    info.has_more = Some(total > values.len());
    info.total = u32::try_from(total).ok();
    info.values = values;
    info
}
