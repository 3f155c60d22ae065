//! The few summaries a call query needs, found through the index's call and callable rows
//! ([`crate::index::call_rows`]), so callers and callees are resolved in a small graph
//! instead of the whole project.
//!
//! Invariant (checked against full builds by `tests/suite/focus_calls.rs`): for every key
//! asked with [`CallFocus::callers_of`] or [`CallFocus::callees_of`], the graph from
//! [`CallFocus::graph`] has exactly the full graph's edges into (or out of) that key. It
//! holds because:
//!
//! - every call site that can resolve to a key is loaded: one whose callee is written as
//!   the key's simple name, and for a constructor also as any constructor name or the
//!   simple name of the type or of any type below it (constructors are inherited); every
//!   call site a key makes is loaded: those whose caller has the key's name and type name
//!   (or file, for a free function);
//! - only those call sites are resolved, in a graph holding everything their resolution
//!   reads ([`crate::calls`]): every declaration of the caller's type, the receiver's type
//!   and the callee as a type name, with their ancestry ([`crate::focus::load_around`]);
//!   every type with a method of the callee's name and every file with a function of that
//!   name when at most [`MAX_CANDIDATES`] exist, and otherwise the name is marked crowded
//!   (counted in the callable rows), so name-only resolution skips it as the full graph's
//!   would;
//! - edges merge across files in path order, as in a full build, and every file
//!   contributing to an edge of the key is among the loaded ones.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::calls::resolve::CONSTRUCTORS;
use crate::calls::{CallIndex, Crowded, MAX_CANDIDATES};
use crate::focus::{Reach, load, load_around};
use crate::graph::ProjectGraph;
use crate::index::call_rows::{SiteRow, caller_name, receiver_kind};
use crate::index::rows::simple_name;
use crate::index::{CodeIndex, IndexError};
use crate::language::Lang;
use crate::summary::{CallSite, FileSummary, ReceiverKind};

/// A growing set of call sites whose edges are exact, with what resolving them reads.
pub(crate) struct CallFocus<'i> {
    index: &'i CodeIndex,
    /// Every summary loaded, by path.
    files: BTreeMap<String, FileSummary>,
    /// The call sites to resolve: positions in their file's calls.
    sites: BTreeMap<String, BTreeSet<usize>>,
    /// Type names whose declarations and ancestry are loaded.
    types: BTreeSet<String>,
    /// Callee names whose by-name candidates are loaded (or known crowded).
    callees: BTreeSet<String>,
    callers_asked: BTreeSet<String>,
    callees_asked: BTreeSet<String>,
    crowded: Crowded,
    built: Option<Arc<ProjectGraph>>,
}

