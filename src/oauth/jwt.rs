//! JWT access tokens (RFC 7519, RFC 9068) checked against a JWKS (RFC 7517): pure, no IO.
//!
//! The signature is checked by `ring` (already in the tree as rustls's crypto) before any claim
//! is read. Only asymmetric algorithms are taken, each with the one key type it is defined for,
//! so a public key can never be used as an HMAC secret and `none` is never a signature.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::Deserialize;

pub use crate::limits::{MAX_KEYS, MAX_TOKEN_BYTES, MAX_TOKEN_SCOPES, TOKEN_LEEWAY_S as LEEWAY_S};

/// Why a token was not taken. Worded for the token's holder; never echoes the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("the token is not a signed JWT (three base64url parts)")]
    Malformed,
    #[error(
        "the token's algorithm is not taken (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA are)"
    )]
    Algorithm,
    #[error("the token names a critical header extension this server does not understand")]
    Critical,
    #[error("the token was signed by a key the issuer does not publish")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token's claims are not a JSON object")]
    Claims,
    #[error("the token is from another issuer")]
    Issuer,
    #[error("the token is not meant for this server (its aud does not name this resource)")]
    Audience,
    #[error("the token has no exp")]
    NoExpiry,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYet,
    #[error("the token's {0} claim is neither a space-separated string nor an array of strings")]
    ScopeClaim(&'static str),
    #[error("the token's {0} claim holds more than {max} scopes", max = MAX_TOKEN_SCOPES)]
    TooManyScopes(&'static str),
}

/// A signing algorithm this server takes, and the key type it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Alg {
    Rs256,
    Rs384,
    Rs512,
    Ps256,
    Ps384,
    Ps512,
    Es256,
    Es384,
    EdDsa,
}

impl Alg {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "RS256" => Self::Rs256,
            "RS384" => Self::Rs384,
            "RS512" => Self::Rs512,
            "PS256" => Self::Ps256,
            "PS384" => Self::Ps384,
            "PS512" => Self::Ps512,
            "ES256" => Self::Es256,
            "ES384" => Self::Es384,
            "EdDSA" => Self::EdDsa,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Rs384 => "RS384",
            Self::Rs512 => "RS512",
            Self::Ps256 => "PS256",
            Self::Ps384 => "PS384",
            Self::Ps512 => "PS512",
            Self::Es256 => "ES256",
            Self::Es384 => "ES384",
            Self::EdDsa => "EdDSA",
        }
    }

    /// Whether `message` carries `sig` under `key`; `None` when the key is not of this
    /// algorithm's type.
    fn verify(self, key: &PublicKey, message: &[u8], sig: &[u8]) -> Option<bool> {
        let rsa = |params: &'static signature::RsaParameters| match key {
            PublicKey::Rsa { n, e } => Some(
                RsaPublicKeyComponents { n, e }
                    .verify(params, message, sig)
                    .is_ok(),
            ),
            _ => None,
        };
        let point = |alg: &'static dyn signature::VerificationAlgorithm, bytes: &[u8]| {
            UnparsedPublicKey::new(alg, bytes)
                .verify(message, sig)
                .is_ok()
        };
        match (self, key) {
            (Self::Rs256, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA256),
            (Self::Rs384, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
            (Self::Rs512, _) => rsa(&signature::RSA_PKCS1_2048_8192_SHA512),
            (Self::Ps256, _) => rsa(&signature::RSA_PSS_2048_8192_SHA256),
            (Self::Ps384, _) => rsa(&signature::RSA_PSS_2048_8192_SHA384),
            (Self::Ps512, _) => rsa(&signature::RSA_PSS_2048_8192_SHA512),
            (Self::Es256, PublicKey::P256(p)) => {
                Some(point(&signature::ECDSA_P256_SHA256_FIXED, p))
            }
            (Self::Es384, PublicKey::P384(p)) => {
                Some(point(&signature::ECDSA_P384_SHA384_FIXED, p))
            }
            (Self::EdDsa, PublicKey::Ed25519(x)) => Some(point(&signature::ED25519, x)),
            _ => None,
        }
    }
}

