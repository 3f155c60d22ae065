//! One MCP session's notifications: `tools/list_changed`, `resources/list_changed`,
//! `prompts/list_changed`, `resources/updated` for subscribed URIs, and log messages.
//!
//! Each session gets one watcher task, started when the client sends `initialized` and ended
//! when its transport closes. It waits on:
//! - the tool registry's change generation ([`alembic_tools::ToolRegistry::subscribe_changes`]),
//!   so a forged tool that is added, expires or is removed is announced at once;
//! - a timer (every [`DEFAULT_POLL`]) that runs the temporary tools' expiry cleanup (an expired
//!   tool is unregistered, which the registry then signals) and polls the stores: a
//!   fingerprint of the resource list and of the skill list, and of each subscribed
//!   resource's body. The stores have no change hook shared across processes (the CLI and
//!   other servers write the same database), so polling a cheap fingerprint is the one way
//!   to notice every writer;
//! - the log bus, once the client chose a level with `logging/setLevel`.
//!
//! With a team configured the knowledge base is on the team's server. A poll that finds it
//! unreachable (one bounded wait) stops reading the stores and backs off, doubling up to
//! [`MAX_BACKOFF`]: meanwhile only a probe on a connection of its own asks whether the
//! server is back, never holding the store a tool call needs, so requests are answered
//! without waiting on the poller. It logs once when the server goes away and once when it is
//! back, then polls as before.

#![allow(
    deprecated,
    reason = "log notifications use MCP logging types, deprecated by SEP-2577 but still in 2025-11-25"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use alembic_base::lock;
use rmcp::RoleServer;
use rmcp::model::LoggingLevel;
use rmcp::service::Peer;
use tokio::sync::{broadcast, watch};

use crate::logging::{self, LogRecord};
use crate::resources::{ProjectContent, ResourceUri};

/// How often the stores are polled and expired tools cleaned up.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);
/// Longest wait between two probes of a team server that is down.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What one session asked for.
#[derive(Debug)]
pub struct SessionState {
    pub level: watch::Sender<Option<LoggingLevel>>,
    /// Subscribed URIs and the fingerprint of the body last announced.
    pub subscriptions: std::sync::Mutex<BTreeMap<String, Option<u64>>>,
    pub started: std::sync::atomic::AtomicBool,
}

