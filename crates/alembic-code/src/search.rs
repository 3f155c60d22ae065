//! Line search over the project with ripgrep's crates (`ignore` + `grep-searcher` +
//! `grep-regex`): literal or regex, case-insensitive, several patterns in one pass,
//! extension filter, context lines, binary and huge files skipped, every file opened
//! through [`PathGuard`].
//!
//! Ranking happens over *all* matches before the cut to `max_results` (the reference
//! cut first, so its "usages first" ranking only reordered whatever came first in walk
//! order): every match is scored and counted during the parallel scan, but a file keeps
//! the text of only the first `max_results` matches of each score, the most ranking can
//! show from it, so memory follows the files, not the matches. Context lines are read
//! afterwards for the kept matches only.

use std::path::Path;
use std::sync::Mutex;

use alembic_safety::PathGuard;
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkMatch};
use ignore::WalkState;
use serde::Serialize;

use crate::walk::{relative, source_walker};

/// Files larger than this are not searched.
pub const MAX_SEARCH_FILE_BYTES: u64 = 1024 * 1024;
/// Longest accepted pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1000;
/// Compiled-regex size cap: a pattern that expands beyond it is refused, not run.
const REGEX_SIZE_LIMIT: usize = 2 * 1024 * 1024;
/// Longest line text kept in a match (longer lines are cut with `…`).
const MAX_LINE_CHARS: usize = 300;

/// Errors from preparing a search.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SearchError {
    #[error("pattern {pattern:?} is not a valid regex: {message}")]
    BadRegex { pattern: String, message: String },
    #[error("pattern is {len} bytes long; at most {MAX_PATTERN_BYTES} are accepted")]
    PatternTooLong { len: usize },
    #[error("no pattern given: pass \"pattern\" or a non-empty \"patterns\" list")]
    NoPattern,
}

/// What to search for.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub patterns: Vec<String>,
    pub is_regex: bool,
    /// Extensions without the dot, lower case; empty = all text files.
    pub extensions: Vec<String>,
    pub context_lines: usize,
    /// Matches kept per pattern (after ranking).
    pub max_results: usize,
}

/// One kept match.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchMatch {
    pub file: String,
    pub line: u64,
    pub code: String,
    /// The surrounding lines (`contextLines` before and after), joined with newlines.
    pub context: String,
    /// Usage score: calls and member accesses rank above declarations and imports.
    pub score: i32,
}

/// Matches of one pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternResult {
    pub pattern: String,
    pub matches: Vec<SearchMatch>,
    /// All matching lines, before the cut to `max_results`.
    pub total: usize,
    /// Files with at least one match, with their match counts.
    pub files: Vec<FileCount>,
}

/// Matches of a pattern in one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileCount {
    pub file: String,
    pub matches: usize,
}

/// The whole result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    pub results: Vec<PatternResult>,
    pub searched_files: usize,
}

/// Parses a `fileFilter` such as `".m, .swift,rs"` into lower-case extensions.
pub fn parse_extensions(filter: &str) -> Vec<String> {
    filter
        .split(',')
        .map(|e| e.trim().trim_start_matches('.').to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .collect()
}

struct Compiled {
    /// Any pattern (one pass per file).
    any: RegexMatcher,
    each: Vec<RegexMatcher>,
}

fn matcher(pattern: &str) -> Result<RegexMatcher, SearchError> {
    RegexMatcherBuilder::new()
        .case_insensitive(true)
        // Lines never span a newline: lets the searcher scan whole buffers (as rg does).
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| SearchError::BadRegex {
            pattern: pattern.to_string(),
            message: e.to_string(),
        })
}

fn compile(req: &SearchRequest) -> Result<Compiled, SearchError> {
    if req.patterns.is_empty() {
        return Err(SearchError::NoPattern);
    }
    let mut sources = Vec::new();
    for p in &req.patterns {
        if p.len() > MAX_PATTERN_BYTES {
            return Err(SearchError::PatternTooLong { len: p.len() });
        }
        sources.push(if req.is_regex {
            p.clone()
        } else {
            regex::escape(p)
        });
    }
    let each = sources
        .iter()
        .map(|s| matcher(s))
        .collect::<Result<Vec<_>, _>>()?;
    let any = if sources.len() == 1 {
        each[0].clone()
    } else {
        let joined: Vec<String> = sources.iter().map(|s| format!("(?:{s})")).collect();
        matcher(&joined.join("|"))?
    };
    Ok(Compiled { any, each })
}

