//! The `[team]` section of `.alembic/config.toml` and `ALEMBIC_TEAM_URL`, read into
//! [`alembic_team::TeamConfig`]. Without either, there is no team and nothing changes.
//!
//! ```toml
//! [team]
//! url = "postgres://ana@db.internal:5432/alembic?sslmode=verify-full"
//! team = "platform"
//! # author = "ana"            # default: the OS user ($USER, $LOGNAME)
//! # url_file = "team-url"     # a file holding the URL (relative to .alembic/)
//! # connect_timeout_secs = 5
//! ```
//!
//! The URL comes from `ALEMBIC_TEAM_URL`, else `url_file`, else `url`. A URL with a password
//! is refused when the file holding it can be read by group or others: it must then come
//! from the environment variable or a file with mode 0600. `sslmode` stays in the URL and goes
//! to the client as written; an unknown value is refused here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use alembic_knowledge::KnowledgeService;
use alembic_memory::tools::MemoryService;
use alembic_memory::{EmbedderConfig, MemoryConfig};
use alembic_team::{DEFAULT_CONNECT_TIMEOUT, TeamConfig};

use crate::config::{ConfigError, ProjectConfig};

/// The environment variable that overrides `[team] url` (and `url_file`).
pub const TEAM_URL_VAR: &str = "ALEMBIC_TEAM_URL";

/// Keys of `[team]`, as listed in error messages.
pub const KEYS: &[&str] = &["url", "url_file", "team", "author", "connect_timeout_secs"];

/// `sslmode` values the client accepts.
const SSL_MODES: &[&str] = &[
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];

/// The project's memory service: SQLite for project and user memories and, with a team
/// configured, the team store for team-scoped ones (connected on first team use, so a
/// server that is down never stops local work).
pub fn memory_service(
    root: &Path,
    config: &ProjectConfig,
    memory: MemoryConfig,
    embedder: EmbedderConfig,
) -> Result<MemoryService, ConfigError> {
    let team = team_settings(config)?;
    let service = MemoryService::for_project(root, memory.clone()).with_embedder_config(embedder);
    Ok(match team {
        Some(team) => {
            let clock = Arc::new(alembic_memory::SystemClock);
            let (label, open) = alembic_team::team_opener(team, memory, clock);
            service.with_team(label, open)
        }
        None => service,
    })
}

/// The project's knowledge base: the project database without a team; with a team
/// configured, the team's store on the server (connected on first use, so a server that is
/// down fails knowledge calls only, naming it and the cause, and never stops other work).
/// The project database stays reachable (`KnowledgeService::with_local`) for bootstrap's
/// local transaction and `alembic team push|pull`.
pub fn knowledge_service(
    root: &Path,
    config: &ProjectConfig,
) -> Result<KnowledgeService, ConfigError> {
    let service = KnowledgeService::for_project(root);
    Ok(match team_settings(config)? {
        Some(team) => {
            let (label, open) =
                alembic_team::knowledge_opener(team, Arc::new(alembic_memory::SystemClock));
            service.with_team(label, open)
        }
        None => service,
    })
}

/// The team store of the project, or `None` when no team is configured.
pub fn team_settings(config: &ProjectConfig) -> Result<Option<TeamConfig>, ConfigError> {
    resolve(config, &|name| std::env::var(name).ok())
}

/// [`team_settings`] with the environment given.
pub fn resolve(
    config: &ProjectConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<TeamConfig>, ConfigError> {
    let path = config
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from("config.toml"));
    let invalid = |message: String| ConfigError::Invalid {
        path: path.clone(),
        message,
    };
    let empty = toml::Table::new();
    let table = match config.section("team") {
        Some(v) => v
            .as_table()
            .ok_or_else(|| invalid("[team] must be a table of settings".into()))?,
        None => &empty,
    };
    let env_url = env(TEAM_URL_VAR).filter(|u| !u.trim().is_empty());
    if table.is_empty() && env_url.is_none() {
        return Ok(None);
    }
    Section::read(table, config.path.as_deref())
        .and_then(|s| s.into_config(env_url, env))
        .map(Some)
        .map_err(invalid)
}

/// The keys of `[team]` as written.
#[derive(Default)]
struct Section {
    url: Option<String>,
    url_file: Option<PathBuf>,
    team: Option<String>,
    author: Option<String>,
    timeout: Option<Duration>,
    /// The config file, whose mode decides whether `url` may hold a password.
    file: Option<PathBuf>,
}