impl Default for SessionState {
    fn default() -> Self {
        SessionState {
            level: watch::Sender::new(None),
            subscriptions: std::sync::Mutex::new(BTreeMap::new()),
            started: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// What the watcher needs from the server.
#[derive(Clone)]
pub struct WatchSources {
    pub registry: Arc<alembic_tools::ToolRegistry>,
    pub temporary: Option<alembic_runtime::forge::TemporaryToolRegistry>,
    pub content: ProjectContent,
    pub poll: Duration,
}

/// Fingerprints compared at each poll.
#[derive(Debug, Clone, PartialEq, Default)]
struct Snapshot {
    resources: u64,
    prompts: u64,
}

fn snapshot(content: &ProjectContent) -> Snapshot {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in crate::prompts::list(content.skills.as_ref()) {
        serde_json::to_string(&p).unwrap_or_default().hash(&mut h);
    }
    Snapshot {
        resources: content.list_fingerprint(),
        prompts: h.finish(),
    }
}

/// Starts the session's watcher once.
pub fn start(sources: WatchSources, state: Arc<SessionState>, peer: Peer<RoleServer>) {
    if state
        .started
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        return;
    }
    tokio::spawn(watch_session(sources, state, peer));
}

async fn watch_session(sources: WatchSources, state: Arc<SessionState>, peer: Peer<RoleServer>) {
    let mut tools = sources.registry.subscribe_changes();
    tools.borrow_and_update();
    let mut level = state.level.subscribe();
    // A level set before this task subscribed counts too.
    let mut logs: Option<broadcast::Receiver<LogRecord>> =
        level.borrow_and_update().map(|_| logging::subscribe());
    let mut tick = tokio::time::interval(sources.poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut team = TeamHealth::new(sources.poll);
    let mut last = match team.reachable(&sources.content).await {
        true => blocking_snapshot(&sources.content).await,
        false => Snapshot::default(),
    };
    loop {
        tokio::select! {
            changed = tools.changed() => {
                if changed.is_err() { return; }
                tools.borrow_and_update();
                tracing::debug!("tool list changed");
                if peer.notify_tool_list_changed().await.is_err() { return; }
            }
            changed = level.changed() => {
                if changed.is_err() { return; }
                let wanted = *level.borrow_and_update();
                logs = wanted.map(|_| logs.take().unwrap_or_else(logging::subscribe));
            }
            record = next_log(&mut logs) => {
                let threshold = *state.level.borrow();
                if let Some(t) = threshold
                    && logging::passes(record.level, t)
                    && send_log(&peer, &record).await.is_err()
                {
                    return;
                }
            }
            _ = tick.tick() => {
                if peer.is_transport_closed() { return; }
                if let Some(temporary) = &sources.temporary {
                    for name in temporary.cleanup() {
                        tracing::info!(tool = %name, "temporary forged tool expired");
                    }
                }
                if team.reachable(&sources.content).await
                    && poll_content(&sources.content, &state, &peer, &mut last).await.is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Whether the stores may be polled now (see the module docs): with no team, always.
struct TeamHealth {
    poll: Duration,
    /// While the server is down: when to probe next, and the wait after that.
    down: Option<(tokio::time::Instant, Duration)>,
}

impl TeamHealth {
    fn new(poll: Duration) -> Self {
        TeamHealth { poll, down: None }
    }

    async fn reachable(&mut self, content: &ProjectContent) -> bool {
        let Some(kb) = content.knowledge.clone() else {
            return true;
        };
        if kb.team_label().is_none() {
            return true;
        }
        let now = tokio::time::Instant::now();
        let answer = match self.down {
            Some((next, _)) if now < next => return false,
            // down: a probe on its own connection, never holding the service's store
            Some(_) => tokio::task::spawn_blocking(move || kb.probe_team()).await,
            // up: one cheap read through the service (quick while the server answers)
            None => {
                tokio::task::spawn_blocking(move || {
                    Some(
                        kb.with_team_store(|t| t.guard_overrides().map(drop))
                            .map(drop)
                            .map_err(|e| e.to_string()),
                    )
                })
                .await
            }
        };
        match answer {
            Ok(Some(Err(cause))) => {
                let wait = match self.down {
                    Some((_, wait)) => (wait * 2).min(MAX_BACKOFF),
                    None => {
                        tracing::warn!(%cause, "team server unreachable: store polling paused, retrying with backoff");
                        (self.poll * 2).min(MAX_BACKOFF)
                    }
                };
                self.down = Some((tokio::time::Instant::now() + wait, wait));
                false
            }
            _ => {
                if self.down.take().is_some() {
                    tracing::info!("team server reachable again: store polling resumed");
                }
                true
            }
        }
    }
}

async fn next_log(logs: &mut Option<broadcast::Receiver<LogRecord>>) -> LogRecord {
    loop {
        match logs {
            None => std::future::pending::<()>().await,
            Some(rx) => match rx.recv().await {
                Ok(record) => return record,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => *logs = None,
            },
        }
    }
}

async fn send_log(peer: &Peer<RoleServer>, record: &LogRecord) -> Result<(), rmcp::ServiceError> {
    peer.notify_logging_message(record.notification()).await
}

async fn blocking_snapshot(content: &ProjectContent) -> Snapshot {
    let content = content.clone();
    tokio::task::spawn_blocking(move || snapshot(&content))
        .await
        .unwrap_or_default()
}

/// Compares the stores with the last poll and announces what changed.
async fn poll_content(
    content: &ProjectContent,
    state: &Arc<SessionState>,
    peer: &Peer<RoleServer>,
    last: &mut Snapshot,
) -> Result<(), rmcp::ServiceError> {
    let now = blocking_snapshot(content).await;
    if now.resources != last.resources {
        peer.notify_resource_list_changed().await?;
    }
    if now.prompts != last.prompts {
        peer.notify_prompt_list_changed().await?;
    }
    *last = now;
    for uri in changed_subscriptions(content, state).await {
        tracing::debug!(%uri, "subscribed resource changed");
        peer.notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri))
            .await?;
    }
    Ok(())
}

/// Subscribed URIs whose body changed (or appeared, or went away) since the last poll.
async fn changed_subscriptions(content: &ProjectContent, state: &Arc<SessionState>) -> Vec<String> {
    let uris: Vec<String> = lock(&state.subscriptions).keys().cloned().collect();
    if uris.is_empty() {
        return Vec::new();
    }
    let reader = content.clone();
    let fresh = tokio::task::spawn_blocking(move || {
        uris.into_iter()
            .map(|u| {
                let fp = ResourceUri::parse(&u)
                    .ok()
                    .and_then(|p| reader.body_fingerprint(&p));
                (u, fp)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    let mut subs = lock(&state.subscriptions);
    let mut changed = Vec::new();
    for (uri, fp) in fresh {
        // Unsubscribed while the poll ran: nothing to announce.
        if let Some(old) = subs.get_mut(&uri)
            && *old != fp
        {
            *old = fp;
            changed.push(uri);
        }
    }
    changed
}
