//! Why a request through the egress proxy is refused before any policy is asked (`AskError`, what the
//! program is told), and the two checks every reader makes: a request head's bound, and the host a
//! request names (a name a rule could write, never an address). A leaf: the first request's reader
//! (`ask`) and plain HTTP's (`http`) both refuse in these terms.

/// Most bytes of an HTTP request head the proxy reads.
pub(crate) const MAX_HEAD: usize = 16 * 1024;

/// Why a first request is refused before any policy is asked: what the program is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    #[error("the connection closed before a request")]
    Closed,
    #[error("not a proxy request this proxy speaks (HTTP CONNECT, HTTP in absolute form, SOCKS5)")]
    Unknown,
    #[error("the request head is longer than {MAX_HEAD} bytes")]
    TooLong,
    #[error("a raw IP address ({0}): name the host")]
    Address(String),
    #[error("the Host header ({header}) is not the host asked for ({host})")]
    HostMismatch { host: String, header: String },
    #[error("more than one Host header ({0})")]
    HostHeaders(String),
    #[error(
        "a request for {host}:{port} on a connection opened to another host (a connection reaches one host)"
    )]
    OtherHost { host: String, port: u16 },
    #[error("the request's body cannot be framed: {0}")]
    BodyLength(String),
    #[error("SOCKS5 command {0} (only CONNECT)")]
    SocksCommand(u8),
    #[error("{0}")]
    Malformed(String),
}

/// The name and port of `authority` (`host`, `host:port`); an address is refused.
pub(crate) fn name_and_port(authority: &str, default_port: Option<u16>) -> Result<(String, u16), AskError> {
    if authority.starts_with('[') {
        return Err(AskError::Address(authority.to_owned()));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => {
            let port =
                port.parse::<u16>().map_err(|_| AskError::Malformed(format!("bad port in {authority:?}")))?;
            (host, port)
        }
        None => {
            (authority, default_port.ok_or_else(|| AskError::Malformed(format!("no port in {authority:?}")))?)
        }
    };
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if host.is_empty() {
        return Err(AskError::Malformed("an empty host".into()));
    }
    if host.parse::<std::net::IpAddr>().is_ok()
        || host.rsplit('.').next().is_some_and(|l| l.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(AskError::Address(host));
    }
    // A name a rule could write (letters, digits and hyphens between dots): no wildcard, no other bytes
    // to carry into a refusal, a prompt or, after "always", a policy file.
    if host.starts_with('*') || portcullis_harness::HostPattern::parse(&host).is_err() {
        return Err(AskError::Malformed(format!("{host:?} is not a host name")));
    }
    Ok((host, port))
}
