//! OAuth 2.1 resource server and TLS, against loopback servers started by the test: an
//! authorization server that publishes RFC 8414 metadata and a JWKS of keys generated here,
//! and the MCP server over HTTPS with a self-signed certificate generated here.
//!
//! Not tested (no authorization server runs here): the client's authorization-code flow with
//! PKCE, dynamic client registration and token refresh. Those happen between the MCP client
//! and the authorization server; this server only publishes where that server is and
//! validates the tokens it issued.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use alembic_base::ManualClock;
use alembic_mcp::{HttpAuth, HttpOptions, OAuthSettings, OAuthVerifier, TokenStore};
use alembic_tools::Allowlist;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::http::{Client, HttpFixture, call};
use super::support::{ALLOWED, TestServer};

const RESOURCE: &str = "https://alembic.test/mcp";

/// A signing key with its public JWK.
struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

fn signing_key(kid: &str) -> SigningKey {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = pair.public_key_raw();
    assert_eq!((raw.len(), raw[0]), (65, 4), "an uncompressed P-256 point");
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    SigningKey {
        kid: kid.to_string(),
        encoding: EncodingKey::from_ec_der(&pair.serialize_der()),
        jwk: json!({"kty": "EC", "crv": "P-256", "x": b64(&raw[1..33]), "y": b64(&raw[33..65]),
            "kid": kid, "alg": "ES256", "use": "sig"}),
    }
}

fn now() -> i64 {
    alembic_base::unix_ms(std::time::SystemTime::now()) / 1000
}

fn jwt(key: &SigningKey, claims: Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, &claims, &key.encoding).unwrap()
}

/// An authorization server on loopback: metadata and a JWKS the test can swap, counting fetches.
struct AuthServer {
    issuer: String,
    jwks: Arc<std::sync::Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

impl AuthServer {
    async fn start(keys: &[&SigningKey]) -> AuthServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let jwks = Arc::new(std::sync::Mutex::new(Value::Null));
        let fetches = Arc::new(AtomicUsize::new(0));
        let meta = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")});
        let (j, f) = (Arc::clone(&jwks), Arc::clone(&fetches));
        let router = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || async move { axum::Json(meta) }),
            )
            .route(
                "/jwks",
                axum::routing::get(move || async move {
                    f.fetch_add(1, Ordering::SeqCst);
                    axum::Json(j.lock().unwrap().clone())
                }),
            );
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        let server = AuthServer {
            issuer,
            jwks,
            fetches,
        };
        server.publish(keys);
        server
    }

    fn publish(&self, keys: &[&SigningKey]) {
        let keys: Vec<Value> = keys.iter().map(|k| k.jwk.clone()).collect();
        *self.jwks.lock().unwrap() = json!({ "keys": keys });
    }

    fn settings(&self) -> OAuthSettings {
        OAuthSettings {
            issuer: self.issuer.clone(),
            resource: RESOURCE.into(),
            audience: RESOURCE.into(),
            jwks_uri: None,
            preset: Some("narrow".into()),
        }
    }

    fn claims(&self, sub: &str) -> Value {
        json!({"iss": self.issuer, "aud": RESOURCE, "sub": sub, "iat": now(), "exp": now() + 600})
    }
}

fn presets() -> alembic_mcp::PresetResolver {
    Arc::new(|_, preset| match preset {
        "wide" => Ok(Allowlist::only(ALLOWED)),
        "narrow" => Ok(Allowlist::only(["echo_text"])),
        other => Err(format!("unknown preset {other:?}")),
    })
}

async fn mcp_server(verifier: OAuthVerifier) -> HttpFixture {
    let mut test = TestServer::new();
    test.server = test.server.with_presets(presets());
    let verifier = Arc::new(verifier);
    HttpFixture::start_with(test, move |_| HttpOptions {
        auth: Some(HttpAuth::new(None, Some(verifier), "wide")),
        ..HttpOptions::default()
    })
    .await
}

