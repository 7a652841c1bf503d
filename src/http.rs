//! The REST edge: routes, bearer auth, request ids and body caps, over the shared [`Federation`].
//!
//! Handlers are thin: they decode the request, call the core, and encode the answer. They never
//! call a store. Error bodies are `{"detail": "..."}` throughout and never carry a secret.

use crate::api::NewStore;
use crate::api::{Refusal, RefusalKind, SearchRequest, decode_json};
use crate::chain::Chain;
use crate::config::{OAuth, PROTECTED_RESOURCE_PATH};
use crate::federation::Federation;
use crate::guard::Public;
use crate::logline::Line;
use crate::oauth::{Access, Verifier};
use crate::secret::Secret;
use crate::view::{Actor, Caller, View};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{MethodRouter, any_service, delete, get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

pub use crate::limits::MAX_BODY_BYTES;
/// The request id header, echoed when the caller sends one, minted otherwise.
pub const REQUEST_ID: &str = "x-request-id";

/// The viewer, "The Bridge": one self-contained page, compiled into the binary.
const VIEWER: &str = include_str!("../viewer/index.html");

/// What every handler shares. One `Arc`: axum clones the state for every request, and one
/// count to raise and drop costs less than one per field.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The fields of [`AppState`].
pub struct Shared {
    pub federation: Arc<Federation>,
    /// Cancelled at shutdown: ends MCP sessions and streams so graceful shutdown never hangs.
    pub shutdown: CancellationToken,
    /// One `POST /eval` at a time: each runs a search per store and one more for every judged
    /// query, and a second waits its turn with a 503 rather than double the load.
    pub evaluating: Semaphore,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// The state for a federation.
    pub fn new(federation: Arc<Federation>) -> Self {
        Self::with_shutdown(federation, CancellationToken::new())
    }

    /// The state for a federation, ended by `shutdown`.
    pub fn with_shutdown(federation: Arc<Federation>, shutdown: CancellationToken) -> Self {
        Self(Arc::new(Shared {
            federation,
            shutdown,
            evaluating: Semaphore::new(1),
        }))
    }
}

/// An error answer: a status and a `detail` safe to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub detail: String,
    /// Answered before the request was read whole: say `Connection: close`, so the client does
    /// not send its next request down a connection the server is about to close.
    pub close: bool,
}

impl ApiError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            close: false,
        }
    }
}

