//! A project root `R` beside an outside directory `O` holding a secret.

use std::path::{Path, PathBuf};

use alembic_safety::{PathGuard, PathLimits, Strategy};

pub const SECRET: &str = "OUTSIDE-SECRET";

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub outside: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("README.md"), "inside\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        Self {
            _dir: dir,
            root,
            outside,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn symlink(&self, target: impl AsRef<Path>, rel: &str) {
        std::os::unix::fs::symlink(target, self.path(rel)).unwrap();
    }

    /// One guard per resolution strategy, so every case covers openat2 and the fallback walk.
    pub fn guards(&self) -> Vec<(Strategy, PathGuard)> {
        [Strategy::Auto, Strategy::ComponentWalk]
            .into_iter()
            .map(|s| {
                (
                    s,
                    PathGuard::with_strategy(&self.root, PathLimits::default(), s).unwrap(),
                )
            })
            .collect()
    }

    /// Everything under `O`, to prove nothing outside changed.
    pub fn outside_listing(&self) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let data = std::fs::read(e.path()).unwrap_or_default();
                (e.file_name().to_string_lossy().into_owned(), data)
            })
            .collect();
        out.sort();
        out
    }
}