/// A public key, decoded once when the JWKS is read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PublicKey {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point: 0x04, x, y.
    P256(Vec<u8>),
    P384(Vec<u8>),
    Ed25519(Vec<u8>),
}

/// One signing key of the issuer's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Jwk {
    kid: Option<String>,
    /// The one algorithm the key is for, when the JWKS says.
    alg: Option<String>,
    key: PublicKey,
}

/// The issuer's signing keys: the usable ones of its JWKS (encryption keys, symmetric keys and
/// unknown types left out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Jwks {
    keys: Vec<Jwk>,
}

#[derive(Deserialize)]
struct RawJwks {
    keys: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawJwk {
    kty: String,
    kid: Option<String>,
    alg: Option<String>,
    #[serde(rename = "use")]
    use_: Option<String>,
    crv: Option<String>,
    n: Option<String>,
    e: Option<String>,
    x: Option<String>,
    y: Option<String>,
}

impl Jwks {
    /// Reads a JWKS document; keys this server cannot use are skipped, past [`MAX_KEYS`] too.
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        let raw: RawJwks =
            serde_json::from_slice(body).map_err(|_| "not a JWKS (an object with keys)")?;
        let keys: Vec<Jwk> = raw
            .keys
            .into_iter()
            .filter_map(|value| serde_json::from_value::<RawJwk>(value).ok())
            .filter_map(Jwk::from_raw)
            .take(MAX_KEYS)
            .collect();
        Ok(Self { keys })
    }

    /// How many usable keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no usable key is there.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }
}

impl Jwk {
    fn from_raw(raw: RawJwk) -> Option<Self> {
        if raw.use_.as_deref().is_some_and(|u| u != "sig") {
            return None;
        }
        let bytes = |part: &Option<String>| URL_SAFE_NO_PAD.decode(part.as_deref()?).ok();
        let key = match (raw.kty.as_str(), raw.crv.as_deref()) {
            ("RSA", _) => PublicKey::Rsa {
                n: strip_zeros(bytes(&raw.n)?),
                e: strip_zeros(bytes(&raw.e)?),
            },
            ("EC", Some(curve @ ("P-256" | "P-384"))) => {
                let (x, y) = (bytes(&raw.x)?, bytes(&raw.y)?);
                let size = if curve == "P-256" { 32 } else { 48 };
                if x.len() != size || y.len() != size {
                    return None;
                }
                let point = [&[4u8][..], &x, &y].concat();
                if size == 32 {
                    PublicKey::P256(point)
                } else {
                    PublicKey::P384(point)
                }
            }
            ("OKP", Some("Ed25519")) => PublicKey::Ed25519(bytes(&raw.x)?),
            _ => return None,
        };
        Some(Self {
            kid: raw.kid,
            alg: raw.alg,
            key,
        })
    }
}

/// An RSA modulus or exponent as ring reads it: big-endian, no leading zero bytes.
fn strip_zeros(mut bytes: Vec<u8>) -> Vec<u8> {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    bytes.drain(..zeros);
    bytes
}

/// What a token must say to be taken, and the time it is checked at.
pub struct Expect<'a> {
    pub issuer: &'a str,
    pub resource: &'a str,
    /// Seconds since the Unix epoch.
    pub now: f64,
}

/// A token that passed: the scopes it grants, and whom it was issued to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub scopes: Vec<String>,
    /// The `sub` claim, cut to [`MAX_SUBJECT_CHARS`] printable characters (the audit trail
    /// names the caller by it); `None` when the token carries none.
    pub subject: Option<String>,
}

