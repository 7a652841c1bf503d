//! How exposed a bind is: a loopback host, and the [`Exposure`] a start is checked against (which
//! one a `server:` block has is `Server::exposure`'s).

/// Reads a `server.host` as loopback when it is `localhost`, `::1` or any `127.*` address.
pub fn is_loopback(host: &str) -> bool {
    let host = crate::hosts::host_of(host);
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// How exposed a bind is, and whether the service may start on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Loopback: this machine only.
    Loopback,
    /// Open to the network, behind a token (the static one, or the authorization server's).
    Guarded,
    /// Open to the network with no token, because the operator said so.
    OpenByChoice,
    /// Open to the network with no token, and nobody said so: refuse to start.
    Refused,
}
