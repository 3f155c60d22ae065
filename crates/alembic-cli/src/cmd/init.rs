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
    let dir = root.join(alembic_runtime::store::STATE_DIR);
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let config = alembic_runtime::ProjectConfig::path_for(root);
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
