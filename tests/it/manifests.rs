//! The files in `mcp-manifests/` parse, agree with Cargo.toml's version, and keep the rules their
//! consumers enforce (registry name pattern, 100-character description, stdio argument).

use serde_json::Value;
use std::path::Path;

const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The PyPI and npm distribution (`seren-corpus-callosum` on PyPI is the Python service).
const DIST_NAME: &str = "seren-corpus-callosum-rs";

fn read(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("mcp-manifests")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_manifest_is_json() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-manifests");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("mcpb")).unwrap())
    {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).unwrap();
            serde_json::from_str::<Value>(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            seen += 1;
        }
    }
    assert!(seen >= 7, "only {seen} manifests");
}

#[test]
fn the_registry_entry_matches_the_crate() {
    let server = read("server.json");
    assert_eq!(server["version"], VERSION);
    let name = server["name"].as_str().unwrap();
    let (namespace, short) = name.split_once('/').unwrap();
    assert!(
        !short.contains('/') && !namespace.is_empty() && (3..=200).contains(&name.len()),
        "{name}"
    );
    let description = server["description"].as_str().unwrap();
    assert!(
        (1..=100).contains(&description.chars().count()),
        "{} chars",
        description.len()
    );
    // The packaged installs, then the crate; `cargo xtask dist` adds one `mcpb` per bundle.
    let packages = server["packages"].as_array().unwrap();
    let types: Vec<&str> = packages
        .iter()
        .map(|p| p["registryType"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["pypi", "npm", "cargo"]);
    for package in packages {
        let expected = if package["registryType"] == "cargo" {
            env!("CARGO_PKG_NAME")
        } else {
            DIST_NAME
        };
        assert_eq!(package["identifier"], expected, "{package}");
        assert_eq!(package["version"], VERSION, "{package}");
        assert_eq!(package["transport"]["type"], "stdio", "{package}");
        assert_eq!(
            package["packageArguments"][0]["value"], "stdio",
            "{package}"
        );
    }
    // The crate registry proves ownership by a visible `mcp-name:` line in the README.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("mcp-name: {name}")),
        "README lacks `mcp-name: {name}`"
    );
}

#[test]
fn the_bundle_manifest_matches_the_crate() {
    let manifest = read("mcpb/manifest.json");
    assert_eq!(manifest["version"], VERSION);
    assert_eq!(manifest["name"], env!("CARGO_PKG_NAME"));
    assert_eq!(manifest["server"]["type"], "binary");
    assert_eq!(manifest["server"]["mcp_config"]["args"][0], "stdio");
    let tools: Vec<&str> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["search", "list_stores", "add_store", "remove_store"]
    );
}

/// The words before `stdio` in a snippet's `args`: the packaged runners' own.
fn launch(entry: &Value) -> Vec<&str> {
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let stdio = args
        .iter()
        .position(|a| *a == "stdio")
        .expect("a stdio argument");
    std::iter::once(entry["command"].as_str().unwrap())
        .chain(args[..stdio].iter().copied())
        .collect()
}

#[test]
fn host_snippets_launch_stdio_or_reach_mcp() {
    let uvx = ["uvx", "--from", DIST_NAME, "seren-corpus-callosum"];
    let npx = ["npx", "-y", DIST_NAME];
    for (name, key, runner) in [
        ("claude_desktop_config.json", "mcpServers", &uvx[..]),
        ("cursor-mcp.json", "mcpServers", &npx[..]),
        ("vscode-mcp.json", "servers", &npx[..]),
    ] {
        let entry = &read(name)[key]["seren-corpus-callosum"];
        assert_eq!(launch(entry), runner, "{name}");
    }
    let vscode = &read("vscode-mcp.json")["servers"]["seren-corpus-callosum"];
    assert_eq!(vscode["type"], "stdio");
    for (name, key) in [
        ("remote-http.json", "mcpServers"),
        ("vscode-remote-http.json", "servers"),
    ] {
        let entry = &read(name)[key]["seren-corpus-callosum"];
        assert!(entry["url"].as_str().unwrap().ends_with("/mcp"), "{name}");
        assert!(
            entry["headers"]["Authorization"]
                .as_str()
                .unwrap()
                .starts_with("Bearer "),
            "{name}"
        );
    }
}
