//! The OAuth 2.1 resource-server side of MCP's HTTP authorization: the protected-resource
//! metadata document (RFC 9728) that points clients to the authorization server, and
//! validation of that server's JWT access tokens: signature with a key from its JWKS, `iss`,
//! `aud`, `exp` (and `nbf` when present), both with [`CLOCK_SKEW_SECS`] of tolerance, and a
//! `sub` to name the caller: kept whole, or hashed when long ([`subject_id`]).
//!
//! Keys are fetched once and cached. A token signed with a key id the cache does not know
//! makes the verifier fetch the JWKS again (the server rotated its keys), at most once per
//! `min_refetch` so that forged key ids cannot make this server hammer the authorization server.
//! Without `jwks_uri` in the config, it is discovered from the issuer's RFC 8414 metadata
//! (`/.well-known/oauth-authorization-server`, then OpenID Connect's
//! `/.well-known/openid-configuration`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alembic_base::{Clock, SystemClock};
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// The path of the protected-resource metadata (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The longest JWT subject kept as it is in a caller id; a longer one is hashed.
const MAX_SUBJECT: usize = 64;
/// How much of a long subject stays readable before its hash.
const SUBJECT_PREFIX: usize = 32;
/// Clock skew tolerated on `exp` and `nbf` alike, in seconds.
pub const CLOCK_SKEW_SECS: u64 = 60;

/// `[mcp.http.oauth]` as the verifier uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthSettings {
    pub issuer: String,
    pub resource: String,
    pub audience: String,
    pub jwks_uri: Option<String>,
    pub preset: Option<String>,
}

impl OAuthSettings {
    pub fn from_config(c: &alembic_runtime::mcp_config::OAuthSection) -> Self {
        OAuthSettings {
            issuer: c.issuer.trim_end_matches('/').to_string(),
            resource: c.resource.clone(),
            audience: c.audience.clone().unwrap_or_else(|| c.resource.clone()),
            jwks_uri: c.jwks_uri.clone(),
            preset: c.preset.clone(),
        }
    }
}

#[derive(Default)]
struct KeyCache {
    keys: HashMap<String, (DecodingKey, Algorithm)>,
    /// Keys without a `kid`, tried when the token names none.
    anonymous: Vec<(DecodingKey, Algorithm)>,
    jwks_uri: Option<String>,
    fetched: Option<Instant>,
}

/// Validates the authorization server's JWTs.
pub struct OAuthVerifier {
    settings: OAuthSettings,
    http: reqwest::Client,
    cache: Mutex<KeyCache>,
    clock: Arc<dyn Clock>,
    min_refetch: Duration,
}

impl std::fmt::Debug for OAuthVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthVerifier")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
}

