//! Host names and web origins as settings and headers give them: read, normalized, checked.
//! Below both the configuration (which checks `server.allowed_origins`) and the guard (which
//! compares `Host` and `Origin` headers against them), so neither imports the other for it.

/// The host part of a `Host` header value or a configured name, lower case, without port,
/// brackets or a trailing root dot: `[::1]:7423` → `::1`, `Callosum.LAN.:80` → `callosum.lan`.
pub fn host_of(value: &str) -> String {
    let value = value.trim();
    let host = if let Some(rest) = value.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        match value.rsplit_once(':') {
            // One colon followed by digits is a port; more colons is a bare IPv6 address.
            Some((host, port))
                if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) =>
            {
                host
            }
            _ => value,
        }
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// An origin as compared: lower case, no trailing slash, and no port that is its scheme's default
/// (`http://host:80` is `http://host`, `https://host:443` is `https://host`: RFC 6454, section
/// 6.2, serializes an origin without it, and a browser sends it so).
pub fn normalize_origin(origin: &str) -> String {
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    without_default_port(&origin, origin.starts_with("https://")).to_owned()
}

/// `authority` (or a whole origin) without `:80` (`:443` when `https`) at its end.
pub fn without_default_port(authority: &str, https: bool) -> &str {
    authority
        .strip_suffix(if https { ":443" } else { ":80" })
        .unwrap_or(authority)
}

/// Checks one configured origin: `http://` or `https://`, a host, an optional port, nothing else.
pub fn check_origin_setting(origin: &str) -> Result<String, String> {
    let normalized = normalize_origin(origin);
    let authority = normalized
        .strip_prefix("http://")
        .or_else(|| normalized.strip_prefix("https://"));
    match authority {
        Some(a) if !a.is_empty() && !a.contains(['/', '?', '#', '@', ' ', '*']) => Ok(normalized),
        _ if normalized == "*" => Err(
            "'*' is not accepted: it would let every web page call this service; name each origin"
                .into(),
        ),
        _ => Err(format!(
            "{origin:?} is not an origin; write scheme://host[:port], as https://app.example"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_read_without_port_brackets_case_or_root_dot() {
        for (value, host) in [
            ("localhost:7423", "localhost"),
            ("LOCALHOST", "localhost"),
            ("[::1]:7423", "::1"),
            ("::1", "::1"),
            ("127.0.0.1:80", "127.0.0.1"),
            ("Callosum.LAN.:8443", "callosum.lan"),
            ("rebind.attacker.example:7423", "rebind.attacker.example"),
        ] {
            assert_eq!(host_of(value), host, "{value}");
        }
    }

    #[test]
    fn an_origin_is_one_with_or_without_its_default_port() {
        assert_eq!(normalize_origin("http://Host:80/"), "http://host");
        assert_eq!(normalize_origin("https://host:443"), "https://host");
        assert_eq!(normalize_origin("http://[::1]:80"), "http://[::1]");
        for kept in [
            "http://host:8080",
            "https://host:80",
            "http://host:443",
            "http://host:180",
        ] {
            assert_eq!(normalize_origin(kept), kept);
        }
    }

    #[test]
    fn origin_settings_are_checked() {
        assert_eq!(
            check_origin_setting("https://App.example:8443/"),
            Ok("https://app.example:8443".into())
        );
        assert!(
            check_origin_setting("*")
                .unwrap_err()
                .contains("every web page")
        );
        for bad in [
            "app.example",
            "https://app.example/path",
            "ftp://x",
            "https://",
        ] {
            assert!(check_origin_setting(bad).is_err(), "{bad}");
        }
    }
}
