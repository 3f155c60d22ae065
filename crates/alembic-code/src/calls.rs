//! Call-graph resolution: from call sites to methods, with a confidence.
//!
//! Order of evidence, strongest first: the receiver's type known in the file (self,
//! super, typed local, type name) → the caller's own type (implicit self) → free
//! functions by name (same file, then anywhere) → any method of that name (only when the
//! name is rare enough to be meaningful, at most [`MAX_CANDIDATES`]).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::graph::{ProjectGraph, function_key, method_key};
use crate::language::Lang;
use crate::summary::{CallSite, FileSummary, ReceiverKind};

/// A name shared by more methods than this is not resolved by name alone.
pub const MAX_CANDIDATES: usize = 5;

/// Names of constructors across languages.
const CONSTRUCTORS: &[&str] = &["init", "constructor", "__init__", "new"];

/// How an edge's callee was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Receiver type known in the file (self, super, typed local, type name).
    ReceiverType,
    /// Bare call inside a method of the type that has it.
    ImplicitSelf,
    /// Constructor call through the type name.
    Constructor,
    /// Free function in the same file.
    SameFile,
    /// Matched by name only.
    ByName,
    /// Not found in the project (library or unknown receiver).
    Unresolved,
}

/// One caller → callee relation (call sites of the same pair are merged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallEdge {
    /// Key of the calling method or function (`Type.method`, `path::function`).
    pub caller: String,
    /// Key of the callee when resolved.
    pub callee: Option<String>,
    /// Name as written at the call site.
    pub callee_name: String,
    /// Receiver type when known, for unresolved edges.
    pub receiver_type: Option<String>,
    pub file: String,
    /// First call site.
    pub line: usize,
    /// Number of call sites merged into this edge.
    pub count: usize,
    /// 0–1: how sure the resolution is.
    pub confidence: f32,
    pub resolution: Resolution,
}

/// All edges with indexes by caller and callee.
#[derive(Debug, Clone, Default)]
pub struct CallIndex {
    pub edges: Vec<CallEdge>,
    by_callee: HashMap<String, Vec<usize>>,
    by_caller: HashMap<String, Vec<usize>>,
}

impl CallIndex {
    pub(crate) fn build(graph: &ProjectGraph, files: &[&FileSummary]) -> CallIndex {
        let names = MethodNames::build(graph);
        let mut lookups = Lookups::new(graph);
        let mut index = CallIndex::default();
        let mut seen: HashMap<(String, String), usize> = HashMap::new();
        for file in files {
            for call in &file.calls {
                let caller = caller_key(file, call);
                for (callee, confidence, resolution) in resolve(&mut lookups, &names, file, call) {
                    let target = callee
                        .clone()
                        .unwrap_or_else(|| format!("?{}", call.callee));
                    if let Some(&i) = seen.get(&(caller.clone(), target.clone())) {
                        let edge = &mut index.edges[i];
                        edge.count += 1;
                        edge.confidence = edge.confidence.max(confidence);
                        continue;
                    }
                    seen.insert((caller.clone(), target), index.edges.len());
                    index.edges.push(CallEdge {
                        caller: caller.clone(),
                        callee,
                        callee_name: call.callee.clone(),
                        receiver_type: call.receiver_type.clone(),
                        file: file.path.clone(),
                        line: call.line,
                        count: 1,
                        confidence,
                        resolution,
                    });
                }
            }
        }
        index.reindex();
        index
    }

    fn reindex(&mut self) {
        for (i, e) in self.edges.iter().enumerate() {
            self.by_caller.entry(e.caller.clone()).or_default().push(i);
            if let Some(c) = &e.callee {
                self.by_callee.entry(c.clone()).or_default().push(i);
            }
        }
    }

    pub fn callers(&self, key: &str) -> Vec<&CallEdge> {
        self.by_callee
            .get(key)
            .map(|ix| ix.iter().map(|&i| &self.edges[i]).collect())
            .unwrap_or_default()
    }

    pub fn callees(&self, key: &str) -> Vec<&CallEdge> {
        self.by_caller
            .get(key)
            .map(|ix| ix.iter().map(|&i| &self.edges[i]).collect())
            .unwrap_or_default()
    }

