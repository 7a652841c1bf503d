//! The browser guard: what keeps web pages in the user's own browser away from a service that
//! listens on loopback with no token.
//!
//! A page on any site can send requests to `127.0.0.1`; the browser lets it *send* "simple"
//! requests (a form post, a `no-cors` fetch with `text/plain`) without asking anyone, and a page on
//! a name the attacker re-points at `127.0.0.1` (DNS rebinding) can even *read* the answers. Three
//! checks close that, all in one layer that wraps every route, `/mcp` and the viewer included:
//!
//! 1. **Host**: the `Host` header must name this service: a loopback name, the bound address, an
//!    IP literal, or one of `server.allowed_hosts`. Rebinding needs the attacker's own DNS name in
//!    `Host`, so an IP literal is safe to accept. `GET /health` is exempt, so probes that send a
//!    container's or a balancer's name keep working.
//! 2. **Origin**: on every gated route, a request that carries an `Origin` other than the
//!    listener's own (or one of `server.allowed_origins`), or says `Sec-Fetch-Site: cross-site`, is
//!    refused. Clients that are not browsers send neither header and are unaffected.
//! 3. **Content type** ([`json_body`], after auth): a request with a body (POST, PUT, PATCH)
//!    must say `application/json`, which a page cannot send cross-origin without a CORS preflight
//!    this service never grants (unless origins are configured, and then only to those).
//!
//! CORS headers are sent only when `server.allowed_origins` names origins, and then only to them.
//! This module decides; it never reads a body, and knows of the routes only which are public (the
//! router tells it, with the same function auth uses).

use crate::config::Server;
use crate::hosts::{host_of, normalize_origin};
use crate::text::escaped;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The names every listener answers to, whatever it binds.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];
/// Request headers a configured origin may send (what the viewer, REST and MCP clients use).
const CORS_ALLOW_HEADERS: &str = "authorization, content-type, accept, x-request-id, \
    mcp-session-id, mcp-protocol-version, last-event-id";
const CORS_ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";
/// Response headers a configured origin's script may read.
const CORS_EXPOSE_HEADERS: &str = "x-request-id, mcp-session-id, www-authenticate, retry-after";

/// The checks, built once from the `server:` block.
#[derive(Clone)]
pub struct Guard {
    /// The `Host` names accepted besides IP literals; `None` turns the check off (`*`).
    hosts: Option<Vec<String>>,
    /// Extra origins allowed to call gated routes, as `scheme://host[:port]`, lower case.
    origins: Vec<String>,
    /// Which routes anyone may read (the Origin check is for the others).
    public: Public,
}

/// Which routes anyone may read, token or not: the router's rule, which its settings shape
/// (`server.public_metrics`, views).
pub type Public = std::sync::Arc<dyn Fn(&Method, &str) -> bool + Send + Sync>;

/// Why the guard refused a request: a status and a message that names the setting to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub status: StatusCode,
    pub detail: String,
}

impl Guard {
    /// The guard a `server:` block asks for, over a router whose public routes `public` names.
    pub fn new(server: &Server, public: Public) -> Self {
        let hosts = if server.allowed_hosts.iter().any(|h| h.trim() == "*") {
            None
        } else {
            let mut hosts: Vec<String> = LOOPBACK_NAMES.map(str::to_owned).to_vec();
            let bound = host_of(&server.host);
            let extras = server.allowed_hosts.iter().map(|h| host_of(h));
            for host in std::iter::once(bound).chain(extras) {
                if !host.is_empty() && !is_wildcard(&host) && !hosts.contains(&host) {
                    hosts.push(host);
                }
            }
            Some(hosts)
        };
        Self {
            hosts,
            origins: server.allowed_origins.clone(),
            public,
        }
    }

    /// The `Host` names accepted besides IP literals (`None`: any).
    pub fn hosts(&self) -> Option<&[String]> {
        self.hosts.as_deref()
    }

    /// Checks the `Host` header. A request without one cannot come from a browser (every browser
    /// sends it), so it passes.
    pub fn check_host(&self, headers: &HeaderMap) -> Result<(), Refused> {
        let Some(hosts) = &self.hosts else {
            return Ok(());
        };
        let Some(value) = headers.get(header::HOST) else {
            return Ok(());
        };
        let host = value.to_str().map(host_of).unwrap_or_default();
        if hosts.contains(&host) || host.parse::<std::net::IpAddr>().is_ok() {
            return Ok(());
        }
        Err(Refused {
            status: StatusCode::FORBIDDEN,
            detail: format!(
                "Host {} is not allowed (a guard against DNS rebinding); to serve it, add it to \
                 server.allowed_hosts or SEREN_SCC_ALLOWED_HOSTS",
                shown(value.as_bytes())
            ),
        })
    }