/// The most characters of a token's `sub` kept: enough for any real subject (a UUID, an email,
/// a path-like id), and a bound on what one token puts in every audit line.
pub const MAX_SUBJECT_CHARS: usize = 128;

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
    crit: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Claims {
    iss: Option<String>,
    aud: Option<OneOrMany>,
    exp: Option<f64>,
    nbf: Option<f64>,
    scope: Option<ScopeClaim>,
    scp: Option<ScopeClaim>,
    /// Read as any JSON value: a `sub` that is not a string is no subject, not a bad token.
    sub: Option<serde_json::Value>,
}

/// A `scope` or `scp` claim as read: RFC 9068's space-separated string, or an array of strings
/// (some servers send `scope` so; Okta sends `scp` so, Entra ID as a string). At most
/// [`MAX_TOKEN_SCOPES`] are kept; whatever comes past them, or in another shape, is read over
/// without being kept, so the verdict names the claim instead of failing the whole token's JSON.
#[derive(Debug, PartialEq, Eq)]
enum ScopeClaim {
    Scopes(Vec<String>),
    /// A number, a boolean, an object, or an array holding something other than strings.
    Shape,
    /// More than [`MAX_TOKEN_SCOPES`].
    TooMany,
}

impl<'de> Deserialize<'de> for ScopeClaim {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScopeVisitor)
    }
}

struct ScopeVisitor;

/// One member of a scope array: a string, or anything else (read over, kept as nothing).
#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeItem {
    Scope(String),
    Other(serde::de::IgnoredAny),
}

impl<'de> serde::de::Visitor<'de> for ScopeVisitor {
    type Value = ScopeClaim;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a space-separated string or an array of strings")
    }

    fn visit_str<E>(self, text: &str) -> Result<ScopeClaim, E> {
        let mut scopes = Vec::new();
        for scope in text.split(' ').filter(|s| !s.is_empty()) {
            if scopes.len() == MAX_TOKEN_SCOPES {
                return Ok(ScopeClaim::TooMany);
            }
            scopes.push(scope.to_owned());
        }
        Ok(ScopeClaim::Scopes(scopes))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<ScopeClaim, A::Error> {
        let mut scopes = Vec::new();
        let verdict = loop {
            match seq.next_element::<ScopeItem>()? {
                None => break ScopeClaim::Scopes(scopes),
                Some(ScopeItem::Scope(scope)) if scope.is_empty() => {}
                Some(ScopeItem::Scope(_)) if scopes.len() == MAX_TOKEN_SCOPES => {
                    break ScopeClaim::TooMany;
                }
                Some(ScopeItem::Scope(scope)) => scopes.push(scope),
                Some(ScopeItem::Other(_)) => break ScopeClaim::Shape,
            }
        };
        // The rest is read over, unkept: the JSON must still be read to its end.
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(verdict)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ScopeClaim, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(ScopeClaim::Shape)
    }

    fn visit_bool<E>(self, _: bool) -> Result<ScopeClaim, E> {
        Ok(ScopeClaim::Shape)
    }

    fn visit_i64<E>(self, _: i64) -> Result<ScopeClaim, E> {
        Ok(ScopeClaim::Shape)
    }

    fn visit_u64<E>(self, _: u64) -> Result<ScopeClaim, E> {
        Ok(ScopeClaim::Shape)
    }

    fn visit_f64<E>(self, _: f64) -> Result<ScopeClaim, E> {
        Ok(ScopeClaim::Shape)
    }

    /// Not reached through the claims' `Option` (a `null` claim is no claim), refused elsewhere.
    fn visit_unit<E>(self) -> Result<ScopeClaim, E> {
        Ok(ScopeClaim::Shape)
    }
}

