//! TemporaryToolRegistry: forged tools with a time to live, registered in the main registry.
//!
//! Invariants, enforced here:
//! - a forged tool never replaces a tool it did not create (built-in or saved): registration
//!   under a taken name is refused, and expiry or revocation removes only its own tools;
//! - an expired tool is not callable even before `cleanup` runs: its handler checks the clock
//!   and unregisters it on the first call after expiry (no background timer needed);
//! - `renew` adds time to what is left (it does not reset it).
//!
//! It holds its registry weakly: the forge service that owns it is itself state of a tool in
//! that registry (`forge_tool`), so a strong reference would be a cycle that never frees.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use alembic_tools::{
    HandlerFuture, ToolContext, ToolDefinition, ToolError, ToolHandler, ToolRegistry,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::clock::{Clock, SystemClock};
use crate::error::ForgeError;

/// Milliseconds since the Unix epoch as the registry stores them (0 before the epoch).
pub(crate) fn now_ms(clock: &dyn Clock) -> u64 {
    u64::try_from(clock.now_ms()).unwrap_or(0)
}

/// Default time to live of a forged tool.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 60);

/// How a tool was forged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeMode {
    Reuse,
    Compose,
    Generate,
}

impl ForgeMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ForgeMode::Reuse => "reuse",
            ForgeMode::Compose => "compose",
            ForgeMode::Generate => "generate",
        }
    }
}

/// Bookkeeping of one temporary tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemporaryToolInfo {
    pub name: String,
    pub mode: ForgeMode,
    pub registered_at_ms: u64,
    /// `None` means it never expires.
    pub expires_at_ms: Option<u64>,
}

impl TemporaryToolInfo {
    /// Milliseconds left, `None` when it never expires.
    pub fn remaining_ms(&self, now_ms: u64) -> Option<u64> {
        self.expires_at_ms.map(|e| e.saturating_sub(now_ms))
    }
}

#[derive(Debug)]
struct Inner {
    registry: Weak<ToolRegistry>,
    clock: Arc<dyn Clock>,
    entries: Mutex<BTreeMap<String, TemporaryToolInfo>>,
}

impl Inner {
    fn expired_names(&self) -> Vec<String> {
        let now = now_ms(self.clock.as_ref());
        self.lock()
            .values()
            .filter(|e| e.expires_at_ms.is_some_and(|t| t <= now))
            .map(|e| e.name.clone())
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, TemporaryToolInfo>> {
        alembic_base::lock(&self.entries)
    }

    fn revoke(&self, name: &str) -> bool {
        if self.lock().remove(name).is_some() {
            if let Some(registry) = self.registry.upgrade() {
                registry.unregister(name);
            }
            return true;
        }
        false
    }

    fn registry(&self) -> Result<Arc<ToolRegistry>, ForgeError> {
        self.registry.upgrade().ok_or(ForgeError::RegistryClosed)
    }
}

/// Temporary tools over a main [`ToolRegistry`].
#[derive(Debug, Clone)]
pub struct TemporaryToolRegistry {
    inner: Arc<Inner>,
}

impl TemporaryToolRegistry {
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        Self::with_clock(registry, Arc::new(SystemClock))
    }

