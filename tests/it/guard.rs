//! The browser guard, with real requests: a web page in the user's browser must not be able to
//! add a store, read an answer, or reach the service through a re-pointed DNS name. Each check is
//! walked over every route in the route table, as the auth test does, so a route added later is
//! covered without a line here.

use crate::support::*;
use axum::http::Method;
use serde_json::{Value, json};
use seren_corpus_callosum::http::{AppState, routes};

/// Every route of the table with the methods worth sending it, `{name}` filled in.
fn every_route(callosum: &Callosum) -> Vec<(Method, String)> {
    let state = AppState::new(callosum.federation.clone());
    let mut all = Vec::new();
    for (path, _) in routes(&state) {
        let path = path
            .replace("{name}", "some-store")
            .replace("{*resource}", "mcp");
        for method in [Method::GET, Method::POST, Method::DELETE, Method::PUT] {
            all.push((method, path.clone()));
        }
    }
    assert!(all.len() >= 40, "the route table shrank: {all:?}");
    all
}

async fn send(
    callosum: &Callosum,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    let mut request = callosum
        .client
        .request(method, format!("{}{path}", callosum.url))
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.body(body.to_owned());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn only_json_bodies_reach_a_body_route() {
    let callosum = Callosum::start("").await;
    let search = r#"{"query": "q"}"#;
    let store = r#"{"name": "attacker", "type": "seren_memory", "url": "http://127.0.0.1:9"}"#;
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    for (path, body) in [
        ("/search", search),
        ("/stores", store),
        ("/mcp", initialize),
        ("/mcp/", initialize),
    ] {
        for (content_type, named) in [
            (Some("text/plain"), "got 'text/plain'"),
            (
                Some("text/plain;charset=UTF-8"),
                "got 'text/plain;charset=UTF-8'",
            ),
            (
                Some("application/x-www-form-urlencoded"),
                "got 'application/x-www-form-urlencoded'",
            ),
            (
                Some("multipart/form-data; boundary=x"),
                "got 'multipart/form-data; boundary=x'",
            ),
            (Some("text/json"), "got 'text/json'"),
            (Some("application/jsonx"), "got 'application/jsonx'"),
            (None, "got none"),
        ] {
            let headers: Vec<(&str, &str)> = content_type
                .map(|c| ("content-type", c))
                .into_iter()
                .collect();
            let (status, answer) = send(&callosum, Method::POST, path, &headers, Some(body)).await;
            assert_eq!(status, 415, "{path} with {content_type:?}: {answer}");
            assert_eq!(
                answer["detail"],
                format!("Content-Type must be application/json; {named}"),
                "{path}"
            );
        }
        // JSON, with a charset or in capitals, is served.
        for content_type in ["application/json; charset=utf-8", "Application/JSON"] {
            let (status, answer) = send(
                &callosum,
                Method::POST,
                path,
                &[("content-type", content_type)],
                Some(body),
            )
            .await;
            assert_eq!(status, 200, "{path} with {content_type}: {answer}");
            if path == "/stores" {
                callosum.delete("/stores/attacker").await;
            }
        }
    }
    // Nothing the refused posts carried was kept.
    assert!(!callosum.overlay_path().exists() || read_json(&callosum.overlay_path()) == json!([]));
}

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route_but_health() {
    let callosum = Callosum::start("").await;
    for (method, path) in every_route(&callosum) {
        let (status, answer) = send(
            &callosum,
            method.clone(),
            &path,
            &[
                ("host", "rebind.attacker.example:7423"),
                ("content-type", "application/json"),
            ],
            Some("{}"),
        )
        .await;
        if path == "/health" && method == Method::GET {
            assert_eq!(status, 200, "probes pass whatever Host they send");
            continue;
        }
        assert_eq!(status, 403, "{method} {path}: {answer}");
        let detail = answer["detail"].as_str().unwrap();
        assert!(
            detail.contains("'rebind.attacker.example:7423'")
                && detail.contains("server.allowed_hosts or SEREN_SCC_ALLOWED_HOSTS"),
            "{method} {path}: {detail}"
        );
    }
    // The names the listener is known by, and IP literals, are served.
    for host in ["localhost:7423", "127.0.0.1", "[::1]:7423", "10.1.2.3:7423"] {
        let (status, _) = send(&callosum, Method::GET, "/stores", &[("host", host)], None).await;
        assert_eq!(status, 200, "{host}");
    }
}

#[tokio::test]
async fn allowed_hosts_extend_the_list_and_a_star_turns_it_off() {
    let callosum = Callosum::start("server:\n  allowed_hosts: [callosum.lan]\n").await;
    for (host, status) in [
        ("callosum.lan:7423", 200),
        ("CALLOSUM.LAN", 200),
        ("other.lan", 403),
    ] {
        assert_eq!(
            send(&callosum, Method::GET, "/stores", &[("host", host)], None)
                .await
                .0,
            status,
            "{host}"
        );
    }
    let open = Callosum::start("server:\n  allowed_hosts: ['*']\n").await;
    let (status, _) = send(
        &open,
        Method::GET,
        "/stores",
        &[("host", "any.example")],
        None,
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_foreign_origin_or_a_cross_site_fetch_is_refused_on_gated_routes() {
    let callosum = Callosum::start("").await;
    let own = callosum.url.clone();
    for (method, path) in every_route(&callosum) {
        for headers in [
            vec![("origin", "http://127.0.0.2:8000")],
            vec![("origin", "null")],
            vec![("sec-fetch-site", "cross-site")],
            vec![
                ("origin", "https://evil.example"),
                ("sec-fetch-site", "cross-site"),
            ],
        ] {
            let mut all = headers.clone();
            all.push(("content-type", "application/json"));
            let (status, answer) = send(&callosum, method.clone(), &path, &all, Some("{}")).await;
            if PUBLIC.contains(&format!("{method} {path}").as_str()) {
                assert_ne!(status, 403, "{method} {path} is public: {answer}");
                continue;
            }
            assert_eq!(status, 403, "{method} {path} {headers:?}: {answer}");
            assert!(
                answer["detail"]
                    .as_str()
                    .unwrap()
                    .contains("server.allowed_origins"),
                "{answer}"
            );
        }
    }
    // The viewer's own origin, and clients that send no Origin, work as before.
    let same_origin = [
        ("origin", own.as_str()),
        ("sec-fetch-site", "same-origin"),
        ("content-type", "application/json"),
    ];
    let (status, answer) = send(
        &callosum,
        Method::POST,
        "/stores",
        &same_origin,
        Some(r#"{"name": "mine", "type": "seren_memory", "url": "http://127.0.0.1:9"}"#),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let (status, _) = send(
        &callosum,
        Method::POST,
        "/search",
        &[("content-type", "application/json")],
        Some(r#"{"query": "q"}"#),
    )
    .await;
    assert_eq!(status, 200);
    // No CORS headers when no origins are configured.
    let response = callosum
        .client
        .get(format!("{}/stores", callosum.url))
        .header("origin", own.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        !response
            .headers()
            .contains_key("access-control-allow-origin")
    );
}

#[tokio::test]
async fn configured_origins_get_a_correct_preflight_and_nobody_else_does() {
    let callosum = Callosum::start(
        "server:\n  allowed_origins: ['https://app.example']\n  bearer_token: t0k\n",
    )
    .await;
    let preflight = |origin: &'static str| {
        callosum
            .client
            .request(Method::OPTIONS, format!("{}/search", callosum.url))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            )
            .send()
    };
    // The preflight carries no token and is answered before auth.
    let response = preflight("https://app.example").await.unwrap();
    assert_eq!(response.status(), 204);
    let headers = response.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );
    let methods = headers["access-control-allow-methods"].to_str().unwrap();
    assert!(
        methods.contains("POST") && methods.contains("DELETE"),
        "{methods}"
    );
    let allowed = headers["access-control-allow-headers"].to_str().unwrap();
    assert!(
        allowed.contains("authorization") && allowed.contains("content-type"),
        "{allowed}"
    );
    assert!(headers.contains_key("access-control-max-age"));
    // Another origin gets no grant.
    let response = preflight("https://evil.example").await.unwrap();
    assert_eq!(response.status(), 403);
    assert!(
        !response
            .headers()
            .contains_key("access-control-allow-origin")
    );
    // The real request from the configured origin passes the origin check (then needs the token)
    // and its answer says which origin may read it.
    let response = callosum
        .client
        .post(format!("{}/search", callosum.url))
        .header("origin", "https://app.example")
        .header("sec-fetch-site", "cross-site")
        .header("authorization", "Bearer t0k")
        .json(&json!({"query": "q"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert!(
        response.headers()["access-control-expose-headers"]
            .to_str()
            .unwrap()
            .contains("x-request-id")
    );
    let response = callosum
        .client
        .post(format!("{}/search", callosum.url))
        .header("origin", "https://evil.example")
        .header("authorization", "Bearer t0k")
        .json(&json!({"query": "q"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        403,
        "a token does not make a foreign page welcome"
    );
}
