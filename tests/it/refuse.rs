//! What the service refuses to take from where it does not belong: the value of a mistyped config
//! key in any message.

use crate::support::process::{self, Server};
use crate::support::*;
use serde_json::Value;

/// A config whose one store has `weight` quoted as a string that looks like a token.
const SECRET_WEIGHT: &str = "TOPSECRET123";

fn mistyped(head: &str) -> String {
    format!(
        "{head}federation:\n  stores:\n    - name: facts\n      type: seren_loci\n      url: http://127.0.0.1:9\n      weight: \"{SECRET_WEIGHT}\"\n"
    )
}

/// Holds `message` to naming the file, the key and its line, and never the value.
fn names_where_not_what(message: &str, file: &str) {
    assert!(message.contains(file), "the file: {message}");
    assert!(
        message
            .contains("federation.stores[0].weight: invalid type: string, expected f64 at line 9"),
        "the key and line: {message}"
    );
    assert!(!message.contains(SECRET_WEIGHT), "the value: {message}");
}

#[tokio::test]
async fn a_mistyped_config_value_is_never_quoted_at_start_check_reload_or_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let head = "server:\n  port: 0\n  watch: false\n";
    let config = process::write_config(dir.path(), &mistyped(head));
    for args in [
        vec!["check", "-c", config.as_str()],
        vec!["serve", "-c", config.as_str()],
    ] {
        let output = process::run(process::command(&args)).await;
        assert_eq!(output.status.code(), Some(78), "{args:?}");
        names_where_not_what(&String::from_utf8_lossy(&output.stderr), &config);
    }

    // Running, then edited into the mistake and told to reload: the log, `/stores` and `/knobs`.
    std::fs::write(&config, head).unwrap();
    let mut server = Server::start(process::command(&["serve", "-c", &config]));
    let url = process::listening_url(&server.wait_for("listening on"));
    std::fs::write(&config, mistyped(head)).unwrap();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    names_where_not_what(&server.wait_for("config file not reloaded"), &config);
    let client = test_client();
    let stores: Value = client
        .get(format!("{url}/stores"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    names_where_not_what(stores["config_error"].as_str().unwrap(), &config);
    let knobs: Value = client
        .get(format!("{url}/knobs"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    names_where_not_what(knobs["where"]["config_error"].as_str().unwrap(), &config);
    let log = server.stop();
    assert!(!log.contains(SECRET_WEIGHT), "{log}");
}
