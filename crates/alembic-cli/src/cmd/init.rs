//! `alembic init`

use std::fs;

use anyhow::Context;
use clap::Args;

use alembic_runtime::store::layout::{self, GitignoreChange};

use crate::exit::Exit;
use crate::{CmdResult, ProjectArgs};

#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Overwrite an existing config.toml with the commented defaults
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: InitArgs) -> CmdResult {
    let root = &args.project.project;
    if !root.is_dir() {
        anyhow::bail!(crate::exit::UsageError(format!(
            "project directory {} does not exist",
            root.display()
        )));
    }
    let dir = layout::state_dir(root)?;
    let config = alembic_runtime::ProjectConfig::path_for(root);
    if fs::symlink_metadata(&config).is_ok_and(|m| m.file_type().is_symlink()) {
        anyhow::bail!(crate::exit::UsageError(format!(
            "{} is a symbolic link; alembic neither reads nor writes project files through links: replace it with a plain file",
            config.display()
        )));
    }
    if config.exists() && !args.force {
        println!(
            "{} already exists (use --force to rewrite it)",
            config.display()
        );
    } else {
        fs::write(&config, alembic_runtime::DEFAULT_CONFIG)
            .with_context(|| format!("cannot write {}", config.display()))?;
        println!("wrote {}", config.display());
    }
    // Keep only the local state (database, audit log, temporary files) out of version
    // control; skills, saved tools, guard rules and config are shared with the team.
    let ignore = dir.join(".gitignore");
    match layout::ensure_gitignore(root)? {
        GitignoreChange::Written => println!("wrote {}", ignore.display()),
        GitignoreChange::Upgraded => println!(
            "updated {}: it ignored everything (`*`); now it ignores only the local state (database, audit log, temporary files), so skills, saved tools, guard rules and config can be committed",
            ignore.display()
        ),
        GitignoreChange::Kept => {}
    }
    alembic_runtime::store::open_project(root).context("cannot create the project database")?;
    println!("initialised {}", dir.display());
    Ok(Exit::Ok)
}
