//! The HTTP clients store calls go through, and what they trust.
//!
//! Two clients are shared by every store: hyper's pooled client for the HTTP protocols
//! (`transport::direct`), and reqwest for MCP servers over streamable HTTP and for an HTTP store a
//! proxy variable covers. Both are built over the same settings (user agent, no redirects,
//! `TCP_NODELAY`, pool idle timeout) and one rustls config: ring, the webpki roots, the OS store
//! when `tls.trust_system_store` says so. A store with `tls_ca_file` gets a client of its own,
//! built the same way with that file's certificates trusted too, for that store only.
//!
//! A handshake that fails is worded here ([`rejected`]), for both: by the kind of rustls error
//! met, never its text.
//!
//! It does not call stores (`remote` and `mcp::client` do) or decide which store gets which
//! client (`roster` binds).

use super::transport::{self, Direct, POOL_IDLE, Proxies, Target, Transport};
use crate::ledger::Ledger;
use crate::limits::MAX_CA_FILE_BYTES;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// The client MCP servers over HTTP are called with: the stores' own (rmcp's protocol runs over
/// it in `store::mcp::http`, which counts what arrives in the ledger).
pub type McpHttp = reqwest::Client;

/// Why the store clients could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("could not build the HTTP client for stores: {0}")]
    Http(#[from] reqwest::Error),
    #[error("no TLS protocol version is available: {0}")]
    Tls(#[from] rustls::Error),
}

/// The shared clients, and the roots every client trusts.
#[derive(Clone)]
pub struct Clients {
    /// The webpki roots, and the OS store's when `tls.trust_system_store` is on.
    roots: Arc<RootCertStore>,
    /// The HTTP protocols' calls, straight over hyper's pool.
    direct: Direct,
    /// reqwest, for a store a proxy covers and for MCP servers over HTTP.
    http: reqwest::Client,
    /// The environment's proxy rules, read once.
    proxies: Arc<Proxies>,
    /// The process's bound on the bytes of store answers held, whatever the protocol.
    answers: Arc<Ledger>,
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("roots", &self.roots.len())
            .finish_non_exhaustive()
    }
}

impl Clients {
    /// Builds the shared clients. The OS store is read once, here, when `trust_system_store`.
    ///
    /// It also makes ring the process's rustls provider, when none is yet: the MCP client's
    /// reqwest is built without one of its own (so as not to bring aws-lc-rs in), and any of its
    /// clients built without a config (rmcp's default one) would panic without it.
    pub fn new(trust_system_store: bool) -> Result<Self, BuildError> {
        // An `Err` is a provider already installed (by whoever embeds us): that one stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let roots = Arc::new(roots(trust_system_store));
        Ok(Self {
            direct: transport::direct(tls_config(&roots, &[])?),
            http: http_client(&roots)?,
            proxies: Arc::new(Proxies::from_env()),
            answers: Arc::new(Ledger::default()),
            roots,
        })
    }

    /// How a store of an HTTP protocol at `target` is called: straight, over the shared pool (a
    /// clone shares it) or, with `tls_ca_file`, a pool of its own that trusts that file's
    /// certificates too; through reqwest, built the same way, when a proxy covers it.
    pub fn transport(&self, ca_file: Option<&Path>, target: &Target) -> Result<Transport, String> {
        let built = |_| "the store's HTTP client could not be built".to_owned();
        let roots = ca_file.map(|path| self.with_ca_file(path)).transpose()?;
        Ok(match (self.proxies.cover(target), roots) {
            (false, None) => Transport::Direct(Box::new(self.direct.clone())),
            (false, Some(roots)) => Transport::Direct(Box::new(transport::direct(
                tls_config(&roots, &[]).map_err(built)?,
            ))),
            (true, None) => Transport::Proxied(self.http.clone()),
            (true, Some(roots)) => Transport::Proxied(http_client(&roots).map_err(built)?),
        })
    }