impl ScopeClaim {
    /// The scopes, or why the claim named `name` is refused.
    fn scopes(claim: Option<Self>, name: &'static str) -> Result<Vec<String>, Invalid> {
        match claim {
            None => Ok(Vec::new()),
            Some(Self::Scopes(scopes)) => Ok(scopes),
            Some(Self::Shape) => Err(Invalid::ScopeClaim(name)),
            Some(Self::TooMany) => Err(Invalid::TooManyScopes(name)),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(one) => vec![one],
            Self::Many(many) => many,
        }
    }
}

/// Checks `token`: its form, its algorithm, its signature with one of `keys`, then its claims.
pub fn verify(token: &str, keys: &Jwks, expect: &Expect<'_>) -> Result<Verified, Invalid> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Invalid::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(head), Some(body), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Invalid::Malformed);
    };
    let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| Invalid::Malformed);
    let header: Header = serde_json::from_slice(&decode(head)?).map_err(|_| Invalid::Malformed)?;
    let alg = Alg::parse(&header.alg).ok_or(Invalid::Algorithm)?;
    if header.crit.is_some() {
        return Err(Invalid::Critical);
    }
    let sig = decode(sig)?;
    let message = &token.as_bytes()[..head.len() + 1 + body.len()];
    let candidates = keys.keys.iter().filter(|k| match &header.kid {
        Some(kid) => k.kid.as_deref() == Some(kid),
        None => true,
    });
    let mut tried = false;
    let mut good = false;
    for key in candidates {
        if key.alg.as_deref().is_some_and(|a| a != alg.name()) {
            continue;
        }
        let Some(fits) = alg.verify(&key.key, message, &sig) else {
            continue;
        };
        tried = true;
        if fits {
            good = true;
            break;
        }
    }
    match (tried, good) {
        (_, true) => {}
        (false, _) if header.kid.as_deref().is_none_or(|kid| !keys.has_kid(kid)) => {
            return Err(Invalid::UnknownKey);
        }
        _ => return Err(Invalid::Signature),
    }
    let claims: Claims = serde_json::from_slice(&decode(body)?).map_err(|_| Invalid::Claims)?;
    check(claims, expect)
}

