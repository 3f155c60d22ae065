//! `query` tools: search recipes and candidates, entry details, stats, knowledge search,
//! related entries. Filters (category, language, type, status) apply inside the search, not
//! after the limit, and graph answers are computed before returning.

use std::sync::Arc;

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde_json::{Value, json};

use super::args::{entry_id, first_str, opt_str, usize_arg};
use super::{KnowledgeService, ServiceCache, tool};
use crate::model::{Entry, Kind, Status};
use crate::store::{Filter, Hit};

pub(crate) fn tools(cache: &Arc<ServiceCache>) -> Vec<ToolDefinition> {
    let q = |name, desc, schema, body| {
        tool(
            cache,
            name,
            desc,
            schema,
            ToolModule::Query,
            EffectClass::ReadOnly,
            body,
        )
    };
    vec![
        q(
            "search_recipes",
            "Search published recipes (the project's reviewed knowledge) by keyword, with optional \
             category, language, knowledge type and kind filters. Without a keyword, lists the newest.",
            filter_schema(json!({})),
            search_recipes,
        ),
        q(
            "search_candidates",
            "Search knowledge candidates under review (draft, submitted, approved, rejected) by \
             keyword and filters. `status` narrows to one state.",
            filter_schema(json!({"status": {"type": "string",
                "description": "draft, submitted, approved or rejected (pending = submitted)"}})),
            search_candidates,
        ),
        q(
            "get_recipe_detail",
            "Everything about one knowledge entry: fields, lifecycle history (who and why), \
             graph edges and open evolution proposals.",
            id_schema(json!({})),
            get_recipe_detail,
        ),
        q(
            "get_project_stats",
            "Counts of the knowledge base: entries by status, kind and language, graph edges, \
             open proposals and guard checks.",
            json!({"type": "object", "properties": {}}),
            get_project_stats,
        ),
        q(
            "search_knowledge",
            "Search all live knowledge (published recipes first in relevance, plus candidates \
             under review) and say how well each result matches the query.",
            json!({"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1},
                "topK": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
            }, "required": ["query"]}),
            search_knowledge,
        ),
        tool(
            cache,
            "knowledge_overview",
            "Overview of the knowledge base: counts, the most used published recipes, and a \
             hint on what to do next when it is empty or has candidates waiting for review.",
            json!({"type": "object", "properties": {
                "includeTopRecipes": {"type": "boolean", "default": true},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
            }}),
            ToolModule::Composite,
            EffectClass::ReadOnly,
            knowledge_overview,
        ),
        q(
            "get_related_recipes",
            "Entries connected to one entry in the knowledge graph (outgoing and incoming edges), \
             optionally of one relation.",
            id_schema(json!({"relation": {"type": "string",
                "description": "requires, extends, enforces, depends_on, inherits, implements, calls, prerequisite, related, ..."}})),
            get_related_recipes,
        ),
    ]
}

fn filter_schema(extra: Value) -> Value {
    let mut props = json!({
        "keyword": {"type": "string", "description": "words to search for (query is accepted too)"},
        "query": {"type": "string"},
        "category": {"type": "string"},
        "language": {"type": "string"},
        "knowledgeType": {"type": "string"},
        "kind": {"type": "string", "enum": ["rule", "pattern", "fact"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}
    });
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"type": "object", "properties": props})
}

fn id_schema(extra: Value) -> Value {
    let mut props = json!({
        "recipeId": {"type": "string", "description": "entry id (candidateId is accepted too)"},
        "candidateId": {"type": "string"}
    });
    if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"type": "object", "properties": props})
}

fn filter_from(args: &Value, statuses: Vec<Status>) -> Result<Filter, ToolError> {
    Ok(Filter {
        statuses,
        kind: opt_str(args, "kind")
            .map(str::parse::<Kind>)
            .transpose()
            .map_err(|e| ToolError::Invalid(e.to_string()))?,
        language: opt_str(args, "language").map(String::from),
        category: opt_str(args, "category").map(String::from),
        knowledge_type: opt_str(args, "knowledgeType").map(String::from),
        limit: usize_arg(args, "limit", 10, 100),
    })
}

