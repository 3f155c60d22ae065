//! [`CallView`]: what the call-graph and entity queries read, from the whole-project graph
//! when the service already holds it, else from the index's rows and the few summaries
//! they point to ([`crate::focus_calls`], [`crate::focus`]), with the same answers.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use crate::focus::{load, load_around};
use crate::focus_calls::{CallFocus, types_graph};
use crate::graph::{ProjectGraph, method_key};
use crate::index::rows::simple_name;
use crate::index::{CodeIndex, IndexError};
use crate::summary::FileSummary;
use crate::topology::module_of;

/// The call and entity data of one query.
pub(crate) enum CallView<'i> {
    Full(Arc<ProjectGraph>),
    Focused {
        index: &'i CodeIndex,
        calls: Box<CallFocus<'i>>,
    },
}

impl<'i> CallView<'i> {
    pub(crate) fn focused(index: &'i CodeIndex) -> CallView<'i> {
        CallView::Focused {
            index,
            calls: Box::new(CallFocus::new(index)),
        }
    }

    /// A graph whose edges into each of `callers_of` and out of each of `callees_of` are
    /// the whole project's (other edges may be missing in a focused view).
    pub(crate) fn edges(
        &mut self,
        callers_of: &[String],
        callees_of: &[String],
    ) -> Result<Arc<ProjectGraph>, IndexError> {
        match self {
            CallView::Full(g) => Ok(Arc::clone(g)),
            CallView::Focused { calls, .. } => {
                for k in callers_of {
                    calls.callers_of(k)?;
                }
                for k in callees_of {
                    calls.callees_of(k)?;
                }
                Ok(calls.graph())
            }
        }
    }

    /// Transitive callers of `key` up to `max_depth`, nearest first, reading one level of
    /// edges at a time.
    pub(crate) fn transitive_callers(
        &mut self,
        key: &str,
        max_depth: usize,
    ) -> Result<Vec<(String, usize)>, IndexError> {
        let mut each = self.transitive_callers_of_each(&[key.to_string()], max_depth)?;
        Ok(each.pop().unwrap_or_default())
    }

    /// [`CallView::transitive_callers`] of each key, reading the edges of every key's
    /// level at once (one focused graph per level, not per key and level).
    pub(crate) fn transitive_callers_of_each(
        &mut self,
        keys: &[String],
        max_depth: usize,
    ) -> Result<Vec<Vec<(String, usize)>>, IndexError> {
        struct Walk {
            out: Vec<(String, usize)>,
            seen: HashSet<String>,
            frontier: Vec<String>,
        }
        let mut walks: Vec<Walk> = keys
            .iter()
            .map(|k| Walk {
                out: Vec::new(),
                seen: HashSet::from([k.clone()]),
                frontier: vec![k.clone()],
            })
            .collect();
        for depth in 1..=max_depth {
            let level: Vec<String> = walks
                .iter()
                .flat_map(|w| w.frontier.iter().cloned())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let g = self.edges(&level, &[])?;
            for w in &mut walks {
                let mut next = Vec::new();
                for k in &w.frontier {
                    for e in g.callers(k) {
                        if w.seen.insert(e.caller.clone()) {
                            w.out.push((e.caller.clone(), depth));
                            next.push(e.caller.clone());
                        }
                    }
                }
                w.frontier = next;
            }
        }
        Ok(walks.into_iter().map(|w| w.out).collect())
    }

    /// [`ProjectGraph::find_callables`] over the whole project.
    pub(crate) fn find_callables(&mut self, query: &str) -> Result<Vec<String>, IndexError> {
        let index = match self {
            CallView::Full(g) => return Ok(g.find_callables(query)),
            CallView::Focused { index, .. } => *index,
        };
        let mut files = BTreeMap::new();
        if let Some((class, _)) = query.rsplit_once('.') {
            // The types of that name and their ancestors, where the method may be inherited.
            load_around(
                index,
                class,
                crate::focus::Reach::subclasses(Some(0)),
                &mut files,
            )?;
        } else {
            let found = index.callables_named(query)?;
            for owner in &found.owners {
                load_declarations(index, owner, &mut files)?;
            }
            for path in found.function_files.keys() {
                load(index, path, &mut files)?;
            }
        }
        // No call index: a query without a dot never names a caller or callee key (every
        // key holds a dot, from the type's method or the file's extension).
        Ok(types_graph(&files).find_callables(query))
    }

    /// Every method key of the whole project (for "did you mean").
    pub(crate) fn method_keys(&mut self) -> Result<BTreeSet<String>, IndexError> {
        let index = match self {
            CallView::Full(g) => {
                return Ok(g
                    .types
                    .values()
                    .flat_map(|t| t.methods.iter().map(|m| method_key(&t.name, &m.name)))
                    .collect());
            }
            CallView::Focused { index, .. } => *index,
        };
        let shared = index.shared_type_names()?;
        let mut keys = BTreeSet::new();
        let mut files = BTreeMap::new();
        let mut loaded = BTreeSet::new();
        for (name, owner, _) in index.all_callables()? {
            let Some(owner) = owner else { continue };
            if !shared.contains(&owner) {
                // A name declared in one scope at most is one type, keyed by the name.
                keys.insert(method_key(&owner, &name));
            } else if loaded.insert(owner.clone()) {
                load_declarations(index, &owner, &mut files)?;
            }
        }
        let g = types_graph(&files);
        keys.extend(
            g.types
                .values()
                .filter(|t| loaded.contains(&t.simple_name))
                .flat_map(|t| t.methods.iter().map(|m| method_key(&t.name, &m.name))),
        );
        Ok(keys)
    }

    /// A graph that answers about the types named `name` as the whole project's does, as
    /// far as `reach` ([`crate::focus`]).
    pub(crate) fn around(
        &mut self,
        name: &str,
        reach: crate::focus::Reach,
    ) -> Result<Arc<ProjectGraph>, IndexError> {
        match self {
            CallView::Full(g) => Ok(Arc::clone(g)),
            CallView::Focused { index, .. } => Ok(Arc::new(ProjectGraph::build(
                &crate::focus::summaries_around(index, name, reach)?,
            ))),
        }
    }

    /// The index a focused view reads (`None` for the full graph).
    pub(crate) fn index(&self) -> Option<&'i CodeIndex> {
        match self {
            CallView::Full(_) => None,
            CallView::Focused { index, .. } => Some(index),
        }
    }

