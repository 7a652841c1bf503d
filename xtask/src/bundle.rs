//! The MCP Bundle: `mcp-manifests/mcpb/manifest.json` with the binary as its entry point, packed
//! and checked by the official `mcpb` CLI. A bundle carries one platform's binary, so its manifest
//! names that platform alone.

use crate::platform::Platform;
use crate::{COMMAND, DIST_NAME, Result, Workspace, copy, fresh_dir, mkdir, run, write_json};
use serde_json::{Value, json};
use std::path::Path;

/// Packs `target/dist/seren-corpus-callosum-rs-<version>-<platform>.mcpb`.
pub fn pack(ws: &Workspace, platform: &Platform, binary: &Path) -> Result<()> {
    let stage = ws.target.join("dist-stage").join("mcpb");
    fresh_dir(&stage)?;
    mkdir(&stage.join("server"))?;
    let source = ws
        .root
        .join("mcp-manifests")
        .join("mcpb")
        .join("manifest.json");
    let mut manifest: Value = serde_json::from_str(&crate::read(&source)?)
        .map_err(|e| format!("{}: {e}", source.display()))?;
    manifest_for(&mut manifest, &ws.version, platform)
        .map_err(|e| format!("{}: {e}", source.display()))?;
    write_json(&stage.join("manifest.json"), &manifest)?;
    copy(binary, &stage.join("server").join(platform.exe(COMMAND)))?;
    copy(&ws.root.join("LICENSE"), &stage.join("LICENSE"))?;

    let out = ws.dist.join(format!(
        "{DIST_NAME}-{}-{}.mcpb",
        ws.version,
        platform.suffix()
    ));
    let mut mcpb = run::mcpb(ws)?;
    run::status(
        mcpb.arg("validate").arg(stage.join("manifest.json")),
        "mcpb validate",
    )?;
    let mut mcpb = run::mcpb(ws)?;
    run::status(mcpb.arg("pack").arg(&stage).arg(&out), "mcpb pack")?;
    Ok(())
}

/// The checked-in manifest, made this platform's: its version checked against the crate's, its
/// entry point and command the platform's file name, its platforms this one.
fn manifest_for(manifest: &mut Value, version: &str, platform: &Platform) -> Result<()> {
    if manifest["version"] != version {
        return Err(format!(
            "version is {}, Cargo.toml's is {version}",
            manifest["version"]
        ));
    }
    let entry = format!("server/{}", platform.exe(COMMAND));
    let server = manifest
        .get_mut("server")
        .and_then(Value::as_object_mut)
        .ok_or("no server object")?;
    server.insert("entry_point".into(), json!(entry));
    let config = server
        .get_mut("mcp_config")
        .and_then(Value::as_object_mut)
        .ok_or("no server.mcp_config object")?;
    config.insert("command".into(), json!(format!("${{__dirname}}/{entry}")));
    manifest["compatibility"]["platforms"] = json!([platform.mcpb_os]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::ALL;

    #[test]
    fn a_bundle_names_its_own_platform_and_file() {
        let mut manifest = json!({
            "version": "1.0.0",
            "server": {"type": "binary", "entry_point": "x", "mcp_config": {"command": "x"}},
            "compatibility": {"platforms": ["linux", "darwin", "win32"]},
        });
        manifest_for(&mut manifest, "1.0.0", &ALL[4]).unwrap();
        assert_eq!(
            manifest["server"]["entry_point"],
            "server/seren-corpus-callosum.exe"
        );
        assert_eq!(
            manifest["server"]["mcp_config"]["command"],
            "${__dirname}/server/seren-corpus-callosum.exe"
        );
        assert_eq!(manifest["compatibility"]["platforms"], json!(["win32"]));
        let error = manifest_for(&mut manifest, "2.0.0", &ALL[0]).unwrap_err();
        assert!(error.contains("2.0.0"), "{error}");
    }
}