impl From<Refusal> for ApiError {
    /// Each kind of refusal answers with the status the contract gives it.
    fn from(refusal: Refusal) -> Self {
        let status = match refusal.kind {
            RefusalKind::BadRequest => StatusCode::BAD_REQUEST,
            RefusalKind::Forbidden => StatusCode::FORBIDDEN,
            RefusalKind::NotFound => StatusCode::NOT_FOUND,
            RefusalKind::Conflict => StatusCode::CONFLICT,
            RefusalKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            RefusalKind::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
            RefusalKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            RefusalKind::Busy => StatusCode::SERVICE_UNAVAILABLE,
            RefusalKind::Loop => StatusCode::LOOP_DETECTED,
        };
        Self::new(status, refusal.detail)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(json!({"detail": self.detail}))).into_response();
        if self.close {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// The whole REST surface. Tests drive it in-process or on a loopback listener.
pub fn router(state: AppState) -> Router {
    let server = &state.federation.config().server;
    // The inbound bearer token, as the configuration names it; `None` means no auth. A token the
    // configuration asks for but could not read (`serve` refuses to start then) must not mean "no
    // auth" either: a random one nobody knows takes its place, so every gated route answers 401.
    let token = match &server.token_error {
        Some(_) => Secret::new(mint_request_id() + &mint_request_id()),
        None => server.token.clone(),
    };
    let public = public_routes(server);
    let guard = crate::guard::Guard::new(server, public.clone());
    let auth = Auth {
        views: server.views.clone(),
        token,
        oauth: server.oauth.clone().map(|settings| {
            let trust_system_store = state.federation.config().tls.trust_system_store;
            Arc::new(Verifier::new(settings, trust_system_store))
        }),
        public,
    };
    let edge = Arc::new(Edge {
        log: AccessLog {
            on: server.access_log,
            queries: server.log_queries,
        },
        guard,
        in_flight: Semaphore::new(state.federation.config().server.max_in_flight),
        auth,
    });
    let mut router = Router::new();
    for (path, route) in routes(&state) {
        router = router.route(path, route);
    }
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        // Every route, the fallback included, is behind the edge: a route is gated unless
        // `is_public` names it, so a route added later cannot be left open by forgetting a layer.
        .layer(middleware::from_fn_with_state(edge, self::edge))
}

/// What every request passes on its way in, in this order: its id and access-log line (around
/// everything), the browser guard (a page in a browser is refused before anything else looks at
/// its request, and a CORS preflight, which carries no token, is answered there), the in-flight
/// cap, auth, and the JSON body check. One layer, not five: a request pays for one boxed future
/// and one clone of the stack below, not for five of each.
struct Edge {
    log: AccessLog,
    guard: crate::guard::Guard,
    in_flight: Semaphore,
    auth: Auth,
}

async fn edge(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    let logged = Logged::begin(&request);
    let mut response = match edge.guard.admit(&request) {
        Err(early) => *early,
        Ok(admitted) => {
            let mut response = edge.gated(request, next).await;
            edge.guard.answer(admitted, &mut response);
            response
        }
    };
    logged.end(edge.log, &mut response);
    response
}

impl Edge {
    /// The in-flight cap, auth and the JSON body check, then the route.
    async fn gated(&self, request: Request, next: Next) -> Response {
        let _permit = match self.permit(&request) {
            Ok(permit) => permit,
            Err(busy) => return *busy,
        };
        let request = match authorize(&self.auth, request).await {
            Ok(request) => request,
            Err(refused) => return refused,
        };
        if let Some(refused) = crate::guard::json_body(&request) {
            return refused;
        }
        next.run(request).await
    }

    /// A permit of the in-flight cap, or 503 at once when `max_in_flight` requests are already
    /// being handled: a caller told "busy, retry" is better off than one whose request waits
    /// behind an unbounded queue. What [`reads_state_only`] names passes without a permit.
    fn permit(&self, request: &Request) -> Result<Option<SemaphorePermit<'_>>, Box<Response>> {
        if reads_state_only(request.method(), request.uri().path()) {
            return Ok(None);
        }
        let Ok(permit) = self.in_flight.try_acquire() else {
            // Answered without reading the body: the connection will not carry another request.
            let mut response = ApiError {
                close: true,
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy: too many requests in flight; retry shortly",
                )
            }
            .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return Err(Box::new(response));
        };
        Ok(Some(permit))
    }
}

/// Every route, in one table, so that tests can enumerate them (and check each one's auth).
pub fn routes(state: &AppState) -> Vec<(&'static str, MethodRouter<AppState>)> {
    // MCP over streamable HTTP answers at `/mcp` and at `/mcp/` (where the Python service lives).
    let mcp = crate::mcp::http_service(state.federation.clone(), state.shutdown.child_token());
    // Both go through `jsonrpc::judge` first, which answers what rmcp would answer wrongly.
    let mcp = any_service(mcp).layer(middleware::from_fn(judge_mcp));
    vec![
        ("/", get(root)),
        ("/health", get(health)),
        ("/health/stores", get(health_stores)),
        ("/metrics", get(metrics)),
        ("/search", post(search)),
        ("/stores", get(list_stores).post(add_store)),
        ("/stores/{name}", delete(remove_store)),
        ("/configure", post(configure)),
        ("/eval", post(eval)),
        ("/knobs", get(knobs)),
        (PROTECTED_RESOURCE_PATH, get(protected_resource)),
        (
            "/.well-known/oauth-protected-resource/{*resource}",
            get(protected_resource),
        ),
        ("/viewer", get(viewer)),
        ("/viewer/", get(viewer)),
        ("/mcp", mcp.clone()),
        ("/mcp/", mcp),
    ]
}

pub use crate::listener::{Limits, serve, serve_with};

async fn root(State(state): State<AppState>) -> Response {
    Json(state.federation.info()).into_response()
}

async fn health() -> Response {
    Json(json!({"ok": true, "ts": crate::health::unix_now()})).into_response()
}

