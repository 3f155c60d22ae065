//! MCP logging: `logging/setLevel` and `notifications/message`.
//!
//! [`McpLogLayer`] is a `tracing` layer the binary installs next to its stderr logger. It
//! copies the server's own events (targets starting with `alembic`) onto an in-process
//! broadcast bus; each MCP session that called `logging/setLevel` forwards the events at or
//! above its level to its client. Events of other crates (rmcp, hyper) are not forwarded:
//! sending a notification logs through them, which would feed back into the bus. Nothing is
//! copied while no session listens.

#![allow(
    deprecated,
    reason = "MCP logging (deprecated by SEP-2577, still part of 2025-11-25) is what this module implements"
)]

use std::fmt::Write as _;
use std::sync::OnceLock;

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use serde_json::json;
use tokio::sync::broadcast;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};

/// Records kept for a slow session before it skips ahead.
const BUS_CAPACITY: usize = 256;

/// One forwarded tracing event.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    pub level: LoggingLevel,
    pub logger: String,
    pub message: String,
}

impl LogRecord {
    pub fn notification(&self) -> LoggingMessageNotificationParam {
        let mut param =
            LoggingMessageNotificationParam::new(self.level, json!({"message": self.message}));
        param.logger = Some(self.logger.clone());
        param
    }
}

fn bus() -> &'static broadcast::Sender<LogRecord> {
    static BUS: OnceLock<broadcast::Sender<LogRecord>> = OnceLock::new();
    BUS.get_or_init(|| broadcast::channel(BUS_CAPACITY).0)
}

/// A receiver of every record published from now on.
pub fn subscribe() -> broadcast::Receiver<LogRecord> {
    bus().subscribe()
}

/// Publishes a record to the sessions that listen (the layer does this for tracing events).
pub fn publish(record: LogRecord) {
    // No receiver is not an error: no session asked for logs.
    let _ = bus().send(record);
}

/// The layer to add to the process's tracing subscriber; it passes only Alembic's events at
/// debug level and above.
pub fn layer<S>() -> impl Layer<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    McpLogLayer.with_filter(Targets::new().with_target("alembic", LevelFilter::DEBUG))
}

/// Copies tracing events onto the bus.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpLogLayer;

impl<S: tracing::Subscriber> Layer<S> for McpLogLayer {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if bus().receiver_count() == 0 {
            return;
        }
        let mut text = MessageText::default();
        event.record(&mut text);
        publish(LogRecord {
            level: mcp_level(*event.metadata().level()),
            logger: event.metadata().target().to_string(),
            message: text.finish(),
        });
    }
}

#[derive(Default)]
struct MessageText {
    message: String,
    fields: String,
}

impl MessageText {
    fn finish(self) -> String {
        if self.fields.is_empty() {
            self.message
        } else {
            format!("{}{}", self.message, self.fields)
        }
    }
}

impl Visit for MessageText {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

/// The MCP level of a tracing level (MCP has no trace: it is debug).
pub fn mcp_level(level: tracing::Level) -> LoggingLevel {
    match level {
        tracing::Level::ERROR => LoggingLevel::Error,
        tracing::Level::WARN => LoggingLevel::Warning,
        tracing::Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// Severity order of RFC 5424, as MCP uses it: debug is the least severe.
pub fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Whether a record at `level` reaches a session that asked for `threshold`.
pub fn passes(level: LoggingLevel, threshold: LoggingLevel) -> bool {
    severity(level) >= severity(threshold)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn own_events_reach_the_bus_with_their_level_and_fields() {
        let mut rx = subscribe();
        let subscriber = tracing_subscriber::registry().with(layer());
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(target: "alembic_mcp::test", uri = "alembic://x", "resource gone");
            tracing::warn!(target: "hyper::proto", "not ours");
            tracing::trace!(target: "alembic_mcp::test", "below debug");
        });
        let got = rx.try_recv().unwrap();
        assert_eq!(
            got,
            LogRecord {
                level: LoggingLevel::Warning,
                logger: "alembic_mcp::test".into(),
                message: "resource gone uri=\"alembic://x\"".into(),
            }
        );
        assert!(
            rx.try_recv().is_err(),
            "only the alembic event at debug or above"
        );
    }

    #[test]
    fn threshold_follows_rfc_5424_order() {
        assert!(passes(LoggingLevel::Error, LoggingLevel::Warning));
        assert!(passes(LoggingLevel::Warning, LoggingLevel::Warning));
        assert!(!passes(LoggingLevel::Info, LoggingLevel::Warning));
        assert!(passes(LoggingLevel::Emergency, LoggingLevel::Debug));
    }
}
