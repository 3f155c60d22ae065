//! Tools granted to one caller for the rest of its session: what a run forged for itself.
//!
//! A caller's allowlist comes from its preset and is fixed when the caller is made. A tool
//! forged during a session (`forge_tool`) is not in any preset, so the forge records a grant
//! here under the caller's id, and whoever builds that caller's next request (the agent loop,
//! each round) widens the allowlist with [`SessionGrants::widen`]. A grant adds one name and
//! nothing else: each step of a forged tool is still a nested call checked against the
//! caller's preset allowlist, so a grant never lets a caller reach a tool its preset denies.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use crate::capability::Allowlist;

/// Tool names granted per caller id. Cheap to share (`Arc<SessionGrants>`).
#[derive(Debug, Default)]
pub struct SessionGrants {
    granted: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

impl SessionGrants {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `caller_id` call `tool` from its next request on.
    pub fn grant(&self, caller_id: &str, tool: &str) {
        alembic_base::lock(&self.granted)
            .entry(caller_id.to_string())
            .or_default()
            .insert(tool.to_string());
    }

    /// The names granted to `caller_id`, sorted.
    pub fn granted(&self, caller_id: &str) -> Vec<String> {
        alembic_base::lock(&self.granted)
            .get(caller_id)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// `allowlist` plus what was granted to `caller_id`.
    pub fn widen(&self, caller_id: &str, allowlist: &Allowlist) -> Allowlist {
        let mut widened = allowlist.clone();
        for name in self.granted(caller_id) {
            widened.insert(name);
        }
        widened
    }

    /// Forgets the grants of a session that ended.
    pub fn end_session(&self, caller_id: &str) {
        alembic_base::lock(&self.granted).remove(caller_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn grants_widen_only_their_own_caller_until_the_session_ends() {
        let grants = SessionGrants::new();
        let base = Allowlist::only(["read_project_file"]);
        grants.grant("run-a", "class_architecture_client");
        assert!(
            grants
                .widen("run-a", &base)
                .allows("class_architecture_client")
        );
        assert!(grants.widen("run-a", &base).allows("read_project_file"));
        assert!(
            !grants
                .widen("run-b", &base)
                .allows("class_architecture_client")
        );
        assert!(!base.allows("class_architecture_client"));
        assert_eq!(grants.granted("run-a"), vec!["class_architecture_client"]);
        grants.end_session("run-a");
        assert_eq!(grants.granted("run-a"), Vec::<String>::new());
    }
}