    /// The client for an `mcp` store over HTTP: the shared one (a clone shares its pool), or,
    /// with `tls_ca_file`, one of its own that trusts that file's certificates too.
    pub fn mcp(&self, ca_file: Option<&Path>) -> Result<McpHttp, String> {
        match ca_file {
            None => Ok(self.http.clone()),
            Some(path) => {
                let roots = self.with_ca_file(path)?;
                http_client(&roots).map_err(|_| "the store's HTTP client could not be built".into())
            }
        }
    }

    /// The process's count of store-answer bytes held, every store's answers in it.
    pub fn answers(&self) -> Arc<Ledger> {
        self.answers.clone()
    }

    /// The shared roots plus the certificates of `path`, or why that file cannot be used (worded
    /// with the key and the file; the caller names the store).
    fn with_ca_file(&self, path: &Path) -> Result<RootCertStore, String> {
        let certificates =
            read_ca_file(path).map_err(|why| format!("tls_ca_file {}: {why}", path.display()))?;
        let mut roots = (*self.roots).clone();
        for certificate in certificates {
            roots.add(certificate).map_err(|_| {
                format!(
                    "tls_ca_file {}: a CERTIFICATE block in it is not a certificate",
                    path.display()
                )
            })?;
        }
        Ok(roots)
    }
}

/// Reads a PEM file of one or more CERTIFICATE blocks, at most [`MAX_CA_FILE_BYTES`]. Other
/// blocks (a key someone left in) are passed over; a file with no certificate is refused.
pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot be read ({})", e.kind()))?;
    let mut bytes = Vec::new();
    // One byte past the cap tells a file at the cap from a larger one.
    (file.take(MAX_CA_FILE_BYTES + 1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({})", e.kind()))?;
    if bytes.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(format!(
            "is larger than {} KiB; a CA bundle is a few KiB",
            MAX_CA_FILE_BYTES / 1024
        ));
    }
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| "is not PEM: a block in it cannot be read".to_owned())?;
    if certificates.is_empty() {
        return Err(
            "holds no certificate (a PEM file of -----BEGIN CERTIFICATE----- blocks)".into(),
        );
    }
    Ok(certificates)
}

/// The roots every store client trusts: the webpki roots, then the OS store's when asked. The OS
/// store often holds ancient certificates rustls cannot parse: those are passed over, as reqwest
/// does.
fn roots(trust_system_store: bool) -> RootCertStore {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if trust_system_store {
        let (certs, errors) = system_roots();
        let (added, ignored) = roots.add_parsable_certificates(certs);
        if errors > 0 || ignored > 0 {
            tracing::debug!(added, ignored, errors, "OS certificate store read in part");
        }
    }
    roots
}

/// The OS store's certificates, and how many of its sources could not be read.
#[cfg(not(target_os = "macos"))]
fn system_roots() -> (Vec<CertificateDer<'static>>, usize) {
    let native = rustls_native_certs::load_native_certs();
    (native.certs, native.errors.len())
}

/// The OS store's certificates on macOS: the system roots as the OS ships them in
/// `/etc/ssl/cert.pem`, read as a file, so the binary links no Security framework (contract §7).
/// Roots a user added to the login Keychain are not among them: name such a CA in `tls_ca_file`.
#[cfg(target_os = "macos")]
fn system_roots() -> (Vec<CertificateDer<'static>>, usize) {
    match std::fs::read("/etc/ssl/cert.pem") {
        Ok(bytes) => {
            let (mut certs, mut errors) = (Vec::new(), 0);
            // The file is the OS's, but read as any input: the first bad block ends the reading.
            for cert in CertificateDer::pem_slice_iter(&bytes) {
                match cert {
                    Ok(cert) => certs.push(cert),
                    Err(_) => {
                        errors += 1;
                        break;
                    }
                }
            }
            (certs, errors)
        }
        Err(_) => (Vec::new(), 1),
    }
}

/// A reqwest builder over the one rustls config, with the webpki roots and, with
/// `trust_system_store`, the OS store's: for the OAuth issuer, which is no store but is reached as
/// one would be.
pub fn tls_builder(trust_system_store: bool) -> Result<reqwest::ClientBuilder, BuildError> {
    let roots = roots(trust_system_store);
    Ok(
        reqwest::Client::builder()
            .use_preconfigured_tls(tls_config(&roots, &[b"h2", b"http/1.1"])?),
    )
}

