//! Option matching the way git's parse-options and GNU `getopt_long` read options.
//!
//! Both accept any unambiguous prefix of a long option (`--mov` is `--move`) and
//! `--opt=value`, and both read a short cluster (`-rd`) as several flags until one
//! takes a value. So a long option is refused when it is a prefix of (or equal to)
//! any refused option, and a short cluster when any of its letters is refused.

/// The option name of a long option word: `--move=x` gives `move`; `None` for
/// anything else, including the bare `--` that ends the options.
pub(crate) fn long_name(arg: &str) -> Option<&str> {
    let name = arg.strip_prefix("--")?;
    let name = name.split('=').next().unwrap_or_default();
    (!name.is_empty()).then_some(name)
}

/// True when `given` (a long option name without `--`) could be read as `option`
/// (written with or without `--`): equal, or an abbreviation of it.
pub(crate) fn abbreviates(given: &str, option: &str) -> bool {
    !given.is_empty() && option.trim_start_matches("--").starts_with(given)
}

/// The first of `refused` that the long option word `arg` could stand for.
pub(crate) fn refused_long<'a>(arg: &str, refused: &[&'a str]) -> Option<&'a str> {
    let given = long_name(arg)?;
    refused.iter().copied().find(|r| abbreviates(given, r))
}

/// The first letter of `refused` inside the short option word `arg` (`-o`, `-uo`,
/// `-o./file`). Every letter counts, even after one that takes a value: refusing
/// `sort -to` too is the price of never missing `sort -uo./out`.
pub(crate) fn refused_short(arg: &str, refused: &str) -> Option<char> {
    let cluster = arg.strip_prefix('-')?;
    if cluster.starts_with('-') {
        return None;
    }
    cluster.chars().find(|c| refused.contains(*c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn long_options_match_every_abbreviation_and_value_form() {
        let refused = ["--output", "--move"];
        for arg in [
            "--o", "--out", "--output", "--o=x", "--outp=f", "--mov", "--m=a",
        ] {
            assert!(refused_long(arg, &refused).is_some(), "{arg}");
        }
        for arg in ["--", "-o", "--outputs", "--no-move", "--x", "file"] {
            assert_eq!(refused_long(arg, &refused), None, "{arg}");
        }
    }

    #[test]
    fn short_clusters_match_any_letter() {
        for arg in ["-o", "-uo", "-o./out", "-nT/tmp"] {
            assert!(refused_short(arg, "oT").is_some(), "{arg}");
        }
        for arg in ["-u", "--output", "-", "o"] {
            assert_eq!(refused_short(arg, "oT"), None, "{arg}");
        }
    }
}
