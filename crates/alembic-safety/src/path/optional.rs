//! Reads of files the server itself consumes (config, rules, skills, guideline files), where a
//! missing file is normal and anything else must stay beneath the root.

use super::{PathError, PathGuard};

impl PathGuard {
    /// The UTF-8 text of `path`, or `None` when nothing exists there.
    ///
    /// Every server-side read of a project file goes through here (or [`PathGuard::read`]) so
    /// that a link in the repository never makes the server read outside the root: links are
    /// followed only while they stay beneath it, special files are refused, and the read cap
    /// holds.
    pub fn read_text_if_exists(&self, path: &str) -> Result<Option<String>, PathError> {
        match self.read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(PathError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
