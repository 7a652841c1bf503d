//! `server.oauth`: the authorization server whose access tokens this service takes (contract §6b),
//! checked into [`OAuth`]. Only the settings; verifying a token is `crate::oauth`'s.

use super::exposure::is_loopback;
use serde::Deserialize;
use url::Url;

/// Where protected-resource metadata is served (RFC 9728 §3), before the resource's path.
pub const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// The `server.oauth` block as written (every field optional; what is missing is named).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FileOAuth {
    pub(super) issuer: Option<String>,
    pub(super) resource: Option<String>,
    pub(super) jwks_url: Option<String>,
    pub(super) read_scope: Option<String>,
    pub(super) write_scope: Option<String>,
}

/// An OAuth 2.1 authorization server, and what this service is to it, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth {
    /// The authorization server's issuer identifier, byte for byte as configured: a token's `iss`
    /// must equal it, and so must the `issuer` of its discovery document.
    pub issuer: String,
    /// The issuer as a url, for finding its discovery documents.
    pub issuer_url: Url,
    /// This server's canonical MCP url, byte for byte as configured: the protected-resource
    /// metadata's `resource`, and a member a token's `aud` must have.
    pub resource: String,
    /// Where the keys are, when not from the issuer's discovery document.
    pub jwks_url: Option<Url>,
    pub read_scope: String,
    pub write_scope: String,
}

impl OAuth {
    /// The path-inserted protected-resource metadata url (RFC 9728 §3.1): the resource's origin,
    /// then `/.well-known/oauth-protected-resource`, then the resource's path.
    pub fn metadata_url(&self) -> String {
        let url = Url::parse(&self.resource).expect("checked at load");
        let origin = url.origin().ascii_serialization();
        format!("{origin}{}", self.metadata_path())
    }

    /// The path of [`OAuth::metadata_url`] on this server.
    pub fn metadata_path(&self) -> String {
        let url = Url::parse(&self.resource).expect("checked at load");
        let path = url.path().trim_end_matches('/');
        format!("{PROTECTED_RESOURCE_PATH}{path}")
    }
}

/// The block, checked; each problem named with its key.
pub(super) fn read(file: FileOAuth, problems: &mut Vec<String>) -> Option<OAuth> {
    let before = problems.len();
    let issuer = required(file.issuer, "server.oauth.issuer", problems);
    let resource = required(file.resource, "server.oauth.resource", problems);
    let issuer_url = issuer
        .as_deref()
        .and_then(|text| endpoint("server.oauth.issuer", text, problems));
    if let Some(resource) = &resource
        && let Some(url) = endpoint("server.oauth.resource", resource, problems)
        && url.fragment().is_some()
    {
        problems.push("server.oauth.resource must not have a #fragment (RFC 8707)".into());
    }
    let jwks_url = file
        .jwks_url
        .as_deref()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .and_then(|text| endpoint("server.oauth.jwks_url", text, problems));
    let read_scope = scope(file.read_scope, "read_scope", "callosum:read", problems);
    let write_scope = scope(file.write_scope, "write_scope", "callosum:write", problems);
    if problems.len() > before {
        return None;
    }
    Some(OAuth {
        issuer: issuer?,
        issuer_url: issuer_url?,
        resource: resource?,
        jwks_url,
        read_scope,
        write_scope,
    })
}

fn required(value: Option<String>, key: &str, problems: &mut Vec<String>) -> Option<String> {
    match value {
        Some(text) if !text.trim().is_empty() => Some(text),
        _ => {
            problems.push(format!("{key} is required when server.oauth is set"));
            None
        }
    }
}

/// A url tokens or keys come from, or tokens are meant for: `https://`, or `http://` on loopback
/// only (tests, a local set-up), never with credentials in it.
fn endpoint(key: &str, text: &str, problems: &mut Vec<String>) -> Option<Url> {
    let url = match Url::parse(text) {
        Ok(url) => url,
        Err(why) => {
            problems.push(format!("{key} is not a url ({why})"));
            return None;
        }
    };
    let loopback = url.host_str().is_some_and(is_loopback);
    let fine = match url.scheme() {
        "https" => url.host_str().is_some(),
        "http" => loopback,
        _ => false,
    };
    if !fine {
        problems.push(format!(
            "{key} must be an https:// url (http:// only on loopback)"
        ));
        return None;
    }
    if !url.username().is_empty() || url.password().is_some() {
        problems.push(format!("{key} must not carry a user or password"));
        return None;
    }
    Some(url)
}

fn scope(value: Option<String>, key: &str, default: &str, problems: &mut Vec<String>) -> String {
    let Some(text) = value else {
        return default.to_owned();
    };
    let text = text.trim();
    // RFC 6749 §3.3: a scope token is printable ASCII but space, `"` and `\`.
    let fine = !text.is_empty()
        && text
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
    if !fine {
        problems.push(format!(
            "server.oauth.{key} must be one scope token (printable ASCII, no space, quote or backslash)"
        ));
        return default.to_owned();
    }
    text.to_owned()
}
