//! A TLS-terminating front for any stub on loopback: `https://127.0.0.1:PORT` whose connections
//! are decrypted and piped, byte for byte, to the stub's plain `http://` port. Its certificate is
//! a leaf for `127.0.0.1` and `localhost`, issued by a CA made for this front alone (rcgen, at test
//! time), so nothing trusts it until a store names the CA's PEM as its `tls_ca_file`.

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// The front on a loopback port; stops accepting when dropped.
pub struct TlsFront {
    /// `https://127.0.0.1:PORT`, plus the path of the url it fronts.
    pub url: String,
    /// The CA that issued the front's certificate, PEM.
    pub ca_pem: String,
    _stop: tokio_util::sync::DropGuard,
}

/// A CA, and a leaf for `127.0.0.1` and `localhost` it signed: (CA PEM, leaf chain, leaf key).
fn issue() -> (String, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "callosum test CA");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    (ca.pem(), vec![leaf.der().clone()], key)
}

impl TlsFront {
    /// Fronts `http_url` (`http://127.0.0.1:PORT[/path]`): the same path, over TLS.
    pub async fn start(http_url: &str) -> Self {
        let upstream = url::Url::parse(http_url).unwrap();
        let target = format!(
            "{}:{}",
            upstream.host_str().unwrap(),
            upstream.port().unwrap()
        );
        // The stubs speak HTTP/1.1 only: a client offered h2 falls back to it.
        let (ca_pem, port, stop) = serve_tls(b"http/1.1", move |mut tls| {
            let target = target.clone();
            async move {
                let Ok(mut plain) = TcpStream::connect(&target).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            }
        })
        .await;
        let path = upstream.path().trim_end_matches('/');
        Self {
            url: format!("https://127.0.0.1:{port}{path}"),
            ca_pem,
            _stop: stop.drop_guard(),
        }
    }

    /// Writes the CA's PEM into `dir` as `name`: the path to give as `tls_ca_file`.
    pub fn write_ca(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, &self.ca_pem).unwrap();
        path
    }
}

/// A store over TLS that speaks HTTP/2 only (ALPN `h2`): every request is answered with `answer`,
/// and the HTTP version each came in is kept. Stops accepting when dropped.
pub struct H2Store {
    pub url: String,
    pub ca_pem: String,
    pub versions: Arc<std::sync::Mutex<Vec<axum::http::Version>>>,
    _stop: tokio_util::sync::DropGuard,
}

impl H2Store {
    pub async fn start(answer: bytes::Bytes) -> Self {
        use hyper_util::rt::{TokioExecutor, TokioIo};
        let versions = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = versions.clone();
        let (ca_pem, port, stop) = serve_tls(b"h2", move |tls| {
            let (answer, seen) = (answer.clone(), seen.clone());
            async move {
                let service = hyper::service::service_fn(move |request: axum::http::Request<_>| {
                    seen.lock().unwrap().push(request.version());
                    let answer = answer.clone();
                    async move {
                        let mut response =
                            axum::http::Response::new(http_body_util::Full::new(answer));
                        response.headers_mut().insert(
                            axum::http::header::CONTENT_TYPE,
                            axum::http::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            }
        })
        .await;
        Self {
            url: format!("https://127.0.0.1:{port}"),
            ca_pem,
            versions,
            _stop: stop.drop_guard(),
        }
    }
}

/// Accepts TLS connections on a loopback port with a certificate a CA made for it alone,
/// offering `alpn`, and hands each to `serve`: (the CA's PEM, the port, what stops it when
/// dropped). A client that refuses the certificate ends the handshake: nothing is served.
async fn serve_tls<F, Fut>(alpn: &[u8], serve: F) -> (String, u16, CancellationToken)
where
    F: Fn(tokio_rustls::server::TlsStream<TcpStream>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (ca_pem, chain, key) = issue();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![alpn.to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, serve) = (CancellationToken::new(), Arc::new(serve));
    let cancelled = stop.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                () = cancelled.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((socket, _)) = accepted else { continue };
            let (acceptor, serve) = (acceptor.clone(), serve.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(socket).await {
                    serve(tls).await;
                }
            });
        }
    });
    (ca_pem, port, stop)
}
