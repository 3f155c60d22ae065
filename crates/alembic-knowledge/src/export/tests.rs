use pretty_assertions::assert_eq;
use serde_json::Map;

use super::*;
use crate::model::{Entry, Kind, Status};

fn entry(id: &str, title: &str, language: &str, status: Status) -> Entry {
    Entry {
        id: id.into(),
        title: title.into(),
        description: format!("{title} in one sentence."),
        kind: Kind::Rule,
        knowledge_type: "code-standard".into(),
        category: String::new(),
        language: language.into(),
        trigger: None,
        content: String::new(),
        pattern: String::new(),
        rationale: String::new(),
        tags: Vec::new(),
        sources: Vec::new(),
        extra: Map::new(),
        quality: None,
        status,
        created_by: "agent".into(),
        created_at: 0,
        updated_at: 0,
        views: 0,
        adoptions: 0,
        applications: 0,
        version: 1,
    }
}

fn sample() -> Vec<Entry> {
    let mut retry = entry("k1", "Retry with backoff", "rust", Status::Published);
    retry.kind = Kind::Pattern;
    retry.rationale = "Flaky   networks\nneed it.".into();
    retry.sources = vec!["src/net.rs".into()];
    retry.pattern = "let r = retry(|| send())?;\n// ```inline``` fence".into();
    let errors = entry("k2", "Errors are thiserror enums", "", Status::Published);
    let draft = entry("k3", "Not reviewed yet", "", Status::Submitted);
    vec![retry, errors, draft]
}

fn agents_file() -> GuidelineFile {
    render(GuidelineFormat::AgentsMd, &sample(), "AGENTS.md").remove(0)
}

#[test]
fn agents_md_block_holds_only_published_entries_grouped_by_language() {
    insta::assert_snapshot!(agents_file().block);
}

#[test]
fn a_new_file_is_the_block_and_a_second_merge_is_byte_identical() {
    let file = agents_file();
    let first = merge(None, &file).unwrap();
    assert_eq!(first, format!("{}\n", file.block));
    let second = merge(Some(&first), &file).unwrap();
    assert_eq!(second, first);
}

#[test]
fn text_outside_the_block_is_kept_byte_for_byte() {
    let file = agents_file();
    let mine = "# My project\r\n\nBuild with `make`.\n";
    let once = merge(Some(mine), &file).unwrap();
    assert!(once.starts_with(mine), "{once}");
    let edited = once.replace("# My project", "# My project (edited)") + "\n## Footer\n";
    let twice = merge(Some(&edited), &file).unwrap();
    assert_eq!(twice, edited);
    // A changed block is replaced in place; the text around it stays.
    let stale = edited.replace("Retry with backoff", "Old title");
    assert_eq!(merge(Some(&stale), &file).unwrap(), edited);
}

#[test]
fn broken_or_duplicated_markers_are_refused_with_their_lines() {
    let file = agents_file();
    let begin_only = format!("intro\n{BEGIN_MARKER}\nstuff\n");
    let err = merge(Some(&begin_only), &file).unwrap_err();
    assert_eq!(
        err,
        ExportError::BrokenMarkers {
            path: "AGENTS.md".into(),
            detail: "1 begin marker (line 2), no end marker".into()
        }
    );
    let twice = format!("{}\n{}\n", file.block, file.block);
    let msg = merge(Some(&twice), &file).unwrap_err().to_string();
    assert!(msg.contains("2 begin markers (lines 1, "), "{msg}");
    assert!(msg.contains("nothing was written"), "{msg}");
    let reversed = format!("{END_MARKER}\n{BEGIN_MARKER}\n");
    let msg = merge(Some(&reversed), &file).unwrap_err().to_string();
    assert!(msg.contains("the end comes before the begin"), "{msg}");
}

#[test]
fn entry_text_cannot_forge_a_marker_line() {
    let mut e = entry("k9", "Sneaky", "", Status::Published);
    e.description = format!("x\n{END_MARKER}\n{BEGIN_MARKER}");
    e.pattern = format!("{END_MARKER}\nfoo");
    let file = render(GuidelineFormat::ClaudeMd, &[e], "CLAUDE.md").remove(0);
    let text = merge(None, &file).unwrap();
    assert_eq!(merge(Some(&text), &file).unwrap(), text);
}

#[test]
fn cursor_rules_split_language_entries_into_glob_attached_rules() {
    let files = render(
        GuidelineFormat::CursorRules,
        &sample(),
        ".cursor/rules/alembic.mdc",
    );
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            ".cursor/rules/alembic.mdc",
            ".cursor/rules/alembic-rust.mdc"
        ]
    );
    let rust = merge(None, &files[1]).unwrap();
    insta::assert_snapshot!(rust);
    let fm = check_front_matter(&rust).unwrap();
    assert_eq!(fm.globs, ["**/*.rs"]);
    assert!(!fm.always_apply);
    let general = merge(None, &files[0]).unwrap();
    assert!(general.starts_with(
        "---\ndescription: Project knowledge from Alembic that applies to all code\nglobs: \nalwaysApply: true\n---\n"
    ));
    assert!(general.contains("Errors are thiserror enums"));
    assert!(!general.contains("Retry with backoff"));
    assert_eq!(merge(Some(&general), &files[0]).unwrap(), general);
}

#[test]
fn cursor_front_matter_written_by_a_person_is_kept_but_must_be_valid() {
    let files = render(GuidelineFormat::CursorRules, &sample(), "r.mdc");
    let mine = "---\ndescription: Team rules\nglobs: src/**\nalwaysApply: false\n---\nBe nice.\n";
    let merged = merge(Some(mine), &files[0]).unwrap();
    assert!(merged.starts_with(mine));
    let quoted = "---\ndescription: x\nalwaysApply: \"true\"\n---\n";
    let msg = merge(Some(quoted), &files[0]).unwrap_err().to_string();
    assert!(
        msg.contains("alwaysApply must be the YAML boolean true or false, got \"true\""),
        "{msg}"
    );
    let none = "just text\n";
    let msg = merge(Some(none), &files[0]).unwrap_err().to_string();
    assert!(msg.contains("must start with a \"---\" line"), "{msg}");
}

#[test]
fn an_empty_knowledge_base_says_so() {
    let file = render(GuidelineFormat::AgentsMd, &[], "AGENTS.md").remove(0);
    assert!(file.block.contains("No published knowledge yet."));
}

#[test]
fn a_long_knowledge_base_stays_within_the_line_budget() {
    let many: Vec<Entry> = (0..400)
        .map(|i| {
            entry(
                &format!("k{i:03}"),
                &format!("Rule {i:03}"),
                "",
                Status::Published,
            )
        })
        .collect();
    let block = render(GuidelineFormat::AgentsMd, &many, "AGENTS.md")
        .remove(0)
        .block;
    let lines = block.lines().count();
    assert!(lines <= MAX_BLOCK_LINES + 3, "{lines}");
    assert!(
        block.contains("more published entries did not fit"),
        "{block}"
    );
}

#[test]
fn formats_parse_and_unknown_ones_name_the_accepted() {
    assert_eq!("cursor-rules".parse(), Ok(GuidelineFormat::CursorRules));
    let err = "windsurf"
        .parse::<GuidelineFormat>()
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "unknown export format \"windsurf\": accepted formats are agents-md, claude-md, cursor-rules"
    );
}
