//! Rendering the session for the prompt of a dimension, within a token budget.

use super::{DimensionReport, SessionFinding, SessionStore};
use crate::text::{TokenMeter, cut_with_marker};

/// Findings shown per earlier dimension.
const FINDINGS_PER_DIMENSION: usize = 5;
/// Files listed in the "already scanned" block.
const FILES_LISTED: usize = 30;

/// A titled block of lines; lines are added while they fit.
struct Block {
    title: String,
    lines: Vec<String>,
}

impl SessionStore {
    /// What earlier dimensions found, for the prompt of `dim_id`, within `budget` tokens.
    ///
    /// Blocks, in priority order: suggestions other dimensions made for `dim_id`; the tier
    /// reflections, each under its own (1-based) tier number; each other dimension (most
    /// keyword-relevant first) with its summary, its most relevant findings and its
    /// submissions; the files already scanned. A reflection condenses a whole tier, so under
    /// a tight share it goes before the single dimensions it summarises. This is the one
    /// place reflections reach a prompt (the task does not repeat them). Lines are added
    /// whole while they fit; nothing is cut mid-line except a long summary.
    pub fn context_for_dimension(
        &self,
        dim_id: &str,
        keywords: &[&str],
        budget: usize,
        meter: &TokenMeter,
    ) -> String {
        let others: Vec<&DimensionReport> = self
            .state
            .reports
            .iter()
            .filter(|r| r.dim_id != dim_id)
            .collect();
        if others.is_empty() && self.state.reflections.is_empty() {
            return String::new();
        }
        let header = "## Results of earlier dimensions (do not repeat their exploration)";
        let mut used = meter.count(header) + 1;
        if used > budget {
            return String::new();
        }
        let mut out = vec![header.to_string()];
        for block in self.blocks(dim_id, keywords, &others) {
            let title_cost = meter.count(&block.title) + 1;
            let mut taken = Vec::new();
            let mut cost = title_cost;
            for line in block.lines {
                let c = meter.count(&line) + 1;
                if used + cost + c <= budget {
                    cost += c;
                    taken.push(line);
                }
            }
            if !taken.is_empty() {
                used += cost;
                out.push(block.title);
                out.extend(taken);
            }
        }
        if out.len() == 1 {
            return String::new();
        }
        out.join("\n")
    }

    fn blocks(&self, dim_id: &str, keywords: &[&str], others: &[&DimensionReport]) -> Vec<Block> {
        let mut blocks = Vec::new();
        let suggestions: Vec<String> = self
            .state
            .cross_refs
            .iter()
            .filter(|c| c.to == dim_id)
            .map(|c| format!("- [from {}] {}", c.from, c.detail))
            .collect();
        blocks.push(Block {
            title: format!("### Suggestions for {dim_id} from other dimensions"),
            lines: suggestions,
        });
        blocks.extend(self.reflection_blocks());
        let mut ranked: Vec<(usize, &DimensionReport)> = others
            .iter()
            .map(|r| (keyword_hits(r, keywords), *r))
            .collect();
        ranked.sort_by_key(|(hits, _)| std::cmp::Reverse(*hits));
        blocks.extend(
            ranked
                .into_iter()
                .map(|(_, r)| dimension_block(r, keywords)),
        );
        blocks.push(self.files_block());
        blocks
    }

    fn files_block(&self) -> Block {
        let mut files: Vec<&str> = Vec::new();
        for f in self
            .state
            .reports
            .iter()
            .flat_map(|r| r.referenced_files.iter())
        {
            if !files.contains(&f.as_str()) {
                files.push(f);
            }
        }
        let mut line = files
            .iter()
            .take(FILES_LISTED)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if files.len() > FILES_LISTED {
            line.push_str(&format!(" …and {} more", files.len() - FILES_LISTED));
        }
        Block {
            title: format!(
                "### Files already scanned by earlier dimensions ({})",
                files.len()
            ),
            lines: if files.is_empty() {
                Vec::new()
            } else {
                vec![line]
            },
        }
    }

    fn reflection_blocks(&self) -> Vec<Block> {
        self.state
            .reflections
            .iter()
            .map(|r| {
                let mut lines: Vec<String> = r
                    .top_findings
                    .iter()
                    .map(|(dim, f)| format!("- [{}/10] {} ({dim})", f.importance, f.finding))
                    .collect();
                lines.extend(
                    r.cross_dimension_patterns
                        .iter()
                        .map(|p| format!("- pattern: {p}")),
                );
                lines.extend(
                    r.suggestions_for_next_tier
                        .iter()
                        .map(|s| format!("- next: {s}")),
                );
                Block {
                    title: format!("### Tier {} synthesis", r.tier_index),
                    lines,
                }
            })
            .collect()
    }
}

fn keyword_hits(r: &DimensionReport, keywords: &[&str]) -> usize {
    r.findings
        .iter()
        .filter(|f| matches_keywords(f, keywords))
        .count()
}

fn matches_keywords(f: &SessionFinding, keywords: &[&str]) -> bool {
    let text = f.finding.to_lowercase();
    keywords
        .iter()
        .any(|k| !k.is_empty() && text.contains(&k.to_lowercase()))
}

fn dimension_block(r: &DimensionReport, keywords: &[&str]) -> Block {
    let mut lines = Vec::new();
    let summary = match &r.digest {
        Some(d) if !d.summary.is_empty() => d.summary.clone(),
        _ => cut_with_marker(r.analysis_text.trim(), 300, "…"),
    };
    if !summary.is_empty() {
        lines.push(summary);
    }
    let mut findings: Vec<&SessionFinding> = r.findings.iter().collect();
    let score = |f: &SessionFinding| {
        usize::from(matches_keywords(f, keywords)) * 10 + usize::from(f.importance)
    };
    findings.sort_by_key(|f| std::cmp::Reverse(score(f)));
    for f in findings.into_iter().take(FINDINGS_PER_DIMENSION) {
        if f.evidence.is_empty() {
            lines.push(format!("- [{}/10] {}", f.importance, f.finding));
        } else {
            lines.push(format!(
                "- [{}/10] {} ({})",
                f.importance, f.finding, f.evidence
            ));
        }
    }
    if !r.candidates.is_empty() {
        let titles: Vec<&str> = r.candidates.iter().map(|c| c.title.as_str()).collect();
        lines.push(format!(
            "Submitted candidates ({}): {}",
            titles.len(),
            titles.join(", ")
        ));
    }
    Block {
        title: format!("### {}", r.dim_id),
        lines,
    }
}
