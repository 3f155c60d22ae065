//! A result cache at the CacheCheck slot, and the cache key every cache must use.
//!
//! The key covers the tool, its canonical normalised arguments, the project root and the
//! fingerprint of the policy in force, so that two calls share an entry only when they would
//! be judged and answered the same way. Only side-effect-free tools are cached, and only
//! successful results; a successful side-effecting call empties the cache. Richer caches (for example SessionStore's, which also hashes file
//! contents) build on [`cache_key`].

use alembic_base::lock;
use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::call::{CallResult, ToolMetadata, ToolOutput};
use crate::canonical::{canonical_json, sha256_hex};
use crate::middleware::{BeforeVerdict, Middleware, MiddlewareError, MiddlewareSlot, PreparedCall};

/// The cache key of a call; `extra` carries anything else the answer depends on (content hashes).
pub fn cache_key(
    call: &PreparedCall,
    project_root: &str,
    policy_fingerprint: &str,
    extra: &str,
) -> String {
    let text = format!(
        "{}\0{}\0{}\0{}\0{}",
        call.name(),
        canonical_json(&call.args),
        project_root,
        policy_fingerprint,
        extra
    );
    sha256_hex(text.as_bytes())
}

/// An in-process cache of successful results of side-effect-free tools.
#[derive(Debug, Default)]
pub struct ResultCache {
    project_root: String,
    policy_fingerprint: String,
    entries: Mutex<HashMap<String, ToolOutput>>,
}

impl ResultCache {
    pub fn new(project_root: impl Into<String>, policy_fingerprint: impl Into<String>) -> Self {
        ResultCache {
            project_root: project_root.into(),
            policy_fingerprint: policy_fingerprint.into(),
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn key(&self, call: &PreparedCall) -> String {
        cache_key(call, &self.project_root, &self.policy_fingerprint, "")
    }
}

#[async_trait]
impl Middleware for ResultCache {
    fn name(&self) -> &str {
        "cache_check"
    }
    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::CacheCheck
    }
    async fn before(
        &self,
        call: &PreparedCall,
        _meta: &mut ToolMetadata,
    ) -> Result<BeforeVerdict, MiddlewareError> {
        if !call.effect().is_side_effect_free() {
            return Ok(BeforeVerdict::Continue);
        }
        let hit = lock(&self.entries).get(&self.key(call)).cloned();
        Ok(hit.map_or(BeforeVerdict::Continue, BeforeVerdict::Respond))
    }
    async fn after(
        &self,
        call: &PreparedCall,
        result: &CallResult,
        meta: &mut ToolMetadata,
    ) -> Result<(), MiddlewareError> {
        let CallResult::Ok(out) = result else {
            return Ok(());
        };
        let mut entries = lock(&self.entries);
        if !call.effect().is_side_effect_free() {
            // The key does not see file or store contents, so any successful write may have
            // changed what a cached read would answer.
            entries.clear();
        } else if !meta.cache_hit {
            entries.insert(self.key(call), out.clone());
        }
        Ok(())
    }
}