impl OAuthVerifier {
    pub fn new(settings: OAuthSettings) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        OAuthVerifier {
            settings,
            http,
            cache: Mutex::new(KeyCache::default()),
            clock: Arc::new(SystemClock),
            min_refetch: Duration::from_secs(30),
        }
    }

    /// The least time between two JWKS fetches caused by unknown key ids.
    pub fn with_min_refetch(mut self, every: Duration, clock: Arc<dyn Clock>) -> Self {
        self.min_refetch = every;
        self.clock = clock;
        self
    }

    pub fn preset(&self) -> Option<&str> {
        self.settings.preset.as_deref()
    }

    /// The RFC 9728 document served at [`METADATA_PATH`].
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.settings.resource,
            "authorization_servers": [self.settings.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "Alembic MCP server",
        })
    }

    /// Where the metadata of this resource is: the well-known path inserted between the
    /// resource URL's origin and its path (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> String {
        let resource = &self.settings.resource;
        let after_scheme = resource.find("://").map_or(0, |i| i + 3);
        let (origin, path) = match resource[after_scheme..].find('/') {
            Some(i) => resource.split_at(after_scheme + i),
            None => (resource.as_str(), ""),
        };
        format!("{origin}{METADATA_PATH}{}", path.trim_end_matches('/'))
    }

    /// The subject of a valid token, or why it is not valid.
    pub async fn verify(&self, token: &str) -> Result<String, String> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            "not a JWT: expected header.payload.signature in base64url with a JSON header"
                .to_string()
        })?;
        let (key, alg) = self.key_for(header.kid.as_deref()).await?;
        if header.alg != alg {
            return Err(format!(
                "the token is signed with {:?}, its key is for {alg:?}",
                header.alg
            ));
        }
        let mut validation = Validation::new(alg);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = CLOCK_SKEW_SECS;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| token_error(&e))?;
        let Some(sub) = data.claims.sub else {
            return Err("the token has no \"sub\" claim".into());
        };
        if sub.is_empty() {
            return Err("the token's \"sub\" is empty".into());
        }
        Ok(subject_id(&sub))
    }

    async fn key_for(&self, kid: Option<&str>) -> Result<(DecodingKey, Algorithm), String> {
        let mut cache = self.cache.lock().await;
        if let Some(found) = lookup(&cache, kid) {
            return Ok(found);
        }
        let stale = cache
            .fetched
            .is_none_or(|at| self.clock.instant().duration_since(at) >= self.min_refetch);
        if stale {
            self.refresh(&mut cache).await?;
            if let Some(found) = lookup(&cache, kid) {
                return Ok(found);
            }
        }
        Err(match kid {
            Some(kid) => format!("no signing key {kid:?} in the authorization server's JWKS"),
            None => {
                "the token names no key id (kid) and the JWKS has no single key without one".into()
            }
        })
    }

    async fn refresh(&self, cache: &mut KeyCache) -> Result<(), String> {
        cache.fetched = Some(self.clock.instant());
        let uri = match (&self.settings.jwks_uri, &cache.jwks_uri) {
            (Some(u), _) | (None, Some(u)) => u.clone(),
            (None, None) => {
                let u = self.discover_jwks_uri().await?;
                cache.jwks_uri = Some(u.clone());
                u
            }
        };
        let set: JwkSet = self.get_json(&uri).await?;
        cache.keys.clear();
        cache.anonymous.clear();
        for jwk in &set.keys {
            let Some(alg) = algorithm_of(jwk) else {
                continue;
            };
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                tracing::warn!(kid = ?jwk.common.key_id, "skipping a JWKS key that does not parse");
                continue;
            };
            match &jwk.common.key_id {
                Some(kid) => {
                    cache.keys.insert(kid.clone(), (key, alg));
                }
                None => cache.anonymous.push((key, alg)),
            }
        }
        tracing::debug!(keys = cache.keys.len(), %uri, "fetched the JWKS");
        Ok(())
    }

    async fn discover_jwks_uri(&self) -> Result<String, String> {
        let issuer = &self.settings.issuer;
        let after_scheme = issuer.find("://").map_or(0, |i| i + 3);
        let (origin, path) = match issuer[after_scheme..].find('/') {
            Some(i) => issuer.split_at(after_scheme + i),
            None => (issuer.as_str(), ""),
        };
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ];
        let mut last = String::new();
        for url in candidates {
            match self.get_json::<Value>(&url).await {
                Ok(meta) => match meta["jwks_uri"].as_str() {
                    Some(u) => return Ok(u.to_string()),
                    None => last = format!("{url} has no jwks_uri"),
                },
                Err(e) => last = e,
            }
        }
        Err(format!(
            "cannot find the authorization server's keys: {last}"
        ))
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let resp = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| format!("cannot fetch {url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("cannot fetch {url}: HTTP {}", resp.status()));
        }
        resp.json()
            .await
            .map_err(|e| format!("{url} is not the expected JSON: {e}"))
    }
}