impl<'i> CallFocus<'i> {
    pub(crate) fn new(index: &'i CodeIndex) -> CallFocus<'i> {
        CallFocus {
            index,
            files: BTreeMap::new(),
            sites: BTreeMap::new(),
            types: BTreeSet::new(),
            callees: BTreeSet::new(),
            callers_asked: BTreeSet::new(),
            callees_asked: BTreeSet::new(),
            crowded: Crowded::default(),
            built: None,
        }
    }

    /// Makes the edges into `key` exact.
    pub(crate) fn callers_of(&mut self, key: &str) -> Result<(), IndexError> {
        if !self.callers_asked.insert(key.to_string()) {
            return Ok(());
        }
        let target = self.target(key)?;
        for name in &target.names {
            let paths: BTreeSet<String> = self
                .index
                .sites_calling(name)?
                .into_iter()
                .filter(|row| target.may_resolve_row(name, row))
                .map(|row| row.path)
                .collect();
            for path in paths {
                self.add_sites(&path, |call| target.may_resolve(call))?;
            }
        }
        Ok(())
    }

    /// Makes the edges out of `key` exact.
    pub(crate) fn callees_of(&mut self, key: &str) -> Result<(), IndexError> {
        if !self.callees_asked.insert(key.to_string()) {
            return Ok(());
        }
        // A key reads as `Type.method` or `path::function`; try both readings.
        if let Some((ty, method)) = key.rsplit_once('.') {
            let ty = simple_name(ty).to_string();
            for (path, caller_type) in self.index.files_called_from(method)? {
                if caller_type.as_deref() == Some(ty.as_str()) {
                    self.add_sites(&path, |call| {
                        caller_name(call) == method
                            && call.caller_type.as_deref().map(simple_name) == Some(ty.as_str())
                    })?;
                }
            }
        }
        if let Some((file, function)) = key.rsplit_once("::") {
            for (path, caller_type) in self.index.files_called_from(function)? {
                if caller_type.is_none() && path == file {
                    self.add_sites(&path, |call| {
                        caller_name(call) == function && call.caller_type.is_none()
                    })?;
                }
            }
        }
        Ok(())
    }

    /// What a call site resolving to `key` can look like.
    fn target(&self, key: &str) -> Result<Target, IndexError> {
        let mut target = Target::default();
        if let Some((_, function)) = key.rsplit_once("::") {
            target.names.insert(function.to_string());
            target.function = true;
            target.functions_by_name =
                self.index.callables_named(function)?.functions() <= MAX_CANDIDATES;
        }
        let Some((ty, method)) = key.rsplit_once('.') else {
            return Ok(target);
        };
        target.names.insert(method.to_string());
        target.methods_by_name = self.index.callables_named(method)?.owners.len() <= MAX_CANDIDATES;
        let ty = simple_name(ty);
        let go =
            self.index.files_declaring(ty)?.iter().any(|p| {
                crate::language::Lang::from_path(std::path::Path::new(p)) == Some(Lang::Go)
            });
        // Go types conform implicitly, so any Go type may reach a method of an interface.
        target.below = if go {
            Below::Any
        } else {
            Below::Names(self.names_below(ty, false)?)
        };
        if CONSTRUCTORS.contains(&method) || method == ty {
            // Constructors are inherited and called through any subclass's name.
            target
                .names
                .extend(CONSTRUCTORS.iter().map(|c| c.to_string()));
            target.names.extend(self.names_below(ty, true)?);
        }
        Ok(target)
    }

    /// `name` and the simple names of the types below it (only subclasses when
    /// `superclass_only`), by the parents their declarations name.
    fn names_below(
        &self,
        name: &str,
        superclass_only: bool,
    ) -> Result<BTreeSet<String>, IndexError> {
        let mut names = BTreeSet::from([name.to_string()]);
        let mut level = vec![name.to_string()];
        while let Some(n) = level.pop() {
            for child in self.index.children_of(&n, superclass_only)? {
                if names.insert(child.clone()) {
                    level.push(child);
                }
            }
        }
        Ok(names)
    }

    /// Adds the call sites of `path` that `keep` selects, and loads what resolving them
    /// reads.
    pub(crate) fn add_sites(
        &mut self,
        path: &str,
        keep: impl Fn(&CallSite) -> bool,
    ) -> Result<(), IndexError> {
        load(self.index, path, &mut self.files)?;
        let Some(file) = self.files.get(path) else {
            return Ok(());
        };
        let sites = self.sites.entry(path.to_string()).or_default();
        let mut types = Vec::new();
        let mut callees = Vec::new();
        for (i, call) in file.calls.iter().enumerate() {
            if !keep(call) || !sites.insert(i) {
                continue;
            }
            self.built = None;
            types.extend(call.caller_type.clone());
            types.extend(call.receiver_type.clone());
            types.push(call.callee.clone());
            callees.push(call.callee.clone());
        }
        for t in types {
            self.load_type(&t)?;
        }
        for c in callees {
            self.load_callee(&c)?;
        }
        Ok(())
    }

    /// Every declaration of the types named `name`, with their ancestry.
    pub(crate) fn load_type(&mut self, name: &str) -> Result<(), IndexError> {
        if self.types.insert(name.to_string()) {
            self.built = None;
            load_around(
                self.index,
                name,
                Reach::subclasses(Some(0)),
                &mut self.files,
            )?;
        }
        Ok(())
    }

    /// The methods and functions named `name`, unless more than name-only resolution
    /// considers share it.
    fn load_callee(&mut self, name: &str) -> Result<(), IndexError> {
        if !self.callees.insert(name.to_string()) {
            return Ok(());
        }
        self.built = None;
        let found = self.index.callables_named(name)?;
        if found.owners.len() > MAX_CANDIDATES {
            self.crowded.methods.insert(name.to_string());
        } else {
            for owner in &found.owners {
                for path in self.index.files_declaring(owner)? {
                    load(self.index, &path, &mut self.files)?;
                }
            }
        }
        if found.functions() > MAX_CANDIDATES {
            self.crowded.functions.insert(name.to_string());
        } else {
            for path in found.function_files.keys() {
                load(self.index, path, &mut self.files)?;
            }
        }
        Ok(())
    }

    /// A graph of the loaded summaries whose call index holds the edges of the chosen call
    /// sites (exact for the keys asked so far).
    pub(crate) fn graph(&mut self) -> Arc<ProjectGraph> {
        if let Some(g) = &self.built {
            return Arc::clone(g);
        }
        // The types come from every loaded summary; the call index from the chosen sites.
        let mut graph = types_graph(&self.files);
        let chosen: Vec<FileSummary> = self
            .sites
            .iter()
            .filter_map(|(path, sites)| {
                let f = self.files.get(path)?;
                Some(FileSummary {
                    path: f.path.clone(),
                    language: f.language,
                    line_count: f.line_count,
                    imports: Vec::new(),
                    types: Vec::new(),
                    functions: Vec::new(),
                    calls: sites
                        .iter()
                        .filter_map(|i| f.calls.get(*i).cloned())
                        .collect(),
                    has_entry_point: false,
                })
            })
            .collect();
        let refs: Vec<&FileSummary> = chosen.iter().collect();
        graph.calls = CallIndex::of_files(&graph, &self.crowded, &refs);
        let graph = Arc::new(graph);
        self.built = Some(Arc::clone(&graph));
        graph
    }

    /// A loaded summary.
    pub(crate) fn summary(&self, path: &str) -> Option<&FileSummary> {
        self.files.get(path)
    }

    /// Number of summaries loaded.
    pub(crate) fn loaded(&self) -> usize {
        self.files.len()
    }
}

/// The types and functions of these summaries, without resolving their call sites.
pub(crate) fn types_graph(files: &BTreeMap<String, FileSummary>) -> ProjectGraph {
    let stripped: Vec<FileSummary> = files
        .values()
        .map(|f| FileSummary {
            calls: Vec::new(),
            ..f.clone()
        })
        .collect();
    ProjectGraph::build(&stripped)
}

/// Which types a method key's type may be reached from.
#[derive(Debug, Default)]
enum Below {
    /// Not a method key.
    #[default]
    None,
    /// These simple names (the type's own and those of every type below it).
    Names(BTreeSet<String>),
    /// Any type (Go: conformance is implicit).
    Any,
}

impl Below {
    fn holds(&self, name: Option<&str>) -> bool {
        match self {
            Below::None => false,
            Below::Names(names) => name.is_some_and(|n| names.contains(simple_name(n))),
            Below::Any => true,
        }
    }
}

/// What a call site must look like to possibly resolve to a key, following the order of
/// evidence in [`crate::calls`]: a known receiver type leads only to methods of that type
/// and its ancestors, so the key's type must be it or above it; name-only resolution
/// reaches the key only when few enough callables share its name.
#[derive(Debug, Default)]
struct Target {
    /// Names the callee may be written with.
    names: BTreeSet<String>,
    below: Below,
    /// The key reads as a free function `path::name`.
    function: bool,
    /// At most [`MAX_CANDIDATES`] types have a method of the key's method name.
    methods_by_name: bool,
    /// At most [`MAX_CANDIDATES`] free functions have the key's function name.
    functions_by_name: bool,
}

impl Target {
    fn may_resolve(&self, call: &CallSite) -> bool {
        self.names.contains(&call.callee)
            && self.may_resolve_shape(
                call.receiver_kind,
                call.receiver_type.as_deref(),
                call.caller_type.as_deref(),
                &call.callee,
            )
    }