fn check(claims: Claims, expect: &Expect<'_>) -> Result<Verified, Invalid> {
    if claims.iss.as_deref() != Some(expect.issuer) {
        return Err(Invalid::Issuer);
    }
    let audience = claims.aud.map(OneOrMany::into_vec).unwrap_or_default();
    if !audience.iter().any(|a| a == expect.resource) {
        return Err(Invalid::Audience);
    }
    let exp = claims.exp.ok_or(Invalid::NoExpiry)?;
    if !exp.is_finite() || expect.now > exp + LEEWAY_S {
        return Err(Invalid::Expired);
    }
    if let Some(nbf) = claims.nbf
        && (!nbf.is_finite() || nbf > expect.now + LEEWAY_S)
    {
        return Err(Invalid::NotYet);
    }
    let mut scopes = ScopeClaim::scopes(claims.scope, "scope")?;
    scopes.extend(ScopeClaim::scopes(claims.scp, "scp")?);
    let subject = (claims.sub.as_ref())
        .and_then(serde_json::Value::as_str)
        .map(|sub| {
            (sub.chars())
                .filter(|c| !c.is_control())
                .take(MAX_SUBJECT_CHARS)
                .collect::<String>()
        })
        .filter(|sub| !sub.is_empty());
    Ok(Verified { scopes, subject })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair};
    use serde_json::json;

    const ISSUER: &str = "https://auth.example/realms/team";
    const RESOURCE: &str = "https://callosum.example/mcp";
    const NOW: f64 = 1_800_000_000.0;

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    struct Signer {
        pair: EcdsaKeyPair,
        kid: &'static str,
    }

    impl Signer {
        fn new(kid: &'static str) -> Self {
            let rng = SystemRandom::new();
            let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
            let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
            Self { pair, kid }
        }

        fn jwk(&self) -> serde_json::Value {
            let point = self.pair.public_key().as_ref();
            json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig", "alg": "ES256",
                   "x": b64(&point[1..33]), "y": b64(&point[33..])})
        }

        fn sign(&self, header: serde_json::Value, claims: serde_json::Value) -> String {
            let input = format!(
                "{}.{}",
                b64(header.to_string().as_bytes()),
                b64(claims.to_string().as_bytes())
            );
            let sig = self
                .pair
                .sign(&SystemRandom::new(), input.as_bytes())
                .unwrap();
            format!("{input}.{}", b64(sig.as_ref()))
        }

        fn token(&self, claims: serde_json::Value) -> String {
            self.sign(
                json!({"alg": "ES256", "kid": self.kid, "typ": "at+jwt"}),
                claims,
            )
        }
    }

    fn claims() -> serde_json::Value {
        json!({"iss": ISSUER, "aud": RESOURCE, "exp": NOW + 300.0, "nbf": NOW - 5.0,
               "scope": "callosum:read openid", "sub": "someone"})
    }

    fn keys(signers: &[&Signer]) -> Jwks {
        let doc = json!({"keys": signers.iter().map(|s| s.jwk()).collect::<Vec<_>>()});
        Jwks::parse(doc.to_string().as_bytes()).unwrap()
    }

    fn expect() -> Expect<'static> {
        Expect {
            issuer: ISSUER,
            resource: RESOURCE,
            now: NOW,
        }
    }

    #[test]
    fn a_good_token_gives_its_scopes() {
        let signer = Signer::new("k1");
        let verified = verify(&signer.token(claims()), &keys(&[&signer]), &expect()).unwrap();
        assert_eq!(verified.scopes, ["callosum:read", "openid"]);
        // `scp` as an array, `aud` as an array with the resource among others.
        let mut c = claims();
        c["aud"] = json!(["https://other.example", RESOURCE]);
        c["scp"] = json!(["callosum:write"]);
        c.as_object_mut().unwrap().remove("scope");
        let verified = verify(&signer.token(c), &keys(&[&signer]), &expect()).unwrap();
        assert_eq!(verified.scopes, ["callosum:write"]);
    }

    /// Scopes as authorization servers send them: RFC 8693's space-separated `scope`, a `scope`
    /// array (some servers), `scp` as Okta (an array) and Entra ID (a space-separated string)
    /// send it.
    #[test]
    fn scopes_are_read_from_scope_or_scp_as_a_string_or_an_array() {
        let signer = Signer::new("k1");
        let ks = keys(&[&signer]);
        let scopes = |scope: serde_json::Value, scp: serde_json::Value| {
            let mut c = claims();
            let object = c.as_object_mut().unwrap();
            object.remove("scope");
            for (key, value) in [("scope", scope), ("scp", scp)] {
                if value != json!("absent") {
                    object.insert(key.into(), value);
                }
            }
            verify(&signer.token(c), &ks, &expect()).map(|v| v.scopes)
        };
        let absent = || json!("absent");
        let cases = [
            (
                json!("callosum:read  openid"),
                absent(),
                vec!["callosum:read", "openid"],
            ),
            (
                json!(["callosum:read", "callosum:write"]),
                absent(),
                vec!["callosum:read", "callosum:write"],
            ),
            (
                absent(),
                json!("callosum:read callosum:write"),
                vec!["callosum:read", "callosum:write"],
            ),
            (absent(), json!(["callosum:write"]), vec!["callosum:write"]),
            (
                json!(["callosum:read", ""]),
                json!("openid"),
                vec!["callosum:read", "openid"],
            ),
            (json!([]), absent(), vec![]),
            (json!(null), json!(null), vec![]),
            (absent(), absent(), vec![]),
        ];
        for (scope, scp, want) in cases {
            let want: Vec<&str> = want;
            let what = format!("scope {scope}, scp {scp}");
            let got = scopes(scope, scp);
            assert_eq!(
                got,
                Ok(want.iter().map(|s| s.to_string()).collect()),
                "{what}"
            );
        }
    }

    #[test]
    fn a_scope_claim_of_another_shape_is_refused_naming_it() {
        let signer = Signer::new("k1");
        let ks = keys(&[&signer]);
        let with = |key: &str, value: serde_json::Value| {
            let mut c = claims();
            c.as_object_mut().unwrap().remove("scope");
            c[key] = value;
            verify(&signer.token(c), &ks, &expect())
        };
        for key in ["scope", "scp"] {
            for bad in [
                json!(3),
                json!(true),
                json!({"callosum:read": true}),
                json!(["callosum:read", 3]),
                json!(["callosum:read", ["callosum:write"]]),
                json!([null]),
            ] {
                let got = with(key, bad.clone()).unwrap_err();
                assert!(
                    matches!(got, Invalid::ScopeClaim(claim) if claim == key),
                    "{key}: {bad}: {got:?}"
                );
                let said = got.to_string();
                assert!(said.contains(&format!("{key} claim")), "{said}");
                assert!(!said.contains('"'), "it goes in a quoted header: {said}");
            }
            // Past the bound, as an array or as a string: refused, not cut.
            let many: Vec<String> = (0..=MAX_TOKEN_SCOPES).map(|i| format!("s{i}")).collect();
            let fits = json!(many[..MAX_TOKEN_SCOPES]);
            assert_eq!(with(key, fits).unwrap().scopes.len(), MAX_TOKEN_SCOPES);
            for past in [json!(many), json!(many.join(" "))] {
                let got = with(key, past).unwrap_err();
                assert_eq!(
                    got,
                    Invalid::TooManyScopes(if key == "scope" { "scope" } else { "scp" })
                );
                assert!(got.to_string().contains(&format!("{key} claim")), "{got}");
            }
        }
    }

    #[test]
    fn each_claim_rule_refuses_with_its_reason() {
        let signer = Signer::new("k1");
        let ks = keys(&[&signer]);
        let with = |key: &str, value: serde_json::Value| {
            let mut c = claims();
            if value.is_null() {
                c.as_object_mut().unwrap().remove(key);
            } else {
                c[key] = value;
            }
            verify(&signer.token(c), &ks, &expect())
        };
        assert_eq!(
            with("iss", json!("https://evil.example")),
            Err(Invalid::Issuer)
        );
        assert_eq!(
            with("iss", json!(format!("{ISSUER}/"))),
            Err(Invalid::Issuer)
        );
        assert_eq!(
            with("aud", json!(format!("{RESOURCE}/"))),
            Err(Invalid::Audience)
        );
        assert_eq!(with("aud", serde_json::Value::Null), Err(Invalid::Audience));
        assert_eq!(with("exp", serde_json::Value::Null), Err(Invalid::NoExpiry));
        assert_eq!(with("exp", json!(NOW - 61.0)), Err(Invalid::Expired));
        assert!(with("exp", json!(NOW - 59.0)).is_ok(), "within the leeway");
        assert_eq!(with("nbf", json!(NOW + 61.0)), Err(Invalid::NotYet));
        assert!(with("nbf", json!(NOW + 59.0)).is_ok(), "within the leeway");
        assert_eq!(with("exp", json!("tomorrow")), Err(Invalid::Claims));
    }

    #[test]
    fn forged_and_foreign_tokens_are_refused() {
        let signer = Signer::new("k1");
        let stranger = Signer::new("k1");
        let ks = keys(&[&signer]);
        // Same kid, another key: the signature does not verify.
        assert_eq!(
            verify(&stranger.token(claims()), &ks, &expect()),
            Err(Invalid::Signature)
        );
        // A kid the issuer does not publish.
        let unknown = Signer::new("k9");
        assert_eq!(
            verify(&unknown.token(claims()), &ks, &expect()),
            Err(Invalid::UnknownKey)
        );
        // A payload edited after signing.
        let token = signer.token(claims());
        let parts: Vec<&str> = token.split('.').collect();
        let mut edited = claims();
        edited["scope"] = json!("callosum:read callosum:write");
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            b64(edited.to_string().as_bytes()),
            parts[2]
        );
        assert_eq!(verify(&forged, &ks, &expect()), Err(Invalid::Signature));
        // `alg: none` with an empty signature, and an HMAC algorithm.
        for alg in ["none", "HS256", "HS512", "ES256K", ""] {
            let header = b64(json!({"alg": alg, "kid": "k1"}).to_string().as_bytes());
            let body = b64(claims().to_string().as_bytes());
            for sig in ["", "c2ln"] {
                let token = format!("{header}.{body}.{sig}");
                assert_eq!(
                    verify(&token, &ks, &expect()),
                    Err(Invalid::Algorithm),
                    "{alg}"
                );
            }
        }
        // An RSA algorithm named over an EC key: that key is never tried, so no key fits.
        let rs = signer.sign(json!({"alg": "RS256", "kid": "k1"}), claims());
        assert_eq!(verify(&rs, &ks, &expect()), Err(Invalid::Signature));
        // A critical extension.
        let crit = signer.sign(
            json!({"alg": "ES256", "kid": "k1", "crit": ["b64"]}),
            claims(),
        );
        assert_eq!(verify(&crit, &ks, &expect()), Err(Invalid::Critical));
    }

    #[test]
    fn garbage_is_malformed_never_a_panic() {
        let signer = Signer::new("k1");
        let ks = keys(&[&signer]);
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        for junk in [
            "",
            ".",
            "..",
            "...",
            "a.b",
            "a.b.c.d",
            "a.b.c.d.e",
            "%%%.%%%.%%%",
            "e30.e30.e30",
            "bnVsbA.bnVsbA.",
            &long,
        ] {
            let got = verify(junk, &ks, &expect());
            assert!(
                matches!(got, Err(Invalid::Malformed | Invalid::Algorithm)),
                "{junk:.20}: {got:?}"
            );
        }
    }

    #[test]
    fn a_token_without_kid_is_tried_on_every_fitting_key() {
        let a = Signer::new("a");
        let b = Signer::new("b");
        let token = b.sign(json!({"alg": "ES256"}), claims());
        assert!(verify(&token, &keys(&[&a, &b]), &expect()).is_ok());
        assert_eq!(
            verify(&token, &keys(&[&a]), &expect()),
            Err(Invalid::Signature)
        );
    }

    #[test]
    fn ed25519_keys_verify_eddsa() {
        let rng = SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let doc = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "ed",
                                    "x": b64(pair.public_key().as_ref())}]});
        let ks = Jwks::parse(doc.to_string().as_bytes()).unwrap();
        let input = format!(
            "{}.{}",
            b64(json!({"alg": "EdDSA", "kid": "ed"}).to_string().as_bytes()),
            b64(claims().to_string().as_bytes())
        );
        let token = format!("{input}.{}", b64(pair.sign(input.as_bytes()).as_ref()));
        assert!(verify(&token, &ks, &expect()).is_ok());
    }

    #[test]
    fn a_jwks_keeps_only_signing_keys_it_can_use() {
        let signer = Signer::new("k1");
        let doc = json!({"keys": [
            signer.jwk(),
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB", "kid": "enc"},
            {"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"},
            {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"},
            "not a key",
        ]});
        assert_eq!(Jwks::parse(doc.to_string().as_bytes()).unwrap().len(), 1);
        assert!(Jwks::parse(b"[]").is_err());
        assert!(Jwks::parse(b"{\"keys\": 3}").is_err());
        let many = json!({"keys": vec![signer.jwk(); MAX_KEYS + 10]});
        assert_eq!(
            Jwks::parse(many.to_string().as_bytes()).unwrap().len(),
            MAX_KEYS
        );
    }
}
