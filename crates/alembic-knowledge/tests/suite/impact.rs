//! `graph_impact_analysis` over a real three-level graph (the reference never awaited its
//! graph service and always answered with an empty list).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::Harness;

async fn entry(h: &Harness, title: &str) -> String {
    let args = json!({
        "title": title,
        "description": format!("{title}: how the project does it"),
        "content": {"markdown": format!("{title} is done in `Net/Client.swift`."),
                    "pattern": format!("// {title}\nlet x = 1")},
        "kind": "pattern",
        "sources": ["Net/Client.swift"],
    });
    h.ok("submit_knowledge", args).await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn edge(h: &Harness, from: &str, relation: &str, to: &str) {
    h.ok(
        "add_graph_edge",
        json!({"fromId": from, "toId": to, "relation": relation}),
    )
    .await;
}

/// (id, depth, relations along the path) of each impacted entry, in order.
fn impacted(data: &Value) -> Vec<(String, u64, Vec<String>)> {
    data["impacted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let rels = x["relations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap().to_string())
                .collect();
            (
                x["id"].as_str().unwrap().to_string(),
                x["depth"].as_u64().unwrap(),
                rels,
            )
        })
        .collect()
}

/// A <-requires- B <-extends- C <-depends_on- D; E is only "related" to A (no impact);
/// A -calls-> D closes a cycle.
async fn graph(h: &Harness) -> [String; 5] {
    let ids = [
        entry(h, "Request signing").await,
        entry(h, "Retry policy").await,
        entry(h, "Upload queue").await,
        entry(h, "Photo sync").await,
        entry(h, "Logging format").await,
    ];
    let [a, b, c, d, e] = &ids;
    edge(h, b, "requires", a).await;
    edge(h, c, "extends", b).await;
    edge(h, d, "depends_on", c).await;
    edge(h, e, "related", a).await;
    edge(h, a, "calls", d).await;
    ids
}

#[tokio::test]
async fn impact_follows_incoming_edges_three_levels_deep() {
    let h = Harness::new();
    let [a, b, c, d, _e] = graph(&h).await;
    let data = h.ok("graph_impact_analysis", json!({"recipeId": a})).await;
    assert_eq!(data["impactedCount"], json!(3));
    assert_eq!(
        impacted(&data),
        vec![
            (b.clone(), 1, vec!["requires".to_string()]),
            (c.clone(), 2, vec!["requires".into(), "extends".into()]),
            (
                d.clone(),
                3,
                vec!["requires".into(), "extends".into(), "depends_on".into()]
            ),
        ]
    );
    assert_eq!(data["impacted"][2]["path"], json!([a, b, c, d]));
    assert_eq!(data["impacted"][2]["title"], json!("Photo sync"));
    let text = h
        .call("graph_impact_analysis", json!({"recipeId": a}))
        .await
        .text_for_model();
    assert!(
        text.contains(&format!(
            "{d} -depends_on-> {c} -extends-> {b} -requires-> {a}"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn max_depth_bounds_the_search() {
    let h = Harness::new();
    let [a, b, c, _d, _e] = graph(&h).await;
    let data = h
        .ok(
            "graph_impact_analysis",
            json!({"recipeId": a, "maxDepth": 2}),
        )
        .await;
    let ids: Vec<String> = impacted(&data).into_iter().map(|x| x.0).collect();
    assert_eq!(ids, vec![b.clone(), c]);
    let one = h
        .ok(
            "graph_impact_analysis",
            json!({"recipeId": a, "maxDepth": 1}),
        )
        .await;
    assert_eq!(impacted(&one).len(), 1);
    let err = h
        .err(
            "graph_impact_analysis",
            json!({"recipeId": a, "maxDepth": 9}),
        )
        .await;
    assert!(err.contains("maxDepth"), "{err}");
}

#[tokio::test]
async fn cycles_visit_each_entry_once_and_unknown_ids_are_named() {
    let h = Harness::new();
    let [a, b, c, d, e] = graph(&h).await;
    // A -calls-> D makes A depend on D, and the chain back from A reaches D again: every
    // entry is reported once, at its smallest depth, and D itself never.
    let data = h.ok("graph_impact_analysis", json!({"recipeId": d})).await;
    let ids: Vec<String> = impacted(&data).into_iter().map(|x| x.0).collect();
    assert_eq!(ids, vec![a, b, c]);
    // Nothing points at E.
    let leaf = h.ok("graph_impact_analysis", json!({"recipeId": e})).await;
    assert_eq!(
        (&leaf["impactedCount"], &leaf["impacted"]),
        (&json!(0), &json!([]))
    );
    let err = h
        .err("graph_impact_analysis", json!({"recipeId": "no-such-id"}))
        .await;
    assert!(err.contains("no-such-id"), "{err}");
}
