//! `query` tools: search recipes and candidates, entry details, stats, knowledge search,
//! related entries. Filters (category, language, type, status) apply inside the search, not
//! after the limit, and graph answers are computed before returning.

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{Text, entry_id};
use super::{Knowledge, KnowledgeService, bind};
use crate::model::{Entry, Kind, Status};
use crate::store::{Filter, Hit};

/// Keyword and filters of `search_recipes`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SearchArgs {
    /// words to search for (query is accepted too)
    #[serde(default)]
    keyword: Text,
    #[serde(default)]
    query: Text,
    #[serde(default)]
    category: Text,
    #[serde(default)]
    language: Text,
    #[serde(default)]
    knowledge_type: Text,
    #[serde(default)]
    #[schemars(extend("enum" = ["rule", "pattern", "fact"]))]
    kind: Text,
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = 100))]
    limit: i64,
}

fn ten() -> i64 {
    10
}

/// `search_recipes`' arguments plus the candidate's state.
#[derive(Deserialize, schemars::JsonSchema)]
struct CandidateSearchArgs {
    #[serde(flatten)]
    search: SearchArgs,
    /// draft, submitted, approved or rejected (pending = submitted)
    #[serde(default)]
    status: Text,
}

/// One entry, by `recipeId` (or `candidateId`, or `id`).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EntryArgs {
    /// entry id (candidateId is accepted too)
    #[serde(default)]
    recipe_id: Text,
    #[serde(default)]
    candidate_id: Text,
    #[serde(default)]
    #[schemars(skip)]
    id: Text,
}

impl EntryArgs {
    fn id(&self) -> Result<&str, ToolError> {
        entry_id([&self.recipe_id, &self.candidate_id, &self.id])
    }
}

/// An entry and, optionally, one relation.
#[derive(Deserialize, schemars::JsonSchema)]
struct RelatedArgs {
    #[serde(flatten)]
    entry: EntryArgs,
    /// requires, extends, enforces, depends_on, inherits, implements, calls, prerequisite, related, ...
    #[serde(default)]
    relation: Text,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["query"]))]
struct KnowledgeSearchArgs {
    #[serde(default)]
    #[schemars(length(min = 1))]
    query: Text,
    #[serde(default)]
    #[schemars(skip)]
    keyword: Text,
    #[serde(default = "five")]
    #[schemars(range(min = 1, max = 20))]
    top_k: i64,
}