impl Section {
    fn read(table: &toml::Table, file: Option<&Path>) -> Result<Section, String> {
        let mut s = Section {
            file: file.map(Path::to_path_buf),
            ..Section::default()
        };
        for (key, value) in table {
            let text = || {
                value
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("[team] {key} = {value}: accepted a string"))
            };
            match key.as_str() {
                "url" => s.url = Some(text()?),
                "url_file" => s.url_file = Some(PathBuf::from(text()?)),
                "team" => s.team = Some(text()?),
                "author" => s.author = Some(text()?),
                "connect_timeout_secs" => match value.as_integer() {
                    Some(n @ 1..=120) => s.timeout = Some(Duration::from_secs(n as u64)),
                    _ => {
                        return Err(format!(
                            "[team] connect_timeout_secs = {value}: accepted a whole number of seconds from 1 to 120"
                        ));
                    }
                },
                other => {
                    return Err(format!(
                        "[team] has no setting {other:?}; accepted: {}",
                        KEYS.join(", ")
                    ));
                }
            }
        }
        Ok(s)
    }

    fn into_config(
        self,
        env_url: Option<String>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<TeamConfig, String> {
        let url = self.url(env_url)?;
        alembic_team::check_url(&url).map_err(|e| format!("[team] url: {e}"))?;
        check_sslmode(&url)?;
        let team = self.team.clone().ok_or_else(|| {
            "[team] needs team = \"<name>\": the team whose memories this project shares"
                .to_string()
        })?;
        alembic_team::check_team_name(&team).map_err(|e| format!("[team] team: {e}"))?;
        let author = self
            .author
            .clone()
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
            .filter(|a| !a.trim().is_empty())
            .ok_or_else(|| {
                "[team] cannot tell who writes: set author = \"<name>\" (USER and LOGNAME are unset)"
                    .to_string()
            })?;
        Ok(TeamConfig::new(url, team, author)
            .with_connect_timeout(self.timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)))
    }

    /// The URL from the environment, `url_file` or `url`, refusing a password in a file that
    /// others can read.
    fn url(&self, env_url: Option<String>) -> Result<String, String> {
        if let Some(url) = env_url {
            return Ok(url.trim().to_string());
        }
        match (&self.url, &self.url_file) {
            (Some(_), Some(_)) => Err("[team] has both url and url_file; keep one".into()),
            (Some(url), None) => {
                if has_password(url) {
                    self.check_private(self.file.as_deref(), "url")?;
                }
                Ok(url.clone())
            }
            (None, Some(file)) => {
                let base = self.file.as_deref().and_then(Path::parent);
                let path = base.map_or_else(|| file.clone(), |b| b.join(file));
                let url = std::fs::read_to_string(&path)
                    .map_err(|e| format!("[team] url_file {}: {e}", path.display()))?;
                if has_password(&url) {
                    self.check_private(Some(&path), "url_file")?;
                }
                Ok(url.trim().to_string())
            }
            (None, None) => Err(format!(
                "[team] needs the server: url = \"postgres://user@host:5432/database\", url_file, or {TEAM_URL_VAR}"
            )),
        }
    }

    fn check_private(&self, file: Option<&Path>, key: &str) -> Result<(), String> {
        let Some(file) = file else {
            return Ok(());
        };
        let mode = file_mode(file).map_err(|e| format!("[team] {key}: {}: {e}", file.display()))?;
        if mode & 0o077 == 0 {
            return Ok(());
        }
        Err(format!(
            "[team] {key}: {} holds a database password and others can read it (mode {:o}); \
             put the URL in {TEAM_URL_VAR} instead, or in a file only you can read (chmod 600 <file>) named by url_file",
            file.display(),
            mode & 0o777
        ))
    }
}

#[cfg(unix)]
fn file_mode(path: &Path) -> std::io::Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)?.permissions().mode())
}

#[cfg(not(unix))]
fn file_mode(path: &Path) -> std::io::Result<u32> {
    std::fs::metadata(path).map(|_| 0o600)
}

/// True when the URL carries a password (`user:secret@host` or `?password=`).
fn has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let in_userinfo = authority
        .rsplit_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .is_some_and(|(_, password)| !password.is_empty());
    in_userinfo || query_value(url, "password").is_some()
}

fn query_value<'a>(url: &'a str, key: &str) -> Option<&'a str> {
    let (_, query) = url.split_once('?')?;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

