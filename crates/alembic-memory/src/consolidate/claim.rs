//! The claim model behind REPLACE: a memory contradicts another only when both state the
//! **same claim** (same subject, same predicate) with opposite polarity.
//!
//! Sharing words is not enough: "The Payment module uses the Coordinator pattern" and
//! "Never use singletons in the Payment module" share a subject but not a predicate, so
//! both stay (ref-memory §11.5 #25 asks for "same subject + predicate"; the seed's phase 1
//! only says "negation pattern + topic overlap").
//!
//! Each clause (split on `;` `.` `!` `?` and newlines) of a memory becomes one or more
//! [`Claim`]s, deterministically and without an LLM:
//! - **polarity**: negated when it holds a negation cue (`not`, `never`, `no longer`,
//!   `don't`, `avoid`, `stopped using`, 不再, 禁止…); `always`, `must`, `should` are dropped
//!   as modality, so "Always use A in X" opposes "Never use A in X";
//! - **predicate**: the first verb (a small lexicon of codebase verbs, not after a
//!   determiner, base form at the start of an imperative) and what follows it, up to a scope
//!   preposition (`in`, `for`, `on`, `within`…);
//! - **subject**: the words before the verb, or, for an imperative, the scope phrase
//!   ("Never use A in the Payment module"); after a subject the scope belongs to the
//!   predicate, so "Billing depends on Ledger" is not "Ledger depends on Billing";
//! - light verbs (`use`, `adopt`, `employ`) and filler words carry no claim and are dropped;
//!   words are lower-cased and Snowball-stemmed, so "uses"/"use"/"using" agree;
//! - an alternative ("B instead of A", "rather than A", "switched/migrated/moved from A to
//!   B", "replaced A with B") adds the negated claim about A, so "X uses B instead of A"
//!   opposes "X uses A".
//!
//! Text with CJK letters has no verb parse: its claim is its bigrams with the negation cues
//! cut out (subject empty), so the whole statement must match.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

use crate::text::{is_cjk, is_stopword, terms};

/// Whether a claim is stated or denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polarity {
    Affirmed,
    Negated,
}

/// One normalised claim: stemmed content words of its subject and of its predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub subject: BTreeSet<String>,
    pub predicate: BTreeSet<String>,
    pub polarity: Polarity,
}

/// True when some claim of `new` denies a claim of `old` (or the reverse): opposite
/// polarity, equal subject, equal non-empty predicate, and at least two words in all.
pub fn contradicts(old: &str, new: &str) -> bool {
    let (a, b) = (claims(old), claims(new));
    a.iter().any(|x| {
        b.iter().any(|y| {
            x.polarity != y.polarity
                && x.subject == y.subject
                && x.predicate == y.predicate
                && !x.predicate.is_empty()
                && x.subject.len() + x.predicate.len() >= 2
        })
    })
}

/// The claims of every clause of `text`.
pub fn claims(text: &str) -> Vec<Claim> {
    let lower = text.to_lowercase();
    lower
        .split([';', '.', '!', '?', '\n', '。', '；', '！', '？'])
        .filter(|c| !c.trim().is_empty())
        .flat_map(|clause| {
            if clause.chars().any(is_cjk) {
                cjk_claim(clause).into_iter().collect::<Vec<_>>()
            } else {
                english_claims(clause)
            }
        })
        .collect()
}

/// English negation cues, as word sequences. Unlike the reference's list (ref-memory §11.5
/// #25) it holds no action verbs such as "remove", "stop", "drop" or "disable", which name
/// actions in ordinary facts ("the job removes stale caches"); "avoid" counts because as a
/// verb it means "do not use".
const EN_NEGATIONS: &[&str] = &[
    "not",
    "never",
    "no longer",
    "don't",
    "dont",
    "doesn't",
    "doesnt",
    "didn't",
    "isn't",
    "aren't",
    "wasn't",
    "won't",
    "shouldn't",
    "mustn't",
    "can't",
    "cannot",
    "no more",
];