/// Usage scores lie in -2..=2: hits are kept in one bucket per score, best first.
const BUCKETS: usize = 5;

fn bucket(score: i32) -> usize {
    usize::try_from(2 - score.clamp(-2, 2)).unwrap_or(BUCKETS - 1)
}

/// A kept matching line of one file.
struct Hit {
    line: u64,
    text: String,
}

/// One pattern's matches in one file: how many, and the first `max_results` of each score
/// bucket (in line order). Ranking takes at most `max_results` per bucket, in path and line
/// order, so no file can contribute a later hit; the others are only counted, which keeps
/// a search's memory bounded by the files, not by the matches.
struct PatternHits {
    count: usize,
    buckets: [Vec<Hit>; BUCKETS],
}

struct FileHits {
    rel: String,
    /// Per pattern, in request order.
    patterns: Vec<PatternHits>,
}

struct Collect<'a> {
    /// Each pattern's matcher, to score a line for each.
    each: &'a [RegexMatcher],
    patterns: &'a mut Vec<PatternHits>,
    keep: usize,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _: &grep_searcher::Searcher,
        m: &SinkMatch<'_>,
    ) -> Result<bool, Self::Error> {
        let text = String::from_utf8_lossy(m.bytes());
        let text = text.trim_end_matches(['\n', '\r']);
        let line = m.line_number().unwrap_or(0);
        for (matcher, hits) in self.each.iter().zip(self.patterns.iter_mut()) {
            let Some(score) = score_line(matcher, text) else {
                continue;
            };
            hits.count += 1;
            let slot = &mut hits.buckets[bucket(score)];
            if slot.len() < self.keep {
                slot.push(Hit {
                    line,
                    text: text.to_string(),
                });
            }
        }
        Ok(true)
    }
}

/// Runs a search under `guard`'s root.
pub fn search(guard: &PathGuard, req: &SearchRequest) -> Result<SearchResult, SearchError> {
    let compiled = compile(req)?;
    let (files, searched) = scan(guard, req, &compiled);
    let mut contexts = ContextReader { guard, last: None };
    let results = req
        .patterns
        .iter()
        .enumerate()
        .map(|(i, pattern)| rank(&mut contexts, req, pattern, i, &files))
        .collect();
    Ok(SearchResult {
        results,
        searched_files: searched,
    })
}

/// Finds every line matching any pattern, in parallel over files, and scores it for each
/// pattern it matches.
fn scan(guard: &PathGuard, req: &SearchRequest, compiled: &Compiled) -> (Vec<FileHits>, usize) {
    let root = guard.root().to_path_buf();
    let found = Mutex::new(Vec::new());
    let searched = std::sync::atomic::AtomicUsize::new(0);
    let mut walker = source_walker(&root);
    walker.max_filesize(Some(MAX_SEARCH_FILE_BYTES));
    let (found_ref, searched_ref, root_ref) = (&found, &searched, &root);
    walker.build_parallel().run(|| {
        let (found, searched, root) = (found_ref, searched_ref, root_ref);
        // Matchers per thread: a shared regex hands its scratch space out through a
        // pool, and every thread but the pool's owner pays for that on each search.
        let any = compiled.any.clone();
        let each = compiled.each.clone();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file())
                || !wanted(entry.path(), &req.extensions)
            {
                return WalkState::Continue;
            }
            let Some(rel) = relative(root, entry.path()) else {
                return WalkState::Continue;
            };
            let Ok(file) = guard.open_read(&rel) else {
                return WalkState::Continue;
            };
            searched.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut patterns: Vec<PatternHits> = each
                .iter()
                .map(|_| PatternHits {
                    count: 0,
                    buckets: Default::default(),
                })
                .collect();
            // A read error mid-file keeps the hits found so far.
            let _ = searcher.search_file(
                &any,
                &file,
                Collect {
                    each: &each,
                    patterns: &mut patterns,
                    keep: req.max_results,
                },
            );
            if patterns.iter().any(|p| p.count > 0) {
                alembic_base::lock(found).push(FileHits { rel, patterns });
            }
            WalkState::Continue
        })
    });
    let mut files = found.into_inner().unwrap_or_default();
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    (files, searched.into_inner())
}

