//! One connection through the egress proxy: its first request read (`ask`), the host checked against the
//! hosts the command's rules name, the name resolved by the proxy itself, the upstream connected, and the
//! bytes relayed both ways, counted. A tunnel's first bytes are read before they are relayed: a TLS
//! ClientHello, however many records carry it, must name the host the tunnel was opened to (`sni`), and
//! on a TLS port ([`TLS_PORTS`]) nothing else may start one. Whatever happens, the connection ends as
//! one [`Connection`], for the call's record.

use super::ask::{Ask, read_ask, socks_reply};
use super::http::RequestStream;
use super::refusals::AskError;
use super::sni::{Hello, server_name};
use portcullis_harness::{Connection, ConnectionKind, HostPattern};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a program has to say where it goes, and the proxy to reach it.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the answers to a connection's allowed requests may still come back once a later request on
/// it is refused (then the refusal is sent, and the connection closed).
const REFUSAL_GRACE: Duration = Duration::from_secs(2);
/// The relay's buffer each way (large reads keep a bulk transfer's system calls few).
const RELAY_BUFFER: usize = 64 * 1024;
/// Ports whose tunnels must carry TLS (HTTPS's, and its usual other): what does not start as a TLS
/// ClientHello there is refused, so no name goes up unread. On other ports a tunnel may carry another
/// protocol (SSH, say), passed on as it is; one that starts as TLS has its ClientHello read all the same.
pub const TLS_PORTS: [u16; 2] = [443, 8443];

/// The hosts a command may reach, and what names them (for the refusal's words).
#[derive(Debug, Clone)]
pub struct EgressRules {
    pub hosts: Vec<HostPattern>,
    /// `rule `npm-install` (policy.json)`: who allows them.
    pub by: String,
    /// Who is asked about a host the rules do not name (the operator, when the rule says so); `None`:
    /// such a host is refused.
    pub ask: Option<std::sync::Arc<dyn HostAsker>>,
}

/// The answer about a host the rules do not name: allowed (and who said so), or refused (and why).
pub type HostAnswer = Result<String, String>;

/// Asks about a host the rules do not name while the connection waits.
pub trait HostAsker: Send + Sync + std::fmt::Debug {
    fn ask(
        &self,
        host: String,
        port: u16,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = HostAnswer> + Send + '_>>;
}

impl EgressRules {
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.hosts.iter().any(|h| h.matches(host, port))
    }

    fn refusal(&self, host: &str, port: u16) -> String {
        format!("network to {host}:{port} refused: {}", self.allowed_words())
    }

    /// "rule `npm-install` (policy.json) allows registry.npmjs.org".
    pub fn allowed_words(&self) -> String {
        let hosts: Vec<String> = self.hosts.iter().map(ToString::to_string).collect();
        let allows = if hosts.is_empty() { "no host".to_owned() } else { hosts.join(", ") };
        format!("{} allows {allows}", self.by)
    }
}

/// How the proxy turns names into addresses: the system's resolver, or a fixed map the local user gives
/// the hub (`--egress-hosts`: tests, where names stand for loopback servers; a private mirror).
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    #[default]
    System,
    Map(HashMap<String, IpAddr>),
}

impl Resolver {
    /// Reads a hosts file (`127.0.0.2 registry.test mirror.test`, `#` comments), or says which line is
    /// wrong.
    pub fn from_hosts_text(text: &str) -> Result<Resolver, String> {
        let mut map = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let mut words = line.split_whitespace();
            let Some(address) = words.next() else { continue };
            let ip: IpAddr =
                address.parse().map_err(|_| format!("line {}: {address:?} is not an IP address", n + 1))?;
            let names: Vec<&str> = words.collect();
            if names.is_empty() {
                return Err(format!("line {}: {address} names no host", n + 1));
            }
            for name in names {
                map.insert(name.trim_end_matches('.').to_ascii_lowercase(), ip);
            }
        }
        Ok(Resolver::Map(map))
    }

    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        match self {
            Resolver::System => {
                let all: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await?.collect();
                let outside: Vec<SocketAddr> = all.iter().copied().filter(|a| reaches_out(a.ip())).collect();
                if outside.is_empty() && !all.is_empty() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        format!("{host} resolves to this machine or a local link ({}), not out", all[0].ip()),
                    ));
                }
                Ok(outside)
            }
            Resolver::Map(map) => map.get(host).map(|ip| vec![SocketAddr::new(*ip, port)]).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, format!("no address for {host}"))
            }),
        }
    }
}