    /// Every type key of the whole project.
    pub(crate) fn type_keys(&self) -> Result<BTreeSet<String>, IndexError> {
        match self {
            CallView::Full(g) => Ok(g.types.keys().cloned().collect()),
            CallView::Focused { index, .. } => index.type_keys(),
        }
    }

    /// Module names of the whole project (each file's directory).
    pub(crate) fn modules(&self) -> BTreeSet<String> {
        match self {
            CallView::Full(g) => g.modules.modules.keys().cloned().collect(),
            CallView::Focused { index, .. } => index.paths().map(module_of).collect(),
        }
    }

    /// A graph holding every type whose key contains `keyword` and every method and
    /// function whose name does (case-insensitively), as the whole project has them; when
    /// those are declared in more files than a search reads ([`within_limit`]), only the
    /// names a search lists first (exact, then shortest) up to that many files.
    pub(crate) fn search_graph(&mut self, keyword: &str) -> Result<SearchGraph, IndexError> {
        let index = match self {
            CallView::Full(g) => {
                return Ok(SearchGraph {
                    graph: Arc::clone(g),
                    left_out: 0,
                });
            }
            CallView::Focused { index, .. } => *index,
        };
        let k = keyword.to_lowercase();
        let mut names: BTreeSet<String> = index
            .type_keys_like(&k)?
            .into_iter()
            .filter(|key| key.to_lowercase().contains(&k))
            .map(|key| simple_name(&key).to_string())
            .collect();
        let mut paths = BTreeSet::new();
        for (name, owner, path) in index.callables_like(&k)? {
            if !name.to_lowercase().contains(&k) {
                continue;
            }
            match owner {
                Some(owner) => names.insert(owner),
                None => paths.insert(path),
            };
        }
        let (wanted, left_out) = within_limit(index, &k, names, paths)?;
        let mut files = BTreeMap::new();
        for path in &wanted {
            load(index, path, &mut files)?;
        }
        Ok(SearchGraph {
            graph: Arc::new(types_graph(&files)),
            left_out,
        })
    }

    /// Summaries read so far (0 for the full graph).
    pub(crate) fn loaded(&self) -> usize {
        match self {
            CallView::Full(_) => 0,
            CallView::Focused { calls, .. } => calls.loaded(),
        }
    }
}

/// What a search reads: the graph, and how many matching names were not loaded.
pub(crate) struct SearchGraph {
    pub(crate) graph: Arc<ProjectGraph>,
    /// Type names and function files left out to stay within the query's file limit.
    pub(crate) left_out: usize,
}

/// Most files a search reads: it lists 15 entities, exact and shortest names first, so a
/// few hundred files hold them (a search for `clone` would otherwise read every type
/// implementing `Clone`; reading 2,000 took 1.5 s and 316 MB on the registry).
const SEARCH_FILES: usize = 250;

/// The files declaring `names` and the function files `paths`, taken in the order a search
/// lists them (a name equal to `keyword`, then shorter names, then function files) while
/// they fit in [`CodeIndex::max_query_files`] (at most [`SEARCH_FILES`]); and how many
/// names or files did not fit.
fn within_limit(
    index: &CodeIndex,
    keyword: &str,
    names: BTreeSet<String>,
    paths: BTreeSet<String>,
) -> Result<(BTreeSet<String>, usize), IndexError> {
    let limit = index.max_query_files().min(SEARCH_FILES);
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort_by_key(|n| (n.to_lowercase() != keyword, n.len()));
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    let mut left_out = 0usize;
    for name in &names {
        if wanted.len() >= limit {
            left_out += 1; // full: the rest are not looked up at all
            continue;
        }
        let declaring = index.files_declaring(name)?;
        let new = declaring.iter().filter(|p| !wanted.contains(*p)).count();
        if !wanted.is_empty() && wanted.len() + new > limit {
            left_out += 1;
            continue;
        }
        wanted.extend(declaring);
    }
    for path in paths {
        if wanted.len() >= limit && !wanted.contains(&path) {
            left_out += 1;
            continue;
        }
        wanted.insert(path);
    }
    Ok((wanted, left_out))
}

/// Loads every file declaring a type of this simple name.
fn load_declarations(
    index: &CodeIndex,
    name: &str,
    files: &mut BTreeMap<String, FileSummary>,
) -> Result<(), IndexError> {
    for path in index.files_declaring(name)? {
        load(index, &path, files)?;
    }
    Ok(())
}