    /// Checks `Origin` and `Sec-Fetch-Site` for a gated route. `Ok(Some(origin))` is a configured
    /// cross-origin caller, whose answer carries CORS headers.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<Option<String>, Refused> {
        let origin = headers.get(header::ORIGIN);
        let configured = origin
            .and_then(|o| o.to_str().ok())
            .map(normalize_origin)
            .filter(|o| self.origins.contains(o));
        if configured.is_some() {
            return Ok(configured);
        }
        if let Some(origin) = origin
            && !is_own_origin(origin, headers.get(header::HOST))
        {
            return Err(Refused {
                status: StatusCode::FORBIDDEN,
                detail: format!(
                    "cross-origin request from {} refused; to allow a web app on that origin, add \
                     it to server.allowed_origins or SEREN_SCC_ALLOWED_ORIGINS",
                    shown(origin.as_bytes())
                ),
            });
        }
        let cross_site = headers
            .get("sec-fetch-site")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"));
        if cross_site {
            return Err(Refused {
                status: StatusCode::FORBIDDEN,
                detail: "cross-site request refused (Sec-Fetch-Site: cross-site); to allow a web \
                         app, add its origin to server.allowed_origins"
                    .into(),
            });
        }
        Ok(None)
    }

    /// The answer to a CORS preflight from a configured origin.
    fn preflight(&self, origin: &str, headers: &HeaderMap) -> Response {
        let mut response = StatusCode::NO_CONTENT.into_response();
        let out = response.headers_mut();
        // `origin` was checked to be one of the configured origins, which are valid header text.
        if let Ok(value) = HeaderValue::from_str(origin) {
            out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
        }
        out.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(CORS_ALLOW_METHODS),
        );
        out.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(CORS_ALLOW_HEADERS),
        );
        out.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        // Chromium's Private Network Access asks before a public page may call a private address.
        if headers.contains_key("access-control-request-private-network") {
            out.insert(
                "access-control-allow-private-network",
                HeaderValue::from_static("true"),
            );
        }
        out.insert(
            header::VARY,
            HeaderValue::from_static(
                "origin, access-control-request-method, access-control-request-headers",
            ),
        );
        response
    }
}

/// Whether a request with this method must carry a JSON body's content type.
fn reads_a_body(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

/// Checks that a body is declared `application/json` (parameters such as `charset` allowed).
pub fn check_content_type(headers: &HeaderMap) -> Result<(), Refused> {
    let value = headers.get(header::CONTENT_TYPE);
    let is_json = value
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim())
        .is_some_and(|essence| essence.eq_ignore_ascii_case("application/json"));
    if is_json {
        return Ok(());
    }
    let got = value.map_or_else(|| "none".to_owned(), |v| shown(v.as_bytes()));
    Err(Refused {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        detail: format!("Content-Type must be application/json; got {got}"),
    })
}

/// Refuses a body that is not declared JSON (the edge asks after auth, so a caller without the
/// token hears 401 first, whatever it sent).
pub fn json_body(request: &Request) -> Option<Response> {
    if reads_a_body(request.method())
        && let Err(refused) = check_content_type(request.headers())
    {
        return Some(refuse(refused));
    }
    None
}

/// What [`Guard::admit`] lets through carries: the CORS origin to answer to, if any.
pub struct Admitted(Option<String>);

impl Guard {
    /// The guard's checks on a request: host, then preflight, then origin (gated routes). A
    /// refusal, or the answer to a preflight, comes back as `Err` (boxed: it is the rare way).
    pub fn admit(&self, request: &Request) -> Result<Admitted, Box<Response>> {
        if let Err(refused) = check_head(request) {
            return Err(Box::new(refuse(refused)));
        }
        let (method, path) = (request.method(), request.uri().path());
        let headers = request.headers();
        let probe = path == "/health" && matches!(*method, Method::GET | Method::HEAD);
        if !probe && let Err(refused) = self.check_host(headers) {
            return Err(Box::new(refuse(refused)));
        }
        if method == Method::OPTIONS
            && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
            && let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok())
        {
            let origin = normalize_origin(origin);
            if self.origins.contains(&origin) {
                return Err(Box::new(self.preflight(&origin, headers)));
            }
        }
        let mut cors_origin = None;
        if !(self.public)(method, path) {
            match self.check_origin(headers) {
                Ok(origin) => cors_origin = origin,
                Err(refused) => return Err(Box::new(refuse(refused))),
            }
        }
        Ok(Admitted(cors_origin))
    }

    /// The CORS headers of an admitted request's answer (only when origins are configured).
    pub fn answer(&self, admitted: Admitted, response: &mut Response) {
        if self.origins.is_empty() {
            return;
        }
        let out = response.headers_mut();
        out.append(header::VARY, HeaderValue::from_static("origin"));
        if let Some(origin) = admitted.0.and_then(|o| HeaderValue::from_str(&o).ok()) {
            out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            out.insert(
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static(CORS_EXPOSE_HEADERS),
            );
        }
    }
}

