//! `server.json` for the MCP Registry: the checked-in entry (`mcp-manifests/server.json`, which
//! lists the `pypi`, `npm` and `cargo` packages) plus one `mcpb` package per bundle built, each
//! with the SHA-256 of its file, which hosts check before they install it.

use crate::{Result, Workspace};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The registry's limit on `description`.
const MAX_DESCRIPTION: usize = 100;
/// Where a tag's release serves its bundles.
const RELEASES: &str = "https://github.com/seren/seren-corpus-callosum/releases/download";

/// The server's registry name (`io.github.seren/seren-corpus-callosum`), which the published
/// packages must carry: `mcpName` in package.json, an `mcp-name:` line in the READMEs.
pub fn server_name(ws: &Workspace) -> Result<String> {
    let path = ws.root.join("mcp-manifests").join("server.json");
    let template: Value = serde_json::from_str(&crate::read(&path)?)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    template["name"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{}: no name", path.display()))
}

/// The entry with `bundles` listed, checked against the rules the registry enforces.
pub fn server_json(template: &str, version: &str, bundles: &[PathBuf]) -> Result<String> {
    let mut server: Value =
        serde_json::from_str(template).map_err(|e| format!("mcp-manifests/server.json: {e}"))?;
    check(&server, version).map_err(|e| format!("mcp-manifests/server.json: {e}"))?;
    let packages = server["packages"]
        .as_array_mut()
        .ok_or("mcp-manifests/server.json: no packages")?;
    packages.retain(|p| p["registryType"] != "mcpb");
    for bundle in bundles {
        packages.push(mcpb_package(bundle, version)?);
    }
    Ok(format!("{}\n", crate::pretty(&server)))
}

fn check(server: &Value, version: &str) -> Result<()> {
    if server["version"] != version {
        return Err(format!(
            "version {} is not Cargo.toml's {version}",
            server["version"]
        ));
    }
    let description = server["description"].as_str().unwrap_or_default();
    let length = description.chars().count();
    if !(1..=MAX_DESCRIPTION).contains(&length) {
        return Err(format!(
            "description is {length} characters; the registry takes 1 to {MAX_DESCRIPTION}"
        ));
    }
    for package in server["packages"].as_array().into_iter().flatten() {
        if package["version"] != version {
            return Err(format!(
                "the {} package's version {} is not Cargo.toml's {version}",
                package["registryType"], package["version"]
            ));
        }
    }
    Ok(())
}

fn mcpb_package(bundle: &Path, version: &str) -> Result<Value> {
    let bytes =
        std::fs::read(bundle).map_err(|e| format!("cannot read {}: {e}", bundle.display()))?;
    let sha256: String = Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let file = bundle
        .file_name()
        .ok_or_else(|| format!("{} has no file name", bundle.display()))?
        .to_string_lossy();
    Ok(json!({
        "registryType": "mcpb",
        "identifier": format!("{RELEASES}/v{version}/{file}"),
        "version": version,
        "fileSha256": sha256,
        "transport": { "type": "stdio" },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = r#"{"name": "io.github.a/b", "description": "d", "version": "1.0.0",
        "packages": [{"registryType": "pypi", "identifier": "x", "version": "1.0.0"}]}"#;

    #[test]
    fn a_bundle_is_listed_with_its_digest() {
        let dir = std::env::temp_dir().join(format!("xtask-registry-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bundle = dir.join("b-1.0.0-linux-x64-gnu.mcpb");
        std::fs::write(&bundle, b"abc").unwrap();
        let server: Value =
            serde_json::from_str(&server_json(TEMPLATE, "1.0.0", &[bundle]).unwrap()).unwrap();
        let mcpb = &server["packages"][1];
        assert_eq!(mcpb["registryType"], "mcpb");
        // SHA-256("abc"), FIPS 180-2's first example.
        assert_eq!(
            mcpb["fileSha256"],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            mcpb["identifier"],
            "https://github.com/seren/seren-corpus-callosum/releases/download/v1.0.0/b-1.0.0-linux-x64-gnu.mcpb"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_version_or_description_the_registry_refuses_is_named() {
        let error = server_json(TEMPLATE, "2.0.0", &[]).unwrap_err();
        assert!(error.contains("2.0.0"), "{error}");
        let long = TEMPLATE.replace("\"d\"", &format!("\"{}\"", "x".repeat(101)));
        let error = server_json(&long, "1.0.0", &[]).unwrap_err();
        assert!(error.contains("101 characters"), "{error}");
        let stale = TEMPLATE.replace("\"version\": \"1.0.0\"}]", "\"version\": \"0.9.0\"}]");
        let error = server_json(&stale, "1.0.0", &[]).unwrap_err();
        assert!(error.contains("pypi") && error.contains("0.9.0"), "{error}");
    }
}
