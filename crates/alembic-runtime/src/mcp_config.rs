//! `[mcp.http]` in `.alembic/config.toml`: the limits of `alembic mcp --http` and the OAuth
//! resource-server settings. Parsed with the rest of the file by [`crate::ProjectConfig`], so a
//! typo is refused when the project opens, not when the first request arrives.

use serde::Deserialize;

/// `[mcp]`: only `[mcp.http]` so far.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    #[serde(default)]
    pub http: McpHttpSection,
}

/// `[mcp.http]`. The defaults suit a team server of a few dozen people: a 4 MiB body is far
/// above any tool call's arguments, 600 requests a minute per token is several calls a second
/// for one agent, 64 sessions is two per person for a team of 32, and half an hour of idleness
/// covers a coffee break (a client whose session expired starts a new one).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct McpHttpSection {
    /// Largest request body in bytes; past it the answer is 413.
    pub max_body_bytes: u64,
    /// Requests per minute per token (or OAuth subject); past it the answer is 429.
    pub rate_per_minute: u32,
    /// Requests a token may make at once above the steady rate.
    pub rate_burst: u32,
    /// Concurrent sessions; a new session past it is refused with 503.
    pub max_sessions: u32,
    /// Concurrent sessions of one token or OAuth subject (one client IP without
    /// authentication), so that one caller cannot take every session; past it, 429.
    pub max_sessions_per_caller: u32,
    /// Open TCP connections, and open connections from one IP address, before any
    /// authentication. At the cap, the oldest connection that has sent nothing yet is closed
    /// to make room; when none is idle, the new one gets 503 (total) or 429 (per IP).
    pub max_connections: u32,
    pub max_connections_per_ip: u32,
    /// Seconds a connection may stay silent before sending its request headers (a new
    /// connection, or one kept alive between requests); short, so idle sockets are freed.
    pub header_timeout_secs: u64,
    /// Browser origins (`https://app.example:443`, `http://localhost:*`) whose requests are
    /// served; a request with any other `Origin` gets 403. No `Origin` (not a browser) is served.
    pub allowed_origins: Vec<String>,
    /// Seconds without a request after which a session is closed.
    pub idle_timeout_secs: u64,
    /// Seconds a client may take to send its request body (slow clients).
    pub read_timeout_secs: u64,
    /// OAuth 2.1 resource server: accept JWTs from this authorization server.
    pub oauth: Option<OAuthSection>,
}

impl Default for McpHttpSection {
    fn default() -> Self {
        McpHttpSection {
            max_body_bytes: 4 * 1024 * 1024,
            rate_per_minute: 600,
            rate_burst: 60,
            max_sessions: 64,
            max_sessions_per_caller: 16,
            max_connections: 512,
            max_connections_per_ip: 256,
            header_timeout_secs: 10,
            idle_timeout_secs: 30 * 60,
            read_timeout_secs: 30,
            allowed_origins: Vec::new(),
            oauth: None,
        }
    }
}

/// `[mcp.http.oauth]`: the server is an OAuth 2.1 resource server (RFC 9728) for `issuer`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OAuthSection {
    /// The authorization server's issuer URL (the JWT `iss` claim).
    pub issuer: String,
    /// This server's public URL of the MCP endpoint, e.g. `https://alembic.example.com/mcp`.
    pub resource: String,
    /// The JWT `aud` this server accepts (default: `resource`).
    pub audience: Option<String>,
    /// Where the signing keys are (default: `jwks_uri` of the issuer's RFC 8414 metadata).
    pub jwks_uri: Option<String>,
    /// The preset a JWT caller gets (default: the server's `--preset`).
    pub preset: Option<String>,
}

impl McpHttpSection {
    /// Refuses limits that would make the server unusable; names the key and what is accepted.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("max_body_bytes", self.max_body_bytes),
            ("rate_per_minute", u64::from(self.rate_per_minute)),
            ("rate_burst", u64::from(self.rate_burst)),
            ("max_sessions", u64::from(self.max_sessions)),
            (
                "max_sessions_per_caller",
                u64::from(self.max_sessions_per_caller),
            ),
            ("max_connections", u64::from(self.max_connections)),
            (
                "max_connections_per_ip",
                u64::from(self.max_connections_per_ip),
            ),
            ("header_timeout_secs", self.header_timeout_secs),
            ("idle_timeout_secs", self.idle_timeout_secs),
            ("read_timeout_secs", self.read_timeout_secs),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(format!(
                    "[mcp.http] {key}: expected a whole number >= 1, got 0"
                ));
            }
        }
        for origin in &self.allowed_origins {
            if origin != "null"
                && !(origin.starts_with("https://") || origin.starts_with("http://"))
            {
                return Err(format!(
                    "[mcp.http] allowed_origins: expected origins like \"https://app.example.com:443\" or \"http://localhost:*\", got {origin:?}"
                ));
            }
        }
        if let Some(oauth) = &self.oauth {
            for (key, url) in [("issuer", &oauth.issuer), ("resource", &oauth.resource)] {
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    return Err(format!(
                        "[mcp.http.oauth] {key}: expected an http(s) URL, got {url:?}"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_empty_section_gives_the_defaults() {
        let s: McpSection = toml::from_str("").unwrap();
        assert_eq!(s.http, McpHttpSection::default());
        assert_eq!(s.http.validate(), Ok(()));
    }

    #[test]
    fn zero_limits_and_bad_urls_are_refused() {
        let s: McpSection = toml::from_str("[http]\nmax_sessions = 0\n").unwrap();
        assert_eq!(
            s.http.validate(),
            Err("[mcp.http] max_sessions: expected a whole number >= 1, got 0".into())
        );
        let s: McpSection =
            toml::from_str("[http.oauth]\nissuer = \"auth.example\"\nresource = \"https://r\"\n")
                .unwrap();
        assert_eq!(
            s.http.validate(),
            Err("[mcp.http.oauth] issuer: expected an http(s) URL, got \"auth.example\"".into())
        );
        let s: McpSection = toml::from_str("[http]\nmax_sessions_per_caller = 0\n").unwrap();
        assert_eq!(
            s.http.validate(),
            Err("[mcp.http] max_sessions_per_caller: expected a whole number >= 1, got 0".into())
        );
        let s: McpSection = toml::from_str(
            "[http]\nallowed_origins = [\"http://localhost:*\", \"null\", \"app.example\"]\n",
        )
        .unwrap();
        assert_eq!(
            s.http.validate(),
            Err("[mcp.http] allowed_origins: expected origins like \"https://app.example.com:443\" or \"http://localhost:*\", got \"app.example\"".into())
        );
    }
}