fn base(url: &str) -> &str {
    url.trim_end_matches(alembic_mcp::MCP_PATH)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_resource_metadata_points_clients_to_the_authorization_server() {
    let k1 = signing_key("k1");
    let auth = AuthServer::start(&[&k1]).await;
    let fixture = mcp_server(OAuthVerifier::new(auth.settings())).await;
    let expected = json!({"resource": RESOURCE, "authorization_servers": [auth.issuer],
        "bearer_methods_supported": ["header"], "resource_name": "Alembic MCP server"});
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let resp = reqwest::get(format!("{}{path}", base(&fixture.url)))
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        assert_eq!(resp.json::<Value>().await.unwrap(), expected, "{path}");
    }
    let resp = Client::new(&fixture.url, "2025-06-18")
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(
        resp.headers()["www-authenticate"].to_str().unwrap(),
        "Bearer realm=\"alembic\", resource_metadata=\"https://alembic.test/.well-known/oauth-protected-resource/mcp\""
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_jwt_is_the_caller_with_the_configured_preset() {
    let k1 = signing_key("k1");
    let auth = AuthServer::start(&[&k1]).await;
    let mut fixture = mcp_server(OAuthVerifier::new(auth.settings())).await;
    let mut c = Client::new(&fixture.url, "2025-06-18");
    c.bearer = Some(jwt(&k1, auth.claims("user-1")));
    c.initialize().await;
    let (r, _) = c
        .request(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 1, "{r}");
    let (r, _) = c
        .request(&call(json!(3), "echo_text", json!({"text": "jwt"})))
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "jwt"}));
    let entry = fixture.audited().await;
    assert_eq!(entry.caller, "mcp:oauth:user-1");
    // Keys are cached: one JWKS fetch for all those requests.
    assert_eq!(auth.fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_with_a_wrong_claim_or_signature_are_refused_with_the_reason() {
    let k1 = signing_key("k1");
    let auth = AuthServer::start(&[&k1]).await;
    let fixture = mcp_server(OAuthVerifier::new(auth.settings())).await;
    let mut impostor = signing_key("k1");
    impostor.kid = "k1".into();
    let claims = auth.claims("user-1");
    let with = |key: &str, value: Value| {
        let mut c = claims.clone();
        c[key] = value;
        c
    };
    let mut no_sub = claims.clone();
    no_sub.as_object_mut().unwrap().remove("sub");
    let hs256 = jsonwebtoken::encode(
        &Header {
            kid: Some("k1".into()),
            ..Header::new(Algorithm::HS256)
        },
        &claims,
        &EncodingKey::from_secret(b"k1").unwrap(),
    )
    .unwrap();
    let cases = [
        (
            jwt(&k1, with("iss", json!("https://evil.example"))),
            "the token's issuer (iss) is not this server's authorization server",
        ),
        (
            jwt(&k1, with("aud", json!("https://other.example/mcp"))),
            "the token's audience (aud) is not this server",
        ),
        (
            jwt(&k1, with("exp", json!(now() - 3600))),
            "the token has expired",
        ),
        (
            jwt(&impostor, claims.clone()),
            "the token's signature does not verify",
        ),
        (jwt(&k1, no_sub), "the token has no \"sub\" claim"),
        (
            hs256,
            "the token is signed with HS256, its key is for ES256",
        ),
        (
            "not.a.jwt".to_string(),
            "not a JWT: expected header.payload.signature in base64url with a JSON header",
        ),
    ];
    for (token, reason) in cases {
        let mut c = Client::new(&fixture.url, "2025-06-18");
        c.bearer = Some(token);
        let resp = c
            .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .await;
        assert_eq!(resp.status().as_u16(), 401, "{reason}");
        let challenge = resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_string();
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["message"], reason);
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_not_valid_yet_is_refused_past_the_clock_skew() {
    let k1 = signing_key("k1");
    let auth = AuthServer::start(&[&k1]).await;
    let fixture = mcp_server(OAuthVerifier::new(auth.settings())).await;
    let skew = i64::try_from(alembic_mcp::auth::oauth::CLOCK_SKEW_SECS).unwrap();
    let with_nbf = |nbf: i64| {
        let mut c = auth.claims("user-1");
        c["nbf"] = json!(nbf);
        jwt(&k1, c)
    };
    for (nbf, status) in [
        (now() + 3600, 401),
        (now() + skew + 120, 401),
        // Within the skew (the same tolerance as `exp`): a clock a little ahead still works.
        (now() + skew / 2, 200),
        (now() - 60, 200),
    ] {
        let mut c = Client::new(&fixture.url, "2025-06-18");
        c.bearer = Some(with_nbf(nbf));
        let resp = c
            .send(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "nbf", "version": "1.0"}}}),
            )
            .await;
        assert_eq!(
            resp.status().as_u16(),
            status,
            "nbf = now + {}",
            nbf - now()
        );
        if status == 401 {
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body["error"]["message"], "the token is not valid yet (nbf)");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subjects_sharing_a_64_character_prefix_are_different_callers() {
    let k1 = signing_key("k1");
    let auth = AuthServer::start(&[&k1]).await;
    let mut fixture = mcp_server(OAuthVerifier::new(auth.settings())).await;
    let prefix = "u".repeat(64);
    let (sub_a, sub_b) = (format!("{prefix}-alice"), format!("{prefix}-bob"));
    let mut a = Client::new(&fixture.url, "2025-06-18");
    a.bearer = Some(jwt(&k1, auth.claims(&sub_a)));
    a.initialize().await;
    let (r, _) = a
        .request(&call(json!(2), "echo_text", json!({"text": "a"})))
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "a"}));
    let id_a = fixture.audited().await.caller;
    // B, in A's session, is a stranger to it.
    let mut b = Client::new(&fixture.url, "2025-06-18");
    b.bearer = Some(jwt(&k1, auth.claims(&sub_b)));
    b.session = a.session.clone();
    let resp = b
        .send(&call(json!(3), "echo_text", json!({"text": "b"})))
        .await;
    assert_eq!(resp.status().as_u16(), 404, "B must not use A's session");
    b.session = None;
    b.initialize().await;
    let (r, _) = b
        .request(&call(json!(4), "echo_text", json!({"text": "b"})))
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "b"}));
    let id_b = fixture.audited().await.caller;
    assert_ne!(id_a, id_b, "two subjects, two audit identities");
    for (id, sub) in [(&id_a, &sub_a), (&id_b, &sub_b)] {
        assert_eq!(
            id,
            &format!("mcp:oauth:{}", alembic_mcp::auth::oauth::subject_id(sub))
        );
        assert!(
            id.starts_with(&format!("mcp:oauth:{}~", &prefix[..32])),
            "{id}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_fetched_on_its_first_use() {
    let (k1, k2) = (signing_key("k1"), signing_key("k2"));
    let auth = AuthServer::start(&[&k1]).await;
    let verifier = OAuthVerifier::new(auth.settings())
        .with_min_refetch(Duration::ZERO, Arc::new(alembic_base::SystemClock));
    assert_eq!(
        verifier.verify(&jwt(&k1, auth.claims("a"))).await,
        Ok("a".into())
    );
    auth.publish(&[&k2]);
    assert_eq!(
        verifier.verify(&jwt(&k2, auth.claims("b"))).await,
        Ok("b".into())
    );
    assert_eq!(auth.fetches.load(Ordering::SeqCst), 2);
    assert_eq!(
        verifier.verify(&jwt(&k1, auth.claims("a"))).await,
        Err("no signing key \"k1\" in the authorization server's JWKS".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_key_ids_refetch_at_most_once_per_interval() {
    let (k1, stranger) = (signing_key("k1"), signing_key("nope"));
    let auth = AuthServer::start(&[&k1]).await;
    let clock = ManualClock::new(0);
    let verifier = OAuthVerifier::new(auth.settings())
        .with_min_refetch(Duration::from_secs(30), Arc::new(clock.clone()));
    for _ in 0..5 {
        assert!(
            verifier
                .verify(&jwt(&stranger, auth.claims("x")))
                .await
                .is_err()
        );
    }
    assert_eq!(auth.fetches.load(Ordering::SeqCst), 1);
    clock.advance(Duration::from_secs(31));
    assert!(
        verifier
            .verify(&jwt(&stranger, auth.claims("x")))
            .await
            .is_err()
    );
    assert_eq!(auth.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_https_with_the_given_certificate_and_not_clear_text() {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let tls = alembic_mcp::tls::server_config(&cert_path, &key_path).unwrap();
    let mut test = TestServer::new();
    test.server = test.server.with_presets(presets());
    let fixture = HttpFixture::start_with(test, |dir| {
        let tokens = TokenStore::open_project(dir).unwrap();
        std::fs::write(
            dir.join("token"),
            tokens.create("alice", "wide", None).unwrap().secret,
        )
        .unwrap();
        HttpOptions {
            auth: Some(HttpAuth::new(Some(Arc::new(tokens)), None, "wide")),
            tls: Some(tls),
            ..HttpOptions::default()
        }
    })
    .await;
    assert!(
        fixture.url.starts_with("https://127.0.0.1:"),
        "{}",
        fixture.url
    );
    let mut c = Client::new(&fixture.url, "2025-06-18");
    c.http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert.cert.pem().as_bytes()).unwrap())
        .build()
        .unwrap();
    c.bearer = Some(std::fs::read_to_string(fixture.dir.path().join("token")).unwrap());
    c.initialize().await;
    let (r, _) = c
        .request(&call(json!(2), "echo_text", json!({"text": "tls"})))
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "tls"}));
    // Clear text to the TLS port gets no HTTP answer.
    let clear = fixture.url.replacen("https://", "http://", 1);
    assert!(
        reqwest::Client::new()
            .post(&clear)
            .body("{}")
            .send()
            .await
            .is_err()
    );
    // A client that does not trust the certificate cannot connect.
    assert!(
        reqwest::Client::new()
            .post(&fixture.url)
            .body("{}")
            .send()
            .await
            .is_err()
    );
    // Missing files are named.
    let err = alembic_mcp::tls::server_config(&dir.path().join("none.pem"), &key_path).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot read the certificate chain"),
        "{err}"
    );
}