async fn search(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: SearchRequest = decode_body(body)?;
    let chain = Chain::from_headers(|name| headers.get(name).and_then(|v| v.to_str().ok()));
    let answer = state.federation.search(&caller, &request, &chain).await?;
    let searched = Searched {
        asked: answer.stores_searched.len() + answer.failed.len(),
        failed: answer.failed.len(),
        query: request.query,
    };
    let json = HeaderValue::from_static("application/json");
    let mut response = ([(header::CONTENT_TYPE, json)], answer.to_json()).into_response();
    response.extensions_mut().insert(searched);
    Ok(response)
}

async fn health_stores(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Response {
    Json(state.federation.health(&caller)).into_response()
}

async fn metrics(State(state): State<AppState>) -> Response {
    let text = state.federation.metrics();
    ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response()
}

async fn list_stores(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Response {
    Json(state.federation.stores(&caller)).into_response()
}

async fn add_store(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let new: NewStore = decode_body(body)?;
    Ok(Json(state.federation.add_store(&caller, new).await?).into_response())
}

async fn configure(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: crate::api::ConfigureRequest = decode_body(body)?;
    Ok(Json(state.federation.configure(&caller, &request)?).into_response())
}

/// `POST /eval` (contract §8): the `eval --json` document for the body's judged queries.
async fn eval(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: crate::api::EvalRequest = decode_body(body)?;
    // An evaluation runs a search per store for every judged query: a view asks it only with
    // `write`, as an access token does with the write scope.
    if let Some(why) = caller.refuse_write() {
        return Err(Refusal::forbidden(why).into());
    }
    let Ok(_evaluating) = state.evaluating.try_acquire() else {
        return Err(Refusal::new(
            RefusalKind::Busy,
            "busy: another evaluation is running; retry when it is done",
        )
        .into());
    };
    let report = crate::eval::evaluate::requested(&state.federation, &caller, &request).await?;
    Ok(Json(report).into_response())
}

/// The protected-resource metadata (RFC 9728), at the path-inserted url and at the bare one;
/// 404 when `server.oauth` is not set.
async fn protected_resource(State(state): State<AppState>, uri: axum::http::Uri) -> Response {
    let Some(oauth) = &state.federation.config().server.oauth else {
        return not_found().await.into_response();
    };
    if uri.path() != PROTECTED_RESOURCE_PATH && uri.path() != oauth.metadata_path() {
        return not_found().await.into_response();
    }
    Json(crate::oauth::metadata(oauth)).into_response()
}

async fn knobs(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Response {
    // From the config in force, in memory: no file is read.
    Json(state.federation.knobs_answer(&caller)).into_response()
}

async fn remove_store(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(state.federation.remove_store(&caller, &name).await?).into_response())
}

/// The viewer's own policy: it may run its inline script and style and talk to this origin, and
/// nothing else (no remote script, no framing), so a store's text rendered in it cannot reach out.
const VIEWER_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
    connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

async fn viewer() -> Response {
    (
        [
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, VIEWER_CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        Html(VIEWER),
    )
        .into_response()
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not found")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}

/// Reads a JSON body, with errors that name the field.
fn decode_body<T: for<'de> Deserialize<'de>>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|rejection| unread_body(&rejection, rejection.status()))?;
    // serde reads a struct from a JSON array too (by position); a request body must be an object.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        let why = if bytes.iter().all(u8::is_ascii_whitespace) {
            "the body is empty; expected a JSON object"
        } else {
            "expected a JSON object"
        };
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("invalid body: {why}"),
        ));
    }
    decode_json(&bytes).map_err(|why| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("invalid body: {why}"),
        )
    })
}