    /// True when `key` appears as a caller or resolved callee.
    pub fn is_known(&self, key: &str) -> bool {
        self.by_caller.contains_key(key) || self.by_callee.contains_key(key)
    }

    /// Transitive callers of `key` up to `max_depth`, nearest first.
    pub fn transitive_callers(&self, key: &str, max_depth: usize) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut seen = HashSet::from([key.to_string()]);
        let mut frontier = vec![key.to_string()];
        for depth in 1..=max_depth {
            let mut next = Vec::new();
            for k in &frontier {
                for e in self.callers(k) {
                    if seen.insert(e.caller.clone()) {
                        out.push((e.caller.clone(), depth));
                        next.push(e.caller.clone());
                    }
                }
            }
            frontier = next;
        }
        out
    }
}

/// Key of the function a call site sits in; top-level code gets `path::<top-level>`.
fn caller_key(file: &FileSummary, call: &CallSite) -> String {
    match (&call.caller_type, &call.caller) {
        (Some(t), Some(m)) => method_key(t, m),
        (None, Some(f)) => function_key(&file.path, f),
        (Some(t), None) => method_key(t, "<body>"),
        (None, None) => function_key(&file.path, "<top-level>"),
    }
}

/// Method keys by method name, for name-only resolution.
struct MethodNames {
    methods: HashMap<String, Vec<String>>,
}

impl MethodNames {
    fn build(graph: &ProjectGraph) -> MethodNames {
        let mut methods: HashMap<String, Vec<String>> = HashMap::new();
        for info in graph.types.values() {
            for m in &info.methods {
                methods
                    .entry(m.name.clone())
                    .or_default()
                    .push(method_key(&info.name, &m.name));
            }
        }
        MethodNames { methods }
    }
}

type Resolved = Vec<(Option<String>, f32, Resolution)>;

/// Memoised method lookups: a big project makes hundreds of thousands of calls on a few
/// thousand (type, method) pairs, and one lookup walks the type's whole ancestry.
struct Lookups<'g> {
    graph: &'g ProjectGraph,
    memo: HashMap<(String, String), Option<String>>,
}

