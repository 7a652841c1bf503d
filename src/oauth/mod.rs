//! The OAuth 2.1 resource server (contract §6b): access tokens from one authorization server,
//! checked against its published keys, and what a checked token may do.
//!
//! The keys are found through the issuer's discovery document (RFC 8414, then OpenID
//! Connect's), whose `jwks_uri` must be https and off this machine unless the issuer is on it,
//! fetched on first need and cached. Once they are older than [`KEYS_MAX_AGE`] they are fetched
//! again in the background: requests go on with the keys at hand meanwhile, so an issuer that is
//! down or hangs holds no request up. A token signed by a key not in the cache fetches them
//! again, at most once per [`REFETCH_AFTER`] whatever the tokens say, so a flood of made-up key
//! ids cannot make this server hammer the issuer; a fetch that fails waits [`KEYS_RETRY_FIRST`]
//! before the next, doubling up to [`KEYS_RETRY_MAX`]. The issuer being down stops nothing: keys
//! already read keep working, and a token no key can check is refused. A client's token is
//! never sent on to a store.

pub mod jwt;

use crate::config::OAuth;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use url::Url;

pub use jwt::{Invalid, Verified};

pub use crate::limits::{
    ISSUER_FETCH_TIMEOUT as FETCH_TIMEOUT, KEYS_MAX_AGE, KEYS_REFETCH_AFTER as REFETCH_AFTER,
    KEYS_RETRY_FIRST, KEYS_RETRY_MAX, MAX_ISSUER_DOCUMENT_BYTES as MAX_DOCUMENT_BYTES,
};

/// What a request may do, as the auth layer found it: put in the request's extensions, read by
/// the MCP tools (each needs a scope) over HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// No auth is configured, or the static bearer token was given: everything.
    Full,
    /// An access token from the authorization server, with the scopes it grants.
    Scopes(Vec<String>),
}

impl Access {
    /// Whether this access covers `scope`.
    pub fn allows(&self, scope: &str) -> bool {
        match self {
            Self::Full => true,
            Self::Scopes(scopes) => scopes.iter().any(|s| s == scope),
        }
    }
}

/// How the issuer's keys are kept and fetched. [`Timing::default`] is the bounds of
/// `limits.rs`; tests shorten them ([`Verifier::with_timing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long keys are used before they are fetched again (in the background; the old keys
    /// stay in use until a fetch succeeds).
    pub max_age: Duration,
    /// The least time from the start of one fetch to the start of the next.
    pub refetch_after: Duration,
    /// The bound on one fetch, discovery included: all a request ever waits on the issuer.
    pub fetch_timeout: Duration,
    /// The wait after a fetch that failed, doubled by each failure in a row after it...
    pub retry_first: Duration,
    /// ... up to this.
    pub retry_max: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            max_age: KEYS_MAX_AGE,
            refetch_after: REFETCH_AFTER,
            fetch_timeout: FETCH_TIMEOUT,
            retry_first: KEYS_RETRY_FIRST,
            retry_max: KEYS_RETRY_MAX,
        }
    }
}

impl Timing {
    /// The wait before the next fetch after `failures` (one or more) failed in a row; never less
    /// than `refetch_after`.
    fn retry_after(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        self.retry_first
            .saturating_mul(1 << doublings)
            .min(self.retry_max)
            .max(self.refetch_after)
    }
}

/// The keys as last read, and when the next fetch may start.
#[derive(Default)]
struct Cache {
    keys: Arc<jwt::Jwks>,
    /// When the keys were read; `None` until a fetch succeeds.
    read_at: Option<Instant>,
    /// No fetch starts before then: `refetch_after` past the start of the last one, or the
    /// back-off past a failure. `None`: any time.
    next_try: Option<Instant>,
    /// Fetches failed in a row since the last that succeeded.
    failures: u32,
}

/// The state of fetching, behind one async lock: one fetch at a time.
#[derive(Default)]
struct Fetching {
    /// Where the keys are, once known (the configured `jwks_url`, or from discovery).
    jwks_uri: Option<Url>,
}

/// How the keys at hand stand.
enum Held {
    /// None was ever read: a request has nothing to check with, and waits for a fetch.
    Nothing,
    /// Older than `max_age`: used, while a fetch in the background reads them again.
    Old,
    Fresh,
}

/// Checks access tokens for this server.
pub struct Verifier {
    inner: Arc<Inner>,
}