/// Reads a post to `/mcp` and answers, as JSON-RPC, what rmcp would answer wrongly (a non-object
/// `arguments` is -32602, not -32601; a body that is not JSON is -32700); passes the rest on.
async fn judge_mcp(request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let announced = parts
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
            let status = if announced.is_some_and(|n| n > MAX_BODY_BYTES) {
                StatusCode::PAYLOAD_TOO_LARGE
            } else {
                StatusCode::BAD_REQUEST
            };
            return unread_body(&error, status).into_response();
        }
    };
    if let crate::jsonrpc::Line::Answer(answer) = crate::jsonrpc::judge(&bytes) {
        // A message that is not JSON, or not one request, is the client's error on the wire too.
        let status = if answer["error"]["code"] == -32700 || answer["error"]["code"] == -32600 {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::OK
        };
        return (status, Json(answer)).into_response();
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// The answer to a request body that could not be read: 408 when it came too late (the deadline
/// of `listener.rs`), else `status` (413 over the cap, 400 cut short).
fn unread_body(error: &(dyn std::error::Error + 'static), status: StatusCode) -> ApiError {
    let detail = match late_body(error) {
        Some(late) => {
            return ApiError {
                close: true,
                ..ApiError::new(StatusCode::REQUEST_TIMEOUT, late.to_string())
            };
        }
        None if status == StatusCode::PAYLOAD_TOO_LARGE => {
            format!("request body over the {MAX_BODY_BYTES}-byte limit")
        }
        None => "the request body could not be read whole".to_owned(),
    };
    ApiError {
        close: true,
        ..ApiError::new(status, detail)
    }
}

/// The body deadline of `listener.rs`, if that is why a body could not be read.
fn late_body<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a crate::listener::BodyTimeout> {
    let mut source = Some(error);
    while let Some(error) = source {
        if let Some(late) = error.downcast_ref::<crate::listener::BodyTimeout>() {
            return Some(late);
        }
        source = error.source();
    }
    None
}

/// Whether a request only reads what the service already holds (`GET /health`,
/// `/health/stores`, `/metrics`): it never fans out, so it answers outside `max_in_flight`, and a
/// balancer or Prometheus sees a busy replica as busy, not as down.
pub fn reads_state_only(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && matches!(path, "/health" | "/health/stores" | "/metrics")
}

/// Paths anyone may read, token or not: the service card, health, the viewer page itself
/// (which then asks for the token before it calls anything gated), and the protected-resource
/// metadata that tells a client where to get a token.
pub fn is_public(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && (path == "/"
            || path == "/health"
            || path.starts_with("/health/")
            || path == "/viewer"
            || path.starts_with("/viewer/")
            || path == PROTECTED_RESOURCE_PATH
            || path.starts_with("/.well-known/oauth-protected-resource/"))
}

/// Which paths anyone may read under `server`: [`is_public`], with `GET /metrics` when
/// `server.public_metrics` says so, and without `/health/stores` when views are configured
/// (which stores exist is each view's business, contract §6c).
fn public_routes(server: &crate::config::Server) -> Public {
    let (metrics, views) = (server.public_metrics, server.views.any());
    Arc::new(move |method: &Method, path: &str| {
        if views && path.starts_with("/health/") {
            return false;
        }
        if metrics {
            is_public_with_metrics(method, path)
        } else {
            is_public(method, path)
        }
    })
}

/// [`is_public`], and `GET /metrics`: what anyone may read when `server.public_metrics` is set.
pub fn is_public_with_metrics(method: &Method, path: &str) -> bool {
    is_public(method, path)
        || ((method == Method::GET || method == Method::HEAD) && path == "/metrics")
}

/// Who may call the gated routes: the holder of the static token (everything), the holder of a
/// view's token (its stores), the holder of an access token from `server.oauth`'s issuer (what
/// its scopes allow, and the view a scope selects), or, with none of them set, anyone.
struct Auth {
    token: Option<Secret>,
    views: crate::config::Views,
    oauth: Option<Arc<Verifier>>,
    public: Public,
}

/// The scope a route needs of an access token; `None` for `/mcp`, whose tools each check theirs
/// (`mcp.rs`), so that a read-only token can still search over MCP.
fn needed_scope<'a>(method: &Method, path: &str, oauth: &'a OAuth) -> Option<&'a str> {
    let writes = (method == Method::POST
        && (path == "/stores" || path == "/configure" || path == "/eval"))
        || (method == Method::DELETE && path.starts_with("/stores/"));
    if path == "/mcp" || path == "/mcp/" {
        None
    } else if writes {
        Some(&oauth.write_scope)
    } else {
        Some(&oauth.read_scope)
    }
}

