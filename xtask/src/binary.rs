//! What a built binary links, read from its own headers: the check that a cross-built binary will
//! start on a machine that has only what its OS ships (contract §7). A Windows `.exe` must import
//! no DLL beyond Windows' own (no `libgcc_s_seh-1.dll`, no `libwinpthread-1.dll`); a macOS binary
//! must load `libSystem` alone (and other libraries of `/usr/lib`, which every Mac has, should one
//! ever appear) and name the oldest macOS it was built for. Linux wheels are checked by maturin
//! against their manylinux policy.
//!
//! Small readers of the two formats, just the fields these checks need: Mach-O's load commands
//! (`LC_LOAD_DYLIB` and kin, `LC_BUILD_VERSION`), PE's import directory. No crate: the layouts are
//! fixed and short, and every read is bounds-checked (a bad file is an error, never a panic).

use crate::Result;

/// What a Mach-O binary says of itself.
#[derive(Debug, PartialEq, Eq)]
pub struct MachO {
    /// `arm64` or `x86_64`.
    pub cpu: &'static str,
    /// The minimum macOS, as `major.minor`.
    pub min_os: Option<String>,
    /// Every library it loads, in load-command order.
    pub dylibs: Vec<String>,
    /// Whether it carries an embedded code signature (`LC_CODE_SIGNATURE` to a blob with the
    /// embedded-signature magic): Apple silicon runs no arm64 binary without one, ad-hoc at least.
    pub signed: bool,
}

/// What a PE (Windows) binary says of itself.
#[derive(Debug, PartialEq, Eq)]
pub struct Pe {
    /// `x86_64` (`IMAGE_FILE_MACHINE_AMD64`), `aarch64`, or the machine number.
    pub machine: String,
    /// The DLLs its import directory names, as written.
    pub dlls: Vec<String>,
}

fn u16_at(bytes: &[u8], at: usize) -> Result<u16> {
    bytes
        .get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| format!("truncated at byte {at}"))
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| format!("truncated at byte {at}"))
}

/// The NUL-terminated text at `at`, at most 1 KiB.
fn c_str_at(bytes: &[u8], at: usize) -> Result<String> {
    let rest = bytes
        .get(at..)
        .ok_or_else(|| format!("a name past the end (byte {at})"))?;
    let rest = &rest[..rest.len().min(1024)];
    let end = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| format!("an unterminated name at byte {at}"))?;
    Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
}

const MH_MAGIC_64: u32 = 0xfeed_facf;
const CPU_TYPE_X86_64: u32 = 0x0100_0007;
const CPU_TYPE_ARM64: u32 = 0x0100_000c;
const LC_LOAD_DYLIB: u32 = 0xc;
const LC_LOAD_WEAK_DYLIB: u32 = 0x8000_0018;
const LC_REEXPORT_DYLIB: u32 = 0x8000_001f;
const LC_LAZY_LOAD_DYLIB: u32 = 0x20;
const LC_LOAD_UPWARD_DYLIB: u32 = 0x8000_0023;
const LC_VERSION_MIN_MACOSX: u32 = 0x24;
const LC_BUILD_VERSION: u32 = 0x32;
const LC_CODE_SIGNATURE: u32 = 0x1d;
/// `CSMAGIC_EMBEDDED_SIGNATURE`, big-endian in the file.
const CSMAGIC_EMBEDDED_SIGNATURE: [u8; 4] = [0xfa, 0xde, 0x0c, 0xc0];

