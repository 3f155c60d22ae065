//! The few summaries a type query needs, found through the index's declaration and parent
//! rows, so the query builds a small [`ProjectGraph`] instead of loading the project.
//!
//! Invariant (checked against full builds by `tests/suite/focus.rs`): for the types named
//! `name`, the graph built from [`summaries_around`] has the same [`crate::TypeInfo`]s,
//! inheritance chains, ancestry and method lookups as the full graph, and the same
//! subclasses, conformers and overrides down to the requested depth. It holds:
//!
//! - every declaration of every name it contains, so merging and keys are as in the full
//!   graph (a type's merge reads only the declarations of its own simple name);
//! - the names the root's descendants have, down to `reach.depth`, found by the parents
//!   they name (`code_parents`: simple names, import aliases and qualifiers already
//!   resolved by the extractors), so every type naming a reached type as a parent
//!   is there (only as its superclass unless `reach.conformers`: a subclass relation comes
//!   only from a written superclass);
//! - the parents named by every declaration it holds, transitively, so parents
//!   resolve to the same keys (a parent's resolution reads the declarations of its name and
//!   the modules the child's own declarations import it from) and protocols taken for
//!   superclasses move the same way;
//! - every Go file as soon as it holds one, because Go conformance is implicit (method
//!   sets) and is computed over all Go types.
//!
//! Other types from the loaded files may be partial; no answer about the root reads them.

use std::collections::{BTreeMap, BTreeSet};

use crate::index::rows::simple_name;
use crate::index::{CodeIndex, IndexError, WideClosure};
use crate::language::Lang;
use crate::summary::FileSummary;

/// How far below the asked type a focused graph must be exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// Levels of descendants (`None`: all).
    pub depth: Option<usize>,
    /// Also conformers (implementations of a protocol), not only subclasses.
    pub conformers: bool,
}

impl Reach {
    /// Subclasses down to `depth` levels.
    pub fn subclasses(depth: Option<usize>) -> Reach {
        Reach {
            depth,
            conformers: false,
        }
    }

    /// Subclasses and conformers, all levels.
    pub fn all() -> Reach {
        Reach {
            depth: None,
            conformers: true,
        }
    }
}

/// The summaries the types named `name` (simple or qualified) need, with their
/// descendants as far as `reach`, in path order; [`IndexError::TooWide`] when those are
/// declared in more than [`CodeIndex::max_query_files`] files (counted from the rows
/// before any summary is read).
pub fn summaries_around(
    index: &CodeIndex,
    name: &str,
    reach: Reach,
) -> Result<Vec<FileSummary>, IndexError> {
    check_width(index, simple_name(name), reach)?;
    let mut files: BTreeMap<String, FileSummary> = BTreeMap::new();
    load_around(index, name, reach, &mut files)?;
    Ok(files.into_values().collect())
}

/// How many names a [`WideClosure`] lists.
const WIDE_FIRST: usize = 10;

/// Fails with [`IndexError::TooWide`] when the types named `root` and their descendants as
/// far as `reach` are declared in more files than one query reads. Reads rows only.
fn check_width(index: &CodeIndex, root: &str, reach: Reach) -> Result<(), IndexError> {
    let limit = index.max_query_files();
    if index.files_declaring(root)?.is_empty() {
        return Ok(()); // nothing will be read (see load_around)
    }
    let mut names: BTreeSet<String> = BTreeSet::from([root.to_string()]);
    descend(index, root, reach, &mut names)?;
    let mut files: BTreeSet<String> = BTreeSet::new();
    for n in &names {
        files.extend(index.files_declaring(n)?);
        if files.len() > limit {
            return Err(IndexError::TooWide(Box::new(WideClosure {
                name: root.to_string(),
                types: names.len() - 1,
                files: files.len(),
                limit,
                first: names
                    .iter()
                    .filter(|x| x.as_str() != root)
                    .take(WIDE_FIRST)
                    .cloned()
                    .collect(),
            })));
        }
    }
    Ok(())
}

/// Adds to `files` the summaries [`summaries_around`] returns (those already there are not
/// read again).
pub(crate) fn load_around(
    index: &CodeIndex,
    name: &str,
    reach: Reach,
    files: &mut BTreeMap<String, FileSummary>,
) -> Result<(), IndexError> {
    let root = simple_name(name).to_string();
    // No declaration of the name, no type of that name: the project's types that name it
    // as a parent (every `impl Debug`, say) would be read for nothing.
    if index.files_declaring(&root)?.is_empty() {
        return Ok(());
    }
    let mut names: BTreeSet<String> = BTreeSet::from([root.clone()]);
    descend(index, &root, reach, &mut names)?;
    let mut work: Vec<String> = names.iter().cloned().collect();
    let mut with_go = false;
    let mut go_seen = false;
    while let Some(n) = work.pop() {
        let paths = index.files_declaring(&n)?;
        for path in &paths {
            load(index, path, files)?;
            go_seen |= files.get(path).is_some_and(|f| f.language == Lang::Go);
        }
        for p in parents_written(files, &paths, &n) {
            for candidate in [p.as_str(), simple_name(&p)] {
                if names.insert(candidate.to_string()) {
                    work.push(candidate.to_string());
                }
            }
        }
        if !with_go && go_seen {
            with_go = true;
            let go_paths = index.files_in_language(Lang::Go)?;
            for path in &go_paths {
                load(index, path, files)?;
            }
            let go_names = go_paths
                .iter()
                .filter_map(|p| files.get(p))
                .flat_map(|f| f.types.iter().map(|t| t.name.clone()));
            for n in go_names.collect::<Vec<_>>() {
                if !n.is_empty() && names.insert(n.clone()) {
                    work.push(n);
                }
            }
        }
    }
    Ok(())
}

/// Adds the simple names of the types naming a reached name as a parent, level by level.
fn descend(
    index: &CodeIndex,
    root: &str,
    reach: Reach,
    names: &mut BTreeSet<String>,
) -> Result<(), IndexError> {
    let mut level = vec![root.to_string()];
    let mut reached = 0usize;
    while !level.is_empty() && reach.depth.is_none_or(|d| reached < d) {
        let mut next = Vec::new();
        for n in &level {
            for child in index.children_of(n, !reach.conformers)? {
                if names.insert(child.clone()) {
                    next.push(child);
                }
            }
        }
        level = next;
        reached += 1;
    }
    Ok(())
}

pub(crate) fn load(
    index: &CodeIndex,
    path: &str,
    files: &mut BTreeMap<String, FileSummary>,
) -> Result<(), IndexError> {
    if !files.contains_key(path)
        && let Some(summary) = index.summary(path)?
    {
        files.insert(path.to_string(), summary);
    }
    Ok(())
}

/// The parents (de-aliased names) of the declarations named `name` in `paths`.
fn parents_written(
    files: &BTreeMap<String, FileSummary>,
    paths: &[String],
    name: &str,
) -> Vec<String> {
    paths
        .iter()
        .filter_map(|p| files.get(p))
        .flat_map(|f| f.types.iter().filter(|t| t.name == name))
        .flat_map(|t| t.superclass.iter().chain(&t.conformances).cloned())
        .collect()
}
