//! `server.oauth` (contract §6b) against an authorization server on loopback: its discovery
//! document and keys served over real HTTP, tokens signed with its keys (and with others). The
//! same rules against the certified `oidc-provider`, with the Python SDK's OAuth client signing
//! in, are `tests/oauth/` (run by `.ci/run`).

use crate::support::mcp::{call, error_text, http_client, structured};
use crate::support::{Callosum, StubStore, config_yaml, memory_hits, serve_loopback};
use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const RESOURCE: &str = "https://callosum.example/mcp";
const METADATA: &str = "https://callosum.example/.well-known/oauth-protected-resource/mcp";

/// Seconds since the Unix epoch.
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A P-256 signing key with its id.
struct Key {
    pair: EcdsaKeyPair,
    kid: String,
}

impl Key {
    fn new(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Self {
            pair,
            kid: kid.to_owned(),
        }
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
               "x": b64(&point[1..33]), "y": b64(&point[33..])})
    }

    fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "kid": self.kid, "typ": "at+jwt"});
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let sig = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .unwrap();
        format!("{input}.{}", b64(sig.as_ref()))
    }
}

/// An authorization server: an OpenID discovery document (and no RFC 8414 one, so the fallback
/// is what finds it) and its keys, which the test can change; it counts the key fetches, and
/// can be made to hang on them (until told otherwise) or to fail them with 503.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    hang: Arc<AtomicBool>,
    fail: Arc<AtomicBool>,
    _stop: tokio_util::sync::DropGuard,
}

#[derive(Clone)]
struct IssuerState {
    url: Arc<Mutex<String>>,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    hang: Arc<AtomicBool>,
    fail: Arc<AtomicBool>,
}

impl Issuer {
    async fn start(keys: &[&Key]) -> Self {
        let state = IssuerState {
            // Known once the router is served (the discovery document names it).
            url: Arc::default(),
            keys: Arc::new(Mutex::new(keys.iter().map(|k| k.jwk()).collect())),
            fetches: Arc::default(),
            hang: Arc::default(),
            fail: Arc::default(),
        };
        let router = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(|State(s): State<IssuerState>| async move {
                    let url = s.url.lock().unwrap().clone();
                    axum::Json(json!({"issuer": url, "jwks_uri": format!("{url}/jwks")}))
                }),
            )
            .route(
                "/jwks",
                get(|State(s): State<IssuerState>| async move {
                    s.fetches.fetch_add(1, Ordering::SeqCst);
                    while s.hang.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    if s.fail.load(Ordering::SeqCst) {
                        return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
                    }
                    axum::Json(json!({"keys": s.keys.lock().unwrap().clone()})).into_response()
                }),
            )
            .with_state(state.clone());
        let stop = CancellationToken::new();
        let url = serve_loopback(router, stop.clone()).await;
        *state.url.lock().unwrap() = url.clone();
        Self {
            url,
            keys: state.keys,
            fetches: state.fetches,
            hang: state.hang,
            fail: state.fail,
            _stop: stop.drop_guard(),
        }
    }

    fn claims(&self, scope: &str) -> Value {
        let now = now();
        json!({"iss": self.url, "aud": RESOURCE, "sub": "someone", "exp": now + 300.0,
               "iat": now, "nbf": now - 1.0, "scope": scope, "client_id": "host"})
    }
}

/// A callosum that takes `issuer`'s tokens (and the static token `static-token`), with one
/// store that records what it is sent.
async fn protected(issuer: &Issuer, store: &StubStore) -> Callosum {
    let yaml = format!(
        "server:\n  bearer_token: static-token\n  oauth:\n    issuer: {}\n    resource: {RESOURCE}\n{}",
        issuer.url,
        config_yaml(&[("episodic", "seren_memory", &store.url, "")])
    );
    Callosum::start(&yaml).await
}