/// The verifier's state, shared with the background refresh.
struct Inner {
    settings: OAuth,
    timing: Timing,
    client: reqwest::Client,
    cache: RwLock<Cache>,
    fetching: tokio::sync::Mutex<Fetching>,
    /// Whether a background refresh is under way (one at a time).
    refreshing: AtomicBool,
}

/// Held by the background refresh while it runs; lets the next one start when dropped, however
/// the refresh ends.
struct Refreshing(Arc<Inner>);

impl Drop for Refreshing {
    fn drop(&mut self) {
        self.0.refreshing.store(false, Ordering::Release);
    }
}

impl Verifier {
    /// A verifier for `settings`; the issuer is reached over TLS checked against the webpki
    /// roots, and the OS store's too with `trust_system_store` (`tls.trust_system_store`).
    pub fn new(settings: OAuth, trust_system_store: bool) -> Self {
        Self::with_timing(settings, trust_system_store, Timing::default())
    }

    /// [`Verifier::new`], with the keys kept and fetched by `timing`.
    pub fn with_timing(settings: OAuth, trust_system_store: bool, timing: Timing) -> Self {
        // No redirects: keys come from where the issuer's own document says, nowhere else.
        let client = crate::store::clients::tls_builder(trust_system_store)
            .expect("rustls initializes (the stores' client was built the same way)")
            .user_agent(concat!("seren-corpus-callosum/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timing.fetch_timeout)
            .build()
            .expect("rustls initializes (the stores' client was built the same way)");
        let fetching = Fetching {
            jwks_uri: settings.jwks_url.clone(),
        };
        Self {
            inner: Arc::new(Inner {
                settings,
                timing,
                client,
                cache: RwLock::new(Cache::default()),
                fetching: tokio::sync::Mutex::new(fetching),
                refreshing: AtomicBool::new(false),
            }),
        }
    }

    /// The settings this verifier holds tokens to.
    pub fn settings(&self) -> &OAuth {
        &self.inner.settings
    }

    /// Checks `token`. With no keys read yet it waits for a fetch (bounded by `fetch_timeout`);
    /// with old keys it starts a fetch in the background and checks with them meanwhile; a token
    /// naming a key they do not have fetches them again and waits (rate-limited, bounded).
    pub async fn verify(&self, token: &str) -> Result<Verified, Invalid> {
        match self.inner.held() {
            Held::Nothing => self.inner.fetch_if_due().await,
            Held::Old => self.refresh_in_background(),
            Held::Fresh => {}
        }
        match self.inner.check(token) {
            Err(Invalid::UnknownKey) => {
                self.inner.fetch_if_due().await;
                self.inner.check(token)
            }
            done => done,
        }
    }

    /// Starts a fetch on its own task unless one is under way or none is due yet; returns at
    /// once either way.
    fn refresh_in_background(&self) {
        if !self.inner.due() || self.inner.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let running = Refreshing(Arc::clone(&self.inner));
        tokio::spawn(async move {
            let inner = &running.0;
            let mut fetching = inner.fetching.lock().await;
            // A token naming a new key may have had them read while this waited for the lock.
            if inner.due() {
                inner.fetch(&mut fetching).await;
            }
        });
    }

    /// Reads the issuer's keys now, whatever the cache holds, for `check`: where they came
    /// from and how many are usable, or why they cannot be read.
    pub async fn probe(&self) -> Result<(Url, usize), String> {
        let inner = &self.inner;
        let mut fetching = inner.fetching.lock().await;
        let keys = inner.read_keys_within(&mut fetching).await?;
        let uri = fetching
            .jwks_uri
            .clone()
            .expect("set by a read that succeeded");
        Ok((uri, keys.len()))
    }
}

impl Inner {
    fn check(&self, token: &str) -> Result<Verified, Invalid> {
        let keys = self.cache().keys.clone();
        let expect = jwt::Expect {
            issuer: &self.settings.issuer,
            resource: &self.settings.resource,
            now: crate::health::unix_now(),
        };
        jwt::verify(token, &keys, &expect)
    }

    fn cache(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.cache
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn cache_mut(&self) -> std::sync::RwLockWriteGuard<'_, Cache> {
        self.cache
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn held(&self) -> Held {
        match self.cache().read_at {
            None => Held::Nothing,
            Some(at) if at.elapsed() >= self.timing.max_age => Held::Old,
            Some(_) => Held::Fresh,
        }
    }

    /// Whether a fetch may start now (see [`Cache::next_try`]).
    fn due(&self) -> bool {
        self.cache().next_try.is_none_or(|at| Instant::now() >= at)
    }

    /// Fetches the keys, unless a fetch started too recently or failed too recently (then what
    /// it read, if anything, is used). Waits for a fetch under way rather than start another.
    async fn fetch_if_due(&self) {
        let mut fetching = self.fetching.lock().await;
        if self.due() {
            self.fetch(&mut fetching).await;
        }
    }

    /// One fetch, its outcome kept: new keys, or the next try pushed back.
    async fn fetch(&self, fetching: &mut Fetching) {
        // Set before the fetch, so that one abandoned half-way (its request gone) still counts.
        self.cache_mut().next_try = Some(Instant::now() + self.timing.refetch_after);
        match self.read_keys_within(fetching).await {
            Ok(keys) => {
                let count = keys.len();
                {
                    let mut cache = self.cache_mut();
                    cache.keys = Arc::new(keys);
                    cache.read_at = Some(Instant::now());
                    cache.failures = 0;
                }
                tracing::info!(
                    issuer = %self.settings.issuer,
                    keys = count,
                    "read the authorization server's signing keys"
                );
            }
            Err(why) => {
                let wait = {
                    let mut cache = self.cache_mut();
                    cache.failures = cache.failures.saturating_add(1);
                    let wait = self.timing.retry_after(cache.failures);
                    cache.next_try = Some(Instant::now() + wait);
                    wait
                };
                tracing::warn!(
                    issuer = %self.settings.issuer,
                    "cannot read the authorization server's signing keys: {why}; keys read before stay in use; next try in {}s",
                    wait.as_secs()
                );
            }
        }
    }

    /// [`Inner::read_keys`] within `fetch_timeout` as a whole (discovery included), so whoever
    /// waits on it never waits longer than that.
    async fn read_keys_within(&self, fetching: &mut Fetching) -> Result<jwt::Jwks, String> {
        let limit = self.timing.fetch_timeout;
        tokio::time::timeout(limit, self.read_keys(fetching))
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {}s", limit.as_secs_f64())))
    }

    async fn read_keys(&self, fetching: &mut Fetching) -> Result<jwt::Jwks, String> {
        let uri = match &fetching.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover().await?;
                fetching.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let body = self.get(&uri).await?;
        jwt::Jwks::parse(&body).map_err(|why| format!("{uri}: {why}"))
    }

    /// The issuer's `jwks_uri`, from its RFC 8414 metadata or else its OpenID configuration; the
    /// document must name the configured issuer exactly (RFC 8414 §3.3).
    async fn discover(&self) -> Result<Url, String> {
        let mut why = Vec::new();
        for url in discovery_urls(&self.settings.issuer_url) {
            match self.get(&url).await {
                Ok(body) => match jwks_uri_in(&body, &self.settings.issuer) {
                    Ok(uri) => return Ok(uri),
                    Err(e) => why.push(format!("{url}: {e}")),
                },
                Err(e) => why.push(e),
            }
        }
        Err(why.join("; "))
    }

    /// One bounded GET: [`FETCH_TIMEOUT`], [`MAX_DOCUMENT_BYTES`], a 2xx status.
    async fn get(&self, url: &Url) -> Result<Vec<u8>, String> {
        let fail =
            |e: reqwest::Error| format!("{url}: {}", crate::store::transport::describe_reqwest(&e));
        let mut response = self
            .client
            .get(url.clone())
            .header("accept", "application/json")
            .send()
            .await
            .map_err(fail)?;
        if !response.status().is_success() {
            return Err(format!("{url}: status {}", response.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(fail)? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("{url}: larger than {MAX_DOCUMENT_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// The protected-resource metadata document (RFC 9728 §2): `resource` byte for byte as
/// configured, the one authorization server, the two scopes, tokens in the header only.
pub fn metadata(oauth: &OAuth) -> serde_json::Value {
    serde_json::json!({
        "resource": oauth.resource,
        "authorization_servers": [oauth.issuer],
        "scopes_supported": [oauth.read_scope, oauth.write_scope],
        "bearer_methods_supported": ["header"],
        "resource_name": "seren-corpus-callosum",
    })
}

/// Where an issuer's metadata may be: RFC 8414's path-inserted url, then OpenID Connect's
/// appended one.
fn discovery_urls(issuer: &Url) -> [Url; 2] {
    let path = issuer.path().trim_end_matches('/');
    let origin = issuer.origin().ascii_serialization();
    let at = |text: String| Url::parse(&text).expect("built from a parsed url");
    [
        at(format!(
            "{origin}/.well-known/oauth-authorization-server{path}"
        )),
        at(format!("{origin}{path}/.well-known/openid-configuration")),
    ]
}

/// The `jwks_uri` of a discovery document that names `issuer` (RFC 8414 §3.3: the `issuer` it
/// states must be the configured one exactly, else nothing in it is used).
///
/// Where it points is the document's say, so it is held to what the issuer is held to. RFC 8414
/// §2: "This URL MUST use the "https" scheme"; plain `http` from an https issuer would fetch the
/// keys every token is checked with over a link anyone on the path can rewrite (a downgrade). And
/// it may not point at this machine (loopback, `localhost`) unless the issuer is there too: a
/// remote issuer's document (or whoever rewrote it) could otherwise aim a GET at a service on
/// this host that the network cannot reach, and have its url logged. Credentials in it are
/// refused too. Keys on another https host are fine: Google's issuer `accounts.google.com` serves
/// them from `www.googleapis.com`. An issuer on loopback (tests, a local set-up) keeps the
/// configuration's rule: https, or http on loopback.
fn jwks_uri_in(body: &[u8], issuer: &str) -> Result<Url, String> {
    #[derive(serde::Deserialize)]
    struct Document {
        issuer: Option<String>,
        jwks_uri: Option<String>,
    }
    let doc: Document =
        serde_json::from_slice(body).map_err(|_| "not a JSON metadata document".to_owned())?;
    if doc.issuer.as_deref() != Some(issuer) {
        return Err("it names another issuer".into());
    }
    let uri = doc.jwks_uri.ok_or("it has no jwks_uri")?;
    // The url is never quoted back: it may hold a password, and it is the document's text.
    let url = Url::parse(&uri).map_err(|_| "its jwks_uri is not a url".to_owned())?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("its jwks_uri carries a user or password".into());
    }
    let issuer_here = Url::parse(issuer).is_ok_and(|issuer| on_this_machine(&issuer));
    let here = on_this_machine(&url);
    match url.scheme() {
        "https" if here && !issuer_here => Err(
            "its jwks_uri points at this machine (loopback) while the issuer is elsewhere: \
             refused, so that a discovery document cannot aim a request at a local service"
                .into(),
        ),
        "https" => Ok(url),
        "http" if here && issuer_here => Ok(url),
        "http" => Err(
            "its jwks_uri is not https (RFC 8414 §2): plain http would let the keys be rewritten \
             on the way (a downgrade)"
                .into(),
        ),
        _ => Err("its jwks_uri is not https (RFC 8414 §2)".into()),
    }
}

/// Whether `url`'s host is this machine: 127.0.0.0/8 and ::1 (IPv4-mapped too), the unspecified
/// addresses (0.0.0.0 and ::, which reach this machine when connected to), and `localhost` with
/// the names under it (RFC 6761 §6.3). Only what the url says: a name that resolves to loopback
/// is not seen here.
fn on_this_machine(url: &Url) -> bool {
    let v4 = |ip: std::net::Ipv4Addr| ip.is_loopback() || ip.is_unspecified();
    match url.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => v4(ip),
        Some(url::Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.is_unspecified() || ip.to_ipv4_mapped().is_some_and(v4)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_urls_follow_rfc_8414_then_openid() {
        let urls = discovery_urls(&Url::parse("https://auth.example/realms/team").unwrap());
        assert_eq!(
            urls[0].as_str(),
            "https://auth.example/.well-known/oauth-authorization-server/realms/team"
        );
        assert_eq!(
            urls[1].as_str(),
            "https://auth.example/realms/team/.well-known/openid-configuration"
        );
        let urls = discovery_urls(&Url::parse("http://127.0.0.1:9000").unwrap());
        assert_eq!(
            urls[0].as_str(),
            "http://127.0.0.1:9000/.well-known/oauth-authorization-server"
        );
        assert_eq!(
            urls[1].as_str(),
            "http://127.0.0.1:9000/.well-known/openid-configuration"
        );
    }

    #[test]
    fn a_discovery_document_must_name_the_issuer_and_an_https_jwks_uri() {
        let issuer = "https://auth.example";
        let doc = |v: serde_json::Value| jwks_uri_in(v.to_string().as_bytes(), issuer);
        assert_eq!(
            doc(serde_json::json!({"issuer": issuer, "jwks_uri": "https://auth.example/jwks"}))
                .unwrap()
                .as_str(),
            "https://auth.example/jwks"
        );
        for (bad, why) in [
            (
                serde_json::json!({"issuer": "https://evil.example", "jwks_uri": "https://x/j"}),
                "another issuer",
            ),
            (serde_json::json!({"issuer": issuer}), "no jwks_uri"),
            (
                serde_json::json!({"issuer": issuer, "jwks_uri": "http://auth.example/j"}),
                "not https",
            ),
        ] {
            let got = doc(bad).unwrap_err();
            assert!(got.contains(why), "{got}");
        }
        assert!(jwks_uri_in(b"<html>", issuer).is_err());
    }

    /// A discovery document that would send the keys' fetch over plain http, or at a service on
    /// this machine, or with credentials, is not followed; keys on another https host are.
    #[test]
    fn a_jwks_uri_may_not_downgrade_or_point_at_this_machine() {
        let doc = |issuer: &str, jwks_uri: &str| {
            let body = serde_json::json!({"issuer": issuer, "jwks_uri": jwks_uri});
            jwks_uri_in(body.to_string().as_bytes(), issuer)
        };
        // Google's issuer serves its keys from another host.
        assert_eq!(
            doc(
                "https://accounts.google.com",
                "https://www.googleapis.com/oauth2/v3/certs"
            )
            .unwrap()
            .as_str(),
            "https://www.googleapis.com/oauth2/v3/certs"
        );
        let issuer = "https://auth.example/realms/team";
        for (jwks_uri, why) in [
            ("http://auth.example/jwks", "not https"),
            ("http://127.0.0.1:8080/jwks", "not https"),
            ("http://localhost/jwks", "not https"),
            ("https://127.0.0.1/jwks", "this machine"),
            ("https://127.9.8.7:8443/jwks", "this machine"),
            ("https://127.1/jwks", "this machine"),
            ("https://2130706433/jwks", "this machine"),
            ("https://0x7f000001/jwks", "this machine"),
            ("https://localhost:8443/jwks", "this machine"),
            ("https://LocalHost./jwks", "this machine"),
            ("https://keys.localhost/jwks", "this machine"),
            ("https://[::1]/jwks", "this machine"),
            ("https://[::ffff:127.0.0.1]/jwks", "this machine"),
            ("https://0.0.0.0/jwks", "this machine"),
            ("https://[::]/jwks", "this machine"),
            ("https://user:secret@auth.example/jwks", "user or password"),
            ("https://user@auth.example/jwks", "user or password"),
        ] {
            let got = doc(issuer, jwks_uri).unwrap_err();
            assert!(
                got.contains("jwks_uri") && got.contains(why),
                "{jwks_uri}: {got}"
            );
            assert!(!got.contains("secret"), "{got}");
        }
        // An issuer on loopback (tests, a local set-up) keeps its keys there, over http too.
        for (issuer, jwks_uri) in [
            ("http://127.0.0.1:9000", "http://127.0.0.1:9000/jwks"),
            ("http://localhost:9000", "http://127.0.0.1:9001/jwks"),
            ("https://localhost:9000", "http://[::1]:9001/jwks"),
            ("http://127.0.0.1:9000", "https://auth.example/jwks"),
        ] {
            assert!(doc(issuer, jwks_uri).is_ok(), "{issuer} {jwks_uri}");
        }
        for (jwks_uri, why) in [
            ("http://auth.example/jwks", "not https"),
            ("http://u:secret@127.0.0.1:9000/jwks", "user or password"),
        ] {
            let got = doc("http://127.0.0.1:9000", jwks_uri).unwrap_err();
            assert!(
                got.contains("jwks_uri") && got.contains(why),
                "{jwks_uri}: {got}"
            );
        }
    }

    #[test]
    fn failed_fetches_back_off_from_30_s_doubling_to_5_min() {
        let timing = Timing::default();
        let waits: Vec<u64> = (1..=7).map(|n| timing.retry_after(n).as_secs()).collect();
        assert_eq!(waits, [30, 60, 120, 240, 300, 300, 300]);
        assert_eq!(timing.retry_after(u32::MAX).as_secs(), 300);
        // Never sooner than the rate limit, whatever the back-off says.
        let quick = Timing {
            retry_first: Duration::from_millis(1),
            ..timing
        };
        assert_eq!(quick.retry_after(1), REFETCH_AFTER);
    }

    #[test]
    fn access_by_scope() {
        assert!(Access::Full.allows("callosum:write"));
        let read = Access::Scopes(vec!["callosum:read".into()]);
        assert!(read.allows("callosum:read"));
        assert!(!read.allows("callosum:write"));
    }
}
