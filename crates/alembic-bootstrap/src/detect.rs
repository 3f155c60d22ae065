//! Project detection: languages from file counts and manifests, frameworks from manifests
//! and imports.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::facts::SourceFile;

/// What the project is written in and with.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProjectProfile {
    /// Languages with a real share of the sources, the primary (most files) first.
    pub languages: Vec<String>,
    /// Frameworks named by manifests or imports, sorted.
    pub frameworks: Vec<String>,
    /// Manifests found (relative paths).
    pub manifests: Vec<String>,
    /// Source files per language.
    pub file_counts: BTreeMap<String, usize>,
}

impl ProjectProfile {
    pub fn primary_language(&self) -> Option<&str> {
        self.languages.first().map(String::as_str)
    }
}

/// The language a file extension stands for (names as in dimension conditions).
pub fn language_of(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1;
    Some(match ext {
        "rs" => "rust",
        "swift" => "swift",
        "m" | "mm" => "objectivec",
        "py" => "python",
        "ts" | "tsx" | "mts" | "cts" => "typescript",
        "js" | "jsx" | "mjs" | "cjs" => "javascript",
        "go" => "go",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "cs" => "csharp",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        "vue" => "javascript",
        _ => return None,
    })
}

/// Manifest file name → language it implies.
const MANIFESTS: &[(&str, &str)] = &[
    ("Cargo.toml", "rust"),
    ("package.json", "javascript"),
    ("tsconfig.json", "typescript"),
    ("Package.swift", "swift"),
    ("Podfile", "swift"),
    ("pyproject.toml", "python"),
    ("requirements.txt", "python"),
    ("setup.py", "python"),
    ("go.mod", "go"),
    ("pom.xml", "java"),
    ("build.gradle", "java"),
    ("build.gradle.kts", "kotlin"),
];

/// Framework name → words that name it in a manifest, and import lines that name it in a
/// source file.
const FRAMEWORKS: &[(&str, &[&str], &[&str])] = &[
    ("react", &["\"react\""], &["from 'react'", "from \"react\""]),
    ("nextjs", &["\"next\""], &["from 'next/", "from \"next/"]),
    ("vue", &["\"vue\""], &["from 'vue'", "from \"vue\""]),
    ("nuxt", &["\"nuxt\""], &[]),
    (
        "spring-boot",
        &["spring-boot"],
        &["import org.springframework.boot"],
    ),
    (
        "spring",
        &["org.springframework"],
        &["import org.springframework"],
    ),
    ("swiftui", &[], &["import SwiftUI"]),
    ("django", &["django"], &["from django", "import django"]),
    ("fastapi", &["fastapi"], &["from fastapi", "import fastapi"]),
    ("flask", &["flask"], &["from flask", "import flask"]),
    ("tokio", &["tokio ="], &[]),
];

fn frameworks_in(f: &SourceFile, manifest: bool, found: &mut std::collections::BTreeSet<String>) {
    for (fw, manifest_words, imports) in FRAMEWORKS {
        let named = if manifest {
            manifest_words.iter().any(|w| f.text.contains(w))
        } else {
            imports.iter().any(|w| imports_in(f, w))
        };
        if named {
            found.insert((*fw).to_string());
        }
    }
}

/// Whether a line of `f` is the import `marker` (`from 'react'`, `import SwiftUI`): the
/// marker is on the line outside comments, and its keyword is code, not a string that
/// holds the marker (a table of import markers like this file's).
fn imports_in(f: &SourceFile, marker: &str) -> bool {
    let keyword = marker.split_whitespace().next().unwrap_or(marker);
    f.no_comments
        .lines()
        .zip(f.code.lines())
        .any(|(text, code)| text.contains(marker) && code.contains(keyword))
}

/// Builds the profile from the scanned files (sources and manifests).
pub fn detect(files: &[SourceFile]) -> ProjectProfile {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut manifests = Vec::new();
    let mut manifest_langs = Vec::new();
    let mut frameworks = std::collections::BTreeSet::new();
    for f in files {
        let name = f.path.rsplit('/').next().unwrap_or(&f.path);
        let manifest = MANIFESTS.iter().find(|(m, _)| *m == name).map(|(_, l)| *l);
        let manifest = manifest
            .or_else(|| name.ends_with(".csproj").then_some("csharp"))
            .or_else(|| f.path.contains(".xcodeproj/").then_some("swift"));
        if let Some(lang) = manifest {
            manifests.push(f.path.clone());
            manifest_langs.push(lang);
        }
        if let Some(lang) = f.language {
            *counts.entry(lang.to_string()).or_default() += 1;
        }
        if manifest.is_some() || f.language.is_some() {
            frameworks_in(f, manifest.is_some(), &mut frameworks);
        }
    }
    let total: usize = counts.values().sum();
    let mut ranked: Vec<(&String, &usize)> = counts.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut languages: Vec<String> = ranked
        .iter()
        .filter(|(_, n)| **n * 10 >= total)
        .map(|(l, _)| (*l).clone())
        .collect();
    for l in manifest_langs {
        if counts.contains_key(l) && !languages.iter().any(|x| x == l) {
            languages.push(l.to_string());
        }
    }
    if frameworks.contains("spring-boot") {
        frameworks.insert("spring".into());
    }
    ProjectProfile {
        languages,
        frameworks: frameworks.into_iter().collect(),
        manifests,
        file_counts: counts,
    }
}