/// Searches when a keyword is given, else lists; returns the JSON and text of the results.
fn find(
    service: &KnowledgeService,
    args: &Value,
    filter: &Filter,
) -> Result<ToolOutput, ToolError> {
    let keyword = first_str(args, &["keyword", "query"]);
    let hits: Vec<Hit> = match keyword {
        Some(k) => service.with(|kb| kb.search(k, filter))?,
        None => service
            .with(|kb| kb.list(filter))?
            .into_iter()
            .map(|entry| Hit { entry, score: 1.0 })
            .collect(),
    };
    let items: Vec<Value> = hits
        .iter()
        .map(|h| summary_json(&h.entry, keyword.map(|_| h.score)))
        .collect();
    let mut text = format!(
        "{} result(s){}\n",
        hits.len(),
        keyword.map(|k| format!(" for \"{k}\"")).unwrap_or_default()
    );
    for h in &hits {
        text.push_str(&line(&h.entry, keyword.map(|_| h.score)));
    }
    Ok(ToolOutput::new(
        json!({"items": items, "total": hits.len(), "keyword": keyword}),
        text.trim_end(),
    ))
}

fn search_recipes(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    find(s, args, &filter_from(args, vec![Status::Published])?)
}

fn search_candidates(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let statuses = match opt_str(args, "status") {
        Some(st) => {
            let st: Status = st
                .parse()
                .map_err(|e: crate::KnowledgeError| ToolError::Invalid(e.to_string()))?;
            vec![st]
        }
        None => Status::CANDIDATE.to_vec(),
    };
    find(s, args, &filter_from(args, statuses)?)
}

fn get_recipe_detail(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = entry_id(args)?;
    let (entry, history, edges, proposals) = s.with(|kb| {
        Ok((
            kb.get(id)?,
            kb.history(id)?,
            kb.neighbours(id, None)?,
            kb.proposals_for(id)?,
        ))
    })?;
    let mut text = line(&entry, None);
    if !entry.description.is_empty() {
        text.push_str(&format!("{}\n", entry.description));
    }
    if !entry.content.is_empty() {
        text.push_str(&format!("\n{}\n", entry.content));
    }
    if !entry.pattern.is_empty() {
        text.push_str(&format!("\n```\n{}\n```\n", entry.pattern));
    }
    if !entry.sources.is_empty() {
        text.push_str(&format!("sources: {}\n", entry.sources.join(", ")));
    }
    text.push_str("history:\n");
    for t in &history {
        let from = t.from.map_or("(new)".to_string(), |f| f.to_string());
        let why = t
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        text.push_str(&format!("  {from} -> {} by {}{why}\n", t.to, t.by));
    }
    for n in edges.outgoing.iter() {
        text.push_str(&format!(
            "  -{}-> {} {}\n",
            n.edge.relation, n.other_id, n.other_title
        ));
    }
    for n in edges.incoming.iter() {
        text.push_str(&format!(
            "  <-{}- {} {}\n",
            n.edge.relation, n.other_id, n.other_title
        ));
    }
    let data = json!({"entry": entry, "history": history, "edges": edges, "proposals": proposals});
    Ok(ToolOutput::new(data, text.trim_end()))
}

fn get_project_stats(
    s: &KnowledgeService,
    _: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let (stats, guard) = s.with(|kb| Ok((kb.stats()?, kb.guard_stats()?)))?;
    let by_status = stats
        .by_status
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "entries: {} (candidates {}, published recipes {}){}\ngraph edges: {}, open proposals: {}, guard checks: {} ({} violations)",
        stats.total,
        stats.candidates,
        stats.recipes,
        if by_status.is_empty() {
            String::new()
        } else {
            format!("; by status: {by_status}")
        },
        stats.edges,
        stats.open_proposals,
        guard.runs,
        guard.violations,
    );
    Ok(ToolOutput::new(
        json!({"knowledge": stats, "guard": guard}),
        text,
    ))
}

