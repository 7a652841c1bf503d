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
    /// How it is built and linked from a Linux x86_64 machine.
    pub link: Link,
}

/// How a platform's binary is built from Linux x86_64, and what its headers must say.
pub enum Link {
    /// zig links against glibc 2.28 (maturin `--zig --compatibility manylinux_2_28`).
    Manylinux,
    /// zig links against libSystem alone, for macOS `min_os` or later; the PostgreSQL overlay
    /// (which pulls in `whoami`, and so the SystemConfiguration framework) is left out.
    MacOs {
        min_os: &'static str,
        cpu: &'static str,
    },
    /// MinGW-w64 (Debian's `gcc-mingw-w64-x86-64`) with a static C runtime (.cargo/config.toml).
    WindowsGnu,
}

/// Every platform a release is built for, all from one Linux x86_64 machine; the npm launcher's
/// `optionalDependencies`.
pub const ALL: [Platform; 5] = [
    Platform {
        triple: "x86_64-unknown-linux-gnu",
        node_os: "linux",
        node_cpu: "x64",
        libc: Some("glibc"),
        mcpb_os: "linux",
        link: Link::Manylinux,
    },
    Platform {
        triple: "aarch64-unknown-linux-gnu",
        node_os: "linux",
        node_cpu: "arm64",
        libc: Some("glibc"),
        mcpb_os: "linux",
        link: Link::Manylinux,
    },
    Platform {
        triple: "aarch64-apple-darwin",
        node_os: "darwin",
        node_cpu: "arm64",
        libc: None,
        mcpb_os: "darwin",
        link: Link::MacOs {
            min_os: "11.0",
            cpu: "arm64",
        },
    },
    Platform {
        triple: "x86_64-apple-darwin",
        node_os: "darwin",
        node_cpu: "x64",
        libc: None,
        mcpb_os: "darwin",
        link: Link::MacOs {
            min_os: "10.15",
            cpu: "x86_64",
        },
    },
    Platform {
        // GNU, not MSVC: Microsoft's CRT and SDK cannot be had without a download of theirs.
        triple: "x86_64-pc-windows-gnu",
        node_os: "win32",
        node_cpu: "x64",
        libc: None,
        mcpb_os: "win32",
        link: Link::WindowsGnu,
    },
];

impl Platform {
    /// The platform `name` names: a target triple (`aarch64-apple-darwin`) or a package suffix
    /// (`darwin-arm64`).
    pub fn named(name: &str) -> Result<&'static Platform> {
        ALL.iter()
            .find(|p| p.triple == name || p.suffix() == name)
            .ok_or_else(|| {
                let known: Vec<_> = ALL.iter().map(|p| p.suffix()).collect();
                format!("no platform is called {name:?}; the platforms are {known:?} (or their target triples)")
            })
    }

    /// The platform of the machine the xtask runs on, as `rustc -vV` names its host.
    pub fn host_triple() -> Result<String> {
        let output = std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
            .arg("-vV")
            .output()
            .map_err(|e| format!("cannot run rustc -vV: {e}"))?;
        let text = String::from_utf8_lossy(&output.stdout);
        Ok(text
            .lines()
            .find_map(|line| line.strip_prefix("host: "))
            .ok_or("rustc -vV names no host")?
            .trim()
            .to_owned())
    }

    /// The wheel's platform tag, as pip and uv match it against the machine.
    pub fn wheel_tag(&self) -> String {
        match &self.link {
            Link::Manylinux => format!(
                "{}_{}",
                crate::MANYLINUX,
                self.triple.split('-').next().unwrap_or_default()
            ),
            Link::MacOs { min_os, cpu } => format!("macosx_{}_{cpu}", min_os.replace('.', "_")),
            Link::WindowsGnu => "win_amd64".to_owned(),
        }
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
    /// `win32-x64-gnu`.
    pub fn suffix(&self) -> String {
        match self.node_os {
            "darwin" => format!("darwin-{}", self.node_cpu),
            os => format!("{os}-{}-gnu", self.node_cpu),
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

    #[test]
    fn platforms_are_found_by_triple_or_suffix_and_tag_their_wheels() {
        let tags: Vec<_> = ALL.iter().map(Platform::wheel_tag).collect();
        assert_eq!(
            tags,
            [
                "manylinux_2_28_x86_64",
                "manylinux_2_28_aarch64",
                "macosx_11_0_arm64",
                "macosx_10_15_x86_64",
                "win_amd64"
            ]
        );
        assert_eq!(
            Platform::named("win32-x64-gnu").unwrap().triple,
            "x86_64-pc-windows-gnu"
        );
        assert_eq!(
            Platform::named("aarch64-apple-darwin").unwrap().suffix(),
            "darwin-arm64"
        );
        let error = Platform::named("win32-x64-msvc").err().unwrap();
        assert!(error.contains("darwin-x64"), "{error}");
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