/// The request head's size as written: the request line, then each header's `name: value` and
/// its line end. hyper's read buffer (`limits::MAX_HEAD_BYTES`) stops a head far past the cap,
/// but may take up to a read's worth more; this holds every head to the cap exactly.
fn head_bytes(request: &Request) -> usize {
    // `METHOD URI HTTP/1.1\r\n`, the URI as it came (an absolute form names its authority too).
    let uri = request.uri();
    let uri_len = uri.path_and_query().map_or(1, |p| p.as_str().len())
        + uri.scheme_str().map_or(0, |s| s.len() + 3)
        + uri.authority().map_or(0, |a| a.as_str().len());
    let line = request.method().as_str().len() + uri_len + 12;
    request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum::<usize>()
        + line
}

/// Refuses a head over [`MAX_HEAD_BYTES`](crate::limits::MAX_HEAD_BYTES) with 431 (RFC 6585).
fn check_head(request: &Request) -> Result<(), Refused> {
    let size = head_bytes(request);
    if size > crate::limits::MAX_HEAD_BYTES {
        return Err(Refused {
            status: StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            detail: format!(
                "request head of {size} bytes is over the {} KiB limit",
                crate::limits::MAX_HEAD_BYTES / 1024
            ),
        });
    }
    Ok(())
}

fn refuse(refused: Refused) -> Response {
    // Answered before any body was read: the connection will not carry another request cleanly.
    (
        refused.status,
        [(header::CONNECTION, HeaderValue::from_static("close"))],
        axum::Json(serde_json::json!({"detail": refused.detail})),
    )
        .into_response()
}

/// Whether `origin` is this listener's own: the scheme and exactly the authority the request was
/// sent to (`Host`). The scheme is not compared: behind a TLS proxy the page is `https` while the
/// listener speaks plain HTTP, and a page on the same host and port is this service either way.
fn is_own_origin(origin: &HeaderValue, host: Option<&HeaderValue>) -> bool {
    let (Ok(origin), Some(Ok(host))) = (origin.to_str(), host.map(HeaderValue::to_str)) else {
        return false;
    };
    let origin = normalize_origin(origin);
    let https = origin.starts_with("https://");
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    let host = host.trim().to_ascii_lowercase();
    authority == Some(crate::hosts::without_default_port(&host, https))
}

fn is_wildcard(host: &str) -> bool {
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified())
}

