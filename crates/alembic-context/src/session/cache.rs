//! The read-only tool-result cache of a session.
//!
//! Keyed on the tool name, the canonical JSON of the **full** arguments (sorted keys), and,
//! for tools that read files, the content hash of every file read — so a read of another line
//! range misses and an edited file misses. (The reference keyed searches on the pattern alone
//! and reads on the path alone, so reading lines 400–600 after 1–200 returned the first range.)
//! Side-effect tools and failed results are never cached; running a side-effect tool clears
//! the cache, because searches have no content hash to notice a changed project.
//! Eviction is least-recently-used; entries expire after a TTL measured on a clock the caller
//! passes in.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::exploration::canonical_args;

/// Entries kept before the least recently used is evicted.
pub const DEFAULT_CAPACITY: usize = 500;
/// Entry lifetime (30 minutes).
pub const DEFAULT_TTL_MS: u64 = 30 * 60 * 1000;

/// Tools never served from the cache, whatever their effect class says: they write, or they
/// read session state that changes during the run.
pub const NEVER_CACHED: &[&str] = &[
    "note_finding",
    "get_previous_analysis",
    "get_previous_evidence",
    "write_project_file",
    "run_safe_command",
    "collect_scan_recipe",
    "review_my_output",
    "query_audit_log",
];

/// Whether results of `tool` may be cached at all (`submit_*` never are).
pub fn is_cacheable_tool(tool: &str) -> bool {
    !tool.starts_with("submit_") && !NEVER_CACHED.contains(&tool)
}

/// The cache key: SHA-256 of tool name, canonical arguments and file content hashes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// `file_hashes` are `(path, content hash)` pairs of the files the call reads (any order).
    pub fn new(tool: &str, args: &Value, file_hashes: &[(String, String)]) -> CacheKey {
        let mut files: Vec<&(String, String)> = file_hashes.iter().collect();
        files.sort();
        let mut h = Sha256::new();
        h.update(tool.as_bytes());
        h.update([0]);
        h.update(canonical_args(args).as_bytes());
        for (path, hash) in files {
            h.update([0]);
            h.update(path.as_bytes());
            h.update([1]);
            h.update(hash.as_bytes());
        }
        CacheKey(hex::encode(h.finalize()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A cached result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedResult {
    pub data: Value,
    pub text: String,
}

#[derive(Debug, Clone)]
struct Entry {
    result: CachedResult,
    inserted_ms: u64,
    last_used: u64,
    /// A read of project files or code: only file writes and commands make it stale.
    project_read: bool,
}

/// Hit and miss counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub entries: usize,
}

/// See the module docs.
#[derive(Debug, Clone)]
pub struct ToolResultCache {
    entries: HashMap<CacheKey, Entry>,
    capacity: usize,
    ttl_ms: u64,
    use_counter: u64,
    stats: CacheStats,
}

impl Default for ToolResultCache {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY, DEFAULT_TTL_MS)
    }
}

impl ToolResultCache {
    /// A cache of `capacity` entries living `ttl_ms` (0 = never expire).
    pub fn new(capacity: usize, ttl_ms: u64) -> ToolResultCache {
        ToolResultCache {
            entries: HashMap::new(),
            capacity: capacity.max(1),
            ttl_ms,
            use_counter: 0,
            stats: CacheStats::default(),
        }
    }

    /// The cached result for `key`, if present and fresh at `now_ms`.
    pub fn get(&mut self, key: &CacheKey, now_ms: u64) -> Option<CachedResult> {
        let expired = self.entries.get(key).is_some_and(|e| {
            self.ttl_ms > 0 && now_ms.saturating_sub(e.inserted_ms) >= self.ttl_ms
        });
        if expired {
            self.entries.remove(key);
            self.stats.evictions += 1;
        }
        self.use_counter += 1;
        match self.entries.get_mut(key) {
            Some(e) => {
                e.last_used = self.use_counter;
                self.stats.hits += 1;
                Some(e.result.clone())
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    /// Stores a result, evicting the least recently used entry when full.
    pub fn put(&mut self, key: CacheKey, result: CachedResult, now_ms: u64) {
        self.insert(key, result, now_ms, false);
    }

    /// Stores the result of a project-file or code read: it survives
    /// [`ToolResultCache::clear_all_but_project_reads`].
    pub fn put_project_read(&mut self, key: CacheKey, result: CachedResult, now_ms: u64) {
        self.insert(key, result, now_ms, true);
    }

    /// Drops every entry but project reads (after a knowledge or memory write, which changes
    /// what knowledge reads return but no file).
    pub fn clear_all_but_project_reads(&mut self) {
        let before = self.entries.len();
        self.entries.retain(|_, e| e.project_read);
        self.stats.evictions += (before - self.entries.len()) as u64;
    }

    fn insert(&mut self, key: CacheKey, result: CachedResult, now_ms: u64, project_read: bool) {
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.entries.remove(&k);
                self.stats.evictions += 1;
            }
        }
        self.use_counter += 1;
        let entry = Entry {
            result,
            inserted_ms: now_ms,
            last_used: self.use_counter,
            project_read,
        };
        self.entries.insert(key, entry);
    }

    /// Drops every entry (after a side-effect tool ran).
    pub fn clear(&mut self) {
        self.stats.evictions += self.entries.len() as u64;
        self.entries.clear();
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            entries: self.entries.len(),
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn result(text: &str) -> CachedResult {
        CachedResult {
            data: Value::Null,
            text: text.to_string(),
        }
    }

    #[test]
    fn keys_cover_all_arguments_in_any_order_and_file_hashes() {
        let a = CacheKey::new(
            "read_project_file",
            &json!({"filePath": "a.rs", "startLine": 1, "endLine": 200}),
            &[],
        );
        let b = CacheKey::new(
            "read_project_file",
            &json!({"endLine": 200, "startLine": 1, "filePath": "a.rs"}),
            &[],
        );
        let c = CacheKey::new(
            "read_project_file",
            &json!({"filePath": "a.rs", "startLine": 400, "endLine": 600}),
            &[],
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        let h1 = CacheKey::new(
            "read_project_file",
            &json!({"filePath": "a.rs"}),
            &[("a.rs".into(), "h1".into())],
        );
        let h2 = CacheKey::new(
            "read_project_file",
            &json!({"filePath": "a.rs"}),
            &[("a.rs".into(), "h2".into())],
        );
        assert_ne!(h1, h2);
    }

    #[test]
    fn entries_expire_and_least_recently_used_is_evicted() {
        let mut cache = ToolResultCache::new(2, 1000);
        let k = |n: u32| CacheKey::new("search_project_code", &json!({"pattern": n}), &[]);
        cache.put(k(1), result("one"), 0);
        cache.put(k(2), result("two"), 0);
        assert_eq!(
            cache.get(&k(1), 10).map(|r| r.text),
            Some("one".to_string())
        );
        cache.put(k(3), result("three"), 20);
        assert_eq!(cache.get(&k(2), 30), None, "2 was least recently used");
        assert!(cache.get(&k(1), 30).is_some());
        assert_eq!(cache.get(&k(3), 1020), None, "expired");
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.evictions, s.entries), (2, 2, 2, 1));
    }

    #[test]
    fn side_effect_tools_are_not_cacheable() {
        for tool in [
            "submit_knowledge",
            "submit_with_check",
            "note_finding",
            "write_project_file",
            "run_safe_command",
        ] {
            assert!(!is_cacheable_tool(tool), "{tool}");
        }
        assert!(is_cacheable_tool("search_project_code"));
        assert!(is_cacheable_tool("get_class_info"));
    }
}
