//! Which glob patterns could expand to `..`, the parent of their directory.
//!
//! Under dash, `.?`, `.*` and `.[!a]` match `..`: `ls -a .?` in the root lists
//! the directory above it. The safe-command check asks this module whether a
//! pattern could, and if so requires that parent to be inside the root.

/// Whether a last-component pattern could match `..` under any shell we might run.
///
/// A shell never lets `*` or `?` match a leading `.`, so the pattern must start
/// with something that can: a literal dot, or (conservatively, dash refuses it)
/// a bracket. After that the matcher is conservative too: a bracket is taken to
/// match `.` unless it plainly cannot.
pub(crate) fn glob_may_match_dot_dot(pattern: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    match take_dot(&chars, 0) {
        Some(next) => may_match_one_dot(&chars[next..]),
        None => false,
    }
}

/// Whether `pattern` (a glob tail) could match the single character `.`;
/// an empty tail is `.` itself, the directory that was checked already.
fn may_match_one_dot(pattern: &[char]) -> bool {
    let stars = pattern.iter().take_while(|c| **c == '*').count();
    let rest = &pattern[stars..];
    if rest.is_empty() {
        return stars > 0;
    }
    let next = match rest[0] {
        '?' => Some(1),
        _ => take_dot(rest, 0),
    };
    next.is_some_and(|n| rest[n..].iter().all(|c| *c == '*'))
}

/// Where the pattern continues after one element that could match `.` at `at`.
fn take_dot(pattern: &[char], at: usize) -> Option<usize> {
    match pattern.get(at)? {
        '.' => Some(at + 1),
        '\\' if pattern.get(at + 1) == Some(&'.') => Some(at + 2),
        '[' => {
            // The first character after `[` (or `[!`) may be a literal `]`.
            let close = pattern[at..].iter().skip(2).position(|c| *c == ']')? + at + 2;
            bracket_may_match_dot(&pattern[at + 1..close]).then_some(close + 1)
        }
        _ => None,
    }
}

/// A bracket body (without `[` `]`) that could match `.`: conservative for ranges and classes.
fn bracket_may_match_dot(set: &[char]) -> bool {
    match set.first() {
        Some('!' | '^') => !set[1..].contains(&'.'),
        _ => set.iter().any(|c| matches!(c, '.' | '-' | ':')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_that_can_match_the_parent() {
        for risky in [
            ".?", ".*", ".[.]", ".[!a]", ".[^a]", "[.][.]", ".*?", ".**", "\\.?", ".[,-/]", "[.].",
            "\\.\\.*", "[!a]?",
        ] {
            assert!(glob_may_match_dot_dot(risky), "{risky}");
        }
        for safe in [
            "*", "?", "?.", "*.rs", ".[!.]", ".??", ".??*", ".h*", "a.?", ".[a]", ".[", "*/",
        ] {
            assert!(!glob_may_match_dot_dot(safe), "{safe}");
        }
    }
}
