//! Brace expansion as bash does it (`{a,b}`), for scripts run by an `sh` that is bash.
//!
//! Dash has no brace expansion, but on systems where `/bin/sh` is bash,
//! `ls {..,x}` lists the parent and `grep {-R,x} …` passes an option the
//! policy never saw. The safe-command check expands each word the way bash
//! would and checks every result. Sequences (`{1..3}`, `{a..c}`) yield only
//! letters, digits and `-`, never a path step, so they stay literal here.

/// Most words one argument may expand to before it is refused.
pub(crate) const MAX_EXPANSIONS: usize = 256;

/// Every word `word` expands to (itself when it has no brace list), or `None` past the limit.
pub(crate) fn brace_expansions(word: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand(word, &mut out)?;
    Some(out)
}

fn expand(word: &str, out: &mut Vec<String>) -> Option<()> {
    let Some((open, close, commas)) = first_list(word) else {
        if out.len() >= MAX_EXPANSIONS {
            return None;
        }
        out.push(word.to_owned());
        return Some(());
    };
    let (prefix, suffix) = (&word[..open], &word[close + 1..]);
    let mut start = open + 1;
    for end in commas.into_iter().chain([close]) {
        expand(&format!("{prefix}{}{suffix}", &word[start..end]), out)?;
        start = end + 1;
    }
    Some(())
}

/// The first `{…}` holding a top-level comma: its `{`, its `}` and the comma positions.
fn first_list(word: &str) -> Option<(usize, usize, Vec<usize>)> {
    let bytes = word.as_bytes();
    let mut from = 0;
    while let Some(offset) = word[from..].find('{') {
        let open = from + offset;
        from = open + 1;
        if open > 0 && bytes[open - 1] == b'\\' {
            continue;
        }
        let (mut depth, mut commas, mut at) = (0usize, Vec::new(), open + 1);
        while at < bytes.len() {
            match bytes[at] {
                b'\\' => at += 1,
                b'{' => depth += 1,
                b'}' if depth == 0 => break,
                b'}' => depth -= 1,
                b',' if depth == 0 => commas.push(at),
                _ => {}
            }
            at += 1;
        }
        if at < bytes.len() && !commas.is_empty() {
            return Some((open, at, commas));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn words(word: &str) -> Vec<String> {
        brace_expansions(word).unwrap()
    }

    #[test]
    fn expands_like_bash() {
        assert_eq!(words("{..,x}"), ["..", "x"]);
        assert_eq!(words("{,.}."), [".", ".."]);
        assert_eq!(words("x{1,3}"), ["x1", "x3"]);
        assert_eq!(words("{a}{b,c}"), ["{a}b", "{a}c"]);
        assert_eq!(words("{a{b,c}}"), ["{ab}", "{ac}"]);
        assert_eq!(words("a/{b,{c,d}/e}"), ["a/b", "a/c/e", "a/d/e"]);
        assert_eq!(words("{-R,x}"), ["-R", "x"]);
        assert_eq!(words("plain"), ["plain"]);
        assert_eq!(words("{1..3}"), ["{1..3}"]);
        assert_eq!(words("{unclosed,"), ["{unclosed,"]);
    }

    #[test]
    fn refuses_explosions() {
        assert_eq!(brace_expansions(&"{a,b}".repeat(9)), None);
        assert_eq!(
            brace_expansions(&"{a,b}".repeat(8)).map(|w| w.len()),
            Some(256)
        );
    }
}