fn check_sslmode(url: &str) -> Result<(), String> {
    match query_value(url, "sslmode") {
        Some(mode) if !SSL_MODES.contains(&mode) => Err(format!(
            "[team] url: sslmode={mode} is not supported; accepted: {}",
            SSL_MODES.join(", ")
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn user_env(name: &str) -> Option<String> {
        (name == "USER").then(|| "ana".to_string())
    }

    /// Writes `text` as the project's config file with `mode`, and resolves it.
    fn resolve_file(
        text: &str,
        mode: u32,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> (tempfile::TempDir, Result<Option<TeamConfig>, String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        set_mode(&path, mode);
        let config = ProjectConfig::parse(text, Some(path)).unwrap();
        let r = resolve(&config, env).map_err(|e| e.to_string());
        (dir, r)
    }

    fn set_mode(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn no_section_and_no_variable_mean_no_team() {
        let config = ProjectConfig::parse(crate::DEFAULT_CONFIG, None).unwrap();
        assert_eq!(resolve(&config, &no_env).unwrap(), None);
    }

    #[test]
    fn the_section_gives_url_team_author_and_timeout() {
        let text = "[team]\nurl = \"postgres://ana@db:5432/alembic?sslmode=verify-full\"\nteam = \"platform\"\nconnect_timeout_secs = 2\n";
        let (_dir, r) = resolve_file(text, 0o644, &user_env);
        let team = r.unwrap().unwrap();
        assert_eq!(
            team,
            TeamConfig::new(
                "postgres://ana@db:5432/alembic?sslmode=verify-full",
                "platform",
                "ana"
            )
            .with_connect_timeout(Duration::from_secs(2))
        );
        let (_dir, r) = resolve_file(
            "[team]\nurl = \"postgres://db/a\"\nteam = \"p\"\nauthor = \"bo\"\n",
            0o644,
            &no_env,
        );
        let team = r.unwrap().unwrap();
        assert_eq!(
            (team.author.as_str(), team.connect_timeout),
            ("bo", DEFAULT_CONNECT_TIMEOUT)
        );
    }

    #[test]
    fn a_password_in_a_file_others_can_read_is_refused() {
        let text = "[team]\nurl = \"postgres://ana:s3cret@db/alembic\"\nteam = \"platform\"\n";
        let (_dir, r) = resolve_file(text, 0o644, &user_env);
        let err = r.unwrap_err();
        assert!(
            err.contains("holds a database password and others can read it (mode 644)"),
            "{err}"
        );
        assert!(
            err.contains("ALEMBIC_TEAM_URL") && err.contains("chmod 600"),
            "{err}"
        );
        assert!(
            !err.contains("s3cret"),
            "the message must not show the password: {err}"
        );
        // the same file readable only by its owner is accepted
        let (_dir, r) = resolve_file(text, 0o600, &user_env);
        assert_eq!(r.unwrap().unwrap().url, "postgres://ana:s3cret@db/alembic");
        // so is a password in the query, refused alike
        let text = "[team]\nurl = \"postgres://ana@db/alembic?password=x\"\nteam = \"platform\"\n";
        let (_dir, r) = resolve_file(text, 0o640, &user_env);
        assert!(r.unwrap_err().contains("mode 640"));
    }

    #[test]
    fn url_file_must_be_private_when_it_holds_a_password() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("team-url");
        std::fs::write(&secret, "postgres://ana:s3cret@db/alembic\n").unwrap();
        set_mode(&secret, 0o644);
        let text = "[team]\nurl_file = \"team-url\"\nteam = \"platform\"\n";
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = ProjectConfig::parse(text, Some(path)).unwrap();
        let err = resolve(&config, &user_env).unwrap_err().to_string();
        assert!(err.contains("team-url holds a database password"), "{err}");
        set_mode(&secret, 0o600);
        let team = resolve(&config, &user_env).unwrap().unwrap();
        assert_eq!(team.url, "postgres://ana:s3cret@db/alembic");
    }

    #[test]
    fn the_environment_variable_overrides_the_file_and_alone_needs_a_team() {
        let env = |name: &str| match name {
            TEAM_URL_VAR => Some("postgres://ana:pw@db/alembic".to_string()),
            "USER" => Some("ana".to_string()),
            _ => None,
        };
        let (_dir, r) = resolve_file(
            "[team]\nurl = \"postgres://ana:leaked@db/x\"\nteam = \"platform\"\n",
            0o644,
            &env,
        );
        assert_eq!(r.unwrap().unwrap().url, "postgres://ana:pw@db/alembic");
        let config = ProjectConfig::parse("", None).unwrap();
        let err = resolve(&config, &env).unwrap_err().to_string();
        assert!(err.contains("[team] needs team = \"<name>\""), "{err}");
    }

    #[test]
    fn bad_values_name_the_key_and_what_is_accepted() {
        let cases = [
            (
                "url = \"mysql://db/x\"\nteam = \"p\"",
                "scheme \"mysql\" is not postgres",
            ),
            (
                "url = \"postgres://db/x?sslmode=maybe\"\nteam = \"p\"",
                "sslmode=maybe is not supported; accepted: disable, allow, prefer, require, verify-ca, verify-full",
            ),
            (
                "url = \"postgres://db/x\"\nteam = \"My Team\"",
                "team name \"My Team\" is not valid",
            ),
            (
                "url = \"postgres://db/x\"\nteam = \"p\"\nconnect_timeout_secs = 0",
                "from 1 to 120",
            ),
            (
                "url = \"postgres://db/x\"\nteam = \"p\"\nhost = \"db\"",
                "[team] has no setting \"host\"; accepted: url, url_file",
            ),
            ("team = \"p\"", "[team] needs the server"),
            ("url = 5\nteam = \"p\"", "[team] url = 5: accepted a string"),
        ];
        for (body, expected) in cases {
            let (_dir, r) = resolve_file(&format!("[team]\n{body}\n"), 0o600, &user_env);
            let err = r.unwrap_err();
            assert!(err.contains(expected), "{body}: {err}");
        }
        let (_dir, r) = resolve_file(
            "[team]\nurl = \"postgres://db/x\"\nteam = \"p\"\n",
            0o600,
            &no_env,
        );
        assert!(r.unwrap_err().contains("set author = \"<name>\""));
    }
}
