//! `get_environment_info`: what the agent may know about its surroundings.
//!
//! Deliberately absent: environment variables, the hostname, user names and
//! credentials embedded in remote URLs (`https://user:token@host/…` is
//! reported as `https://host/…`). Probes run through [`crate::spawn::run`]
//! with git's program-running configuration switched off.

use std::time::Duration;

use alembic_tools::{ToolError, ToolOutput};
use serde_json::{Map, Value, json};

use crate::command::{git_disabled_env, hardened_git_env};
use crate::path::PathGuard;
use crate::spawn::{self, SpawnRequest};

/// Files whose presence says what kind of project this is.
const MARKERS: &[(&str, &str)] = &[
    ("Cargo.toml", "cargo"),
    ("package.json", "npm"),
    ("go.mod", "go"),
    ("pyproject.toml", "python"),
    ("requirements.txt", "python"),
    ("Gemfile", "ruby"),
    ("pom.xml", "maven"),
    ("build.gradle", "gradle"),
    ("build.gradle.kts", "gradle"),
    ("CMakeLists.txt", "cmake"),
    ("Makefile", "make"),
    ("Package.swift", "swiftpm"),
    ("Podfile", "cocoapods"),
    ("Cartfile", "carthage"),
];

/// Toolchains probed with `--version`.
const TOOLCHAINS: &[(&str, &[&str])] = &[
    ("rustc", &["--version"]),
    ("cargo", &["--version"]),
    ("node", &["--version"]),
    ("npm", &["--version"]),
    ("python3", &["--version"]),
    ("go", &["version"]),
    ("java", &["-version"]),
    ("swift", &["--version"]),
];

const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Arguments of `get_environment_info`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(super) struct EnvInfoArgs {
    #[serde(default = "all_sections")]
    pub(super) sections: Vec<Section>,
}

// One part of the report (a plain comment: a doc comment would become a schema description).
#[derive(
    Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub(super) enum Section {
    Os,
    Toolchains,
    Git,
    Project,
    All,
}

fn all_sections() -> Vec<Section> {
    vec![Section::All]
}

pub(super) fn collect(guard: &PathGuard, sections: &[Section]) -> Result<ToolOutput, ToolError> {
    // An empty list asks for nothing in particular: report everything.
    let all = sections.is_empty() || sections.contains(&Section::All);
    let wanted = |section: Section| all || sections.contains(&section);
    let mut data = Map::new();
    let mut lines = Vec::new();
    if wanted(Section::Os) {
        let os = os_section();
        lines.push(
            format!(
                "os: {} {} (kernel {}), {} cpus",
                os["platform"], os["arch"], os["release"], os["cpus"]
            )
            .replace('"', ""),
        );
        data.insert("os".into(), os);
    }
    if wanted(Section::Toolchains) {
        let tools = toolchains_section(guard);
        let shown: Vec<String> = tools
            .iter()
            .map(|(k, v)| format!("{k} {}", v.as_str().unwrap_or("")))
            .collect();
        lines.push(format!(
            "toolchains: {}",
            if shown.is_empty() {
                "none found".into()
            } else {
                shown.join("; ")
            }
        ));
        data.insert("toolchains".into(), Value::Object(tools));
    }
    if wanted(Section::Git) {
        let git = git_section(guard);
        lines.push(git_line(&git));
        data.insert("git".into(), git);
    }
    if wanted(Section::Project) {
        let project = project_section(guard);
        lines.push(format!(
            "project: {} [{}]",
            project["name"].as_str().unwrap_or(""),
            join_strings(&project["buildSystems"])
        ));
        data.insert("project".into(), project);
    }
    Ok(ToolOutput::new(Value::Object(data), lines.join("\n")))
}

fn os_section() -> Value {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    json!({
        "platform": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "release": release,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    })
}

/// First line of a probe's output, when it ran and succeeded.
fn probe(guard: &PathGuard, program: &str, args: &[&str], git: bool) -> Option<String> {
    let mut request = SpawnRequest::new(program)
        .args(args.iter().copied())
        .timeout(PROBE_TIMEOUT)
        .output_limit(4096);
    if git {
        request = hardened_git_env(guard)
            .unwrap_or_else(|_| git_disabled_env(guard))
            .into_iter()
            .fold(request, |r, (k, v)| r.env(k, v));
    }
    let out = spawn::run(guard, request).ok()?;
    if out.exit_code != Some(0) {
        return None;
    }
    // `java -version` prints to stderr.
    let text = if out.stdout.trim().is_empty() {
        &out.stderr
    } else {
        &out.stdout
    };
    Some(text.lines().next().unwrap_or("").trim().to_owned())
}