impl<'g> Lookups<'g> {
    fn new(graph: &'g ProjectGraph) -> Lookups<'g> {
        Lookups {
            graph,
            memo: HashMap::new(),
        }
    }

    /// Key of `method` as found on `type_name` or its ancestors.
    fn method(&mut self, type_name: &str, method: &str) -> Option<String> {
        let graph = self.graph;
        self.memo
            .entry((type_name.to_string(), method.to_string()))
            .or_insert_with(|| {
                graph
                    .lookup_method(type_name, method)
                    .map(|(t, m)| method_key(&t.name, &m.name))
            })
            .clone()
    }

    fn on_type(&mut self, t: &str, call: &CallSite, confidence: f32) -> Option<Resolved> {
        let key = self.method(t, &call.callee)?;
        Some(vec![(Some(key), confidence, Resolution::ReceiverType)])
    }
}

fn resolve(
    lookups: &mut Lookups,
    names: &MethodNames,
    file: &FileSummary,
    call: &CallSite,
) -> Resolved {
    let graph = lookups.graph;
    let found = match call.receiver_kind {
        ReceiverKind::SelfRef => call
            .receiver_type
            .as_deref()
            .and_then(|t| lookups.on_type(t, call, 0.95)),
        ReceiverKind::Super => call
            .caller_type
            .as_deref()
            .and_then(|t| graph.types.get(t))
            .and_then(|t| t.superclass.clone())
            .and_then(|s| lookups.on_type(&s, call, 0.95)),
        ReceiverKind::Typed | ReceiverKind::TypeName => {
            let t = call.receiver_type.as_deref().unwrap_or("");
            constructor(graph, t, &call.callee).or_else(|| lookups.on_type(t, call, 0.9))
        }
        ReceiverKind::None => bare_call(lookups, file, call),
        ReceiverKind::Unknown => None,
    };
    if let Some(found) = found {
        return found;
    }
    // The receiver type, when known, is outside the project: do not guess by name.
    let receiver_known = call
        .receiver_type
        .as_deref()
        .is_some_and(|t| graph.types.contains_key(t))
        || matches!(
            call.receiver_kind,
            ReceiverKind::Typed | ReceiverKind::TypeName
        );
    if receiver_known {
        return vec![(None, 0.0, Resolution::Unresolved)];
    }
    by_name(graph, names, file, call).unwrap_or_else(|| vec![(None, 0.0, Resolution::Unresolved)])
}

/// `Circle(…)`, `new Circle()`, `Circle::new()`, `[[Circle alloc] init]`; constructors
/// are inherited (Swift, Python, JavaScript), so ancestors are searched too.
fn constructor(graph: &ProjectGraph, type_name: &str, callee: &str) -> Option<Resolved> {
    if !graph.types.contains_key(type_name) {
        return None;
    }
    let names: Vec<&str> = if callee == type_name {
        CONSTRUCTORS.to_vec()
    } else if CONSTRUCTORS.contains(&callee) {
        vec![callee]
    } else {
        return None;
    };
    for ancestor in graph.inheritance_chain(type_name) {
        let Some(info) = graph.types.get(&ancestor) else {
            continue;
        };
        // Java/C++/Kotlin constructors are named after their own class.
        let own =
            |m: &&crate::graph::MethodInfo| names.contains(&m.name.as_str()) || m.name == ancestor;
        if let Some(m) = info.methods.iter().find(own) {
            return Some(vec![(
                Some(method_key(&info.name, &m.name)),
                0.9,
                Resolution::Constructor,
            )]);
        }
    }
    None
}

fn bare_call(lookups: &mut Lookups, file: &FileSummary, call: &CallSite) -> Option<Resolved> {
    let graph = lookups.graph;
    if graph.types.contains_key(&call.callee) {
        return constructor(graph, &call.callee, &call.callee);
    }
    if let Some(t) = call.caller_type.as_deref()
        && let Some(key) = lookups.method(t, &call.callee)
    {
        return Some(vec![(Some(key), 0.85, Resolution::ImplicitSelf)]);
    }
    let candidates = graph.functions.get(&call.callee)?;
    if let Some(f) = candidates.iter().find(|f| f.file == file.path) {
        return Some(vec![(Some(f.key.clone()), 0.9, Resolution::SameFile)]);
    }
    if candidates.len() > MAX_CANDIDATES {
        return None;
    }
    spread(candidates.iter().map(|f| f.key.clone()).collect(), 0.8)
}

fn by_name(
    graph: &ProjectGraph,
    names: &MethodNames,
    file: &FileSummary,
    call: &CallSite,
) -> Option<Resolved> {
    let methods = names
        .methods
        .get(&call.callee)
        .map_or(&[][..], Vec::as_slice);
    if methods.len() > MAX_CANDIDATES {
        return None;
    }
    let mut keys: Vec<String> = methods.to_vec();
    // `pkg.Func()` / `module.func()` call free functions in Go and Python; elsewhere a
    // receiver means a method (`console.log` is not the project's `log`).
    let module_call = matches!(file.language, Lang::Go | Lang::Python)
        && call.receiver.as_deref().is_some_and(|r| {
            r.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        });
    if (call.receiver.is_none() || module_call)
        && let Some(fs) = graph.functions.get(&call.callee)
        && fs.len() <= MAX_CANDIDATES
    {
        keys.extend(fs.iter().map(|f| f.key.clone()));
    }
    spread(keys, 0.6)
}

/// One candidate gets `best`; several share it; too many are not resolved.
fn spread(keys: Vec<String>, best: f32) -> Option<Resolved> {
    if keys.is_empty() || keys.len() > MAX_CANDIDATES {
        return None;
    }
    let share = if keys.len() == 1 {
        best
    } else {
        best / keys.len() as f32
    };
    Some(
        keys.into_iter()
            .map(|k| (Some(k), round2(share), Resolution::ByName))
            .collect(),
    )
}

fn round2(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}
