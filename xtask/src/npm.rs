//! The npm packages: `seren-corpus-callosum-rs`, whose `bin` is a small Node launcher, and one
//! package per platform that carries the binary, each an `optionalDependency` of the launcher
//! package with `os`, `cpu` and `libc` declared. npm installs the one that fits the machine and
//! skips the others; nothing is downloaded by a script at install time.

use crate::platform::{self, Platform};
use crate::{
    COMMAND, DIST_NAME, Result, Workspace, copy, fresh_dir, mkdir, registry, run, write_json,
};
use serde_json::{Value, json};
use std::path::Path;

/// Where the README's relative links point on npm's page, which has no repository beside it.
const REPOSITORY: &str = "https://github.com/seren/seren-corpus-callosum";

/// Writes `platform`'s package, which carries `binary`, as a tarball (`npm pack`) into
/// `target/dist/`.
pub fn platform_package(ws: &Workspace, platform: &Platform, binary: &Path) -> Result<()> {
    let own = ws
        .target
        .join("dist-stage")
        .join("npm")
        .join(platform.npm_package());
    fresh_dir(&own)?;
    mkdir(&own.join("bin"))?;
    copy(binary, &own.join("bin").join(platform.exe(COMMAND)))?;
    copy(&ws.root.join("LICENSE"), &own.join("LICENSE"))?;
    crate::write(
        &own.join("README.md"),
        &format!(
            "# {}\n\nThe `{COMMAND}` binary for {} {}, installed by [`{DIST_NAME}`]\
             (https://www.npmjs.com/package/{DIST_NAME}) as an optional dependency. Install that \
             package, not this one.\n",
            platform.npm_package(),
            platform.node_os,
            platform.node_cpu
        ),
    )?;
    write_json(&own.join("package.json"), &platform_manifest(ws, platform))?;
    pack(ws, &own)
}

/// Writes the launcher package, whose `optionalDependencies` are every platform's package, as a
/// tarball into `target/dist/`.
pub fn launcher(ws: &Workspace) -> Result<()> {
    let server_name = registry::server_name(ws)?;
    let launcher = ws.target.join("dist-stage").join("npm").join(DIST_NAME);
    fresh_dir(&launcher)?;
    mkdir(&launcher.join("bin"))?;
    copy(
        &ws.root.join("xtask").join("npm").join("launcher.js"),
        &launcher.join("bin").join(format!("{COMMAND}.js")),
    )?;
    copy(&ws.root.join("LICENSE"), &launcher.join("LICENSE"))?;
    let readme = crate::read(&ws.root.join("README.md"))?;
    crate::write(
        &launcher.join("README.md"),
        &absolute_links(&readme, &format!("{REPOSITORY}/blob/v{}/", ws.version)),
    )?;
    write_json(
        &launcher.join("package.json"),
        &launcher_manifest(ws, &server_name),
    )?;
    pack(ws, &launcher)
}

fn pack(ws: &Workspace, dir: &Path) -> Result<()> {
    run::status(
        run::npm()
            .current_dir(dir)
            .args(["pack", "--silent", "--pack-destination"])
            .arg(&ws.dist),
        "npm pack",
    )
}

fn common(ws: &Workspace, name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "version": ws.version,
        "description": description,
        "license": "GPL-3.0-or-later",
        "repository": {
            "type": "git",
            "url": "git+https://github.com/seren/seren-corpus-callosum.git",
        },
        "homepage": "https://github.com/seren/seren-corpus-callosum#readme",
    })
}

fn platform_manifest(ws: &Workspace, platform: &Platform) -> Value {
    let mut manifest = common(
        ws,
        &platform.npm_package(),
        &format!(
            "The {COMMAND} binary for {} {}; installed by {DIST_NAME}",
            platform.node_os, platform.node_cpu
        ),
    );
    let fields = manifest.as_object_mut().expect("an object");
    fields.insert("os".into(), json!([platform.node_os]));
    fields.insert("cpu".into(), json!([platform.node_cpu]));
    if let Some(libc) = platform.libc {
        fields.insert("libc".into(), json!([libc]));
    }
    fields.insert("files".into(), json!(["bin/", "README.md", "LICENSE"]));
    fields.insert("preferUnplugged".into(), json!(true));
    manifest
}

fn launcher_manifest(ws: &Workspace, server_name: &str) -> Value {
    let mut manifest = common(
        ws,
        DIST_NAME,
        "MCP server that federates memory stores into one rank-fused recall list (Rust, prebuilt)",
    );
    let optional: serde_json::Map<String, Value> = platform::ALL
        .iter()
        .map(|p| (p.npm_package(), json!(ws.version)))
        .collect();
    let fields = manifest.as_object_mut().expect("an object");
    fields.insert("mcpName".into(), json!(server_name));
    fields.insert(
        "keywords".into(),
        json!(["mcp", "mcp-server", "rrf", "federated-search", "memory"]),
    );
    fields.insert(
        "bin".into(),
        json!({ COMMAND: format!("bin/{COMMAND}.js") }),
    );
    fields.insert("files".into(), json!(["bin/", "README.md", "LICENSE"]));
    fields.insert("engines".into(), json!({ "node": ">=18" }));
    fields.insert("optionalDependencies".into(), Value::Object(optional));
    manifest
}

/// `markdown` with every relative link target (`](docs/mcp.md#hosts)`) made absolute under
/// `base`; urls with a scheme and same-page `#anchors` are left as they are.
fn absolute_links(markdown: &str, base: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        let (before, after) = rest.split_at(at + 2);
        out.push_str(before);
        let relative = !(after.starts_with('#')
            || after.starts_with("http://")
            || after.starts_with("https://")
            || after.starts_with("mailto:"));
        if relative && after.contains(')') {
            out.push_str(base);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_links_point_at_the_tagged_repository() {
        let base = "https://x/blob/v1/";
        let text = "[a](docs/mcp.md#hosts), [b](#install), [c](https://y/z), [d](LICENSE) ](";
        assert_eq!(
            absolute_links(text, base),
            "[a](https://x/blob/v1/docs/mcp.md#hosts), [b](#install), [c](https://y/z), \
             [d](https://x/blob/v1/LICENSE) ]("
        );
    }
}