/// A request with `Authorization: Bearer <token>`: its status, `WWW-Authenticate` and body.
async fn send(
    callosum: &Callosum,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, String, Value) {
    let mut request = callosum
        .client
        .request(method, format!("{}{path}", callosum.url));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, challenge, body)
}

fn search_body() -> Option<Value> {
    Some(json!({"query": "jetpack"}))
}

/// `POST /search` with `token` (none for `None`): its status, `WWW-Authenticate` and body.
async fn search_with(callosum: &Callosum, token: Option<&str>) -> (u16, String, Value) {
    send(
        callosum,
        reqwest::Method::POST,
        "/search",
        token,
        search_body(),
    )
    .await
}

#[tokio::test]
async fn metadata_names_the_issuer_and_the_resource_byte_for_byte() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let store = StubStore::hits(memory_hits(&[("a", 0.1)])).await;
    let callosum = protected(&issuer, &store).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, _, body) = send(&callosum, reqwest::Method::GET, path, None, None).await;
        assert_eq!(status, 200, "{path} is public");
        assert_eq!(
            body,
            json!({"resource": RESOURCE, "authorization_servers": [issuer.url],
                   "scopes_supported": ["callosum:read", "callosum:write"],
                   "bearer_methods_supported": ["header"],
                   "resource_name": "seren-corpus-callosum"}),
            "{path}"
        );
    }
    // Another resource path is not this server's metadata.
    let (status, _, _) = send(
        &callosum,
        reqwest::Method::GET,
        "/.well-known/oauth-protected-resource/other",
        None,
        None,
    )
    .await;
    assert_eq!(status, 404);
    // Without `server.oauth` there is no metadata.
    let plain = Callosum::start("").await;
    let (status, _, _) = send(
        &plain,
        reqwest::Method::GET,
        "/.well-known/oauth-protected-resource",
        None,
        None,
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn tokens_are_checked_and_each_refusal_says_how_to_sign_in() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let store = StubStore::hits(memory_hits(&[("a", 0.1)])).await;
    let callosum = protected(&issuer, &store).await;
    let post = reqwest::Method::POST;

    // No token: 401 pointing at the metadata, no error attribute.
    let (status, challenge, body) = search_with(&callosum, None).await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{METADATA}\"")
    );
    assert_eq!(body["detail"], "unauthorized");

    // A good read token searches; the store never sees it (no passthrough).
    let read = key.sign(&issuer.claims("callosum:read"));
    let (status, _, body) = search_with(&callosum, Some(&read)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["hits"][0]["id"], "a");
    for captured in store.captured() {
        assert!(
            captured.authorization.is_none(),
            "the store was sent {:?}",
            captured.authorization
        );
    }

    // Scopes as an array (some authorization servers send them so) and as Okta's `scp`.
    let mut as_array = issuer.claims("");
    as_array["scope"] = json!(["openid", "callosum:read"]);
    let mut as_scp = issuer.claims("");
    as_scp.as_object_mut().unwrap().remove("scope");
    as_scp["scp"] = json!(["callosum:read"]);
    for claims in [as_array, as_scp] {
        let (status, _, body) = search_with(&callosum, Some(&key.sign(&claims))).await;
        assert_eq!(status, 200, "{claims}: {body}");
    }

    // Each bad token: 401 with invalid_token, and the reason in the body.
    let mut scope_number = issuer.claims("");
    scope_number["scope"] = json!(7);
    let mut wrong_aud = issuer.claims("callosum:read");
    wrong_aud["aud"] = json!("https://callosum.example/mcp/");
    let mut expired = issuer.claims("callosum:read");
    expired["exp"] = json!(now() - 120.0);
    let mut early = issuer.claims("callosum:read");
    early["nbf"] = json!(now() + 600.0);
    let mut foreign = issuer.claims("callosum:read");
    foreign["iss"] = json!("http://127.0.0.1:1");
    let stranger = Key::new("k1");
    let edited = {
        let token = key.sign(&issuer.claims("callosum:read"));
        let parts: Vec<&str> = token.split('.').collect();
        let claims = issuer.claims("callosum:read callosum:write");
        format!(
            "{}.{}.{}",
            parts[0],
            b64(claims.to_string().as_bytes()),
            parts[2]
        )
    };
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none"}"#),
        b64(issuer.claims("callosum:write").to_string().as_bytes())
    );
    let cases = [
        (key.sign(&wrong_aud), "not meant for this server"),
        (key.sign(&expired), "expired"),
        (key.sign(&early), "not valid yet"),
        (key.sign(&foreign), "another issuer"),
        (key.sign(&scope_number), "scope claim is neither"),
        (
            stranger.sign(&issuer.claims("callosum:read")),
            "does not verify",
        ),
        (edited, "does not verify"),
        (none, "algorithm is not taken"),
        ("garbage".to_owned(), "not a signed JWT"),
        ("a.b.c".to_owned(), "not a signed JWT"),
        ("x".repeat(9000), "not a signed JWT"),
    ];
    for (token, why) in cases {
        let (status, challenge, body) = search_with(&callosum, Some(&token)).await;
        assert_eq!(status, 401, "{why}");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\"")
                && challenge.ends_with(&format!("resource_metadata=\"{METADATA}\"")),
            "{why}: {challenge}"
        );
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(why), "{why}: {detail}");
    }

    // Raw garbage in the header is 401 too, never a 500.
    for raw in [
        "Bearer",
        "Bearer ",
        "Basic Zm9vOmJhcg==",
        "Bearer \tx",
        "bearer ...",
    ] {
        let response = callosum
            .client
            .post(format!("{}/search", callosum.url))
            .header("authorization", raw)
            .json(&json!({"query": "q"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{raw:?}");
    }
    let response = callosum
        .client
        .post(format!("{}/search", callosum.url))
        .header(
            "authorization",
            reqwest::header::HeaderValue::from_bytes(b"Bearer \xff\xfe").unwrap(),
        )
        .json(&json!({"query": "q"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    // The static token keeps full rights beside the issuer's tokens.
    let (status, _, body) = send(
        &callosum,
        post.clone(),
        "/stores",
        Some("static-token"),
        Some(json!({"name": "more", "type": "seren_memory", "url": store.url})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_read_token_cannot_change_the_roster_over_rest_or_mcp() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let store = StubStore::hits(memory_hits(&[("a", 0.1)])).await;
    let callosum = protected(&issuer, &store).await;
    let read = key.sign(&issuer.claims("callosum:read"));
    let write = key.sign(&issuer.claims("callosum:read callosum:write"));
    let new = json!({"name": "more", "type": "seren_memory", "url": store.url});

    for (method, path, body) in [
        (reqwest::Method::POST, "/stores", Some(new.clone())),
        (reqwest::Method::DELETE, "/stores/more", None),
        (reqwest::Method::POST, "/configure", Some(json!({"k": 30}))),
        (
            reqwest::Method::POST,
            "/eval",
            Some(
                json!({"judgments": [{"query": "a", "relevant": [{"store": "notes", "id": "a"}]}]}),
            ),
        ),
    ] {
        let (status, challenge, detail) =
            send(&callosum, method.clone(), path, Some(&read), body).await;
        assert_eq!(status, 403, "{method} {path}");
        assert_eq!(
            challenge,
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"callosum:write\", resource_metadata=\"{METADATA}\""
            ),
            "{method} {path}"
        );
        assert!(
            detail["detail"]
                .as_str()
                .unwrap()
                .contains("callosum:write")
        );
    }
    // Reads take the read scope: a token with only the write scope cannot search.
    let only_write = key.sign(&issuer.claims("callosum:write"));
    let (status, challenge, _) = send(
        &callosum,
        reqwest::Method::GET,
        "/stores",
        Some(&only_write),
        None,
    )
    .await;
    assert_eq!(status, 403);
    assert!(challenge.contains("scope=\"callosum:read\""), "{challenge}");
    let (status, _, _) = send(&callosum, reqwest::Method::GET, "/knobs", Some(&read), None).await;
    assert_eq!(status, 200);

    // Over MCP: the read token lists and searches, and add_store is a tool error naming the scope.
    let client = http_client(&callosum.url, Some(&read)).await.unwrap();
    let answer = structured(&call(&client, "search", json!({"query": "jetpack"})).await);
    assert_eq!(answer["hits"][0]["id"], "a");
    structured(&call(&client, "list_stores", json!({})).await);
    let refused = error_text(&call(&client, "add_store", new.clone()).await);
    assert!(
        refused.contains("add_store needs the scope callosum:write"),
        "{refused}"
    );
    let refused = error_text(&call(&client, "remove_store", json!({"name": "x"})).await);
    assert!(refused.contains("callosum:write"), "{refused}");
    // A token with the write scope adds.
    let client = http_client(&callosum.url, Some(&write)).await.unwrap();
    let added = structured(&call(&client, "add_store", new).await);
    assert_eq!(added["added"], "more", "{added}");
    // No token at all: the MCP client is refused at the door, with the same challenge.
    let (status, challenge, _) = send(
        &callosum,
        reqwest::Method::POST,
        "/mcp",
        None,
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{METADATA}\"")
    );
}

#[tokio::test]
async fn made_up_key_ids_cannot_make_the_callosum_flood_the_issuer() {
    let old = Key::new("old");
    let issuer = Issuer::start(&[&old]).await;
    let store = StubStore::hits(memory_hits(&[("a", 0.1)])).await;
    let callosum = protected(&issuer, &store).await;
    let token = old.sign(&issuer.claims("callosum:read"));
    let (status, _, _) = search_with(&callosum, Some(&token)).await;
    assert_eq!(status, 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1, "keys read once");

    // A key the issuer adds later is fetched when a token first names it, once the last fetch
    // is 30 s old (`tests/oauth/` waits that out against oidc-provider). Until then, and for
    // key ids the issuer never had, the keys already read are all there is.
    let new = Key::new("new");
    issuer.keys.lock().unwrap().push(new.jwk());
    let before = issuer.fetches.load(Ordering::SeqCst);
    let (status, _, _) =
        search_with(&callosum, Some(&new.sign(&issuer.claims("callosum:read")))).await;
    assert_eq!(
        status, 401,
        "inside the 30 s since the last fetch, the new key is not read yet"
    );
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), before);

    // Fifty tokens naming keys the issuer never had: 401 each, and at most one more fetch.
    for i in 0..50 {
        let made_up = Key::new(&format!("made-up-{i}"));
        let token = made_up.sign(&issuer.claims("callosum:read"));
        let (status, _, body) = search_with(&callosum, Some(&token)).await;
        assert_eq!(status, 401);
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("does not publish"),
            "{body}"
        );
    }
    let fetched = issuer.fetches.load(Ordering::SeqCst) - before;
    assert!(fetched <= 1, "{fetched} fetches for 50 unknown key ids");
    // The keys already read keep working.
    let token = old.sign(&issuer.claims("callosum:read"));
    let (status, _, _) = search_with(&callosum, Some(&token)).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn an_issuer_that_is_down_refuses_tokens_and_stops_nothing_else() {
    let key = Key::new("k1");
    let store = StubStore::hits(memory_hits(&[("a", 0.1)])).await;
    let yaml = format!(
        "server:\n  bearer_token: static-token\n  oauth:\n    issuer: {}\n    resource: {RESOURCE}\n{}",
        crate::support::closed_port_url(),
        config_yaml(&[("episodic", "seren_memory", &store.url, "")])
    );
    let callosum = Callosum::start(&yaml).await;
    let mut claims = json!({"aud": RESOURCE, "exp": now() + 60.0});
    claims["iss"] = json!(crate::support::closed_port_url());
    let (status, _, _) = search_with(&callosum, Some(&key.sign(&claims))).await;
    assert_eq!(status, 401);
    let (status, _, _) = send(&callosum, reqwest::Method::GET, "/health", None, None).await;
    assert_eq!(status, 200);
    let (status, _, _) = search_with(&callosum, Some("static-token")).await;
    assert_eq!(status, 200);
}

/// `server.oauth` for `issuer`, as the config would give it.
fn settings(issuer: &Issuer) -> seren_corpus_callosum::config::OAuth {
    seren_corpus_callosum::config::OAuth {
        issuer: issuer.url.clone(),
        issuer_url: url::Url::parse(&issuer.url).unwrap(),
        resource: RESOURCE.into(),
        jwks_url: None,
        read_scope: "callosum:read".into(),
        write_scope: "callosum:write".into(),
    }
}

/// Polls `done` every 20 ms for up to `within`; whether it came true.
async fn eventually<F: std::future::Future<Output = bool>>(
    within: Duration,
    mut done: impl FnMut() -> F,
) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done().await
}

/// The issuer hanging once the keys are old stalls no request: the keys at hand are used at once
/// while one fetch waits on the issuer in the background; fetches that fail back off; and once
/// the issuer answers, the background fetch reads its keys (a withdrawn key stops working). Only
/// a verifier with no keys at all waits, and no longer than the fetch's bound. The timings are
/// shortened; the hang lasts as long as the test says.
#[tokio::test]
async fn an_issuer_that_hangs_once_the_keys_are_old_holds_no_request_up() {
    use seren_corpus_callosum::oauth::{Access, Invalid, Timing, Verifier};
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let timing = Timing {
        max_age: Duration::from_millis(200),
        refetch_after: Duration::from_millis(50),
        // What a request would wait on the hanging issuer if it waited on the fetch.
        fetch_timeout: Duration::from_secs(4),
        retry_first: Duration::from_millis(100),
        retry_max: Duration::from_millis(400),
    };
    let hang = timing.fetch_timeout;
    let verifier = Verifier::with_timing(settings(&issuer), false, timing);
    let token = key.sign(&issuer.claims("callosum:read"));
    assert!(verifier.verify(&token).await.is_ok());
    let fetches = || issuer.fetches.load(Ordering::SeqCst);
    assert_eq!(fetches(), 1);

    // The issuer hangs, and the keys grow old: twenty checks answer at once with them.
    issuer.hang.store(true, Ordering::SeqCst);
    tokio::time::sleep(timing.max_age * 2).await;
    let started = Instant::now();
    for _ in 0..20 {
        assert_eq!(
            verifier
                .verify(&token)
                .await
                .map(|v| Access::Scopes(v.scopes)),
            Ok(Access::Scopes(vec!["callosum:read".into()]))
        );
    }
    let took = started.elapsed();
    assert!(
        took < hang / 4,
        "20 checks with old keys took {took:?} while the issuer hangs for {hang:?}"
    );
    // The refresh did start, on its own task, and waits there: one, not one per request.
    assert!(eventually(hang, || async { fetches() >= 2 }).await);
    assert_eq!(fetches(), 2, "one fetch at a time");

    // A verifier with no keys at all has nothing to check with: it waits, within its bound.
    let cold_timing = Timing {
        fetch_timeout: Duration::from_millis(500),
        ..timing
    };
    let cold = Verifier::with_timing(settings(&issuer), false, cold_timing);
    let started = Instant::now();
    assert_eq!(cold.verify(&token).await, Err(Invalid::UnknownKey));
    let waited = started.elapsed();
    assert!(
        waited >= cold_timing.fetch_timeout && waited < hang,
        "the first fetch waited {waited:?}, bounded by {:?}",
        cold_timing.fetch_timeout
    );
    drop(cold);

    // The issuer answers 503 now: the fetch under way fails, and each failure in a row doubles
    // the wait before the next (100, 200, 400, 400 ... ms), however often tokens come.
    issuer.fail.store(true, Ordering::SeqCst);
    issuer.hang.store(false, Ordering::SeqCst);
    let before = fetches();
    let window = Duration::from_millis(1600);
    let started = Instant::now();
    while started.elapsed() < window {
        let one = Instant::now();
        assert!(verifier.verify(&token).await.is_ok());
        assert!(one.elapsed() < hang / 4, "a check took {:?}", one.elapsed());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let tries = fetches() - before;
    // Without the back-off, a try every 100 ms: 16. With it, at most 6 fit in 1.6 s.
    assert!(
        (1..=8).contains(&tries),
        "{tries} fetches in {window:?} of failures"
    );

    // The issuer is back, its key rotated: the old one withdrawn. The background fetch reads the
    // new set once its wait is over, and the old key's tokens stop working.
    let new = Key::new("k2");
    *issuer.keys.lock().unwrap() = vec![new.jwk()];
    issuer.fail.store(false, Ordering::SeqCst);
    let withdrawn = eventually(Duration::from_secs(10), || async {
        verifier.verify(&token).await == Err(Invalid::UnknownKey)
    })
    .await;
    assert!(withdrawn, "the withdrawn key still works");
    let token = new.sign(&issuer.claims("callosum:read"));
    assert!(verifier.verify(&token).await.is_ok());
}

#[test]
fn bad_oauth_settings_are_refused_by_name() {
    let load = |yaml: &str| {
        seren_corpus_callosum::config::Config::parse(
            std::path::Path::new("c.yaml"),
            yaml,
            &seren_corpus_callosum::config::Env::none(),
        )
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    let cases = [
        (
            "server:\n  oauth: {resource: https://c.example/mcp}\n",
            "server.oauth.issuer is required",
        ),
        (
            "server:\n  oauth: {issuer: https://a.example}\n",
            "server.oauth.resource is required",
        ),
        (
            "server:\n  oauth: {issuer: http://auth.example, resource: https://c.example/mcp}\n",
            "server.oauth.issuer must be an https:// url (http:// only on loopback)",
        ),
        (
            "server:\n  oauth: {issuer: https://a.example, resource: 'not a url'}\n",
            "server.oauth.resource is not a url",
        ),
        (
            "server:\n  oauth: {issuer: https://a.example, resource: 'https://c.example/mcp#x'}\n",
            "#fragment",
        ),
        (
            "server:\n  oauth: {issuer: https://a.example, resource: https://c.example/mcp, jwks_url: ftp://a.example/k}\n",
            "server.oauth.jwks_url must be an https:// url",
        ),
        (
            "server:\n  oauth: {issuer: https://a.example, resource: https://c.example/mcp, read_scope: 'two words'}\n",
            "server.oauth.read_scope must be one scope token",
        ),
        (
            "server:\n  oauth: {issuer: 'https://u:p@a.example', resource: https://c.example/mcp}\n",
            "must not carry a user or password",
        ),
    ];
    for (yaml, why) in cases {
        let got = load(yaml);
        assert!(got.contains(why), "{yaml}: {got}");
        assert!(!got.contains("u:p@"), "{got}");
    }
}

#[tokio::test]
async fn check_says_whether_the_issuer_gives_its_keys() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let dir = tempfile::tempdir().unwrap();
    let run = |issuer_url: String| {
        let path = dir.path().join(format!("c{}.yaml", issuer_url.len()));
        std::fs::write(
            &path,
            format!("server:\n  oauth:\n    issuer: {issuer_url}\n    resource: {RESOURCE}\n"),
        )
        .unwrap();
        async move {
            let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_seren-corpus-callosum"))
                .args(["check", "-c", &path.display().to_string()])
                .env_clear()
                .output()
                .await
                .unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        }
    };
    let (code, out) = run(issuer.url.clone()).await;
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "oauth:   access tokens from {} for {RESOURCE}",
            issuer.url
        )),
        "{out}"
    );
    assert!(out.contains(&format!("metadata at {METADATA}")), "{out}");
    assert!(
        out.contains(&format!(
            "oauth:   ok 1 signing key(s) from {}/jwks",
            issuer.url
        )),
        "{out}"
    );
    let (code, out) = run(format!("{}/", crate::support::closed_port_url())).await;
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("oauth:   FAIL cannot read the issuer's signing keys"),
        "{out}"
    );
}