/// The one rustls config of every store client: ring, TLS 1.2 and 1.3, `roots`, no client
/// certificate, offering `alpn`.
fn tls_config(roots: &RootCertStore, alpn: &[&[u8]]) -> Result<rustls::ClientConfig, BuildError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots.clone())
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// Who calls, on every store call.
pub const USER_AGENT: &str = concat!("seren-corpus-callosum/", env!("CARGO_PKG_VERSION"));

// The two builders below set the same things; reqwest's two major versions have no common type to
// set them through once. Whatever is added to one is added to the other.

/// The HTTP protocols' client: HTTP/2 where the store offers it (as reqwest's own TLS would).
fn http_client(roots: &RootCertStore) -> Result<reqwest::Client, BuildError> {
    Ok(reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .use_preconfigured_tls(tls_config(roots, &[b"h2", b"http/1.1"])?)
        // A redirect would send the query (and perhaps a token) somewhere not configured.
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .pool_idle_timeout(POOL_IDLE)
        .build()?)
}

/// Words for a TLS handshake that failed, when `error`'s chain holds one: `tls: ...`, by the kind
/// of rustls error, never its text (which names hosts and what the server sent).
pub fn rejected(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(cause) = next {
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return Some(format!("tls: {}", tls_words(tls)));
        }
        // An IO error that holds another error gives that one's *source* as its own, skipping
        // the error itself; and hyper-rustls holds tokio-rustls's IO error (which holds rustls's)
        // in an IO error of its own. So the walk goes into what an IO error holds.
        next = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => cause.source(),
        };
    }
    None
}

fn tls_words(error: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    use rustls::Error as E;
    match error {
        E::InvalidCertificate(certificate) => match certificate {
            C::UnknownIssuer => {
                "the server's certificate is not trusted (unknown issuer; a private CA goes in tls_ca_file)"
                    .into()
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                "the server's certificate is not valid for this host name".into()
            }
            C::Expired | C::ExpiredContext { .. } => "the server's certificate has expired".into(),
            C::NotValidYet | C::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet".into()
            }
            C::Revoked => "the server's certificate is revoked".into(),
            C::BadEncoding => "the server's certificate cannot be read".into(),
            C::BadSignature | C::UnsupportedSignatureAlgorithmContext { .. } => {
                "the server's certificate has a bad or unsupported signature".into()
            }
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
                "the server's certificate is not for a TLS server".into()
            }
            _ => "the server's certificate is invalid".into(),
        },
        E::NoCertificatesPresented => "the server presented no certificate".into(),
        E::AlertReceived(_) => "the server refused the handshake (an alert)".into(),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
            "the server does not speak TLS here (is the url http://?)".into()
        }
        E::PeerIncompatible(_) => "the server offers no TLS version or cipher in common".into(),
        _ => "the handshake failed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handshake_is_worded_by_kind_inside_an_io_error() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        // As hyper-rustls gives it: tokio-rustls's IO error inside one of its own.
        let inner = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        let io = std::io::Error::other(inner);
        assert_eq!(
            rejected(&io).as_deref(),
            Some(
                "tls: the server's certificate is not trusted (unknown issuer; a private CA goes in tls_ca_file)"
            )
        );
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "no");
        assert_eq!(rejected(&refused), None);
    }

    #[test]
    fn a_ca_file_is_pem_certificates_under_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let check = |name: &str, bytes: &[u8], expected: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let why = read_ca_file(&path).unwrap_err();
            assert!(why.contains(expected), "{name}: {why}");
        };
        check("empty.pem", b"", "holds no certificate");
        check(
            "garbage.pem",
            b"\x00\xffnot pem at all",
            "holds no certificate",
        );
        check(
            "broken.pem",
            b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
            "is not PEM",
        );
        check(
            "key.pem",
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            "holds no certificate",
        );
        check(
            "huge.pem",
            &vec![b'a'; MAX_CA_FILE_BYTES as usize + 1],
            "is larger than 1024 KiB",
        );
        let missing = read_ca_file(&dir.path().join("missing.pem")).unwrap_err();
        assert_eq!(missing, "cannot be read (entity not found)");
    }
}
