//! `knowledge-graph` tools: `check_duplicate` (similar live entries by normalised title and
//! content) and `add_graph_edge` (a typed relation between two existing, different entries);
//! and the infrastructure tool `graph_impact_analysis` (what a change to an entry reaches).

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{AnyObject, Submission, Text};
use super::{Knowledge, bind};
use crate::model::{NewEntry, RELATIONS};
use crate::similar::{DUPLICATE_THRESHOLD, find_similar};

fn half() -> f64 {
    0.5
}

fn one() -> f64 {
    1.0
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DuplicateArgs {
    /// {title, description, content|summary, code|pattern}
    #[schemars(with = "Option<AnyObject>")]
    candidate: Option<Value>,
    #[serde(default)]
    candidate_id: Text,
    #[serde(default = "half")]
    #[schemars(range(min = 0.05, max = 1))]
    threshold: f64,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("required" = ["fromId", "toId", "relation"]))]
struct EdgeArgs {
    #[serde(default)]
    from_id: Text,
    #[serde(default)]
    to_id: Text,
    #[serde(default)]
    #[schemars(extend("enum" = RELATIONS))]
    relation: Text,
    #[serde(default = "one")]
    #[schemars(range(min = 0, max = 10))]
    weight: f64,
}

fn three() -> i64 {
    3
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ImpactArgs {
    /// the entry whose change is analysed
    #[schemars(length(min = 1))]
    recipe_id: String,
    /// how many edges away to follow
    #[serde(default = "three")]
    #[schemars(range(min = 1, max = 5))]
    max_depth: i64,
}

pub(crate) fn tools(state: &Knowledge) -> Vec<ToolDefinition> {
    vec![
        bind(
            ToolDefinition::typed::<DuplicateArgs>(
                "check_duplicate",
                "Find existing knowledge similar to a candidate (given inline, or a stored \
                 candidateId): same title, or similar title, prose and code. Reads only the \
                 knowledge base.",
                ToolModule::KnowledgeGraph,
                EffectClass::ReadOnly,
            ),
            state,
            check_duplicate,
        ),
        bind(
            ToolDefinition::typed::<EdgeArgs>(
                "add_graph_edge",
                "Record a typed relation between two knowledge entries (fromId -relation-> toId). \
                 Both must exist and differ; re-adding the same edge updates its weight.",
                ToolModule::KnowledgeGraph,
                EffectClass::WritesKnowledge,
            ),
            state,
            add_graph_edge,
        ),
        bind(
            ToolDefinition::typed::<ImpactArgs>(
                "graph_impact_analysis",
                "What a change to a knowledge entry affects: the entries that require, extend, \
                 enforce, depend on, inherit, implement, call or presuppose it, directly or \
                 through others, up to maxDepth edges away, each with its depth and the path of \
                 relations that reaches it.",
                ToolModule::Infrastructure,
                EffectClass::ReadOnly,
            ),
            state,
            graph_impact_analysis,
        ),
    ]
}

/// The candidate to compare: the inline object, else the stored entry (left out of the
/// comparison).
fn candidate_of(
    s: &Knowledge,
    args: DuplicateArgs,
) -> Result<(NewEntry, Option<String>), ToolError> {
    match (
        args.candidate.filter(Value::is_object),
        args.candidate_id.get(),
    ) {
        (Some(c), _) => Ok((Submission::from_value(c)?.into_new_entry()?, None)),
        (None, Some(id)) => {
            let e = s.kb.with(|kb| kb.get(id))?;
            let as_args = json!({"title": e.title, "description": e.description,
                "content": {"markdown": e.content, "pattern": e.pattern}});
            Ok((
                Submission::from_value(as_args)?.into_new_entry()?,
                Some(e.id),
            ))
        }
        (None, None) => Err(ToolError::Invalid(
            "give a \"candidate\" object or a \"candidateId\"".into(),
        )),
    }
}

fn check_duplicate(
    s: &Knowledge,
    args: DuplicateArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let threshold = args.threshold.clamp(0.05, 1.0);
    let (candidate, except) = candidate_of(s, args)?;
    let live = s.kb.with(|kb| kb.live_entries())?;
    let similar = find_similar(&candidate, &live, threshold, 10, except.as_deref());
    let highest = similar.first().map_or(0.0, |x| x.similarity);
    let has_duplicate = highest >= DUPLICATE_THRESHOLD;
    let mut text = if similar.is_empty() {
        format!(
            "no existing entry is {:.0}% or more similar",
            threshold * 100.0
        )
    } else {
        format!(
            "{} similar entr{}{}\n",
            similar.len(),
            if similar.len() == 1 { "y" } else { "ies" },
            if has_duplicate {
                " — likely duplicate"
            } else {
                ""
            }
        )
    };
    for x in &similar {
        text.push_str(&format!(
            "  {:.2} {} [{}] {}{}\n",
            x.similarity,
            x.id,
            x.status,
            x.title,
            if x.same_title { " (same title)" } else { "" }
        ));
    }
    let data = json!({"similar": similar, "hasDuplicate": has_duplicate, "highestSimilarity": highest, "threshold": threshold});
    Ok(ToolOutput::new(data, text.trim_end()))
}

fn add_graph_edge(
    s: &Knowledge,
    args: EdgeArgs,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let from = args.from_id.required("fromId")?;
    let to = args.to_id.required("toId")?;
    let relation = args.relation.required("relation")?;
    let weight = args.weight;
    if !(0.0..=10.0).contains(&weight) {
        return Err(ToolError::Invalid(format!(
            "weight {weight} is out of range: 0 to 10 is accepted"
        )));
    }
    let (edge, new) =
        s.kb.with(|kb| kb.add_edge(from, to, relation, weight, &ctx.caller.id))?;
    let text = format!(
        "{} edge {} -{}-> {} (weight {})",
        if new { "added" } else { "updated" },
        edge.from_id,
        edge.relation,
        edge.to_id,
        edge.weight
    );
    Ok(ToolOutput::new(
        json!({"success": true, "created": new, "edge": edge}),
        text,
    ))
}

fn graph_impact_analysis(
    s: &Knowledge,
    args: ImpactArgs,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = args.recipe_id.trim();
    if id.is_empty() {
        return Err(ToolError::Invalid(
            "argument \"recipeId\": expected an entry id, got an empty string".into(),
        ));
    }
    let depth = args.max_depth.clamp(1, 5) as usize;
    let impact = s.kb.with(|kb| kb.impact(id, depth))?;
    let n = impact.impacted.len();
    let mut text = format!(
        "{n} entr{} affected by a change to {id} (depth ≤ {depth}){}\n",
        if n == 1 { "y" } else { "ies" },
        if impact.truncated {
            ", list truncated"
        } else {
            ""
        }
    );
    for x in &impact.impacted {
        let mut chain = x.id.clone();
        for (i, rel) in x.relations.iter().enumerate().rev() {
            chain.push_str(&format!(" -{rel}-> {}", x.path[i]));
        }
        text.push_str(&format!(
            "  depth {} [{}] {}: {chain}\n",
            x.depth, x.status, x.title
        ));
    }
    let data = json!({"recipeId": id, "maxDepth": depth, "impactedCount": n,
        "impacted": impact.impacted, "truncated": impact.truncated});
    Ok(ToolOutput::new(data, text.trim_end()))
}