fn five() -> i64 {
    5
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct OverviewArgs {
    #[serde(default = "yes")]
    include_top_recipes: bool,
    #[serde(default = "five")]
    #[schemars(range(min = 1, max = 20))]
    limit: i64,
}

pub(crate) fn tools(state: &Knowledge) -> Vec<ToolDefinition> {
    vec![
        bind(
            query_tool::<SearchArgs>(
                "search_recipes",
                "Search published recipes (the project's reviewed knowledge) by keyword, with optional \
                 category, language, knowledge type and kind filters. Without a keyword, lists the newest.",
            ),
            state,
            search_recipes,
        ),
        bind(
            query_tool::<CandidateSearchArgs>(
                "search_candidates",
                "Search knowledge candidates under review (draft, submitted, approved, rejected) by \
                 keyword and filters. `status` narrows to one state.",
            ),
            state,
            search_candidates,
        ),
        bind(
            query_tool::<EntryArgs>(
                "get_recipe_detail",
                "Everything about one knowledge entry: fields, lifecycle history (who and why), \
                 graph edges and open evolution proposals.",
            ),
            state,
            get_recipe_detail,
        ),
        bind(
            query_tool::<NoArgs>(
                "get_project_stats",
                "Counts of the knowledge base: entries by status, kind and language, graph edges, \
                 open proposals and guard checks.",
            ),
            state,
            get_project_stats,
        ),
        bind(
            query_tool::<KnowledgeSearchArgs>(
                "search_knowledge",
                "Search all live knowledge (published recipes first in relevance, plus candidates \
                 under review) and say how well each result matches the query.",
            ),
            state,
            search_knowledge,
        ),
        bind(
            ToolDefinition::typed::<OverviewArgs>(
                "knowledge_overview",
                "Overview of the knowledge base: counts, the most used published recipes, and a \
                 hint on what to do next when it is empty or has candidates waiting for review.",
                ToolModule::Composite,
                EffectClass::ReadOnly,
            ),
            state,
            knowledge_overview,
        ),
        bind(
            query_tool::<RelatedArgs>(
                "get_related_recipes",
                "Entries connected to one entry in the knowledge graph (outgoing and incoming edges), \
                 optionally of one relation.",
            ),
            state,
            get_related_recipes,
        ),
    ]
}

fn query_tool<A: alembic_tools::ToolArgs>(
    name: &str,
    description: &str,
) -> alembic_tools::TypedTool<A> {
    ToolDefinition::typed::<A>(name, description, ToolModule::Query, EffectClass::ReadOnly)
}

fn filter_from(args: &SearchArgs, statuses: Vec<Status>) -> Result<Filter, ToolError> {
    Ok(Filter {
        statuses,
        kind: args
            .kind
            .get()
            .map(str::parse::<Kind>)
            .transpose()
            .map_err(|e| ToolError::Invalid(e.to_string()))?,
        language: args.language.get().map(String::from),
        category: args.category.get().map(String::from),
        knowledge_type: args.knowledge_type.get().map(String::from),
        limit: args.limit.clamp(1, 100) as usize,
    })
}

/// Searches when a keyword is given, else lists; returns the JSON and text of the results.
fn find(
    service: &KnowledgeService,
    args: &SearchArgs,
    filter: &Filter,
) -> Result<ToolOutput, ToolError> {
    let keyword = args.keyword.get().or(args.query.get());
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
    s: &Knowledge,
    args: SearchArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    find(&s.kb, &args, &filter_from(&args, vec![Status::Published])?)
}

fn search_candidates(
    s: &Knowledge,
    args: CandidateSearchArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let statuses = match args.status.get() {
        Some(st) => {
            let st: Status = st
                .parse()
                .map_err(|e: crate::KnowledgeError| ToolError::Invalid(e.to_string()))?;
            vec![st]
        }
        None => Status::CANDIDATE.to_vec(),
    };
    find(&s.kb, &args.search, &filter_from(&args.search, statuses)?)
}

fn get_recipe_detail(
    s: &Knowledge,
    args: EntryArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = args.id()?;
    let (entry, history, edges, proposals) = s.kb.with(|kb| {
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

fn get_project_stats(s: &Knowledge, _: NoArgs, _: &ToolContext) -> Result<ToolOutput, ToolError> {
    let (stats, guard) = s.kb.with(|kb| Ok((kb.stats()?, kb.guard_stats()?)))?;
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
    s: &Knowledge,
    args: KnowledgeSearchArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let query = match args.query.get() {
        Some(q) => q,
        None => args.keyword.required("query")?,
    };
    let filter = Filter {
        statuses: vec![Status::Published, Status::Approved, Status::Submitted],
        limit: args.top_k.clamp(1, 20) as usize,
        ..Filter::default()
    };
    let mut hits = s.kb.with(|kb| kb.search(query, &filter))?;
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
    s: &Knowledge,
    args: RelatedArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = args.entry.id()?;
    let relation = args.relation.get();
    let n = s.kb.with(|kb| kb.neighbours(id, relation))?;
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
    s: &Knowledge,
    args: OverviewArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let stats = s.kb.with(|kb| kb.stats())?;
    let mut top = Vec::new();
    if args.include_top_recipes {
        let filter = Filter {
            statuses: vec![Status::Published],
            limit: 100_000,
            ..Filter::default()
        };
        top = s.kb.with(|kb| kb.list(&filter))?;
        let used = |e: &Entry| e.adoptions * 2 + e.applications;
        top.sort_by(|a, b| used(b).cmp(&used(a)).then(a.id.cmp(&b.id)));
        top.truncate(args.limit.clamp(1, 20) as usize);
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
