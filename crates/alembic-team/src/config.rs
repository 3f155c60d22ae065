//! [`TeamConfig`]: how to reach the team server. The runtime parses `[team]` and
//! `ALEMBIC_TEAM_URL` into it (`alembic_runtime::team_config`); this crate only uses it.

use std::time::Duration;

/// Default bound on reaching the server (connecting, or waiting for a pooled connection).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A team store on a PostgreSQL server.
#[derive(Clone, PartialEq)]
pub struct TeamConfig {
    /// `postgres://user[:password]@host[:port]/database[?sslmode=…]`; `sslmode` (disable,
    /// prefer, require, verify-ca, verify-full) goes to the client as given.
    pub url: String,
    /// The team whose rows this client reads and writes; every query filters by it.
    pub team: String,
    /// Recorded on every write (the OS user, or `[team] author`).
    pub author: String,
    /// Bound on reaching the server: a server that is down or unreachable fails within it.
    pub connect_timeout: Duration,
}

/// Never prints the URL: it may hold a password.
impl std::fmt::Debug for TeamConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamConfig")
            .field("team", &self.team)
            .field("author", &self.author)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

impl TeamConfig {
    /// A config with the default connect timeout.
    pub fn new(
        url: impl Into<String>,
        team: impl Into<String>,
        author: impl Into<String>,
    ) -> TeamConfig {
        TeamConfig {
            url: url.into(),
            team: team.into(),
            author: author.into(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }

    pub fn with_connect_timeout(mut self, timeout: Duration) -> TeamConfig {
        self.connect_timeout = timeout;
        self
    }
}

/// Accepts `postgres://` and `postgresql://` URLs only (the client would otherwise read a
/// URL of another database as PostgreSQL options).
pub fn check_url(url: &str) -> Result<(), crate::TeamError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(());
    }
    let scheme = url.split_once("://").map_or("none", |(s, _)| s);
    Err(crate::TeamError::BadUrl {
        reason: format!("scheme {scheme:?} is not postgres or postgresql"),
    })
}