/// Negation cues that hold a verb, and the verb they leave behind: "stopped using A" and
/// "avoid A" claim the same as "do not use A".
const EN_NEGATING_VERBS: &[(&str, &str)] = &[
    ("stopped using", "use"),
    ("stop using", "use"),
    ("avoid", "use"),
    ("avoids", "use"),
    ("avoided", "use"),
];

/// Chinese negation cues and what is left of each once the negation is cut out (a cue like
/// 不使用 keeps its verb). Single 不 is left out: it starts ordinary words (不同, 不错).
const ZH_NEGATIONS: &[(&str, &str)] = &[
    ("停止使用", "使用"),
    ("不再使用", "使用"),
    ("不使用", "使用"),
    ("不采用", "采用"),
    ("不再", ""),
    ("不用", "用"),
    ("不要", ""),
    ("不能", ""),
    ("不得", ""),
    ("不应", ""),
    ("不会", ""),
    ("不是", "是"),
    ("禁止", ""),
    ("别用", "用"),
    ("勿", ""),
    ("无需", ""),
    ("弃用", "用"),
    ("废弃", ""),
    ("没有", ""),
    ("并非", "是"),
];

/// Chinese modality (always, must, should), cut out like the negation cues.
const ZH_MODALITY: &[&str] = &["始终", "总是", "一律", "必须", "务必", "应当"];

/// Words that only state modality or time, never the claim itself.
const FILLERS: &[&str] = &[
    "always",
    "must",
    "should",
    "only",
    "still",
    "now",
    "currently",
    "anymore",
    "here",
    "we",
    "us",
    "team",
    "please",
    "ever",
    "longer",
    "really",
    "generally",
    "instead",
    "everywhere",
    "codebase",
    "project",
    "repo",
    "repository's",
    "going",
    "forward",
];

/// Light verbs: "X uses A" claims the same as "X: A", and "avoid A" is "do not use A".
const LIGHT_VERBS: &[&str] = &["use", "uses", "used", "using", "utilize", "employ", "adopt"];

/// Auxiliaries that start a predicate ("is stored", "must be").
const AUXILIARIES: &[&str] = &[
    "is", "are", "was", "were", "be", "been", "has", "have", "had", "do", "does", "did", "can",
    "will", "may", "shall", "need", "needs", "goes", "go",
];

/// Base forms of verbs that codebase memories state; matched by stem.
const VERBS: &[&str] = &[
    "use",
    "run",
    "call",
    "store",
    "keep",
    "depend",
    "require",
    "import",
    "return",
    "throw",
    "log",
    "cache",
    "retry",
    "enable",
    "support",
    "wrap",
    "handle",
    "write",
    "read",
    "commit",
    "push",
    "format",
    "lint",
    "mock",
    "inject",
    "expose",
    "validate",
    "encrypt",
    "hash",
    "serialize",
    "send",
    "emit",
    "build",
    "deploy",
    "live",
    "own",
    "target",
    "compile",
    "generate",
    "pin",
    "lock",
    "load",
    "fetch",
    "parse",
    "render",
    "route",
    "map",
    "spawn",
    "block",
    "allow",
    "accept",
    "reject",
    "check",
    "verify",
    "sign",
    "mutate",
    "share",
    "expect",
    "configure",
    "default",
    "persist",
    "publish",
    "release",
    "merge",
    "rebase",
    "squash",
    "install",
    "vendor",
    "bundle",
    "ship",
    "talk",
    "connect",
    "query",
    "index",
    "migrate",
    "switch",
    "move",
    "replace",
    "prefer",
    "put",
    "place",
    "name",
    "declare",
    "define",
    "implement",
    "extend",
    "inherit",
    "subclass",
    "register",
    "schedule",
    "queue",
    "poll",
    "stream",
    "panic",
    "unwrap",
    "print",
    "trace",
    "measure",
    "limit",
    "throttle",
    "debounce",
    "batch",
    "paginate",
    "sort",
    "filter",
    "escape",
    "sanitize",
    "encode",
    "decode",
    "compress",
    "rotate",
    "expire",
    "refresh",
    "invalidate",
    "clean",
    "delete",
    "create",
    "open",
    "close",
    "lazy",
    "fail",
    "skip",
    "ignore",
    "include",
    "exclude",
    "add",
    "apply",
    "contain",
    "go",
    "follow",
    "get",
    "set",
    "make",
    "take",
    "need",
    "rely",
    "be",
];