fn toolchains_section(guard: &PathGuard) -> Map<String, Value> {
    TOOLCHAINS
        .iter()
        .filter_map(|(program, args)| {
            probe(guard, program, args, false).map(|v| ((*program).to_owned(), Value::String(v)))
        })
        .collect()
}

fn git_section(guard: &PathGuard) -> Value {
    let inside = probe(guard, "git", &["rev-parse", "--is-inside-work-tree"], true);
    if inside.as_deref() != Some("true") {
        return json!({"repository": false});
    }
    // symbolic-ref also names the branch of a repository without commits; a
    // detached HEAD has no symbolic name, so show the commit instead.
    let branch = probe(
        guard,
        "git",
        &["symbolic-ref", "--short", "-q", "HEAD"],
        true,
    )
    .or_else(|| {
        probe(guard, "git", &["rev-parse", "--short", "HEAD"], true)
            .map(|c| format!("(detached at {c})"))
    })
    .unwrap_or_default();
    let status = git_full(guard, &["status", "--porcelain"]).unwrap_or_default();
    let changed = status.lines().filter(|l| !l.trim().is_empty()).count();
    let last_commit = probe(guard, "git", &["log", "-1", "--format=%h %s (%cr)"], true);
    let remote =
        probe(guard, "git", &["remote", "get-url", "origin"], true).map(|u| strip_credentials(&u));
    json!({
        "repository": true,
        "branch": branch,
        "dirty": changed > 0,
        "changedFiles": changed,
        "lastCommit": last_commit,
        "remote": remote,
    })
}

fn git_full(guard: &PathGuard, args: &[&str]) -> Option<String> {
    let request = hardened_git_env(guard)
        .unwrap_or_else(|_| git_disabled_env(guard))
        .into_iter()
        .fold(
            SpawnRequest::new("git").args(args.iter().copied()),
            |r, (k, v)| r.env(k, v),
        )
        .timeout(PROBE_TIMEOUT);
    let out = spawn::run(guard, request).ok()?;
    (out.exit_code == Some(0)).then_some(out.stdout)
}

fn git_line(git: &Value) -> String {
    if git["repository"] != json!(true) {
        return "git: not a repository".into();
    }
    format!(
        "git: branch {}, {}, last commit {}",
        git["branch"].as_str().unwrap_or("?"),
        if git["dirty"] == json!(true) {
            format!("{} changed files", git["changedFiles"])
        } else {
            "clean".into()
        },
        git["lastCommit"].as_str().unwrap_or("none")
    )
}

/// Removes `user[:password]@` from URLs; scp-style `git@host:path` keeps only the host part.
pub(super) fn strip_credentials(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        return if path.is_empty() {
            format!("{scheme}://{host}")
        } else {
            format!("{scheme}://{host}/{path}")
        };
    }
    match url.split_once('@') {
        Some((_, host_and_path)) if !url.contains('/') || url.find('@') < url.find('/') => {
            host_and_path.to_owned()
        }
        _ => url.to_owned(),
    }
}

fn project_section(guard: &PathGuard) -> Value {
    let name = guard
        .root()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let markers: Vec<&str> = MARKERS
        .iter()
        .filter(|(file, _)| guard.metadata(file).is_ok())
        .map(|(file, _)| *file)
        .collect();
    let mut systems: Vec<&str> = MARKERS
        .iter()
        .filter(|(file, _)| markers.contains(file))
        .map(|(_, s)| *s)
        .collect();
    systems.dedup();
    let package = guard
        .read_to_string("package.json")
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .map(|p| json!({"name": p["name"], "version": p["version"]}));
    json!({
        "name": name,
        "markers": markers,
        "buildSystems": systems,
        "packageJson": package,
    })
}

fn join_strings(list: &Value) -> String {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::strip_credentials;
    use pretty_assertions::assert_eq;

    #[test]
    fn credentials_are_removed_from_remote_urls() {
        assert_eq!(
            strip_credentials("https://user:ghp_secret@github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(
            strip_credentials("https://token@host.example/x"),
            "https://host.example/x"
        );
        assert_eq!(
            strip_credentials("https://github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(
            strip_credentials("git@github.com:o/r.git"),
            "github.com:o/r.git"
        );
        assert_eq!(
            strip_credentials("ssh://git:pw@host:22/r"),
            "ssh://host:22/r"
        );
    }
}