/// `views_by_scope` (contract §6c): an access token granting a view's scope sees that view's
/// stores only, over REST and MCP, and its audit lines name the token's subject; a token with no
/// view scope sees every store; one granting two views' scopes is refused.
#[tokio::test]
async fn a_view_scope_holds_an_access_token_to_its_view() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let papers = StubStore::hits(memory_hits(&[("p", 0.1)])).await;
    let diary = StubStore::hits(memory_hits(&[("d", 0.1)])).await;
    let yaml = format!(
        "server:\n  bearer_token: static-token\n  oauth:\n    issuer: {}\n    resource: {RESOURCE}\n  views:\n    - {{name: research, stores: [\"papers*\"], write: true}}\n    - {{name: other, stores: [\"papers\"]}}\n  views_by_scope:\n    \"callosum:view:research\": research\n    \"callosum:view:other\": other\n{}",
        issuer.url,
        config_yaml(&[
            ("papers", "seren_memory", &papers.url, ""),
            ("diary", "seren_memory", &diary.url, "")
        ])
    );
    let callosum = Callosum::start(&yaml).await;
    let viewed = key.sign(&issuer.claims("callosum:read callosum:write callosum:view:research"));
    let (status, _, answer) = search_with(&callosum, Some(&viewed)).await;
    assert_eq!(status, 200);
    assert_eq!(answer["stores_searched"], json!(["papers"]));
    assert!(!answer.to_string().contains("diary"), "{answer}");
    let (_, _, stores) = send(
        &callosum,
        reqwest::Method::GET,
        "/stores",
        Some(&viewed),
        None,
    )
    .await;
    assert!(!stores.to_string().contains("diary"), "{stores}");
    assert_eq!(stores["view"]["name"], "research");
    // Over MCP, the same view.
    let client = http_client(&callosum.url, Some(&viewed)).await.unwrap();
    let listed = structured(&call(&client, "list_stores", json!({})).await);
    assert!(!listed.to_string().contains("diary"), "{listed}");
    let refused = error_text(&call(&client, "remove_store", json!({"name": "diary"})).await);
    assert_eq!(refused, "no store named 'diary'");
    // A write it may make is audited under the token's subject.
    let added = structured(
        &call(
            &client,
            "add_store",
            json!({"name": "papers-2", "type": "seren_memory", "url": papers.url}),
        )
        .await,
    );
    assert_eq!(added["added"], "papers-2");
    let trail = std::fs::read_to_string(callosum.dir.path().join("audit.jsonl")).unwrap();
    assert!(
        trail.contains(r#""actor":"oauth:someone","action":"add","store":"papers-2""#),
        "{trail}"
    );
    client.cancel().await.unwrap();
    // Without a view scope: every store, as today.
    let plain = key.sign(&issuer.claims("callosum:read"));
    let (_, _, answer) = search_with(&callosum, Some(&plain)).await;
    assert_eq!(
        answer["stores_searched"],
        json!(["papers", "diary", "papers-2"])
    );
    // Two views' scopes in one token: refused, naming both.
    let both = key.sign(&issuer.claims("callosum:read callosum:view:research callosum:view:other"));
    let (status, _, body) = search_with(&callosum, Some(&both)).await;
    assert_eq!(status, 403);
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("two views (other, research)"), "{detail}");
}
