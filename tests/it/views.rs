//! Views (contract §6c) on every surface, with real loopback stores and real clients (reqwest for
//! REST, rmcp's own client for MCP over HTTP): a caller with a view sees its stores and nothing
//! of the others, on any route, header or error; writes stay within it; the server token sees
//! everything; every write lands in the audit trail with who made it. Config errors name the
//! view.

use crate::support::mcp::{call, error_text, http_client, structured};
use crate::support::{StubStore, memory_hits};
use serde_json::{Value, json};
use seren_corpus_callosum::config::{Config, ConfigError, Env};
use std::path::Path;

const SERVER_TOKEN: &str = "server-token-0123456789";
const RESEARCH_TOKEN: &str = "research-token-abcdef";
const EDITOR_TOKEN: &str = "editor-token-fedcba";

/// Three stores: two the views see (papers-a, papers-b) and one none does (diary), each with
/// hits whose content names it.
struct Team {
    _stores: Vec<StubStore>,
    /// The hidden store's address, which no view's answer may hold either.
    diary_url: String,
    callosum: crate::support::Callosum,
}

async fn team() -> Team {
    let store = |name: &'static str| async move {
        let hits = memory_hits(&[("1", 0.1), ("2", 0.2)]);
        let hits: Vec<Value> = (hits.as_array().unwrap().iter())
            .map(|hit| {
                let mut hit = hit.clone();
                hit["content"] = json!(format!("{name} note {}", hit["id"].as_str().unwrap()));
                hit
            })
            .collect();
        StubStore::hits(Value::Array(hits)).await
    };
    let (a, b, diary) = (
        store("papers-a").await,
        store("papers-b").await,
        store("diary").await,
    );
    let yaml = format!(
        "server:
  bearer_token: {SERVER_TOKEN}
  views:
    - name: research
      token_env: RESEARCH_TOKEN
      stores: [\"papers*\"]
    - name: editors
      token: {EDITOR_TOKEN}
      stores: [\"papers-a\", \"papers-new*\"]
      write: true
federation:
  per_store_timeout_s: 2.0
  stores:
    - {{name: papers-a, type: seren_memory, url: \"{}\"}}
    - {{name: papers-b, type: seren_memory, url: \"{}\"}}
    - {{name: diary, type: seren_memory, url: \"{}\"}}
",
        a.url, b.url, diary.url
    );
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let path = dir.path().join("seren-corpus-callosum.yaml");
    std::fs::write(&path, yaml).unwrap();
    let env = Env::of(&[("RESEARCH_TOKEN", RESEARCH_TOKEN)]);
    let config = Config::load_from(&path, &env).unwrap();
    let callosum = crate::support::Callosum::start_with(dir, config).await;
    Team {
        diary_url: diary.url.clone(),
        _stores: vec![a, b, diary],
        callosum,
    }
}

impl Team {
    /// `method path` with `token`, and the status, the headers and the body as text.
    async fn ask(
        &self,
        token: Option<&str>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, String) {
        let mut request =
            (self.callosum.client).request(method, format!("{}{path}", self.callosum.url));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        // The headers too: a store's name must not hide in one.
        let headers: String = (response.headers().iter())
            .map(|(k, v)| format!("{k}: {}\n", v.to_str().unwrap_or("")))
            .collect();
        (status, headers + &response.text().await.unwrap())
    }

    /// Asserts that `text` holds nothing of the hidden store: its name, its url, its content.
    fn hides_diary(&self, text: &str, what: &str) {
        let port = self.diary_url.rsplit(':').next().unwrap();
        for secret in ["diary", &self.diary_url, &format!(":{port}")] {
            assert!(!text.contains(secret), "{what} shows {secret:?}: {text}");
        }
    }
}

fn body(text: &str) -> Value {
    let json = &text[text.find("\n{").map_or(0, |i| i + 1)..];
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn a_view_sees_its_stores_and_nothing_of_the_others_on_every_rest_route() {
    let team = team().await;
    let get = reqwest::Method::GET;
    let post = reqwest::Method::POST;
    let research = Some(RESEARCH_TOKEN);

    // A search: the view's stores only, with explain, a packet budget and every route's words.
    let search = json!({"query": "note", "n_results": 10, "explain": true, "budget_tokens": 2000});
    let (status, text) = team
        .ask(research, post.clone(), "/search", Some(search.clone()))
        .await;
    assert_eq!(status, 200, "{text}");
    team.hides_diary(&text, "a view's search");
    let answer = body(&text);
    let stores: Vec<&str> = (answer["stores_searched"].as_array().unwrap().iter())
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(stores, ["papers-a", "papers-b"]);
    assert_eq!(answer["hits"].as_array().unwrap().len(), 4);
    // The server token searches every store, the hidden one included.
    let (status, text) = team
        .ask(Some(SERVER_TOKEN), post.clone(), "/search", Some(search))
        .await;
    assert_eq!(status, 200);
    assert!(text.contains("diary note 1"), "{text}");

    // Aiming at the hidden store reads exactly as aiming at one that does not exist.
    for field in ["stores", "exclude_stores"] {
        let (hidden_status, hidden) = team
            .ask(
                research,
                post.clone(),
                "/search",
                Some(json!({"query": "q", field: ["diary"]})),
            )
            .await;
        let (none_status, none) = team
            .ask(
                research,
                post.clone(),
                "/search",
                Some(json!({"query": "q", field: ["nope1"]})),
            )
            .await;
        assert_eq!((hidden_status, none_status), (400, 400));
        assert_eq!(
            body(&hidden)["detail"]
                .as_str()
                .unwrap()
                .replace("diary", "nope1"),
            body(&none)["detail"].as_str().unwrap(),
        );
        // The list of the stores there are is the view's.
        team.hides_diary(&none, "a refusal's list of stores");
        assert!(none.contains("papers-a, papers-b"), "{none}");
    }

    // Every reading route, with the view's token.
    for path in ["/stores", "/knobs", "/health/stores", "/"] {
        let (status, text) = team.ask(research, get.clone(), path, None).await;
        assert_eq!(status, 200, "{path}: {text}");
        team.hides_diary(&text, path);
    }
    // The server's files, environment and token source are not the view's to read.
    let (_, text) = team.ask(research, get.clone(), "/knobs", None).await;
    let knobs = body(&text);
    assert_eq!(knobs["where"]["config_path"], "(not shown to a view)");
    assert_eq!(knobs["where"]["overlay_path"], "(not shown to a view)");
    assert_eq!(knobs["where"]["env_overrides"], json!([]));
    assert_eq!(knobs["server"]["auth"], "view research");
    let (_, text) = team
        .ask(Some(SERVER_TOKEN), get.clone(), "/knobs", None)
        .await;
    assert_ne!(body(&text)["where"]["config_path"], "(not shown to a view)");
    let (_, text) = team.ask(research, get.clone(), "/stores", None).await;
    let stores = body(&text);
    assert_eq!(
        stores["view"],
        json!({"name": "research", "stores": ["papers*"], "write": false})
    );
    assert_eq!(stores["active"], 2);
    // The metrics name every store: not for a view.
    let (status, text) = team.ask(research, get.clone(), "/metrics", None).await;
    assert_eq!(status, 403, "{text}");
    team.hides_diary(&text, "/metrics refused");
    // The server token reads them all, and its /stores has no view.
    let (_, text) = team
        .ask(Some(SERVER_TOKEN), get.clone(), "/stores", None)
        .await;
    assert!(
        text.contains("diary") && body(&text).get("view").is_none(),
        "{text}"
    );
    let (status, text) = team
        .ask(Some(SERVER_TOKEN), get.clone(), "/metrics", None)
        .await;
    assert_eq!(status, 200);
    assert!(text.contains("diary"));

    // With views, /health/stores is gated like /stores, and GET / names no store.
    let (status, _) = team.ask(None, get.clone(), "/health/stores", None).await;
    assert_eq!(status, 401);
    let (status, text) = team.ask(None, get.clone(), "/", None).await;
    assert_eq!(status, 200);
    assert!(
        !text.contains("papers") && !text.contains("diary"),
        "{text}"
    );
    let (status, _) = team.ask(None, get.clone(), "/health", None).await;
    assert_eq!(status, 200, "/health stays public for balancers");
    // A token that is no one's is refused.
    let (status, _) = team.ask(Some("nobody-0000"), get, "/stores", None).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn writes_stay_within_a_view_and_each_lands_in_the_audit_trail() {
    let team = team().await;
    let (post, delete) = (reqwest::Method::POST, reqwest::Method::DELETE);
    let new =
        |name: &str| json!({"name": name, "type": "seren_memory", "url": "http://127.0.0.1:9"});

    // A view without write changes nothing, on any write route.
    for (method, path, body) in [
        (post.clone(), "/stores", Some(new("papers-x"))),
        (delete.clone(), "/stores/papers-a", None),
        (
            post.clone(),
            "/configure",
            Some(json!({"stores": [{"name": "papers-a", "weight": 2.0}]})),
        ),
        (post.clone(), "/eval", Some(json!({"judgments": []}))),
    ] {
        let (status, text) = team.ask(Some(RESEARCH_TOKEN), method, path, body).await;
        assert_eq!(status, 403, "{path}: {text}");
        assert!(text.contains("the view research"), "{text}");
    }

    let editors = Some(EDITOR_TOKEN);
    // Within its patterns it adds; outside them, 403 naming the patterns.
    let (status, text) = team
        .ask(editors, post.clone(), "/stores", Some(new("papers-new1")))
        .await;
    assert_eq!(status, 200, "{text}");
    let (status, text) = team
        .ask(editors, post.clone(), "/stores", Some(new("elsewhere")))
        .await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("papers-a, papers-new*"), "{text}");
    // It does not see papers-b (not in its patterns): removing it or the hidden one reads as
    // removing a store that does not exist.
    let (_, none) = team
        .ask(editors, delete.clone(), "/stores/nope1", None)
        .await;
    for hidden in ["diary", "papers-b"] {
        let (status, text) = team
            .ask(editors, delete.clone(), &format!("/stores/{hidden}"), None)
            .await;
        assert_eq!(status, 404, "{text}");
        assert_eq!(
            body(&text)["detail"]
                .as_str()
                .unwrap()
                .replace(hidden, "nope1"),
            body(&none)["detail"].as_str().unwrap()
        );
    }
    // Re-weighting: its own stores only, and no knob of the whole service.
    let (status, text) = team
        .ask(
            editors,
            post.clone(),
            "/configure",
            Some(json!({"stores": [{"name": "papers-a", "weight": 2.0}]})),
        )
        .await;
    assert_eq!(status, 200, "{text}");
    let (hidden_status, hidden) = team
        .ask(
            editors,
            post.clone(),
            "/configure",
            Some(json!({"stores": [{"name": "diary", "weight": 2.0}]})),
        )
        .await;
    let (none_status, none) = team
        .ask(
            editors,
            post.clone(),
            "/configure",
            Some(json!({"stores": [{"name": "nope1", "weight": 2.0}]})),
        )
        .await;
    assert_eq!(hidden_status, none_status);
    assert_eq!(
        body(&hidden)["detail"]
            .as_str()
            .unwrap()
            .replace("diary", "nope1"),
        body(&none)["detail"].as_str().unwrap()
    );
    team.hides_diary(&none, "a configure refusal");
    let (status, text) = team
        .ask(editors, post.clone(), "/configure", Some(json!({"k": 10})))
        .await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("k is the whole service's"), "{text}");
    // The value in force is no change (what `eval --tune` gives when k did not move).
    let same = json!({"k": 60, "stores": [{"name": "papers-a", "weight": 2.0}]});
    let (status, text) = team
        .ask(editors, post.clone(), "/configure", Some(same))
        .await;
    assert_eq!(status, 200, "{text}");
    // Its own store goes.
    let (status, text) = team.ask(editors, delete, "/stores/papers-new1", None).await;
    assert_eq!(status, 200, "{text}");
    // The server token may do anything.
    let (status, _) = team
        .ask(
            Some(SERVER_TOKEN),
            post,
            "/configure",
            Some(json!({"k": 30})),
        )
        .await;
    assert_eq!(status, 200);

    // The audit trail: one line per write, refused ones included, each naming who; never a token.
    let path = team.callosum.dir.path().join("audit.jsonl");
    let trail = std::fs::read_to_string(&path).unwrap();
    for token in [SERVER_TOKEN, RESEARCH_TOKEN, EDITOR_TOKEN] {
        assert!(!trail.contains(token), "{trail}");
    }
    let lines: Vec<Value> = trail
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<(String, String, bool)> = (lines.iter())
        .map(|l| {
            (
                l["actor"].as_str().unwrap().to_owned(),
                l["action"].as_str().unwrap().to_owned(),
                l["ok"].as_bool().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(&str, &str, bool)> = vec![
        // /eval is no write: refused before the core, and not in the trail.
        ("research", "add", false),
        ("research", "remove", false),
        ("research", "configure", false),
        ("editors", "add", true),
        ("editors", "add", false),
        ("editors", "remove", false),
        ("editors", "remove", false),
        ("editors", "remove", false),
        ("editors", "configure", true),
        ("editors", "configure", false),
        ("editors", "configure", false),
        ("editors", "configure", false),
        ("editors", "configure", true),
        ("editors", "remove", true),
        ("token", "configure", true),
    ];
    let expected: Vec<(String, String, bool)> = (expected.into_iter())
        .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c))
        .collect();
    assert_eq!(seen, expected, "{trail}");
    assert_eq!(lines[3]["store"], "papers-new1");
    assert_eq!(lines[3]["changed"]["type"], "seren_memory");
    assert_eq!(
        lines[8]["changed"],
        json!({"stores": [{"name": "papers-a", "weight": 2.0, "floor": 0.0}]})
    );
    assert!(lines[1]["detail"].as_str().unwrap().contains("no write"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test]
async fn mcp_over_http_lists_searches_and_writes_within_the_view() {
    let team = team().await;
    let url = &team.callosum.url;
    let research = http_client(url, Some(RESEARCH_TOKEN)).await.unwrap();
    // The search tool's words name the view's stores only.
    let tools = research.list_all_tools().await.unwrap();
    let search = tools.iter().find(|t| t.name == "search").unwrap();
    let words = search.description.as_deref().unwrap();
    assert!(
        words.contains("papers-a") && words.contains("papers-b"),
        "{words}"
    );
    team.hides_diary(words, "the search tool's description");

    let listed = structured(&call(&research, "list_stores", json!({})).await);
    team.hides_diary(&listed.to_string(), "list_stores");
    assert_eq!(listed["view"]["name"], "research");
    let answer = call(
        &research,
        "search",
        json!({"query": "note", "explain": true}),
    )
    .await;
    team.hides_diary(&serde_json::to_string(&answer).unwrap(), "the search tool");
    let hidden = error_text(
        &call(
            &research,
            "search",
            json!({"query": "q", "stores": ["diary"]}),
        )
        .await,
    );
    let none = error_text(
        &call(
            &research,
            "search",
            json!({"query": "q", "stores": ["nope1"]}),
        )
        .await,
    );
    assert_eq!(hidden.replace("diary", "nope1"), none);
    let refused = error_text(
        &call(
            &research,
            "add_store",
            json!({"name": "papers-z", "type": "seren_memory", "url": "http://127.0.0.1:9"}),
        )
        .await,
    );
    assert!(
        refused.contains("forbidden") && refused.contains("no write"),
        "{refused}"
    );
    let gone = error_text(&call(&research, "remove_store", json!({"name": "diary"})).await);
    assert!(gone.contains("forbidden"), "{gone}");

    let editors = http_client(url, Some(EDITOR_TOKEN)).await.unwrap();
    let hidden = error_text(&call(&editors, "remove_store", json!({"name": "diary"})).await);
    let none = error_text(&call(&editors, "remove_store", json!({"name": "nope1"})).await);
    assert_eq!(hidden.replace("diary", "nope1"), none);
    let added = call(
        &editors,
        "add_store",
        json!({"name": "papers-new2", "type": "seren_memory", "url": "http://127.0.0.1:9"}),
    )
    .await;
    assert_eq!(structured(&added)["added"], "papers-new2");

    // The server token's client sees every store.
    let full = http_client(url, Some(SERVER_TOKEN)).await.unwrap();
    let listed = structured(&call(&full, "list_stores", json!({})).await);
    assert!(listed.to_string().contains("diary"));
    let trail = std::fs::read_to_string(team.callosum.dir.path().join("audit.jsonl")).unwrap();
    assert!(
        trail.contains(r#""actor":"editors","action":"add","store":"papers-new2""#),
        "{trail}"
    );
    for client in [research, editors, full] {
        client.cancel().await.unwrap();
    }
}

/// The config errors a view can have, each naming it; and the warning for a pattern that
/// matches no store.
#[test]
fn view_config_errors_name_the_view() {
    let parse = |server: &str, env: &[(&str, &str)]| {
        let yaml = format!(
            "server:\n{server}\nfederation:\n  stores:\n    - {{name: papers, type: seren_memory, url: \"http://127.0.0.1:9\"}}\n"
        );
        Config::parse_with(Path::new("c.yaml"), &yaml, &Env::of(env), None)
    };
    let problems = |server: &str, env: &[(&str, &str)]| match parse(server, env) {
        Err(ConfigError::Invalid { messages, .. }) => messages.join("\n"),
        other => panic!("expected an invalid config, got {other:?}"),
    };
    let text = problems("  views:\n    - {name: research, stores: [papers]}", &[]);
    assert!(text.contains("server.views[research]: no token"), "{text}");
    let text = problems(
        "  views:\n    - {name: one, token: same-token, stores: [papers]}\n    - {name: two, token: same-token, stores: [papers]}",
        &[],
    );
    assert!(
        text.contains("server.views[one] and server.views[two] have the same token"),
        "{text}"
    );
    let text = problems(
        "  bearer_token: server-tok\n  views:\n    - {name: one, token: server-tok, stores: [papers]}",
        &[],
    );
    assert!(
        text.contains("server.views[one]: its token is the server's own"),
        "{text}"
    );
    let text = problems(
        "  views:\n    - {name: one, token_env: ONE_TOKEN, stores: [papers]}",
        &[],
    );
    assert!(
        text.contains("server.views[one].token_env names ONE_TOKEN, which is not set"),
        "{text}"
    );
    let text = problems("  views:\n    - {name: one, token: t1, stores: []}", &[]);
    assert!(
        text.contains("server.views[one]: stores is empty"),
        "{text}"
    );
    let text = problems("  views:\n    - {token: t1, stores: [papers]}", &[]);
    assert!(
        text.contains("server.views[0]: a view needs a name"),
        "{text}"
    );
    let text = problems(
        "  views:\n    - {name: one, token: t1, stores: [papers]}\n  views_by_scope:\n    \"callosum:view:x\": other",
        &[],
    );
    assert!(
        text.contains("the scope \"callosum:view:x\" names the view \"other\", which server.views does not define"),
        "{text}"
    );
    // An unknown key in a view is an error naming it (a typo must not widen or narrow a view).
    let text = problems(
        "  views:\n    - {name: one, token: t1, store: [papers]}",
        &[],
    );
    assert!(
        text.contains("server.views[one]: unknown key 'store' (a view takes name, token, token_env, token_keyring, stores, write)"),
        "{text}"
    );
    // A pattern that matches no store is a warning naming the view and the pattern.
    let config = parse(
        "  views:\n    - {name: one, token_env: ONE, stores: [papers, \"notes*\"]}",
        &[("ONE", "t1")],
    )
    .unwrap();
    let warning = config.warnings.join("\n");
    assert!(
        warning.contains("server.views[one]: the pattern \"notes*\" matches no store"),
        "{warning}"
    );
    assert!(!warning.contains("\"papers\""), "{warning}");
    // A view selected by an OAuth scope alone needs no token.
    let config = parse(
        "  views:\n    - {name: one, stores: [papers]}\n  views_by_scope:\n    \"callosum:view:one\": one",
        &[],
    )
    .unwrap();
    assert_eq!(config.server.views.by_scope.len(), 1);
}
