//! Duplicate detection: how close a candidate is to the live entries.
//!
//! Similarity = a weighted mean of token-set Jaccard over title (0.3), prose (0.3) and code
//! pattern (0.4), taken only over the parts both sides have (a candidate without code is not
//! penalised for it). Equal normalised titles count as 1.0.

use serde::Serialize;

use crate::model::{Entry, NewEntry, Status, normalise_title};
use crate::text::jaccard;

/// Similarity at or above which `check_duplicate` reports a duplicate.
pub const DUPLICATE_THRESHOLD: f64 = 0.7;

/// One similar entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Similar {
    pub id: String,
    pub title: String,
    pub status: Status,
    pub similarity: f64,
    pub same_title: bool,
}

/// Similarity of `candidate` to `entry` (0..=1).
pub fn similarity(candidate: &NewEntry, entry: &Entry) -> f64 {
    if normalise_title(&candidate.title) == normalise_title(&entry.title)
        && !candidate.title.trim().is_empty()
    {
        return 1.0;
    }
    let prose_a = format!("{} {}", candidate.description, candidate.content);
    let prose_b = format!("{} {}", entry.description, entry.content);
    let parts = [
        (0.3, candidate.title.as_str(), entry.title.as_str()),
        (0.3, prose_a.as_str(), prose_b.as_str()),
        (0.4, candidate.pattern.as_str(), entry.pattern.as_str()),
    ];
    let (mut sum, mut weight) = (0.0, 0.0);
    for (w, a, b) in parts {
        if a.trim().is_empty() || b.trim().is_empty() {
            continue;
        }
        sum += w * jaccard(a, b);
        weight += w;
    }
    if weight == 0.0 { 0.0 } else { sum / weight }
}

/// Entries at least `threshold` similar to `candidate`, most similar first, at most `top_k`.
/// `except` skips the candidate's own stored entry.
pub fn find_similar(
    candidate: &NewEntry,
    entries: &[Entry],
    threshold: f64,
    top_k: usize,
    except: Option<&str>,
) -> Vec<Similar> {
    let mut out: Vec<Similar> = entries
        .iter()
        .filter(|e| except != Some(e.id.as_str()))
        .map(|e| Similar {
            id: e.id.clone(),
            title: e.title.clone(),
            status: e.status,
            similarity: (similarity(candidate, e) * 100.0).round() / 100.0,
            same_title: normalise_title(&candidate.title) == normalise_title(&e.title),
        })
        .filter(|s| s.similarity >= threshold)
        .collect();
    out.sort_by(|a, b| b.similarity.total_cmp(&a.similarity).then(a.id.cmp(&b.id)));
    out.truncate(top_k);
    out
}