/// Who the request is from (its [`Caller`], and its [`Access`] for a token), put in its
/// extensions for the route; or the refusal: 401 without a good token where one is needed, 403
/// for what the token may not do.
async fn authorize(auth: &Auth, mut request: Request) -> Result<Request, Response> {
    let gated = auth.token.is_some() || auth.oauth.is_some() || auth.views.any();
    if !gated || (auth.public)(request.method(), request.uri().path()) {
        // A public route reads nothing a view limits (views gate `/health/stores`).
        request.extensions_mut().insert(Caller::full(Actor::Open));
        return Ok(request);
    }
    let given = bearer(request.headers()).map(str::to_owned);
    if let (Some(token), Some(given)) = (&auth.token, &given)
        && constant_time_eq(given.as_bytes(), token.expose().as_bytes())
    {
        request.extensions_mut().insert(Access::Full);
        request.extensions_mut().insert(Caller::full(Actor::Token));
        return Ok(request);
    }
    if let Some(view) = given
        .as_deref()
        .and_then(|given| auth.views.by_token(given))
    {
        if let Some(refused) = refuse_view(&view, request.method(), request.uri().path()) {
            return Err(refused);
        }
        // A view's token is not an access token: the view, not a scope, says what it may do.
        request.extensions_mut().insert(Access::Full);
        request.extensions_mut().insert(Caller {
            actor: Actor::View(view.name.clone()),
            view: Some(view),
        });
        return Ok(request);
    }
    let Some(verifier) = &auth.oauth else {
        return Err(refuse_auth(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Bearer".into(),
        ));
    };
    let settings = verifier.settings();
    let metadata = settings.metadata_url();
    let Some(given) = given else {
        let challenge = format!("Bearer resource_metadata=\"{metadata}\"");
        return Err(refuse_auth(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            challenge,
        ));
    };
    let verified = match verifier.verify(&given).await {
        Ok(verified) => verified,
        Err(why) => {
            let challenge = format!(
                "Bearer error=\"invalid_token\", error_description=\"{why}\", resource_metadata=\"{metadata}\""
            );
            return Err(refuse_auth(
                StatusCode::UNAUTHORIZED,
                &format!("unauthorized: {why}"),
                challenge,
            ));
        }
    };
    let views = auth.views.by_scopes(&verified.scopes);
    let access = Access::Scopes(verified.scopes);
    if let Some(scope) = needed_scope(request.method(), request.uri().path(), settings)
        && !access.allows(scope)
    {
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{metadata}\""
        );
        let detail = format!(
            "forbidden: this needs the scope {scope}, which the access token does not grant"
        );
        return Err(refuse_auth(StatusCode::FORBIDDEN, &detail, challenge));
    }
    let view = match views.as_slice() {
        [] => None,
        [view] => Some(view.clone()),
        [a, b, ..] => {
            let detail = format!(
                "forbidden: the access token grants the scopes of two views ({}, {}); a token selects one view",
                a.name, b.name
            );
            return Err(refuse_auth(StatusCode::FORBIDDEN, &detail, "Bearer".into()));
        }
    };
    if let Some(view) = &view
        && let Some(refused) = refuse_view(view, request.method(), request.uri().path())
    {
        return Err(refused);
    }
    request.extensions_mut().insert(access);
    request.extensions_mut().insert(Caller {
        actor: Actor::OAuth(verified.subject),
        view,
    });
    Ok(request)
}

/// What a view may not read at all: `GET /metrics`, whose series name every store (its own
/// stores' numbers are in `GET /health/stores`).
fn refuse_view(view: &View, method: &Method, path: &str) -> Option<Response> {
    let metrics = (method == Method::GET || method == Method::HEAD) && path == "/metrics";
    metrics.then(|| {
        ApiError {
            close: true,
            ..ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "forbidden: /metrics names every store, and the view {} sees only its own; its stores' health is at /health/stores",
                    view.name
                ),
            )
        }
        .into_response()
    })
}

