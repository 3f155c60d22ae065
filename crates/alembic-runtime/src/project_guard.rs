//! Whether a directory may become a project without being asked. A tool call run in a
//! temporary directory, or an IDE that starts `alembic mcp` in the home directory, must not
//! index unrelated trees into a new database: front ends call [`require_project`] before
//! they open a project, and `alembic init` (the explicit way) does not.

use std::path::{Path, PathBuf};

use crate::RuntimeError;

/// Directories whose presence (in the directory or any ancestor) marks a version-control root.
pub const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// Files whose presence in the directory itself marks a project.
pub const PROJECT_FILES: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "Package.swift",
    "Gemfile",
    "composer.json",
    "Makefile",
    "CMakeLists.txt",
    "meson.build",
    "mix.exs",
    "deno.json",
    "pubspec.yaml",
    "stack.yaml",
    "build.sbt",
    "WORKSPACE",
    "MODULE.bazel",
];

/// File extensions that mark a project (.NET solutions and projects, Xcode projects).
pub const PROJECT_EXTENSIONS: &[&str] = &["sln", "csproj", "fsproj", "vbproj", "xcodeproj"];

/// Why a directory is not taken as a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAProject {
    /// No version-control root, no project file and no `.alembic/`.
    NoMarker,
    /// The home directory itself, which has no `.alembic/` yet.
    Home,
}

/// Ok when `root` is a project: it has `.alembic/`, or it is not the home directory and it
/// has a version-control directory in it or above it, or a project file in it. Otherwise
/// [`RuntimeError::NotAProject`], whose message names the `--project` and `alembic init`
/// hints. Reads only; never writes.
pub fn require_project(root: &Path) -> Result<(), RuntimeError> {
    if !root.is_dir() {
        return Err(RuntimeError::NoProject {
            path: root.to_path_buf(),
        });
    }
    let absolute = std::path::absolute(root).map_err(|_| RuntimeError::NoProject {
        path: root.to_path_buf(),
    })?;
    // A checkout whose state already lives beneath ALEMBIC_STATE_DIR is a project.
    if alembic_store::state_dir_override().is_some()
        && alembic_store::local_state_dir(&absolute).is_dir()
    {
        return Ok(());
    }
    match classify(&absolute, home_dir().as_deref()) {
        None => Ok(()),
        Some(why) => Err(RuntimeError::NotAProject {
            path: absolute,
            why,
        }),
    }
}

/// `None` when `root` (absolute) is a project; `home` is the user's home directory.
pub fn classify(root: &Path, home: Option<&Path>) -> Option<NotAProject> {
    // `symlink_metadata`: a `.alembic` link counts as present; the layout refuses it later
    // with its own message rather than this one.
    if std::fs::symlink_metadata(root.join(alembic_store::STATE_DIR)).is_ok() {
        return None;
    }
    if home.is_some_and(|h| same_dir(root, h)) {
        return Some(NotAProject::Home);
    }
    let vcs = root
        .ancestors()
        .any(|dir| VCS_DIRS.iter().any(|v| dir.join(v).exists()));
    if vcs || has_project_file(root) {
        return None;
    }
    Some(NotAProject::NoMarker)
}

fn has_project_file(root: &Path) -> bool {
    if PROJECT_FILES.iter().any(|f| root.join(f).exists()) {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return false;
    };
    entries.flatten().any(|e| {
        Path::new(&e.file_name())
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| PROJECT_EXTENSIONS.contains(&x))
    })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `$HOME` when set and not empty (the `alembic` process's own home directory).
fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The message of [`RuntimeError::NotAProject`].
pub(crate) fn explain(path: &Path, why: NotAProject) -> String {
    let p = path.display();
    let hint = format!(
        "nothing was written. Run the command inside a project or pass --project DIR, \
         or run `alembic init --project {p}` to make this directory a project"
    );
    match why {
        NotAProject::Home => format!(
            "{p} is your home directory, and alembic does not make it a project unless asked; {hint}"
        ),
        NotAProject::NoMarker => format!(
            "{p} does not look like a project: no version-control root (.git, .hg, .svn, .jj) \
             in it or above it, no project file (Cargo.toml, package.json, pyproject.toml, \
             go.mod, pom.xml, build.gradle, Package.swift, Makefile, ...) and no .alembic/ \
             directory; {hint}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_vcs_roots_and_the_home_directory_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let bare = dir.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        assert_eq!(classify(&bare, None), Some(NotAProject::NoMarker));

        let cargo = dir.path().join("cargo");
        std::fs::create_dir_all(&cargo).unwrap();
        std::fs::write(cargo.join("Cargo.toml"), "").unwrap();
        assert_eq!(classify(&cargo, None), None);

        let dotnet = dir.path().join("dotnet");
        std::fs::create_dir_all(&dotnet).unwrap();
        std::fs::write(dotnet.join("App.csproj"), "").unwrap();
        assert_eq!(classify(&dotnet, None), None);

        let nested = dir.path().join("repo/a/b");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::create_dir_all(dir.path().join("repo/.jj")).unwrap();
        assert_eq!(classify(&nested, None), None);

        // A marker above the directory is not enough: only a VCS root is inherited.
        let below_cargo = cargo.join("sub");
        std::fs::create_dir_all(&below_cargo).unwrap();
        assert_eq!(classify(&below_cargo, None), Some(NotAProject::NoMarker));

        // Home is refused even with a dotfiles repository, until `.alembic/` exists.
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".git")).unwrap();
        assert_eq!(classify(&home, Some(&home)), Some(NotAProject::Home));
        std::fs::create_dir_all(home.join(".alembic")).unwrap();
        assert_eq!(classify(&home, Some(&home)), None);
        assert_eq!(classify(&bare, Some(&home)), Some(NotAProject::NoMarker));
    }
}