/// Whether a name the system resolved may be reached: not this machine (loopback, unspecified: the
/// hub's own services listen there), not a link-local or multicast address. A name a rule allows could
/// otherwise be pointed at them by whoever controls its DNS.
fn reaches_out(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            !(v6.is_loopback() || v6.is_unspecified() || v6.is_multicast() || link_local)
        }
    }
}

/// Serves `client` (a connection a command opened to the proxy) under `rules`: its record, or `None`
/// when the program closed the connection without asking for anything (nothing to record).
pub async fn serve_connection<S>(
    mut client: S,
    rules: &EgressRules,
    resolver: &Resolver,
) -> Option<Connection>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let refused = |host: String, port: u16, why: String| {
        Some(Connection::refused(ConnectionKind::Tcp, host, port, why))
    };
    let (ask, early) = match tokio::time::timeout(ASK_TIMEOUT, read_ask(&mut client)).await {
        Ok(Ok(asked)) => asked,
        Ok(Err(e)) => {
            let (host, why) = match &e {
                AskError::Address(address) => (
                    address.clone(),
                    format!("network to {address} refused: a raw IP address; {}", rules.allowed_words()),
                ),
                AskError::HostMismatch { .. } | AskError::HostHeaders(_) | AskError::BodyLength(_) => {
                    ("?".to_owned(), format!("network refused: {e}; {}", rules.allowed_words()))
                }
                _ => ("?".to_owned(), e.to_string()),
            };
            if matches!(e, AskError::Closed) {
                return None;
            }
            answer_http(&mut client, 403, &format!("refused: {why}")).await;
            return refused(host, 0, why);
        }
        Err(_) => return refused("?".into(), 0, "no request within 10 s".into()),
    };
    let (host, port) = (ask.host().to_owned(), ask.port());
    let mut allowed_by = rules.by.clone();
    if !rules.allows(&host, port) {
        let answer = match &rules.ask {
            Some(asker) => asker.ask(host.clone(), port).await,
            None => Err(rules.refusal(&host, port)),
        };
        match answer {
            Ok(who) => allowed_by = who,
            Err(why) => {
                refuse(&mut client, &ask, 403, &why).await;
                return refused(host, port, why);
            }
        }
    }
    let upstream = match connect(resolver, &host, port).await {
        Ok(stream) => stream,
        Err(why) => {
            refuse(&mut client, &ask, 502, &why).await;
            return refused(host, port, why);
        }
    };
    let granted = match &ask {
        Ask::Connect { .. } => client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await,
        Ask::Socks { .. } => client.write_all(&socks_reply(0)).await,
        Ask::Http { .. } => Ok(()),
    };
    if granted.is_err() {
        return refused(host, port, "the command closed the connection".into());
    }
    let (bytes_out, bytes_in, refusal) = match ask {
        Ask::Http { head, .. } => {
            let requests = RequestStream::new(&host, port);
            relay_http(client, upstream, requests, [head, early].concat(), rules).await
        }
        Ask::Connect { .. } | Ask::Socks { .. } => {
            let first = match tokio::time::timeout(ASK_TIMEOUT, tunnel_start(&mut client, early, &host, port))
                .await
            {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(why)) => return refused(host, port, why),
                Err(_) => {
                    let why = "nothing read as a TLS ClientHello within 10 s: refused".to_owned();
                    return refused(host, port, why);
                }
            };
            let (bytes_out, bytes_in) = relay(client, upstream, first).await;
            (bytes_out, bytes_in, None)
        }
    };
    Some(Connection {
        kind: ConnectionKind::Tcp,
        host,
        port,
        allowed: refusal.is_none(),
        why: refusal.unwrap_or(allowed_by),
        bytes_out,
        bytes_in,
    })
}