/// A refused request: `detail`, the `WWW-Authenticate` challenge, and `Connection: close` (the
/// request body was never read, so the connection cannot carry another request cleanly; a
/// client that reuses it might see it drop under its next request).
fn refuse_auth(status: StatusCode, detail: &str, challenge: String) -> Response {
    let mut response = ApiError {
        close: true,
        ..ApiError::new(status, detail)
    }
    .into_response();
    // Built from the configuration and fixed words only: never from what the request sent.
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The token of an `Authorization: Bearer <token>` header (scheme in any case), trimmed.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, given) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| given.trim())
        .filter(|given| !given.is_empty())
}

/// Whether the request carries `Authorization: Bearer <token>` (scheme in any case).
pub fn bearer_matches(headers: &HeaderMap, token: &Secret) -> bool {
    bearer(headers)
        .is_some_and(|given| constant_time_eq(given.as_bytes(), token.expose().as_bytes()))
}

pub use crate::secret::constant_time_eq;

/// Echoes the caller's `X-Request-Id` (when it is a sane one) or mints one, on every response,
/// and logs the request at debug level.
/// What a search's request line says of it: how many stores were asked and failed, and (only
/// with `server.log_queries`) the query.
#[derive(Clone)]
struct Searched {
    asked: usize,
    failed: usize,
    query: String,
}

/// How requests are logged: `server.access_log` and `server.log_queries`.
#[derive(Clone, Copy)]
struct AccessLog {
    on: bool,
    queries: bool,
}

/// A request's id (the caller's, when it sent a fit one, else a minted one), method, path and
/// start, until its answer is written: then the answer carries the id, and one line is logged,
/// at info with `server.access_log`, else at debug. A line carries method, path, status,
/// milliseconds and the id, and for a search the stores asked and failed; never a token, and the
/// query only with `server.log_queries`.
struct Logged {
    started: Instant,
    id: String,
    method: Method,
    path: String,
}

impl Logged {
    fn begin(request: &Request) -> Self {
        let id = request
            .headers()
            .get(REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|v| (1..=128).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic()))
            .map_or_else(mint_request_id, str::to_owned);
        Self {
            started: Instant::now(),
            id,
            method: request.method().clone(),
            path: request.uri().path().to_owned(),
        }
    }

    fn end(self, log: AccessLog, response: &mut Response) {
        let Self {
            started,
            id,
            method,
            path,
        } = self;
        let searched = response.extensions().get::<Searched>();
        let line = RequestLine {
            method: &method,
            path: crate::text::escaped(&path),
            status: response.status().as_u16(),
            ms: crate::text::millis(started.elapsed()),
            id: &id,
            asked: searched.map(|s| s.asked),
            failed: searched.map(|s| s.failed),
            query: searched
                .filter(|_| log.queries)
                .map(|s| crate::text::logged_query(&s.query)),
        };
        if !log.on {
            line.event(tracing::Level::DEBUG);
        } else if let Some(plain) = tracing::enabled!(tracing::Level::INFO)
            .then(|| Line::info("request"))
            .flatten()
        {
            line.plain(plain).write();
        } else {
            line.event(tracing::Level::INFO);
        }
        // A minted id is hex and an echoed one was checked to be visible ASCII, so this cannot fail.
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(REQUEST_ID, value);
        }
    }
}

/// What a request's log line says.
struct RequestLine<'a> {
    method: &'a Method,
    path: String,
    status: u16,
    ms: f64,
    id: &'a str,
    asked: Option<usize>,
    failed: Option<usize>,
    query: Option<String>,
}

impl RequestLine<'_> {
    /// The line as a tracing event at `level` (info or debug).
    fn event(&self, level: tracing::Level) {
        let Self {
            method,
            path,
            status,
            ms,
            id,
            asked,
            failed,
            query,
        } = self;
        if level == tracing::Level::INFO {
            tracing::info!(%method, %path, status, ms, rid = %id, stores_asked = asked, stores_failed = failed, query, "request");
        } else {
            tracing::debug!(%method, %path, status, ms, rid = %id, stores_asked = asked, stores_failed = failed, query, "request");
        }
    }

    /// The same line, written into `line` as the log layer writes the event, without its
    /// formatter.
    fn plain(&self, line: Line) -> Line {
        line.field("method", format_args!("{}", self.method))
            .field("path", format_args!("{}", self.path))
            .field("status", self.status)
            .field("ms", self.ms)
            .field("rid", format_args!("{}", self.id))
            .maybe("stores_asked", self.asked)
            .maybe("stores_failed", self.failed)
            .maybe("query", self.query.as_deref())
    }
}