fn wanted(path: &Path, extensions: &[String]) -> bool {
    if extensions.is_empty() {
        return true;
    }
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// Pattern `index`'s result: its best `max_results` hits by score, then path and line.
fn rank(
    contexts: &mut ContextReader<'_>,
    req: &SearchRequest,
    pattern: &str,
    index: usize,
    files: &[FileHits],
) -> PatternResult {
    let mut total = 0;
    let mut matched_files = Vec::new();
    for f in files {
        let count = f.patterns.get(index).map_or(0, |p| p.count);
        if count > 0 {
            total += count;
            matched_files.push(FileCount {
                file: f.rel.clone(),
                matches: count,
            });
        }
    }
    let ranked = (0..BUCKETS).flat_map(|slot| {
        files.iter().flat_map(move |f| {
            f.patterns
                .get(index)
                .map_or(&[][..], |p| p.buckets[slot].as_slice())
                .iter()
                .map(move |hit| (slot, f.rel.as_str(), hit))
        })
    });
    let matches = ranked
        .take(req.max_results)
        .map(|(slot, rel, hit)| SearchMatch {
            file: rel.to_string(),
            line: hit.line,
            code: clip(hit.text.trim()),
            context: contexts.context(rel, hit.line, req.context_lines),
            score: 2 - i32::try_from(slot).unwrap_or(4),
        })
        .collect();
    PatternResult {
        pattern: pattern.to_string(),
        matches,
        total,
        files: matched_files,
    }
}

fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_LINE_CHARS {
        return text.to_string();
    }
    text.chars().take(MAX_LINE_CHARS).collect::<String>() + "…"
}

/// Reads the context lines of kept matches, holding the last file read: ranked matches
/// come grouped by file within each score.
struct ContextReader<'a> {
    guard: &'a PathGuard,
    last: Option<(String, Vec<u8>)>,
}

