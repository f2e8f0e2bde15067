//! The first thing a program says to the egress proxy, read: an HTTP `CONNECT host:port`, a plain HTTP
//! request in absolute form (`GET http://host/path`), or a SOCKS5 greeting and `CONNECT` to a domain name.
//! Only names are accepted: a request for a raw address is refused here, before any policy is asked,
//! since a rule names hosts and an address is no host a rule can name.

pub use super::refusals::AskError;
use super::refusals::{MAX_HEAD, name_and_port};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Where a program asked to go, and how it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// `CONNECT host:port`: a tunnel (TLS, usually), answered `200` once allowed.
    Connect { host: String, port: u16 },
    /// A plain HTTP request; `head` is its head as the program sent it. The proxy reads it again, with
    /// every request after it on the connection (`http::RequestStream`), and rewrites each for the origin.
    Http { host: String, port: u16, head: Vec<u8> },
    /// A SOCKS5 `CONNECT` to a domain name, answered once allowed.
    Socks { host: String, port: u16 },
}

impl Ask {
    pub fn host(&self) -> &str {
        match self {
            Ask::Connect { host, .. } | Ask::Http { host, .. } | Ask::Socks { host, .. } => host,
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            Ask::Connect { port, .. } | Ask::Http { port, .. } | Ask::Socks { port, .. } => *port,
        }
    }
}

/// Reads the first request of `stream`, and what the program sent after its head already (a body's
/// start, or a tunnel's first bytes from a client that does not wait for the `200`). SOCKS5's greeting
/// is answered here (no authentication); the answer to the request itself is the caller's, once it has
/// decided.
pub async fn read_ask<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> Result<(Ask, Vec<u8>), AskError> {
    let mut first = [0u8; 1];
    if stream.read(&mut first).await.map_err(|_| AskError::Closed)? == 0 {
        return Err(AskError::Closed);
    }
    if first[0] == 5 {
        // SOCKS clients wait for each answer: read field by field, nothing beyond.
        return Ok((read_socks(stream).await?, Vec::new()));
    }
    let mut head = first.to_vec();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            let early = head.split_off(end + 4);
            return Ok((http_ask(&head)?, early));
        }
        if head.len() >= MAX_HEAD {
            return Err(AskError::TooLong);
        }
        let n = stream.read(&mut chunk).await.map_err(|_| AskError::Closed)?;
        if n == 0 {
            return Err(AskError::Closed);
        }
        head.extend_from_slice(&chunk[..n]);
    }
}

