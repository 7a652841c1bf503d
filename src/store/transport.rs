//! How an HTTP store's call travels: straight over hyper's pooled client, or, for a store that a
//! proxy variable (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, less `NO_PROXY`) covers, through
//! reqwest, which speaks to proxies.
//!
//! reqwest is hyper's pooled client with layers above it; a store call used none of them (no
//! redirect is followed, no request retried by them) but paid for each: the url parsed into a new
//! `Url` three times a call, the request cloned for a retry policy, a proxy check. That was a
//! tenth of a search's CPU. The direct client is built the way reqwest builds its own (the same
//! pool idle timeout, `TCP_NODELAY` and keep-alive, HTTP/2 where the store offers it by ALPN, the
//! one rustls config), and the url is turned into the request's `Uri` once, when the store is
//! bound. Which way a store goes is decided then too, by the matcher reqwest itself uses.
//!
//! Both ways give the same [`Answer`], and their errors the same words ([`Refused`]).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::HeaderMap;
use std::error::Error as StdError;
use std::time::Duration;

/// The pooled client a store without a proxy is called with.
pub type Direct = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// How long an idle pooled connection to a store is kept.
pub const POOL_IDLE: Duration = Duration::from_secs(90);
/// TCP keep-alive on a store's connections (reqwest's defaults).
const KEEPALIVE: Duration = Duration::from_secs(15);
const KEEPALIVE_RETRIES: u32 = 3;

/// A direct client over `tls` (whose ALPN this sets: `h2`, then `http/1.1`).
pub fn direct(tls: rustls::ClientConfig) -> Direct {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_keepalive(Some(KEEPALIVE));
    http.set_keepalive_interval(Some(KEEPALIVE));
    http.set_keepalive_retries(Some(KEEPALIVE_RETRIES));
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE)
        .build(connector)
}

/// The proxy rules of the environment, read once: the matcher reqwest reads them with.
pub struct Proxies(hyper_util::client::proxy::matcher::Matcher);

impl Proxies {
    pub fn from_env() -> Self {
        Self(hyper_util::client::proxy::matcher::Matcher::from_system())
    }

    /// Whether calls to `target` go through reqwest: a proxy covers it, or its url is no `Uri`.
    pub fn cover(&self, target: &Target) -> bool {
        target
            .uri
            .as_ref()
            .is_none_or(|uri| self.0.intercept(uri).is_some())
    }
}

/// Where one store's calls go, in the form each way wants it.
#[derive(Debug, Clone)]
pub struct Target {
    /// The url, for reqwest (and nothing else: never put into a message).
    pub url: url::Url,
    /// The same url as a request's `Uri`, made once.
    uri: Option<hyper::Uri>,
}

impl Target {
    pub fn new(url: url::Url) -> Self {
        let uri = url.as_str().parse().ok();
        Self { url, uri }
    }
}

/// One store's way of calling.
#[derive(Clone)]
pub enum Transport {
    /// Boxed: a client is a few hundred bytes, reqwest's a pointer.
    Direct(Box<Direct>),
    /// A proxy covers the store (or its url is no `Uri`): reqwest, which speaks to proxies.
    Proxied(reqwest::Client),
}

impl Transport {
    /// POSTs `body` with `headers` to `target` and waits for the answer's head.
    pub async fn post(
        &self,
        target: &Target,
        headers: HeaderMap,
        body: &Bytes,
    ) -> Result<Answer, Refused> {
        match (self, &target.uri) {
            (Transport::Direct(client), Some(uri)) => {
                let mut request = hyper::Request::new(Full::new(body.clone()));
                *request.method_mut() = hyper::Method::POST;
                *request.uri_mut() = uri.clone();
                *request.headers_mut() = headers;
                let response = client.request(request).await.map_err(|e| Refused {
                    connect: e.is_connect(),
                    closed: !e.is_connect() && closed_before_answer(&e),
                    why: describe(&e, false),
                })?;
                Ok(Answer::Direct(response))
            }
            (Transport::Direct(_), None) => Err(Refused {
                connect: false,
                closed: false,
                why: "the store's url is not one a request can be sent to".into(),
            }),
            (Transport::Proxied(client), _) => {
                let mut request = reqwest::Request::new(reqwest::Method::POST, target.url.clone());
                *request.headers_mut() = headers;
                *request.body_mut() = Some(body.clone().into());
                client
                    .execute(request)
                    .await
                    .map(Answer::Proxied)
                    .map_err(|e| {
                        let connect = e.is_connect();
                        let unanswered =
                            !(connect || e.is_timeout() || e.is_status() || e.is_body());
                        Refused {
                            connect,
                            closed: unanswered && closed_before_answer(&e),
                            why: describe_reqwest(&e),
                        }
                    })
            }
        }
    }
}