    fn may_resolve_row(&self, callee: &str, row: &SiteRow) -> bool {
        let kind = [
            ReceiverKind::None,
            ReceiverKind::SelfRef,
            ReceiverKind::Super,
            ReceiverKind::Typed,
            ReceiverKind::TypeName,
            ReceiverKind::Unknown,
        ]
        .into_iter()
        .find(|k| receiver_kind(*k) == row.receiver_kind);
        // An unknown kind name (a newer format) keeps the row.
        kind.is_none_or(|kind| {
            self.may_resolve_shape(
                kind,
                row.receiver_type.as_deref(),
                row.caller_type.as_deref(),
                callee,
            )
        })
    }

    fn may_resolve_shape(
        &self,
        kind: ReceiverKind,
        receiver_type: Option<&str>,
        caller_type: Option<&str>,
        callee: &str,
    ) -> bool {
        let by_name = (self.methods_by_name && !matches!(self.below, Below::None))
            || (self.function && self.functions_by_name);
        match kind {
            ReceiverKind::Typed | ReceiverKind::TypeName => self.below.holds(receiver_type),
            ReceiverKind::SelfRef => self.below.holds(receiver_type) || by_name,
            ReceiverKind::Super => true,
            ReceiverKind::None => {
                self.function
                    || by_name
                    || self.below.holds(caller_type)
                    || self.below.holds(Some(callee))
            }
            ReceiverKind::Unknown => by_name,
        }
    }
}