fn http_ask(head: &[u8]) -> Result<Ask, AskError> {
    let text = std::str::from_utf8(head).map_err(|_| AskError::Unknown)?;
    let request = text.split("\r\n").next().ok_or(AskError::Unknown)?;
    let mut parts = request.split(' ');
    if let (Some("CONNECT"), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    {
        if !version.starts_with("HTTP/1.") {
            return Err(AskError::Unknown);
        }
        let (host, port) = name_and_port(target, None)?;
        return Ok(Ask::Connect { host, port });
    }
    let request = super::http::parse_head(head)?;
    Ok(Ask::Http { host: request.host, port: request.port, head: head.to_vec() })
}

async fn read_socks<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> Result<Ask, AskError> {
    let closed = |_| AskError::Closed;
    let n = stream.read_u8().await.map_err(closed)?;
    let mut methods = vec![0u8; usize::from(n)];
    stream.read_exact(&mut methods).await.map_err(closed)?;
    if !methods.contains(&0) {
        let _ = stream.write_all(&[5, 0xff]).await;
        return Err(AskError::Malformed("SOCKS5 without the no-authentication method".into()));
    }
    stream.write_all(&[5, 0]).await.map_err(closed)?;
    let mut request = [0u8; 4];
    stream.read_exact(&mut request).await.map_err(closed)?;
    let [version, command, _, address_type] = request;
    if version != 5 {
        return Err(AskError::Unknown);
    }
    let host = match address_type {
        3 => {
            let len = stream.read_u8().await.map_err(closed)?;
            let mut name = vec![0u8; usize::from(len)];
            stream.read_exact(&mut name).await.map_err(closed)?;
            String::from_utf8(name)
                .map_err(|_| AskError::Malformed("a SOCKS5 name that is not text".into()))?
        }
        1 | 4 => {
            let _ = stream.write_all(&socks_reply(2)).await;
            return Err(AskError::Address(if address_type == 1 {
                "an IPv4 address".into()
            } else {
                "an IPv6 address".into()
            }));
        }
        other => return Err(AskError::Malformed(format!("SOCKS5 address type {other}"))),
    };
    let port = stream.read_u16().await.map_err(closed)?;
    if command != 1 {
        let _ = stream.write_all(&socks_reply(7)).await;
        return Err(AskError::SocksCommand(command));
    }
    let (host, port) = match name_and_port(&host, Some(port)) {
        Ok((host, _)) => (host, port),
        Err(e) => {
            let _ = stream.write_all(&socks_reply(2)).await;
            return Err(e);
        }
    };
    Ok(Ask::Socks { host, port })
}

/// A SOCKS5 reply with `code` (0: granted, 2: not allowed by the ruleset, 7: command not supported).
pub fn socks_reply(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ask(bytes: &[u8]) -> (Result<Ask, AskError>, Vec<u8>) {
        let (mut client, mut proxy) = tokio::io::duplex(64 * 1024);
        client.write_all(bytes).await.unwrap();
        let result = read_ask(&mut proxy).await.map(|(ask, _)| ask);
        drop(proxy);
        let mut answered = Vec::new();
        client.read_to_end(&mut answered).await.unwrap();
        (result, answered)
    }

    /// A request, and the host and port read from it or what its refusal says.
    type Row = (&'static str, Result<(&'static str, u16), &'static str>);

    #[tokio::test]
    async fn http_requests_read_and_refused() {
        let table: &[Row] = &[
            (
                "CONNECT registry.npmjs.org:443 HTTP/1.1\r\nHost: registry.npmjs.org:443\r\n\r\n",
                Ok(("registry.npmjs.org", 443)),
            ),
            ("CONNECT Registry.NPMjs.org.:443 HTTP/1.1\r\n\r\n", Ok(("registry.npmjs.org", 443))),
            ("GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n", Ok(("pypi.org", 80))),
            ("GET http://pypi.org:8080 HTTP/1.1\r\nHost: pypi.org:8080\r\n\r\n", Ok(("pypi.org", 8080))),
            ("CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n", Err("raw IP")),
            ("CONNECT [::1]:443 HTTP/1.1\r\n\r\n", Err("raw IP")),
            ("CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", Err("raw IP")),
            ("GET http://127.0.0.1/ HTTP/1.1\r\n\r\n", Err("raw IP")),
            ("GET http://pypi.org/ HTTP/1.1\r\nHost: paste.example\r\n\r\n", Err("Host header")),
            ("GET http://user:pw@pypi.org/ HTTP/1.1\r\n\r\n", Err("credentials")),
            ("GET /relative HTTP/1.1\r\nHost: pypi.org\r\n\r\n", Err("not a proxy request")),
            ("CONNECT pypi.org HTTP/1.1\r\n\r\n", Err("no port")),
            ("CONNECT *.paste.example:443 HTTP/1.1\r\n\r\n", Err("not a host name")),
            ("CONNECT paste\x1b[2J.example:443 HTTP/1.1\r\n\r\n", Err("not a host name")),
            ("SSH-2.0-OpenSSH\r\n\r\n", Err("not a proxy request")),
        ];
        for (request, want) in table {
            let (got, _) = ask(request.as_bytes()).await;
            match (got, want) {
                (Ok(a), Ok((host, port))) => assert_eq!((a.host(), a.port()), (*host, *port), "{request:?}"),
                (Err(e), Err(says)) => assert!(e.to_string().contains(says), "{request:?}: {e}"),
                (got, want) => panic!("{request:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[tokio::test]
    async fn what_follows_the_head_is_kept() {
        let (mut client, mut proxy) = tokio::io::duplex(64 * 1024);
        client.write_all(b"CONNECT pypi.org:443 HTTP/1.1\r\n\r\n\x16\x03\x01hello").await.unwrap();
        let (ask, early) = read_ask(&mut proxy).await.unwrap();
        assert_eq!(ask, Ask::Connect { host: "pypi.org".into(), port: 443 });
        assert_eq!(early, b"\x16\x03\x01hello");
    }

    #[tokio::test]
    async fn socks5_names_only() {
        let mut named = vec![5, 1, 0, 5, 1, 0, 3, 8];
        named.extend(b"pypi.org");
        named.extend(443u16.to_be_bytes());
        let (got, answered) = ask(&named).await;
        assert_eq!(got, Ok(Ask::Socks { host: "pypi.org".into(), port: 443 }));
        assert_eq!(answered, vec![5, 0], "the greeting answered, the request left to the caller");

        let (got, answered) = ask(&[5, 1, 0, 5, 1, 0, 1, 10, 0, 0, 1, 1, 187]).await;
        assert!(matches!(got, Err(AskError::Address(_))), "{got:?}");
        assert_eq!(answered[2..4], [5, 2], "refused: not allowed by the ruleset");

        let mut udp = vec![5, 1, 0, 5, 3, 0, 3, 8];
        udp.extend(b"pypi.org");
        udp.extend(53u16.to_be_bytes());
        let (got, answered) = ask(&udp).await;
        assert_eq!(got, Err(AskError::SocksCommand(3)));
        assert_eq!(answered[2..4], [5, 7]);

        let mut dotted = vec![5, 1, 0, 5, 1, 0, 3, 8];
        dotted.extend(b"10.0.0.1");
        dotted.extend(443u16.to_be_bytes());
        let (got, _) = ask(&dotted).await;
        assert!(matches!(got, Err(AskError::Address(_))), "{got:?}");
    }
}