fn search_knowledge(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let query = first_str(args, &["query", "keyword"])
        .ok_or_else(|| ToolError::Invalid("\"query\" is required and must not be blank".into()))?;
    let filter = Filter {
        statuses: vec![Status::Published, Status::Approved, Status::Submitted],
        limit: usize_arg(args, "topK", 5, 20),
        ..Filter::default()
    };
    let mut hits = s.with(|kb| kb.search(query, &filter))?;
    // Published knowledge first among equally good matches: it has been reviewed.
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then((a.entry.status != Status::Published).cmp(&(b.entry.status != Status::Published)))
    });
    let top = hits.first().map_or(0.0, |h| h.score);
    let (confidence, hint) = match top {
        t if hits.is_empty() || t == 0.0 => (
            "none",
            "nothing matched: try other words, or search_project_code for source code",
        ),
        t if t > 0.7 => ("high", ""),
        t if t > 0.3 => ("medium", ""),
        _ => ("low", "weak matches: be more specific"),
    };
    let results: Vec<Value> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mut v = summary_json(&h.entry, Some(h.score));
            v["reasoning"] = json!({"whyRelevant": format!("matches {:.0}% of the query words", h.score * 100.0), "rank": i + 1});
            v
        })
        .collect();
    let mut text = format!(
        "{} result(s) for \"{query}\" (confidence {confidence})\n",
        hits.len()
    );
    for h in &hits {
        text.push_str(&line(&h.entry, Some(h.score)));
    }
    if !hint.is_empty() {
        text.push_str(hint);
    }
    let data = json!({"query": query, "results": results, "_meta": {"confidence": confidence, "hint": hint}});
    Ok(ToolOutput::new(data, text.trim_end()))
}

fn get_related_recipes(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = entry_id(args)?;
    let relation = opt_str(args, "relation");
    let n = s.with(|kb| kb.neighbours(id, relation))?;
    let mut text = format!(
        "{} outgoing, {} incoming edge(s) of {id}\n",
        n.outgoing.len(),
        n.incoming.len()
    );
    for x in &n.outgoing {
        text.push_str(&format!(
            "  -{}-> {} [{}] {}\n",
            x.edge.relation, x.other_id, x.other_status, x.other_title
        ));
    }
    for x in &n.incoming {
        text.push_str(&format!(
            "  <-{}- {} [{}] {}\n",
            x.edge.relation, x.other_id, x.other_status, x.other_title
        ));
    }
    let data = json!({"recipeId": id, "relation": relation, "outgoing": n.outgoing, "incoming": n.incoming});
    Ok(ToolOutput::new(data, text.trim_end()))
}

/// The fields of an entry a result list shows (content cut to 500 characters).
pub(crate) fn summary_json(e: &Entry, score: Option<f64>) -> Value {
    let mut v = json!({
        "id": e.id, "title": e.title, "status": e.status, "kind": e.kind,
        "knowledgeType": e.knowledge_type, "category": e.category, "language": e.language,
        "description": e.description,
        "content": e.content.chars().take(500).collect::<String>(),
        "quality": e.quality,
    });
    if let Some(s) = score {
        v["score"] = json!(s);
    }
    v
}

/// One line per entry for the model.
pub(crate) fn line(e: &Entry, score: Option<f64>) -> String {
    let lang = if e.language.is_empty() {
        String::new()
    } else {
        format!(", {}", e.language)
    };
    let score = score.map(|s| format!(" score {s:.2}")).unwrap_or_default();
    format!(
        "{} [{}] {} ({}{lang}){score}\n",
        e.id,
        e.status,
        e.title,
        e.kind.as_str()
    )
}

fn knowledge_overview(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let stats = s.with(|kb| kb.stats())?;
    let mut top = Vec::new();
    if super::args::bool_arg(args, "includeTopRecipes", true) {
        let filter = Filter {
            statuses: vec![Status::Published],
            limit: 100_000,
            ..Filter::default()
        };
        top = s.with(|kb| kb.list(&filter))?;
        let used = |e: &Entry| e.adoptions * 2 + e.applications;
        top.sort_by(|a, b| used(b).cmp(&used(a)).then(a.id.cmp(&b.id)));
        top.truncate(usize_arg(args, "limit", 5, 20));
    }
    let waiting = stats.by_status.get("submitted").copied().unwrap_or(0);
    let hint = if stats.total == 0 {
        "the knowledge base is empty: explore the code and submit_knowledge what you learn"
    } else if stats.recipes == 0 {
        "no published recipes yet: candidates are waiting for review"
    } else {
        ""
    };
    let mut text = format!(
        "{} entries: {} published recipes, {} candidates ({waiting} waiting for review)\n",
        stats.total, stats.recipes, stats.candidates
    );
    for e in &top {
        text.push_str(&line(e, None));
    }
    text.push_str(hint);
    let recipes: Vec<Value> = top.iter().map(|e| summary_json(e, None)).collect();
    let data = json!({"knowledge": stats, "topRecipes": recipes,
        "_meta": {"empty": stats.total == 0, "waitingForReview": waiting, "hint": hint}});
    Ok(ToolOutput::new(data, text.trim_end()))
}