/// The first bytes of a tunnel (after `early`, what came with its request), read until they can be
/// judged: a whole ClientHello (reassembled over its records) naming `host` or no host, or bytes that
/// are not TLS on a port outside [`TLS_PORTS`]. `Err`: why the tunnel is refused. A tunnel whose
/// program sends nothing and closes is let through empty (nothing goes up).
async fn tunnel_start<S: AsyncRead + Unpin>(
    client: &mut S,
    early: Vec<u8>,
    host: &str,
    port: u16,
) -> Result<Vec<u8>, String> {
    let mut bytes = early;
    let mut chunk = [0u8; 4096];
    loop {
        match server_name(&bytes) {
            Ok(Hello::Partial { .. }) => {}
            Ok(Hello::NotTls) if TLS_PORTS.contains(&port) => {
                return Err(format!(
                    "not TLS on port {port}, a TLS port (only a TLS ClientHello may start a tunnel there): refused"
                ));
            }
            Ok(Hello::NotTls | Hello::NoName) => return Ok(bytes),
            Ok(Hello::Name(name)) if name == host => return Ok(bytes),
            Ok(Hello::Name(name)) => {
                return Err(format!("TLS names {name}, not {host} the tunnel was opened to: refused"));
            }
            Err(e) => return Err(format!("{e}: refused")),
        }
        let n = client.read(&mut chunk).await.map_err(|e| format!("the tunnel's first bytes: {e}"))?;
        if n == 0 {
            if bytes.is_empty() {
                return Ok(bytes);
            }
            return Err("the connection closed inside its TLS ClientHello: refused".into());
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

async fn connect(resolver: &Resolver, host: &str, port: u16) -> Result<TcpStream, String> {
    let addresses =
        resolver.resolve(host, port).await.map_err(|e| format!("{host} does not resolve: {e}"))?;
    let mut last = format!("{host} has no address");
    for address in addresses {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => last = format!("{host}:{port} ({address}): {e}"),
            Err(_) => last = format!("{host}:{port} ({address}): no answer within 10 s"),
        }
    }
    Err(last)
}

/// Relays both ways until both ends close: `first` (what was read already) goes up first. The bytes
/// each way.
async fn relay<S>(client: S, upstream: TcpStream, first: Vec<u8>) -> (u64, u64)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut up_read, mut up_write) = upstream.into_split();
    let out = async {
        let mut sent = 0u64;
        if !first.is_empty() && up_write.write_all(&first).await.is_ok() {
            sent += first.len() as u64;
        }
        sent += copy_counted(&mut client_read, &mut up_write).await;
        let _ = up_write.shutdown().await;
        sent
    };
    let back = async {
        let got = copy_counted(&mut up_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
        got
    };
    tokio::join!(out, back)
}

/// Relays a plain HTTP connection opened to one host: every request the program sends (`first` is what
/// was read already) is read by `requests` and goes up only if it names that host and is framed; the
/// answers come back as they are. At the first request that may not go up, nothing more goes up: the
/// answers to the requests before it come back (for at most [`REFUSAL_GRACE`]), then a 403 saying why
/// and the rule's words, and the connection closes. The bytes each way, and the refusal's words.
async fn relay_http<S>(
    client: S,
    upstream: TcpStream,
    mut requests: RequestStream,
    first: Vec<u8>,
    rules: &EgressRules,
) -> (u64, u64, Option<String>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut up_read, mut up_write) = upstream.into_split();
    let refused = tokio::sync::Notify::new();
    let out = async {
        let mut sent = 0u64;
        let mut buf = vec![0u8; RELAY_BUFFER];
        let mut up = Vec::new();
        let mut input: &[u8] = &first;
        let refusal = loop {
            up.clear();
            let judged = requests.feed(input, &mut up);
            if !up.is_empty() {
                if up_write.write_all(&up).await.is_err() {
                    break None;
                }
                sent += up.len() as u64;
            }
            if let Err(e) = judged {
                break Some(e);
            }
            input = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break None,
                Ok(n) => &buf[..n],
            };
        };
        let _ = up_write.shutdown().await;
        if refusal.is_some() {
            refused.notify_one();
        }
        (sent, refusal)
    };
    let back = async {
        let mut got = 0u64;
        tokio::select! {
            () = copy_into(&mut up_read, &mut client_write, &mut got) => {}
            () = async {
                refused.notified().await;
                tokio::time::sleep(REFUSAL_GRACE).await;
            } => {}
        }
        got
    };
    let ((sent, refusal), got) = tokio::join!(out, back);
    let Some(e) = refusal else {
        let _ = client_write.shutdown().await;
        return (sent, got, None);
    };
    let (host, port) = requests.host_and_port();
    let why = match e {
        AskError::OtherHost { host: other, port: other_port } => format!(
            "network to {other}:{other_port} refused: this connection was opened to {host}:{port}, and a connection reaches one host; {}",
            rules.allowed_words()
        ),
        e => format!("network to {host}:{port} refused: {e}; {}", rules.allowed_words()),
    };
    answer_http(&mut client_write, 403, &why).await;
    (sent, got, Some(why))
}