/// A header value fit to quote in a message (see [`escaped`]).
fn shown(value: &[u8]) -> String {
    escaped(&String::from_utf8_lossy(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Guard {
        fn new_for_tests(server: &Server) -> Self {
            Self::new(server, std::sync::Arc::new(|_, path| path == "/health"))
        }
    }

    fn server(host: &str, hosts: &[&str], origins: &[&str]) -> Server {
        let mut server = crate::config::Config::empty(std::path::Path::new("x.yaml")).server;
        server.host = host.into();
        server.allowed_hosts = hosts.iter().map(|h| h.to_string()).collect();
        server.allowed_origins = origins.iter().map(|o| normalize_origin(o)).collect();
        server
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn the_host_list_is_loopback_the_bound_address_and_the_extras() {
        let guard = Guard::new_for_tests(&server("127.0.0.1", &[], &[]));
        assert_eq!(guard.hosts().unwrap(), ["localhost", "127.0.0.1", "::1"]);
        let guard = Guard::new_for_tests(&server("0.0.0.0", &["Callosum.lan:7423"], &[]));
        assert_eq!(
            guard.hosts().unwrap(),
            ["localhost", "127.0.0.1", "::1", "callosum.lan"]
        );
        let guard = Guard::new_for_tests(&server("box.lan", &[], &[]));
        assert!(guard.hosts().unwrap().contains(&"box.lan".to_owned()));
        assert!(
            Guard::new_for_tests(&server("127.0.0.1", &["*"], &[]))
                .hosts()
                .is_none()
        );
    }

    #[test]
    fn foreign_names_are_refused_and_ip_literals_pass() {
        let guard = Guard::new_for_tests(&server("127.0.0.1", &["callosum.lan"], &[]));
        for ok in [
            "localhost:7423",
            "127.0.0.1:7423",
            "[::1]:7423",
            "callosum.lan",
            "192.168.1.5:7423",
            "[fe80::1]",
        ] {
            assert!(guard.check_host(&headers(&[("host", ok)])).is_ok(), "{ok}");
        }
        assert!(guard.check_host(&HeaderMap::new()).is_ok(), "no Host");
        let refused = guard
            .check_host(&headers(&[("host", "rebind.attacker.example:7423")]))
            .unwrap_err();
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(
            refused.detail.contains("'rebind.attacker.example:7423'")
                && refused.detail.contains("server.allowed_hosts"),
            "{}",
            refused.detail
        );
        assert!(
            guard
                .check_host(&headers(&[("host", "localhost.attacker.example")]))
                .is_err()
        );
    }

    #[test]
    fn origins_must_be_the_listeners_own_or_configured() {
        let guard = Guard::new_for_tests(&server("127.0.0.1", &[], &["https://app.example/"]));
        let check = |pairs: &[(&'static str, &str)]| guard.check_origin(&headers(pairs));
        assert_eq!(check(&[("host", "127.0.0.1:7423")]), Ok(None), "no Origin");
        assert_eq!(
            check(&[
                ("host", "127.0.0.1:7423"),
                ("origin", "http://127.0.0.1:7423")
            ]),
            Ok(None),
            "same origin"
        );
        assert_eq!(
            check(&[
                ("host", "callosum.example"),
                ("origin", "https://callosum.example"),
                ("sec-fetch-site", "same-origin")
            ]),
            Ok(None),
            "same origin behind a TLS proxy"
        );
        // A default port written on one side and not the other is the same origin.
        for (host, origin) in [
            ("callosum.example", "http://callosum.example:80"),
            ("callosum.example:80", "http://callosum.example"),
            ("callosum.example:443", "https://callosum.example"),
        ] {
            assert_eq!(
                check(&[("host", host), ("origin", origin)]),
                Ok(None),
                "{host} and {origin}"
            );
        }
        assert_eq!(
            check(&[
                ("host", "127.0.0.1:7423"),
                ("origin", "https://app.example:443"),
                ("sec-fetch-site", "cross-site")
            ]),
            Ok(Some("https://app.example".into())),
            "configured, with its default port"
        );
        assert_eq!(
            check(&[
                ("host", "127.0.0.1:7423"),
                ("origin", "https://APP.example"),
                ("sec-fetch-site", "cross-site")
            ]),
            Ok(Some("https://app.example".into())),
            "configured"
        );
        for refused in [
            vec![
                ("host", "127.0.0.1:7423"),
                ("origin", "http://127.0.0.2:8000"),
            ],
            vec![
                ("host", "127.0.0.1:7423"),
                ("origin", "http://127.0.0.1:7424"),
            ],
            vec![("host", "127.0.0.1:7423"), ("origin", "null")],
            vec![("host", "127.0.0.1:7423"), ("sec-fetch-site", "cross-site")],
            vec![("origin", "http://127.0.0.1:7423")],
        ] {
            let error = check(&refused).unwrap_err();
            assert_eq!(error.status, StatusCode::FORBIDDEN, "{refused:?}");
            assert!(
                error.detail.contains("server.allowed_origins"),
                "{}",
                error.detail
            );
        }
    }

    #[test]
    fn only_json_bodies_pass() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
        ] {
            assert!(
                check_content_type(&headers(&[("content-type", ok)])).is_ok(),
                "{ok}"
            );
        }
        for (value, named) in [
            (Some("text/plain"), "got 'text/plain'"),
            (
                Some("text/plain; charset=utf-8"),
                "got 'text/plain; charset=utf-8'",
            ),
            (Some("application/x-www-form-urlencoded"), "x-www-form"),
            (
                Some("multipart/form-data; boundary=x"),
                "multipart/form-data",
            ),
            (Some("application/jsonx"), "application/jsonx"),
            (None, "got none"),
        ] {
            let map = value.map_or_else(HeaderMap::new, |v| headers(&[("content-type", v)]));
            let refused = check_content_type(&map).unwrap_err();
            assert_eq!(refused.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
            assert!(refused.detail.contains(named), "{}", refused.detail);
        }
    }
}