/// Why a call got no answer, in words fit for a message.
#[derive(Debug)]
pub struct Refused {
    /// No connection could be made.
    pub connect: bool,
    /// The connection closed before any answer came ([`closed_before_answer`]).
    pub closed: bool,
    pub why: String,
}

/// A store's answer: its status and head read, its body still to come.
pub enum Answer {
    Direct(hyper::Response<hyper::body::Incoming>),
    Proxied(reqwest::Response),
}

impl Answer {
    pub fn status(&self) -> u16 {
        match self {
            Answer::Direct(response) => response.status().as_u16(),
            Answer::Proxied(response) => response.status().as_u16(),
        }
    }

    /// The body's length as the store announced it.
    pub fn content_length(&self) -> Option<u64> {
        match self {
            Answer::Direct(response) => hyper::body::Body::size_hint(response.body()).exact(),
            Answer::Proxied(response) => response.content_length(),
        }
    }

    /// The body's next piece, `None` at its end; a failure in words fit for a message.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        match self {
            Answer::Direct(response) => loop {
                match response.body_mut().frame().await {
                    None => return Ok(None),
                    Some(Err(e)) => return Err(describe(&e, true)),
                    // Trailers carry no answer.
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            return Ok(Some(data));
                        }
                    }
                }
            },
            Answer::Proxied(response) => response.chunk().await.map_err(|e| describe_reqwest(&e)),
        }
    }
}

/// True when the connection closed (or was reset) before any answer came back, as happens when a
/// store's keep-alive timeout closes a pooled connection at the moment a request is written to it.
/// Asked only of an error that is not a failed connect, a timeout or a body's.
fn closed_before_answer(error: &(dyn StdError + 'static)) -> bool {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>()
            && hyper.is_incomplete_message()
        {
            return true;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        source = cause.source();
    }
    false
}

/// A short, secret-free description of a reqwest error (see [`describe`]). reqwest's own
/// `Display` carries the url, which may hold credentials.
pub(crate) fn describe_reqwest(error: &reqwest::Error) -> String {
    describe(error, error.is_body() || error.is_decode())
}

/// A short, secret-free description of a call's error: a failed TLS handshake in words of its
/// kind (`tls: ...`), else the innermost cause, read as an IO error kind where it is one; `body`
/// when it broke off the body.
fn describe(error: &(dyn StdError + 'static), body: bool) -> String {
    use crate::text::cut;
    if let Some(words) = super::clients::rejected(error) {
        return words;
    }
    let mut innermost: &dyn StdError = error;
    let mut io_kind = None;
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            io_kind = Some(io.kind());
        }
        innermost = cause;
        source = cause.source();
    }
    use std::io::ErrorKind as K;
    match io_kind {
        Some(K::ConnectionRefused) => "connection refused".into(),
        Some(K::ConnectionReset) => "connection reset".into(),
        Some(K::ConnectionAborted) => "connection aborted".into(),
        Some(K::TimedOut) => "timed out".into(),
        Some(K::UnexpectedEof) => "connection closed early".into(),
        _ if body => format!("body: {}", cut(&innermost.to_string(), 120)),
        _ => cut(&innermost.to_string(), 120),
    }
}
