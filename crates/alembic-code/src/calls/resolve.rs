//! Resolving one file's call sites to callees, in the order of evidence the module
//! documentation describes, and merging them into edges.

use std::collections::{HashMap, HashSet};

use crate::graph::{ProjectGraph, function_key, method_key};
use crate::language::Lang;
use crate::summary::{CallSite, FileSummary, ReceiverKind};

use super::{CallEdge, EdgeKey, MAX_CANDIDATES, Resolution};

/// Names of constructors across languages.
pub(crate) const CONSTRUCTORS: &[&str] = &["init", "constructor", "__init__", "new"];

/// One file's call sites resolved and merged by (caller, callee).
pub(super) fn file_edges(
    lookups: &mut Lookups,
    names: &MethodNames,
    file: &FileSummary,
) -> HashMap<EdgeKey, CallEdge> {
    let mut edges: HashMap<EdgeKey, CallEdge> = HashMap::new();
    for call in &file.calls {
        let caller = caller_key(lookups.graph, file, call);
        for (callee, confidence, resolution) in resolve(lookups, names, file, call) {
            let target = callee
                .clone()
                .unwrap_or_else(|| format!("?{}", call.callee));
            match edges.entry((caller.clone(), target)) {
                std::collections::hash_map::Entry::Occupied(mut e) => {
                    let edge = e.get_mut();
                    edge.count += 1;
                    edge.confidence = edge.confidence.max(confidence);
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(CallEdge {
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
    }
    edges
}

/// Key of the function a call site sits in; top-level code gets `path::<top-level>`.
fn caller_key(graph: &ProjectGraph, file: &FileSummary, call: &CallSite) -> String {
    let caller_type = call
        .caller_type
        .as_deref()
        .map(|t| graph.resolve_type(t, &file.path).unwrap_or(t));
    match (caller_type, &call.caller) {
        (Some(t), Some(m)) => method_key(t, m),
        (None, Some(f)) => function_key(&file.path, f),
        (Some(t), None) => method_key(t, "<body>"),
        (None, None) => function_key(&file.path, "<top-level>"),
    }
}

/// Method keys by method name, for name-only resolution, and the names a focused graph
/// knows to be shared by more than [`MAX_CANDIDATES`] callables in the whole project
/// (its own lists of those are partial).
pub(super) struct MethodNames<'g> {
    pub(super) keys: &'g HashMap<String, Vec<String>>,
    pub(super) crowded: Option<&'g Crowded>,
}

/// Method and function names more than [`MAX_CANDIDATES`] callables of the whole project
/// share, as the index's callable rows count them; name-only resolution skips them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Crowded {
    pub methods: HashSet<String>,
    pub functions: HashSet<String>,
}

impl MethodNames<'_> {
    fn crowded_methods(&self, name: &str) -> bool {
        self.crowded.is_some_and(|c| c.methods.contains(name))
    }

    fn crowded_functions(&self, name: &str) -> bool {
        self.crowded.is_some_and(|c| c.functions.contains(name))
    }
}

type Resolved = Vec<(Option<String>, f32, Resolution)>;

/// Memoised method lookups: a big project makes hundreds of thousands of calls on a few
/// thousand (type, method) pairs, and one lookup walks the type's whole ancestry.
pub(super) struct Lookups<'g> {
    graph: &'g ProjectGraph,
    memo: HashMap<(String, String), Option<String>>,
}

impl<'g> Lookups<'g> {
    pub(super) fn new(graph: &'g ProjectGraph) -> Lookups<'g> {
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
    // Written type names mean the project type nearest to this file.
    let key = |t: &'_ str| graph.resolve_type(t, &file.path).map(str::to_string);
    let receiver_type = call
        .receiver_type
        .as_deref()
        .map(|t| key(t).unwrap_or_else(|| t.to_string()));
    let found = match call.receiver_kind {
        ReceiverKind::SelfRef => receiver_type
            .as_deref()
            .and_then(|t| lookups.on_type(t, call, 0.95)),
        ReceiverKind::Super => call
            .caller_type
            .as_deref()
            .and_then(key)
            .and_then(|t| graph.types.get(&t))
            .and_then(|t| t.superclass.clone())
            .and_then(|s| lookups.on_type(&s, call, 0.95)),
        ReceiverKind::Typed | ReceiverKind::TypeName => {
            let t = receiver_type.as_deref().unwrap_or("");
            constructor(graph, t, &call.callee).or_else(|| lookups.on_type(t, call, 0.9))
        }
        ReceiverKind::None => bare_call(lookups, names, file, call),
        ReceiverKind::Unknown => None,
    };
    if let Some(found) = found {
        return found;
    }
    // The receiver type, when known, is outside the project: do not guess by name.
    let receiver_known = receiver_type
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
/// are inherited (Swift, Python, JavaScript), so ancestors are searched too. `type_key`
/// is a type key; `callee` the name as written.
fn constructor(graph: &ProjectGraph, type_key: &str, callee: &str) -> Option<Resolved> {
    let info = graph.types.get(type_key)?;
    let names: Vec<&str> = if callee == info.simple_name {
        CONSTRUCTORS.to_vec()
    } else if CONSTRUCTORS.contains(&callee) {
        vec![callee]
    } else {
        return None;
    };
    for ancestor in graph.inheritance_chain(type_key) {
        let Some(info) = graph.types.get(&ancestor) else {
            continue;
        };
        // Java/C++/Kotlin constructors are named after their own class.
        let own = |m: &&crate::graph::MethodInfo| {
            names.contains(&m.name.as_str()) || m.name == info.simple_name
        };
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

fn bare_call(
    lookups: &mut Lookups,
    names: &MethodNames,
    file: &FileSummary,
    call: &CallSite,
) -> Option<Resolved> {
    let graph = lookups.graph;
    if let Some(t) = graph.resolve_type(&call.callee, &file.path) {
        return constructor(graph, t, &call.callee);
    }
    if let Some(t) = call.caller_type.as_deref()
        && let Some(key) =
            lookups.method(graph.resolve_type(t, &file.path).unwrap_or(t), &call.callee)
    {
        return Some(vec![(Some(key), 0.85, Resolution::ImplicitSelf)]);
    }
    let candidates = graph.functions.get(&call.callee)?;
    if let Some(f) = candidates.iter().find(|f| f.file == file.path) {
        return Some(vec![(Some(f.key.clone()), 0.9, Resolution::SameFile)]);
    }
    if candidates.len() > MAX_CANDIDATES || names.crowded_functions(&call.callee) {
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
    let methods = names.keys.get(&call.callee).map_or(&[][..], Vec::as_slice);
    if methods.len() > MAX_CANDIDATES || names.crowded_methods(&call.callee) {
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
        && !names.crowded_functions(&call.callee)
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