/// Reads a 64-bit little-endian Mach-O (what both macOS targets build).
pub fn read_macho(bytes: &[u8]) -> Result<MachO> {
    if u32_at(bytes, 0)? != MH_MAGIC_64 {
        return Err("not a 64-bit Mach-O file".into());
    }
    let cpu = match u32_at(bytes, 4)? {
        CPU_TYPE_ARM64 => "arm64",
        CPU_TYPE_X86_64 => "x86_64",
        other => return Err(format!("an unknown CPU type {other:#x}")),
    };
    let ncmds = u32_at(bytes, 16)?;
    let mut at = 32usize;
    let (mut min_os, mut dylibs, mut signed) = (None, Vec::new(), false);
    for _ in 0..ncmds.min(10_000) {
        let cmd = u32_at(bytes, at)?;
        let size = u32_at(bytes, at + 4)? as usize;
        if size < 8 {
            return Err(format!("a load command of {size} bytes at byte {at}"));
        }
        match cmd {
            LC_LOAD_DYLIB | LC_LOAD_WEAK_DYLIB | LC_REEXPORT_DYLIB | LC_LAZY_LOAD_DYLIB
            | LC_LOAD_UPWARD_DYLIB => {
                let name = u32_at(bytes, at + 8)? as usize;
                dylibs.push(c_str_at(bytes, at + name)?);
            }
            // minos is xxxx.yy.zz in nibbles: major in the high 16 bits, minor in the next 8.
            LC_BUILD_VERSION | LC_VERSION_MIN_MACOSX => {
                let field = if cmd == LC_BUILD_VERSION { 12 } else { 8 };
                let version = u32_at(bytes, at + field)?;
                min_os = Some(format!("{}.{}", version >> 16, (version >> 8) & 0xff));
            }
            LC_CODE_SIGNATURE => {
                let offset = u32_at(bytes, at + 8)? as usize;
                signed = bytes.get(offset..offset + 4) == Some(&CSMAGIC_EMBEDDED_SIGNATURE[..]);
            }
            _ => {}
        }
        at = at.checked_add(size).ok_or("load commands past the end")?;
    }
    Ok(MachO {
        cpu,
        min_os,
        dylibs,
        signed,
    })
}

/// Reads a PE32+ image's machine and import directory.
pub fn read_pe(bytes: &[u8]) -> Result<Pe> {
    if bytes.get(..2) != Some(b"MZ") {
        return Err("not a PE file (no MZ header)".into());
    }
    let pe = u32_at(bytes, 0x3c)? as usize;
    if bytes.get(pe..pe + 4) != Some(b"PE\0\0") {
        return Err("not a PE file (no PE signature)".into());
    }
    let machine = match u16_at(bytes, pe + 4)? {
        0x8664 => "x86_64".to_owned(),
        0xaa64 => "aarch64".to_owned(),
        other => format!("{other:#x}"),
    };
    let sections = u16_at(bytes, pe + 6)? as usize;
    let optional = pe + 24;
    let optional_size = u16_at(bytes, pe + 20)? as usize;
    if u16_at(bytes, optional)? != 0x20b {
        return Err("not a PE32+ (64-bit) image".into());
    }
    let import_rva = u32_at(bytes, optional + 112 + 8)?;
    let table = optional + optional_size;
    let offset_of = |rva: u32| -> Result<usize> {
        for i in 0..sections {
            let header = table + i * 40;
            let size = u32_at(bytes, header + 8)?.max(u32_at(bytes, header + 16)?);
            let start = u32_at(bytes, header + 12)?;
            if rva >= start && rva - start < size {
                return Ok((rva - start + u32_at(bytes, header + 20)?) as usize);
            }
        }
        Err(format!("RVA {rva:#x} is in no section"))
    };
    let mut dlls = Vec::new();
    if import_rva != 0 {
        let mut descriptor = offset_of(import_rva)?;
        // 20 bytes a descriptor; the list ends with one of zeros.
        for _ in 0..4096 {
            let name = u32_at(bytes, descriptor + 12)?;
            if name == 0 {
                break;
            }
            dlls.push(c_str_at(bytes, offset_of(name)?)?);
            descriptor += 20;
        }
    }
    Ok(Pe { machine, dlls })
}

/// DLLs every Windows 10 and 11 has (the system's own, not a redistributable's).
const WINDOWS_DLLS: &[&str] = &[
    "advapi32.dll",
    "bcrypt.dll",
    "bcryptprimitives.dll",
    "combase.dll",
    "crypt32.dll",
    "dnsapi.dll",
    "iphlpapi.dll",
    "kernel32.dll",
    "msvcrt.dll",
    "ncrypt.dll",
    "ntdll.dll",
    "ole32.dll",
    "oleaut32.dll",
    "secur32.dll",
    "shell32.dll",
    "shlwapi.dll",
    "ucrtbase.dll",
    "user32.dll",
    "userenv.dll",
    "ws2_32.dll",
];