/// Prepositions that open a scope phrase (see the module docs for where it belongs).
const SCOPE: &[&str] = &[
    "in",
    "inside",
    "within",
    "across",
    "for",
    "on",
    "under",
    "throughout",
    "at",
    "during",
    "when",
    "per",
];

/// Determiners: a lexicon verb right after one is a noun ("the test suite", "a build").
const DETERMINERS: &[&str] = &[
    "the", "a", "an", "this", "that", "our", "each", "every", "its", "their", "any", "no",
];

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));
static VERB_STEMS: LazyLock<BTreeSet<String>> =
    LazyLock::new(|| VERBS.iter().map(|v| stem(v)).collect());

fn stem(word: &str) -> String {
    STEMMER.stem(word).into_owned()
}

/// Lower-case words: letters, digits, `_` and apostrophes (for "don't").
fn words(lower: &str) -> Vec<String> {
    lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .map(|w| w.trim_matches('\'').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Removes every negation cue from `words`; returns the rest and whether one was found.
fn strip_negation(words: Vec<String>) -> (Vec<String>, bool) {
    let mut out = Vec::with_capacity(words.len());
    let mut negated = false;
    let mut i = 0;
    'outer: while i < words.len() {
        for (cue, verb) in EN_NEGATING_VERBS {
            let cue: Vec<&str> = cue.split(' ').collect();
            let end = i + cue.len();
            if end <= words.len() && words[i..end].iter().zip(&cue).all(|(a, b)| a == b) {
                negated = true;
                out.push(verb.to_string());
                i = end;
                continue 'outer;
            }
        }
        for cue in EN_NEGATIONS {
            let cue: Vec<&str> = cue.split(' ').collect();
            let end = i + cue.len();
            if end <= words.len() && words[i..end].iter().zip(&cue).all(|(a, b)| a == b) {
                negated = true;
                i = end;
                continue 'outer;
            }
        }
        out.push(words[i].clone());
        i += 1;
    }
    (out, negated)
}

/// Content words of `words`, stemmed: no stopwords, fillers or light verbs.
fn content(words: &[String]) -> BTreeSet<String> {
    words
        .iter()
        .filter(|w| !is_stopword(w) && !FILLERS.contains(&w.as_str()))
        .filter(|w| !LIGHT_VERBS.contains(&w.as_str()))
        .map(|w| stem(w))
        .collect()
}

fn is_verb(words: &[String], i: usize) -> bool {
    let w = words[i].as_str();
    if AUXILIARIES.contains(&w) || LIGHT_VERBS.contains(&w) {
        return true;
    }
    if !VERB_STEMS.contains(&stem(w)) {
        return false;
    }
    match i.checked_sub(1).map(|p| words[p].as_str()) {
        // an imperative starts with the base form; "Tests use X" starts with a noun
        None => !w.ends_with('s') && !w.ends_with("ed"),
        Some(prev) => !DETERMINERS.contains(&prev),
    }
}

/// An alternative in the clause: the words naming what is *not* the claim, and the clause
/// without them.
fn split_alternative(words: &[String]) -> (Vec<String>, Option<Vec<String>>) {
    let at = |i: usize, s: &str| words.get(i).is_some_and(|w| w == s);
    let scope_end = |from: usize| {
        (from..words.len())
            .find(|&j| SCOPE.contains(&words[j].as_str()))
            .unwrap_or(words.len())
    };
    for i in 0..words.len() {
        // "B instead of A", "B rather than A"
        if (at(i, "instead") && at(i + 1, "of")) || (at(i, "rather") && at(i + 1, "than")) {
            let end = scope_end(i + 2);
            let alt = words[i + 2..end].to_vec();
            let rest = [&words[..i], &words[end..]].concat();
            return (rest, Some(alt));
        }
        let w = stem(&words[i]);
        // "switched from A to B": the claim is about B, the denied one about A
        if ["switch", "migrat", "move"].contains(&w.as_str())
            && at(i + 1, "from")
            && let Some(to) = (i + 2..words.len()).find(|&j| words[j] == "to")
        {
            let alt = words[i + 2..to].to_vec();
            let rest = [&words[..i], &["use".to_string()], &words[to + 1..]].concat();
            return (rest, Some(alt));
        }
        // "replaced A with B"
        if w == "replac"
            && let Some(with) =
                (i + 1..words.len()).find(|&j| words[j] == "with" || words[j] == "by")
        {
            let alt = words[i + 1..with].to_vec();
            let rest = [&words[..i], &["use".to_string()], &words[with + 1..]].concat();
            return (rest, Some(alt));
        }
    }
    (words.to_vec(), None)
}

fn english_claims(clause: &str) -> Vec<Claim> {
    let (ws, negated) = strip_negation(words(clause));
    let (ws, alternative) = split_alternative(&ws);
    let verb = (0..ws.len()).find(|&i| is_verb(&ws, i));
    let (subject_words, rest) = ws.split_at(verb.unwrap_or(0));
    let scope = rest
        .iter()
        .position(|w| SCOPE.contains(&w.as_str()))
        .unwrap_or(rest.len());
    let (predicate_words, scope_words) = rest.split_at(scope);
    // The scope names the subject only when nothing precedes the verb ("Never use A in X"
    // is about X); otherwise it is the verb's complement, so "Billing depends on Ledger"
    // and "Ledger does not depend on Billing" stay two claims.
    let mut subject = content(subject_words);
    let mut predicate = content(predicate_words);
    let mut complement = BTreeSet::new();
    if subject.is_empty() {
        subject = content(scope_words);
    } else {
        complement = content(scope_words);
        predicate.extend(complement.iter().cloned());
    }
    let polarity = if negated {
        Polarity::Negated
    } else {
        Polarity::Affirmed
    };
    let main = Claim {
        subject: subject.clone(),
        predicate,
        polarity,
    };
    let mut out = vec![main];
    if let Some(alt) = alternative {
        // the verb and its complement stay, its object becomes the alternative
        let verb_words = verb_phrase(predicate_words, verb.is_some());
        out.push(Claim {
            subject,
            predicate: content(verb_words)
                .into_iter()
                .chain(content(&alt))
                .chain(complement)
                .collect(),
            polarity: match polarity {
                Polarity::Affirmed => Polarity::Negated,
                Polarity::Negated => Polarity::Affirmed,
            },
        });
    }
    out
}

/// The verb of a predicate with its auxiliaries ("are written"), without its object.
fn verb_phrase(predicate: &[String], has_verb: bool) -> &[String] {
    if !has_verb {
        return &[];
    }
    let aux = predicate
        .iter()
        .take_while(|w| AUXILIARIES.contains(&w.as_str()))
        .count();
    &predicate[..(aux + 1).min(predicate.len())]
}

fn cjk_claim(clause: &str) -> Option<Claim> {
    let mut text = clause.to_string();
    let mut negated = false;
    for (cue, rest) in ZH_NEGATIONS {
        if text.contains(cue) {
            negated = true;
            text = text.replace(cue, rest);
        }
    }
    for m in ZH_MODALITY {
        text = text.replace(m, "");
    }
    let (latin, en_negated) = strip_negation(words(&text));
    let latin: BTreeSet<String> = content(&latin);
    let predicate: BTreeSet<String> = terms(&text)
        .into_iter()
        .filter(|t| t.chars().any(is_cjk) && !is_stopword(t))
        .chain(latin.into_iter().filter(|w| !w.chars().any(is_cjk)))
        .collect();
    Some(Claim {
        subject: BTreeSet::new(),
        predicate,
        polarity: if negated || en_negated {
            Polarity::Negated
        } else {
            Polarity::Affirmed
        },
    })
}

#[cfg(test)]
mod tests;
