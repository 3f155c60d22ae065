//! `knowledge-graph` tools: `check_duplicate` (similar live entries by normalised title and
//! content) and `add_graph_edge` (a typed relation between two existing, different entries).

use std::sync::Arc;

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde_json::{Value, json};

use super::args::{f64_arg, new_entry, opt_str, req_str};
use super::{KnowledgeService, ServiceCache, tool};
use crate::model::RELATIONS;
use crate::similar::{DUPLICATE_THRESHOLD, find_similar};

pub(crate) fn tools(cache: &Arc<ServiceCache>) -> Vec<ToolDefinition> {
    vec![
        tool(
            cache,
            "check_duplicate",
            "Find existing knowledge similar to a candidate (given inline, or a stored \
             candidateId): same title, or similar title, prose and code. Reads only the \
             knowledge base.",
            json!({"type": "object", "properties": {
                "candidate": {"type": "object", "description": "{title, description, content|summary, code|pattern}"},
                "candidateId": {"type": "string"},
                "threshold": {"type": "number", "minimum": 0.05, "maximum": 1, "default": 0.5}
            }}),
            ToolModule::KnowledgeGraph,
            EffectClass::ReadOnly,
            check_duplicate,
        ),
        tool(
            cache,
            "add_graph_edge",
            "Record a typed relation between two knowledge entries (fromId -relation-> toId). \
             Both must exist and differ; re-adding the same edge updates its weight.",
            json!({"type": "object", "properties": {
                "fromId": {"type": "string"},
                "toId": {"type": "string"},
                "relation": {"type": "string", "enum": RELATIONS},
                "weight": {"type": "number", "minimum": 0, "maximum": 10, "default": 1.0}
            }, "required": ["fromId", "toId", "relation"]}),
            ToolModule::KnowledgeGraph,
            EffectClass::WritesKnowledge,
            add_graph_edge,
        ),
    ]
}

fn check_duplicate(
    s: &KnowledgeService,
    args: &Value,
    _: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let threshold = f64_arg(args, "threshold", 0.5).clamp(0.05, 1.0);
    let (candidate, except) = match (
        args.get("candidate").filter(|c| c.is_object()),
        opt_str(args, "candidateId"),
    ) {
        (Some(c), _) => (new_entry(c)?, None),
        (None, Some(id)) => {
            let e = s.with(|kb| kb.get(id))?;
            let as_args = json!({"title": e.title, "description": e.description,
                "content": {"markdown": e.content, "pattern": e.pattern}});
            (new_entry(&as_args)?, Some(e.id))
        }
        (None, None) => {
            return Err(ToolError::Invalid(
                "give a \"candidate\" object or a \"candidateId\"".into(),
            ));
        }
    };
    let live = s.with(|kb| kb.live_entries())?;
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
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let from = req_str(args, "fromId")?;
    let to = req_str(args, "toId")?;
    let relation = req_str(args, "relation")?;
    let weight = f64_arg(args, "weight", 1.0);
    if !(0.0..=10.0).contains(&weight) {
        return Err(ToolError::Invalid(format!(
            "weight {weight} is out of range: 0 to 10 is accepted"
        )));
    }
    let (edge, new) = s.with(|kb| kb.add_edge(from, to, relation, weight, &ctx.caller.id))?;
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