/// Copies until the reader ends or either side fails; the bytes written, whichever way it ended (a
/// connection reset after the answer still counts the answer).
async fn copy_counted<R, W>(reader: &mut R, writer: &mut W) -> u64
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut total = 0u64;
    copy_into(reader, writer, &mut total).await;
    total
}

/// [`copy_counted`], counting into `total` (which holds the count if the copy is dropped midway).
async fn copy_into<R, W>(reader: &mut R, writer: &mut W, total: &mut u64)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; RELAY_BUFFER];
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if writer.write_all(&buf[..n]).await.is_err() {
            return;
        }
        *total += n as u64;
    }
}

/// Tells the program why, in its protocol's words.
async fn refuse<S: AsyncWrite + Unpin>(client: &mut S, ask: &Ask, status: u16, why: &str) {
    match ask {
        Ask::Socks { .. } => {
            let _ = client.write_all(&socks_reply(if status == 403 { 2 } else { 4 })).await;
        }
        Ask::Connect { .. } | Ask::Http { .. } => answer_http(client, status, why).await,
    }
}

async fn answer_http<S: AsyncWrite + Unpin>(client: &mut S, status: u16, why: &str) {
    let reason = if status == 403 { "Forbidden" } else { "Bad Gateway" };
    let body = format!("{why}\n");
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(answer.as_bytes()).await;
    let _ = client.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    fn rules(hosts: &[&str]) -> EgressRules {
        EgressRules {
            hosts: hosts.iter().map(|h| HostPattern::parse(h).unwrap()).collect(),
            by: "rule `npm-install` (policy.json)".into(),
            ask: None,
        }
    }

    /// An upstream on loopback that answers each connection with what it read, reversed, then closes.
    async fn upstream() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    buf.truncate(n);
                    buf.reverse();
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await;
                    let _ = s.write_all(&buf).await;
                });
            }
        });
        port
    }

    fn map(names: &[&str]) -> Resolver {
        Resolver::Map(names.iter().map(|n| ((*n).to_owned(), IpAddr::from([127, 0, 0, 1]))).collect())
    }

    /// `request` through the proxy under `rules`: what the program read back, and the record.
    async fn through(request: Vec<u8>, rules: &EgressRules, resolver: &Resolver) -> (Vec<u8>, Connection) {
        let (mut program, proxy_end) = tokio::io::duplex(1 << 20);
        program.write_all(&request).await.unwrap();
        program.shutdown().await.unwrap();
        let (connection, read) =
            tokio::join!(async { serve_connection(proxy_end, rules, resolver).await.unwrap() }, async {
                let mut back = Vec::new();
                let _ = program.read_to_end(&mut back).await;
                back
            });
        (read, connection)
    }

    #[tokio::test]
    async fn a_named_host_is_reached_and_counted_and_another_is_refused_with_the_rule() {
        let port = upstream().await;
        let rules = rules(&[&format!("registry.npmjs.org:{port}")]);
        let resolver = map(&["registry.npmjs.org", "paste.example"]);
        let request = format!(
            "GET http://registry.npmjs.org:{port}/left-pad HTTP/1.1\r\nHost: registry.npmjs.org:{port}\r\n\r\n"
        );
        let (back, c) = through(request.into_bytes(), &rules, &resolver).await;
        assert!(c.allowed, "{c:?}");
        assert!(String::from_utf8_lossy(&back).starts_with("HTTP/1.1 200 OK"), "{back:?}");
        assert!(c.bytes_out > 0 && c.bytes_in > 0, "{c:?}");

        let request =
            format!("GET http://paste.example:{port}/ HTTP/1.1\r\nHost: paste.example:{port}\r\n\r\n");
        let (back, c) = through(request.into_bytes(), &rules, &resolver).await;
        assert!(!c.allowed);
        let text = String::from_utf8_lossy(&back);
        assert!(text.starts_with("HTTP/1.1 403"), "{text}");
        assert!(
            text.contains(&format!("network to paste.example:{port} refused: rule `npm-install` (policy.json) allows registry.npmjs.org:{port}")),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_tunnel_whose_tls_names_another_host_is_cut() {
        let port = upstream().await;
        let rules = rules(&[&format!("registry.npmjs.org:{port}")]);
        let resolver = map(&["registry.npmjs.org"]);
        let mut request = format!("CONNECT registry.npmjs.org:{port} HTTP/1.1\r\n\r\n").into_bytes();
        request.extend(crate::egress::sni::tests::client_hello(Some("paste.example")));
        let (back, c) = through(request, &rules, &resolver).await;
        assert!(!c.allowed && c.why.contains("TLS names paste.example"), "{c:?}");
        assert_eq!(c.bytes_out, 0, "nothing of the refused hello went up");
        assert!(String::from_utf8_lossy(&back).starts_with("HTTP/1.1 200"), "the tunnel opened, then closed");

        let mut request = format!("CONNECT registry.npmjs.org:{port} HTTP/1.1\r\n\r\n").into_bytes();
        let hello = crate::egress::sni::tests::client_hello(Some("registry.npmjs.org"));
        request.extend(&hello);
        let (_, c) = through(request, &rules, &resolver).await;
        assert!(c.allowed, "{c:?}");
        assert_eq!(c.bytes_out, hello.len() as u64);
    }

    #[tokio::test]
    async fn a_client_hello_split_over_records_is_read_whole() {
        use crate::egress::sni::tests::split_client_hello;
        let port = upstream().await;
        let rules = rules(&[&format!("allowed.test:{port}")]);
        let resolver = map(&["allowed.test"]);
        let connect = format!("CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n").into_bytes();
        let fronted = split_client_hello("other.test", &[2, 60]);
        let (_, c) = through([connect.clone(), fronted].concat(), &rules, &resolver).await;
        assert!(!c.allowed && c.why.contains("TLS names other.test, not allowed.test"), "{c:?}");
        assert_eq!(c.bytes_out, 0, "nothing of the refused hello went up");

        let hello = split_client_hello("allowed.test", &[2, 60]);
        let (_, c) = through([connect, hello.clone()].concat(), &rules, &resolver).await;
        assert!(c.allowed, "{c:?}");
        assert_eq!(c.bytes_out, hello.len() as u64);
    }

    /// A tunnel's port, what its program sent before closing, and what is judged: `Ok(())` let through,
    /// or the words of the refusal.
    type TunnelRow = (u16, Vec<u8>, Result<(), &'static str>);

    #[tokio::test]
    async fn a_tunnel_starts_with_a_hello_naming_its_host_or_on_other_ports_with_another_protocol() {
        use crate::egress::sni::tests::{client_hello, split_client_hello};
        let hello = split_client_hello("allowed.test", &[1, 30]);
        let table: Vec<TunnelRow> = vec![
            (443, client_hello(Some("allowed.test")), Ok(())),
            (8443, hello.clone(), Ok(())),
            (443, client_hello(None), Ok(())),
            (8443, split_client_hello("other.test", &[40]), Err("TLS names other.test")),
            (443, b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n".to_vec(), Err("not TLS on port 443")),
            (8443, b"SSH-2.0-OpenSSH_9.2\r\n".to_vec(), Err("not TLS on port 8443")),
            (22, b"SSH-2.0-OpenSSH_9.2\r\n".to_vec(), Ok(())),
            (22, split_client_hello("other.test", &[40]), Err("TLS names other.test")),
            (443, hello[..hello.len() - 1].to_vec(), Err("closed inside its TLS ClientHello")),
            (443, vec![22, 3, 1, 0, 5, 2, 0, 0, 1, 0], Err("not a ClientHello")),
            (443, Vec::new(), Ok(())),
        ];
        for (port, sent, want) in table {
            // Three bytes came with the request; the rest follows on the connection.
            let (early, rest) = sent.split_at(sent.len().min(3));
            let (mut program, mut proxy_end) = tokio::io::duplex(1 << 20);
            program.write_all(rest).await.unwrap();
            program.shutdown().await.unwrap();
            let got = tunnel_start(&mut proxy_end, early.to_vec(), "allowed.test", port).await;
            match (got, want) {
                (Ok(bytes), Ok(())) => assert!(sent.starts_with(&bytes), "{port} {sent:?}"),
                (Err(why), Err(says)) => assert!(why.contains(says), "{port} {sent:?}: {why}"),
                (got, want) => panic!("{port} {sent:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    /// An HTTP upstream on loopback that answers every request head it reads `ok` (kept alive), and
    /// keeps all it read.
    async fn http_upstream() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    loop {
                        let n = s.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        let heads = buf[..n].windows(4).filter(|w| w == b"\r\n\r\n").count();
                        log.lock().unwrap().extend_from_slice(&buf[..n]);
                        for _ in 0..heads {
                            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n").await;
                        }
                    }
                });
            }
        });
        (port, seen)
    }

    #[tokio::test]
    async fn every_request_on_a_plain_connection_names_its_host() {
        let (port, seen) = http_upstream().await;
        let rules = rules(&[&format!("allowed.test:{port}"), &format!("other.test:{port}")]);
        let resolver = map(&["allowed.test", "other.test"]);
        let get = |host: &str, path: &str| {
            format!("GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n")
        };

        // Kept alive, the same host: both answered.
        let request = get("allowed.test", "/a") + &get("allowed.test", "/b");
        let (back, c) = through(request.into_bytes(), &rules, &resolver).await;
        assert!(c.allowed, "{c:?}");
        assert_eq!(String::from_utf8_lossy(&back).matches("200 OK").count(), 2, "{back:?}");

        // Pipelined, another host (one the rules allow too): the first answered, then a 403, and the
        // second never goes up.
        seen.lock().unwrap().clear();
        let request = get("allowed.test", "/a") + &get("other.test", "/b");
        let (back, c) = through(request.into_bytes(), &rules, &resolver).await;
        let text = String::from_utf8_lossy(&back);
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(
            text.contains("HTTP/1.1 403 Forbidden\r\n")
                && text.contains(&format!(
                    "network to other.test:{port} refused: this connection was opened to allowed.test:{port}"
                ))
                && text.contains("rule `npm-install` (policy.json) allows"),
            "{text}"
        );
        assert!(!c.allowed && c.why.contains("opened to allowed.test") && c.bytes_in > 0, "{c:?}");
        let upstream_read = String::from_utf8(seen.lock().unwrap().clone()).unwrap();
        assert!(upstream_read.contains("GET /a") && !upstream_read.contains("other.test"), "{upstream_read}");

        // Two Host headers in the first request: refused before anything is connected.
        seen.lock().unwrap().clear();
        let request = format!(
            "GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\nHost: other.test:{port}\r\n\r\n"
        );
        let (back, c) = through(request.into_bytes(), &rules, &resolver).await;
        let text = String::from_utf8_lossy(&back);
        assert!(text.starts_with("HTTP/1.1 403") && text.contains("more than one Host header"), "{text}");
        assert!(text.contains("rule `npm-install` (policy.json) allows"), "{text}");
        assert!(!c.allowed, "{c:?}");
        assert!(seen.lock().unwrap().is_empty());

        // A chunked body that hides a request, then one to another host.
        let request = format!(
            "POST http://allowed.test:{port}/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nGET \r\n0\r\n\r\n{}",
            get("other.test", "/")
        );
        let (back, c) = through(request.into_bytes(), &rules, &resolver).await;
        assert!(!c.allowed && c.why.contains("network to other.test"), "{c:?}");
        assert!(String::from_utf8_lossy(&back).contains("403 Forbidden"));
    }

    #[tokio::test]
    async fn refused_before_any_policy_raw_addresses_and_unknown_talk() {
        let rules = rules(&["registry.npmjs.org"]);
        for request in ["CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", "SSH-2.0-x\r\n\r\n"] {
            let (back, c) = through(request.as_bytes().to_vec(), &rules, &Resolver::System).await;
            assert!(!c.allowed, "{request:?}");
            assert!(String::from_utf8_lossy(&back).starts_with("HTTP/1.1 403"), "{request:?}");
        }
    }

    #[test]
    fn a_hosts_file_maps_names_and_says_which_line_is_wrong() {
        let Resolver::Map(map) =
            Resolver::from_hosts_text("# test\n127.0.0.2 Registry.test. git.test\n\n::1 six.test\n").unwrap()
        else {
            unreachable!()
        };
        assert_eq!(map.get("registry.test"), Some(&IpAddr::from([127, 0, 0, 2])));
        assert_eq!(map.get("git.test"), Some(&IpAddr::from([127, 0, 0, 2])));
        assert!(map.get("six.test").is_some_and(|ip| ip.is_ipv6()));
        let e = Resolver::from_hosts_text("127.0.0.1 a.test\nlocalhost b.test\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(Resolver::from_hosts_text("127.0.0.1\n").unwrap_err().contains("names no host"));
    }

    #[test]
    fn names_the_system_resolves_to_this_machine_are_not_reached() {
        for ip in
            ["127.0.0.1", "0.0.0.0", "169.254.169.254", "::1", "::ffff:127.0.0.1", "fe80::1", "224.0.0.1"]
        {
            assert!(!reaches_out(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "10.1.2.3", "2606:4700::1111"] {
            assert!(reaches_out(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn a_name_that_does_not_resolve_is_a_bad_gateway() {
        let rules = rules(&["nowhere.example"]);
        let (back, c) =
            through(b"CONNECT nowhere.example:443 HTTP/1.1\r\n\r\n".to_vec(), &rules, &map(&[])).await;
        assert!(!c.allowed && c.why.contains("does not resolve"), "{c:?}");
        assert!(String::from_utf8_lossy(&back).starts_with("HTTP/1.1 502"));
    }
}