    pub fn with_clock(registry: Arc<ToolRegistry>, clock: Arc<dyn Clock>) -> Self {
        TemporaryToolRegistry {
            inner: Arc::new(Inner {
                registry: Arc::downgrade(&registry),
                clock,
                entries: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// The registry the tools are registered in; an error once it has been dropped.
    pub fn registry(&self) -> Result<Arc<ToolRegistry>, ForgeError> {
        self.inner.registry()
    }

    /// Whether `registry` is the one this registers into.
    pub fn serves(&self, registry: &Arc<ToolRegistry>) -> bool {
        std::ptr::eq(self.inner.registry.as_ptr(), Arc::as_ptr(registry))
    }

    pub fn now_ms(&self) -> u64 {
        now_ms(self.inner.clock.as_ref())
    }

    /// Registers `definition` for `ttl` (`None`: until revoked). A temporary tool of the same
    /// name is replaced; any other tool of that name makes this fail.
    pub fn register(
        &self,
        definition: ToolDefinition,
        mode: ForgeMode,
        ttl: Option<Duration>,
    ) -> Result<TemporaryToolInfo, ForgeError> {
        let now = self.now_ms();
        let expires = ttl.map(|t| now.saturating_add(alembic_base::millis(t)));
        self.register_until(definition, mode, expires)
    }

    /// As [`TemporaryToolRegistry::register`] with an absolute expiry (for reloading).
    pub fn register_until(
        &self,
        mut definition: ToolDefinition,
        mode: ForgeMode,
        expires_at_ms: Option<u64>,
    ) -> Result<TemporaryToolInfo, ForgeError> {
        let name = definition.name.clone();
        let registry = self.inner.registry()?;
        let ours = self.inner.lock().contains_key(&name);
        if !ours && registry.contains(&name) {
            return Err(ForgeError::NameTaken { name });
        }
        if ours {
            self.inner.revoke(&name);
        }
        if !definition.description.starts_with("[forged:") {
            definition.description =
                format!("[forged:{}] {}", mode.as_str(), definition.description);
        }
        definition.handler = Arc::new(ExpiringHandler {
            name: name.clone(),
            inner: Arc::downgrade(&self.inner),
            handler: definition.handler,
        });
        let info = TemporaryToolInfo {
            name: name.clone(),
            mode,
            registered_at_ms: self.now_ms(),
            expires_at_ms,
        };
        registry.register(definition)?;
        self.inner.lock().insert(name, info.clone());
        Ok(info)
    }

    /// Adds `extra` to the time left (additive; an expired tool cannot be renewed).
    pub fn renew(&self, name: &str, extra: Duration) -> Result<TemporaryToolInfo, ForgeError> {
        self.cleanup();
        let mut entries = self.inner.lock();
        let entry = entries
            .get_mut(name)
            .ok_or_else(|| ForgeError::UnknownTool { name: name.into() })?;
        if let Some(expires) = entry.expires_at_ms.as_mut() {
            *expires = expires.saturating_add(alembic_base::millis(extra));
        }
        Ok(entry.clone())
    }

    /// Removes a temporary tool. Returns false (and removes nothing) for any other name.
    pub fn revoke(&self, name: &str) -> bool {
        self.inner.revoke(name)
    }

    /// Forgets a tool without unregistering it (it was saved and is now permanent).
    pub fn release(&self, name: &str) -> Option<TemporaryToolInfo> {
        self.inner.lock().remove(name)
    }

    /// Removes every expired tool; returns their names.
    pub fn cleanup(&self) -> Vec<String> {
        let expired = self.inner.expired_names();
        expired
            .into_iter()
            .filter(|n| self.inner.revoke(n))
            .collect()
    }

    pub fn is_temporary(&self, name: &str) -> bool {
        self.inner.lock().contains_key(name)
    }

    pub fn get(&self, name: &str) -> Option<TemporaryToolInfo> {
        self.inner.lock().get(name).cloned()
    }

    /// Live temporary tools, by name (expired ones are cleaned up first).
    pub fn list(&self) -> Vec<TemporaryToolInfo> {
        self.cleanup();
        self.inner.lock().values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Refuses calls after expiry and unregisters the tool then.
struct ExpiringHandler {
    name: String,
    inner: std::sync::Weak<Inner>,
    handler: Arc<dyn ToolHandler>,
}

impl ToolHandler for ExpiringHandler {
    fn call(&self, args: Value, ctx: ToolContext) -> HandlerFuture {
        if let Some(inner) = self.inner.upgrade() {
            let expired = inner
                .lock()
                .get(&self.name)
                .and_then(|e| e.expires_at_ms)
                .is_some_and(|t| t <= now_ms(inner.clock.as_ref()));
            if expired {
                inner.revoke(&self.name);
                let name = self.name.clone();
                return Box::pin(async move {
                    Err(ToolError::NotFound(format!(
                        "forged tool \"{name}\" has expired"
                    )))
                });
            }
        }
        self.handler.call(args, ctx)
    }
}