fn mint_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded randomly per process; hashing a counter gives unique, unguessable ids
    // without another dependency.
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the process's log layer (as `init_logging` builds it for a pipe) writes for `line`'s
    /// event, and what [`RequestLine::plain`] writes: the same bytes past the timestamp.
    fn both_ways(line: &RequestLine) -> (String, String) {
        #[derive(Clone, Default)]
        struct Buffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let written = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || buffer.clone())
            .with_ansi(false)
            .with_target(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || line.event(tracing::Level::INFO));
        let layer = String::from_utf8(written.0.lock().unwrap().clone()).unwrap();
        let plain = line.plain(Line::now("request")).end();
        (layer, plain)
    }

    #[test]
    fn the_plain_request_line_is_the_log_layers_byte_for_byte() {
        let (post, get) = (Method::POST, Method::GET);
        let search = RequestLine {
            method: &post,
            path: crate::text::escaped("/search"),
            status: 200,
            ms: 1.25,
            id: "00ab12cd34ef5678",
            asked: Some(3),
            failed: Some(1),
            query: Some(crate::text::logged_query(
                "a \"quoted\" \\ query\nwith a break",
            )),
        };
        let health = RequestLine {
            method: &get,
            path: crate::text::escaped("/health/x y"),
            status: 404,
            ms: 12.0,
            id: "caller-id",
            asked: None,
            failed: None,
            query: None,
        };
        for line in [search, health] {
            let (layer, plain) = both_ways(&line);
            assert!(
                layer.ends_with('\n') && layer.contains("request method="),
                "{layer}"
            );
            // `2026-12-07T12:00:00.123456Z`: equal in form, the rest equal byte for byte.
            assert_eq!(layer.find('Z'), Some(26), "{layer}");
            assert_eq!(plain.find('Z'), Some(26), "{plain}");
            assert_eq!(&layer[..4], &plain[..4]);
            assert_eq!(layer[26..], plain[26..]);
        }
    }

    #[test]
    fn public_paths() {
        for path in ["/", "/health", "/health/stores", "/viewer", "/viewer/x.js"] {
            assert!(is_public(&Method::GET, path), "{path}");
        }
        for path in [
            "/search",
            "/stores",
            "/mcp",
            "/healthz",
            "/viewerx",
            "/stores/x",
        ] {
            assert!(!is_public(&Method::GET, path), "{path}");
        }
        assert!(!is_public(&Method::POST, "/"));
        assert!(!is_public(&Method::DELETE, "/health"));
        assert!(!is_public(&Method::GET, "/metrics"));
        assert!(is_public_with_metrics(&Method::GET, "/metrics"));
        assert!(is_public_with_metrics(&Method::GET, "/health"));
        // What reads state only, and so passes the in-flight cap: no write, no search.
        for path in ["/health", "/health/stores", "/metrics"] {
            assert!(reads_state_only(&Method::GET, path), "{path}");
            assert!(!reads_state_only(&Method::POST, path), "{path}");
        }
        for path in ["/search", "/stores", "/health/x", "/mcp", "/"] {
            assert!(!reads_state_only(&Method::GET, path), "{path}");
        }
        assert!(!is_public_with_metrics(&Method::POST, "/metrics"));
        assert!(!is_public_with_metrics(&Method::GET, "/metrics/x"));
    }

    #[test]
    fn bearer_check() {
        let token = Secret::new("s3cret").unwrap();
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            bearer_matches(&headers, &token)
        };
        assert!(with("Bearer s3cret"));
        assert!(with("bearer s3cret"));
        assert!(with("BEARER  s3cret "));
        assert!(!with("Bearer s3cre"));
        assert!(!with("Bearer s3cret2"));
        assert!(!with("Basic s3cret"));
        assert!(!with("s3cret"));
        assert!(!bearer_matches(&HeaderMap::new(), &token));
    }

    #[test]
    fn constant_time_compare() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn minted_ids_differ() {
        assert_ne!(mint_request_id(), mint_request_id());
        assert_eq!(mint_request_id().len(), 16);
    }
}