/// The `.exe` at `bytes` is an x86_64 image that imports only DLLs Windows ships.
pub fn check_windows(bytes: &[u8]) -> Result<Pe> {
    let pe = read_pe(bytes)?;
    if pe.machine != "x86_64" {
        return Err(format!("built for {}, not x86_64", pe.machine));
    }
    let foreign: Vec<_> = pe
        .dlls
        .iter()
        .filter(|dll| {
            let dll = dll.to_ascii_lowercase();
            !(WINDOWS_DLLS.contains(&dll.as_str()) || dll.starts_with("api-ms-win-"))
        })
        .collect();
    if !foreign.is_empty() {
        return Err(format!(
            "imports DLLs Windows does not ship: {foreign:?} (a static C runtime is \
             `-C target-feature=+crt-static`, .cargo/config.toml)"
        ));
    }
    Ok(pe)
}

/// The Mach-O at `bytes` is for `cpu`, names `min_os` as its oldest macOS, and loads only
/// libraries of `/usr/lib` (libSystem above all): no framework, no library of the build machine.
pub fn check_macos(bytes: &[u8], cpu: &str, min_os: &str) -> Result<MachO> {
    let macho = read_macho(bytes)?;
    if macho.cpu != cpu {
        return Err(format!("built for {}, not {cpu}", macho.cpu));
    }
    if macho.min_os.as_deref() != Some(min_os) {
        return Err(format!(
            "names macOS {:?} as its oldest, not {min_os} (MACOSX_DEPLOYMENT_TARGET)",
            macho.min_os
        ));
    }
    if cpu == "arm64" && !macho.signed {
        return Err(
            "carries no code signature, and macOS on Apple silicon runs none without one \
                    (ad-hoc at least, as the linker writes it)"
                .into(),
        );
    }
    if !macho
        .dylibs
        .iter()
        .any(|d| d == "/usr/lib/libSystem.B.dylib")
    {
        return Err(format!("does not load libSystem: {:?}", macho.dylibs));
    }
    let foreign: Vec<_> = macho
        .dylibs
        .iter()
        .filter(|d| !(d.starts_with("/usr/lib/") && d.ends_with(".dylib")))
        .collect();
    if !foreign.is_empty() {
        return Err(format!(
            "loads what not every Mac has, or a framework this build must not need: {foreign:?}"
        ));
    }
    Ok(macho)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Mach-O header with the given load commands (each `cmd`, then its body).
    fn macho(cpu: u32, commands: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for word in [MH_MAGIC_64, cpu, 0, 2, commands.len() as u32, 0, 0, 0] {
            out.extend(word.to_le_bytes());
        }
        for (cmd, body) in commands {
            out.extend(cmd.to_le_bytes());
            out.extend((8 + body.len() as u32).to_le_bytes());
            out.extend(body);
        }
        out
    }

    fn dylib(name: &str) -> (u32, Vec<u8>) {
        // name offset (24: after cmd, cmdsize and the four dylib words), timestamp, versions.
        let mut body = Vec::new();
        for word in [24u32, 2, 0x10000, 0x10000] {
            body.extend(word.to_le_bytes());
        }
        body.extend(name.as_bytes());
        body.resize(body.len() + 8 - body.len() % 8, 0);
        (LC_LOAD_DYLIB, body)
    }

    fn build_version(major: u32, minor: u32) -> (u32, Vec<u8>) {
        let mut body = Vec::new();
        for word in [1u32, (major << 16) | (minor << 8), 0, 0] {
            body.extend(word.to_le_bytes());
        }
        (LC_BUILD_VERSION, body)
    }

    /// `LC_CODE_SIGNATURE` pointing at an embedded-signature blob appended to `image`.
    fn sign(mut image: Vec<u8>) -> Vec<u8> {
        let offset = image.len() as u32;
        image.extend(CSMAGIC_EMBEDDED_SIGNATURE);
        image.extend([0u8; 12]);
        // The command replaces a placeholder the image was made with (LC_CODE_SIGNATURE, 8 bytes).
        let at = image
            .windows(8)
            .position(|w| w == [0x1d, 0, 0, 0, 16, 0, 0, 0])
            .expect("a placeholder");
        image[at + 8..at + 12].copy_from_slice(&offset.to_le_bytes());
        image[at + 12..at + 16].copy_from_slice(&16u32.to_le_bytes());
        image
    }

    #[test]
    fn a_macho_is_read_and_checked() {
        let unsigned = macho(
            CPU_TYPE_ARM64,
            &[
                build_version(11, 0),
                dylib("/usr/lib/libSystem.B.dylib"),
                (LC_CODE_SIGNATURE, vec![0; 8]),
            ],
        );
        let error = check_macos(&unsigned, "arm64", "11.0").unwrap_err();
        assert!(error.contains("no code signature"), "{error}");
        let good = sign(unsigned);
        let read = check_macos(&good, "arm64", "11.0").unwrap();
        assert_eq!(read.dylibs, ["/usr/lib/libSystem.B.dylib"]);
        assert!(read.signed);
        assert!(
            check_macos(&good, "x86_64", "11.0")
                .unwrap_err()
                .contains("arm64")
        );
        let error = check_macos(&good, "arm64", "10.15").unwrap_err();
        assert!(
            error.contains("\"11.0\"") && error.contains("10.15"),
            "{error}"
        );

        let framework = macho(
            CPU_TYPE_X86_64,
            &[
                build_version(10, 15),
                dylib("/usr/lib/libSystem.B.dylib"),
                dylib("/System/Library/Frameworks/Security.framework/Versions/A/Security"),
            ],
        );
        let error = check_macos(&framework, "x86_64", "10.15").unwrap_err();
        assert!(error.contains("Security.framework"), "{error}");
    }

    #[test]
    fn a_bad_macho_is_an_error_not_a_panic() {
        assert!(
            read_macho(b"\x7fELF")
                .unwrap_err()
                .contains("not a 64-bit Mach-O")
        );
        let mut cut = macho(CPU_TYPE_ARM64, &[dylib("/usr/lib/libSystem.B.dylib")]);
        cut.truncate(40);
        assert!(read_macho(&cut).unwrap_err().contains("truncated"));
        let mut zero = macho(CPU_TYPE_ARM64, &[(LC_BUILD_VERSION, vec![])]);
        zero[36..40].copy_from_slice(&0u32.to_le_bytes());
        assert!(read_macho(&zero).unwrap_err().contains("0 bytes"));
    }

    /// A PE32+ image with one section holding an import directory for `dlls`.
    fn pe(dlls: &[&str]) -> Vec<u8> {
        let mut out = vec![0u8; 0x400];
        out[..2].copy_from_slice(b"MZ");
        out[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        out[0x80..0x84].copy_from_slice(b"PE\0\0");
        out[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes());
        out[0x86..0x88].copy_from_slice(&1u16.to_le_bytes());
        out[0x94..0x96].copy_from_slice(&240u16.to_le_bytes());
        let optional = 0x98;
        out[optional..optional + 2].copy_from_slice(&0x20bu16.to_le_bytes());
        // The import directory at RVA 0x1000, in a section mapped from file offset 0x200.
        out[optional + 120..optional + 124].copy_from_slice(&0x1000u32.to_le_bytes());
        let section = optional + 240;
        out[section..section + 5].copy_from_slice(b".idat");
        for (field, value) in [(8, 0x200u32), (12, 0x1000), (16, 0x200), (20, 0x200)] {
            out[section + field..section + field + 4].copy_from_slice(&value.to_le_bytes());
        }
        let names = 0x200 + 20 * (dlls.len() + 1);
        let mut name_at = names;
        for (i, dll) in dlls.iter().enumerate() {
            let descriptor = 0x200 + 20 * i;
            let rva = (name_at - 0x200 + 0x1000) as u32;
            out[descriptor + 12..descriptor + 16].copy_from_slice(&rva.to_le_bytes());
            out[name_at..name_at + dll.len()].copy_from_slice(dll.as_bytes());
            name_at += dll.len() + 1;
        }
        out
    }

    #[test]
    fn a_pe_import_table_is_read_and_checked() {
        let good = pe(&[
            "KERNEL32.dll",
            "ntdll.dll",
            "api-ms-win-core-synch-l1-2-0.dll",
        ]);
        assert_eq!(
            check_windows(&good).unwrap().dlls,
            [
                "KERNEL32.dll",
                "ntdll.dll",
                "api-ms-win-core-synch-l1-2-0.dll"
            ]
        );
        let error = check_windows(&pe(&["KERNEL32.dll", "libgcc_s_seh-1.dll"])).unwrap_err();
        assert!(
            error.contains("libgcc_s_seh-1.dll") && error.contains("crt-static"),
            "{error}"
        );
        assert!(read_pe(b"MZ").unwrap_err().contains("truncated"));
        assert!(read_pe(&[0u8; 64]).unwrap_err().contains("no MZ"));
    }
}
