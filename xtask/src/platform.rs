//! The platforms a release is built for, and what each is called by Rust, npm and the MCP Bundle.

use crate::Result;

/// One platform a release ships a binary for.
pub struct Platform {
    /// The Rust target triple, built natively on a machine of that platform.
    pub triple: &'static str,
    /// `process.platform` and `process.arch` in Node, which npm's `os` and `cpu` fields name.
    pub node_os: &'static str,
    pub node_cpu: &'static str,
    /// npm's `libc` field: only Linux packages declare one (glibc: the binary links it).
    pub libc: Option<&'static str>,
    /// The MCP Bundle's name for the OS (`compatibility.platforms`).
    pub mcpb_os: &'static str,
}

/// Every platform the release workflow builds; the npm launcher's `optionalDependencies`.
pub const ALL: [Platform; 5] = [
    Platform {
        triple: "x86_64-unknown-linux-gnu",
        node_os: "linux",
        node_cpu: "x64",
        libc: Some("glibc"),
        mcpb_os: "linux",
    },
    Platform {
        triple: "aarch64-unknown-linux-gnu",
        node_os: "linux",
        node_cpu: "arm64",
        libc: Some("glibc"),
        mcpb_os: "linux",
    },
    Platform {
        triple: "aarch64-apple-darwin",
        node_os: "darwin",
        node_cpu: "arm64",
        libc: None,
        mcpb_os: "darwin",
    },
    Platform {
        triple: "x86_64-apple-darwin",
        node_os: "darwin",
        node_cpu: "x64",
        libc: None,
        mcpb_os: "darwin",
    },
    Platform {
        triple: "x86_64-pc-windows-msvc",
        node_os: "win32",
        node_cpu: "x64",
        libc: None,
        mcpb_os: "win32",
    },
];

impl Platform {
    /// The platform of the machine the xtask runs on, as `rustc -vV` names its host.
    pub fn host() -> Result<&'static Platform> {
        let output = std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
            .arg("-vV")
            .output()
            .map_err(|e| format!("cannot run rustc -vV: {e}"))?;
        let text = String::from_utf8_lossy(&output.stdout);
        let host = text
            .lines()
            .find_map(|line| line.strip_prefix("host: "))
            .ok_or("rustc -vV names no host")?
            .trim();
        ALL.iter().find(|p| p.triple == host).ok_or_else(|| {
            let known: Vec<_> = ALL.iter().map(|p| p.triple).collect();
            format!("no release is built for {host}; the platforms are {known:?}")
        })
    }

    pub fn is_linux(&self) -> bool {
        self.node_os == "linux"
    }

    /// `name`, with `.exe` on Windows.
    pub fn exe(&self, name: &str) -> String {
        if self.node_os == "win32" {
            format!("{name}.exe")
        } else {
            name.to_owned()
        }
    }

    /// The suffix of this platform's npm package and bundle: `linux-x64-gnu`, `darwin-arm64`,
    /// `win32-x64-msvc`.
    pub fn suffix(&self) -> String {
        match self.node_os {
            "linux" => format!("linux-{}-gnu", self.node_cpu),
            "win32" => format!("win32-{}-msvc", self.node_cpu),
            os => format!("{os}-{}", self.node_cpu),
        }
    }

    /// This platform's npm package: the binary, for the launcher to find.
    pub fn npm_package(&self) -> String {
        format!("{}-{}", crate::DIST_NAME, self.suffix())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_platform_has_its_own_package() {
        let mut names: Vec<_> = ALL.iter().map(Platform::npm_package).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert_eq!(
            ALL[0].npm_package(),
            "seren-corpus-callosum-rs-linux-x64-gnu"
        );
        assert_eq!(ALL[4].exe("x"), "x.exe");
    }

    /// The Node launcher keeps its own table (it runs with no xtask beside it): it must name each
    /// platform's package under Node's `platform-arch`.
    #[test]
    fn the_launcher_finds_every_platform_package() {
        let launcher = include_str!("../npm/launcher.js");
        for platform in &ALL {
            let entry = format!(
                "\"{}-{}\": \"{}\"",
                platform.node_os,
                platform.node_cpu,
                platform.npm_package()
            );
            assert!(launcher.contains(&entry), "launcher.js lacks {entry}");
        }
    }
}