/// A subject as it appears in caller ids and audit records: whole when short and printable;
/// otherwise its first [`SUBJECT_PREFIX`] printable characters, `~` and 16 hex digits of the
/// SHA-256 of the whole subject, so two subjects never share an id by sharing a prefix.
pub fn subject_id(sub: &str) -> String {
    let printable = |c: char| !c.is_control() && c != '~';
    if sub.chars().count() <= MAX_SUBJECT && sub.chars().all(printable) {
        return sub.to_string();
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(sub.as_bytes());
    let prefix: String = sub
        .chars()
        .take(SUBJECT_PREFIX)
        .map(|c| if printable(c) { c } else { '?' })
        .collect();
    format!("{prefix}~{}", &hex::encode(digest)[..16])
}

fn lookup(cache: &KeyCache, kid: Option<&str>) -> Option<(DecodingKey, Algorithm)> {
    match kid {
        Some(kid) => cache.keys.get(kid).cloned(),
        None if cache.anonymous.len() == 1 => cache.anonymous.first().cloned(),
        None => None,
    }
}

/// The signature algorithm of a public key: its `alg` when given, else the usual one for its
/// type. Symmetric keys are never accepted (anyone who can verify could also sign).
fn algorithm_of(jwk: &Jwk) -> Option<Algorithm> {
    let alg = match jwk.common.key_algorithm {
        Some(a) => Algorithm::try_from(a).ok()?,
        None => match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Algorithm::RS256,
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                jsonwebtoken::jwk::EllipticCurve::P384 => Algorithm::ES384,
                _ => Algorithm::ES256,
            },
            AlgorithmParameters::OctetKeyPair(_) => Algorithm::EdDSA,
            _ => return None,
        },
    };
    (!matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)).then_some(alg)
}

fn token_error(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "the token has expired".into(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        K::InvalidIssuer => {
            "the token's issuer (iss) is not this server's authorization server".into()
        }
        K::InvalidAudience => "the token's audience (aud) is not this server".into(),
        K::InvalidSignature => "the token's signature does not verify".into(),
        K::MissingRequiredClaim(c) => format!("the token has no {c:?} claim"),
        _ => format!("invalid token: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn verifier(resource: &str) -> OAuthVerifier {
        OAuthVerifier::new(OAuthSettings {
            issuer: "https://auth.example".into(),
            resource: resource.into(),
            audience: resource.into(),
            jwks_uri: None,
            preset: None,
        })
    }

    #[test]
    fn long_or_unprintable_subjects_are_hashed_whole() {
        assert_eq!(subject_id("user-1"), "user-1");
        let long_a = format!("{}A", "x".repeat(64));
        let long_b = format!("{}B", "x".repeat(64));
        let (a, b) = (subject_id(&long_a), subject_id(&long_b));
        assert_ne!(a, b, "a shared 64-character prefix is not a shared id");
        assert!(a.starts_with(&format!("{}~", "x".repeat(32))), "{a}");
        assert_eq!(a.len(), 32 + 1 + 16);
        assert_eq!(subject_id(&long_a), a, "stable");
        // Exactly 64 characters stay whole; a `~` or a control character is hashed, so a
        // short subject cannot pose as the hashed form of a long one.
        assert_eq!(subject_id(&"y".repeat(64)), "y".repeat(64));
        assert_ne!(subject_id(&a), a);
        assert!(subject_id("bob\nmcp:alice").starts_with("bob?mcp:alice~"));
    }

    #[test]
    fn the_metadata_url_inserts_the_well_known_path_before_the_resource_path() {
        assert_eq!(
            verifier("https://mcp.example/mcp").metadata_url(),
            "https://mcp.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            verifier("https://mcp.example").metadata_url(),
            "https://mcp.example/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            verifier("https://mcp.example/mcp").metadata(),
            json!({"resource": "https://mcp.example/mcp",
                "authorization_servers": ["https://auth.example"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Alembic MCP server"})
        );
    }
}
