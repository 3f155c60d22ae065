//! Who an HTTP request comes from: a bearer token of the project (`alembic mcp token create`)
//! or a JWT of the configured OAuth authorization server. The HTTP guard calls
//! [`HttpAuth::authenticate`] on every request and puts the [`HttpCaller`] it resolves into
//! the request's extensions; the MCP handler runs the call as that caller, with the allowlist
//! of its preset. A request without a valid credential gets 401 with a `WWW-Authenticate`
//! challenge (RFC 6750; with OAuth, `resource_metadata` per RFC 9728).

pub mod oauth;
pub mod tokens;

use std::sync::Arc;

use alembic_tools::Allowlist;
use axum::http::{HeaderMap, HeaderValue, header};

pub use oauth::{OAuthSettings, OAuthVerifier};
pub use tokens::{NewToken, TOKEN_PREFIX, TokenError, TokenInfo, TokenRefusal, TokenStore};

/// The caller of an authenticated HTTP request: the audit id (`mcp:<token name>` or
/// `mcp:oauth:<subject>`) and the allowlist of its preset.
#[derive(Debug, Clone)]
pub struct HttpCaller {
    pub id: String,
    pub allowlist: Allowlist,
}

/// Turns a caller id and a preset name into that caller's allowlist (the runtime's
/// `ProjectRuntime::caller`); an unknown preset is an error naming it.
pub type PresetResolver = Arc<dyn Fn(&str, &str) -> Result<Allowlist, String> + Send + Sync>;

/// Why a request was not authenticated: RFC 6750's error code (none when no credential was
/// sent at all) and a description for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthorized {
    pub error: Option<&'static str>,
    pub description: String,
}

impl Unauthorized {
    fn missing() -> Self {
        Unauthorized {
            error: None,
            description: "this server needs a bearer token: send `Authorization: Bearer <token>` (create one with `alembic mcp token create NAME`)".into(),
        }
    }

    fn invalid(description: impl Into<String>) -> Self {
        Unauthorized {
            error: Some("invalid_token"),
            description: description.into(),
        }
    }
}

/// The credentials a server accepts: project tokens, OAuth JWTs, or both.
#[derive(Clone)]
pub struct HttpAuth {
    tokens: Option<Arc<TokenStore>>,
    oauth: Option<Arc<OAuthVerifier>>,
    /// The preset of JWT callers when `[mcp.http.oauth] preset` is not set.
    default_preset: String,
}

impl std::fmt::Debug for HttpAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAuth")
            .field("tokens", &self.tokens.is_some())
            .field("oauth", &self.oauth.is_some())
            .finish()
    }
}

impl HttpAuth {
    pub fn new(
        tokens: Option<Arc<TokenStore>>,
        oauth: Option<Arc<OAuthVerifier>>,
        default_preset: &str,
    ) -> Self {
        HttpAuth {
            tokens,
            oauth,
            default_preset: default_preset.to_string(),
        }
    }

    /// The OAuth verifier, when the server is an OAuth resource server.
    pub fn oauth(&self) -> Option<&Arc<OAuthVerifier>> {
        self.oauth.as_ref()
    }

    /// The caller id and preset of the request's bearer credential.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
    ) -> Result<(String, String), Unauthorized> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(Unauthorized::missing());
        };
        let Some(bearer) = bearer_token(value) else {
            return Err(Unauthorized::invalid(
                "expected `Authorization: Bearer <token>`",
            ));
        };
        if bearer.starts_with(TOKEN_PREFIX) || self.oauth.is_none() {
            return self.check_token(bearer);
        }
        match &self.oauth {
            Some(oauth) => {
                let subject = oauth.verify(bearer).await.map_err(Unauthorized::invalid)?;
                let preset = oauth.preset().unwrap_or(&self.default_preset).to_string();
                Ok((format!("mcp:oauth:{subject}"), preset))
            }
            None => Err(Unauthorized::invalid("unknown token")),
        }
    }

    fn check_token(&self, bearer: &str) -> Result<(String, String), Unauthorized> {
        let Some(tokens) = &self.tokens else {
            return Err(Unauthorized::invalid("unknown token"));
        };
        match tokens.verify(bearer) {
            Ok(Ok(info)) => Ok((format!("mcp:{}", info.name), info.preset)),
            Ok(Err(refusal)) => Err(Unauthorized::invalid(refusal.to_string())),
            Err(e) => {
                tracing::error!("token check failed: {e}");
                Err(Unauthorized::invalid("the token could not be checked"))
            }
        }
    }

    /// The `WWW-Authenticate` value of a 401.
    pub fn challenge(&self, why: &Unauthorized) -> HeaderValue {
        let mut parts = vec!["Bearer realm=\"alembic\"".to_string()];
        if let Some(oauth) = &self.oauth {
            parts.push(format!("resource_metadata=\"{}\"", oauth.metadata_url()));
        }
        if let Some(error) = why.error {
            parts.push(format!("error=\"{error}\""));
            parts.push(format!(
                "error_description=\"{}\"",
                quoted_string_text(&why.description)
            ));
        }
        HeaderValue::from_str(&parts.join(", "))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer realm=\"alembic\""))
    }
}

fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let text = value.to_str().ok()?.trim();
    let (scheme, token) = text.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// Text safe inside an HTTP quoted-string: printable ASCII without `"` and `\`.
fn quoted_string_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn bearer_parsing_accepts_only_one_bearer_credential() {
        let v = |s: &'static str| HeaderValue::from_static(s);
        assert_eq!(bearer_token(&v("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&v("bearer   abc ")), Some("abc"));
        assert_eq!(bearer_token(&v("Basic abc")), None);
        assert_eq!(bearer_token(&v("Bearer")), None);
        assert_eq!(bearer_token(&v("Bearer a b")), None);
    }

    #[test]
    fn the_challenge_names_the_error_in_a_valid_header() {
        let auth = HttpAuth::new(None, None, "ide");
        let why = Unauthorized::invalid("token \"x\" has been revoked\n");
        assert_eq!(
            auth.challenge(&why).to_str().unwrap(),
            "Bearer realm=\"alembic\", error=\"invalid_token\", error_description=\"token 'x' has been revoked?\""
        );
        assert_eq!(
            auth.challenge(&Unauthorized::missing()).to_str().unwrap(),
            "Bearer realm=\"alembic\""
        );
    }
}