impl ContextReader<'_> {
    /// Lines `line - n ..= line + n` of `rel`, numbered, the match marked with `>`. Only
    /// those lines are decoded, so a large file costs one read and a scan for newlines.
    fn context(&mut self, rel: &str, line: u64, n: usize) -> String {
        if n == 0 {
            return String::new();
        }
        if self.last.as_ref().is_none_or(|(path, _)| path != rel) {
            let Ok(bytes) = self.guard.read(rel) else {
                return String::new();
            };
            self.last = Some((rel.to_string(), bytes));
        }
        let Some((_, bytes)) = &self.last else {
            return String::new();
        };
        let line = usize::try_from(line).unwrap_or(1).max(1);
        let first = line.saturating_sub(n).max(1);
        file_lines(from_line(bytes, first))
            .zip(first..=line + n)
            .map(|(l, number)| {
                format!(
                    "{}{}: {}",
                    if number == line { ">" } else { " " },
                    number,
                    clip(&String::from_utf8_lossy(l))
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `bytes` from the start of line `first` (1-based) on; empty past the last line.
fn from_line(bytes: &[u8], first: usize) -> &[u8] {
    if first <= 1 {
        return bytes;
    }
    memchr::memchr_iter(b'\n', bytes)
        .nth(first - 2)
        .map_or(&[][..], |newline| &bytes[newline + 1..])
}

/// The lines of a file as [`str::lines`] splits them (a final newline ends the last line
/// and `\r\n` counts as one), over bytes.
fn file_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(|l| match l.strip_suffix(b"\n") {
            Some(l) => l.strip_suffix(b"\r").unwrap_or(l),
            None => l,
        })
}

/// Usage score of a line for the first match of `m` in it; `None` when it does not match.
fn score_line(m: &RegexMatcher, text: &str) -> Option<i32> {
    let span = m.find(text.as_bytes()).ok().flatten()?;
    Some(usage_score(text, span.start(), span.end()))
}

/// Keywords directly before a declared name.
const DECLARATION_KEYWORDS: &[&str] = &[
    "class",
    "struct",
    "enum",
    "interface",
    "protocol",
    "trait",
    "impl",
    "fn",
    "func",
    "def",
    "function",
    "type",
    "extension",
    "object",
    "let",
    "var",
    "const",
    "val",
    "typedef",
    "union",
    "namespace",
    "mod",
    "module",
    "@interface",
    "@implementation",
    "@protocol",
];
/// Line starts that make the whole line an import or a declaration-only construct.
const IMPORT_STARTS: &[&str] = &[
    "import ",
    "#import",
    "#include",
    "use ",
    "from ",
    "@import",
    "#define",
    "@property",
    "@interface",
    "@implementation",
    "@protocol",
    "package ",
    "require(",
];

/// Heuristic usage score of a matching line: calls (`name(`, `[obj name:`) +2, member
/// access (`.name`, `->name`, `::name`) +1, the declared name of a declaration (`fn name`,
/// `class Name`, `- (void)name`) −1, imports and ObjC interface lines −2.
pub fn usage_score(line: &str, start: usize, end: usize) -> i32 {
    let trimmed = line.trim_start();
    if IMPORT_STARTS.iter().any(|p| trimmed.starts_with(p)) {
        return -2;
    }
    let after = line.get(end..).unwrap_or("").trim_start();
    let before = line.get(..start).unwrap_or("").trim_end();
    let matched = line.get(start..end).unwrap_or("");
    let is_call = matched.ends_with('(')
        || after.starts_with('(')
        || (after.starts_with(':') && !after.starts_with("::") && before.contains('['));
    let is_member = before.ends_with('.') || before.ends_with("->") || before.ends_with("::");
    let keyword_before = before
        .rsplit(|c: char| c.is_whitespace() || c == '(' || c == '{')
        .next()
        .unwrap_or("");
    let objc_method =
        (trimmed.starts_with("- (") || trimmed.starts_with("+ (")) && before.ends_with(')');
    let is_declaration = DECLARATION_KEYWORDS.contains(&keyword_before) || objc_method;
    match (is_declaration, is_call, is_member) {
        (true, _, false) => -1,
        (_, true, _) => 2,
        (_, _, true) => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn file_lines_split_as_str_lines_does() {
        for text in [
            "", "\n", "a", "a\n", "a\n\n", "a\r\nb", "a\r", "a\rb\r\n", "\r\n\r\n", "x\n\ny",
        ] {
            let ours: Vec<&[u8]> = file_lines(text.as_bytes()).collect();
            let std: Vec<&[u8]> = text.lines().map(str::as_bytes).collect();
            assert_eq!(ours, std, "{text:?}");
            for first in 1..=4 {
                let ours: Vec<&[u8]> = file_lines(from_line(text.as_bytes(), first)).collect();
                let std: Vec<&[u8]> = text.lines().skip(first - 1).map(str::as_bytes).collect();
                assert_eq!(ours, std, "{text:?} from line {first}");
            }
        }
    }

    #[test]
    fn usage_scores_rank_calls_over_declarations() {
        let cases = [
            ("    let c = circle.area()", "area", 2),
            ("[c scaledBy:2.0];", "scaledBy", 2),
            ("    return self.radius", "radius", 1),
            ("func area() -> Double {", "area", -1),
            ("#import \"Shape.h\"", "Shape", -2),
            ("use shapes::Circle;", "Circle", -2),
            ("// area of the circle", "area", 0),
        ];
        let got: Vec<(&str, i32)> = cases
            .iter()
            .map(|(line, word, _)| {
                let start = line.find(word).unwrap();
                (*line, usage_score(line, start, start + word.len()))
            })
            .collect();
        let want: Vec<(&str, i32)> = cases.iter().map(|(l, _, s)| (*l, *s)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn extension_filters_are_normalised() {
        assert_eq!(
            parse_extensions(".m, .Swift,rs,,"),
            vec!["m", "swift", "rs"]
        );
    }

    #[test]
    fn oversized_patterns_and_bad_regexes_are_refused() {
        let req = |p: &str, is_regex| SearchRequest {
            patterns: vec![p.to_string()],
            is_regex,
            extensions: vec![],
            context_lines: 0,
            max_results: 5,
        };
        assert!(matches!(
            compile(&req(&"a".repeat(1001), false)),
            Err(SearchError::PatternTooLong { len: 1001 })
        ));
        assert!(matches!(
            compile(&req("(unclosed", true)),
            Err(SearchError::BadRegex { .. })
        ));
        // Literal text is escaped, so regex metacharacters are fine.
        assert!(compile(&req("(unclosed", false)).is_ok());
        // A pattern whose compiled form explodes is refused rather than run.
        assert!(matches!(
            compile(&req("\\w{1000}\\w{1000}\\w{1000}", true)),
            Err(SearchError::BadRegex { .. })
        ));
    }
}
