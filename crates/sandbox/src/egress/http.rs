//! Plain HTTP through the egress proxy, read request by request: a connection is opened to the one host
//! its first request names, and every request on it (kept alive or pipelined) is parsed before it goes
//! up. Each must name that host, in its absolute URI and in its one Host header, and must be framed so
//! that the next request is found where the origin will find it (a `Content-Length`, or `chunked`; never
//! both, never a length that does not parse). What cannot be read that way is refused, not passed on:
//! an origin on a shared address would otherwise serve a host the rule does not name. Buffers are
//! bounded (a head, a chunk-size line, a trailer section); a body streams through.

use super::refusals::{AskError, MAX_HEAD, name_and_port};

/// The longest chunk-size line (with its extensions) read.
const MAX_CHUNK_LINE: usize = 4096;

/// How a request's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// This many bytes (0: no body).
    Length(u64),
    /// Chunks, up to the last (size 0) and the trailer section.
    Chunked,
}

/// One request head read: where it goes, what goes up instead, and how its body ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub host: String,
    pub port: u16,
    /// The head for the origin: origin-form target, no `Proxy-*` or hop-by-hop headers, a Host header.
    pub rewritten: Vec<u8>,
    pub body: Body,
}

/// Reads one request head in absolute form (`GET http://host/path HTTP/1.1`, up to and with its blank
/// line).
pub fn parse_head(head: &[u8]) -> Result<RequestHead, AskError> {
    let text = std::str::from_utf8(head).map_err(|_| AskError::Unknown)?;
    check_bytes(text)?;
    let text = text.strip_suffix("\r\n\r\n").ok_or_else(|| malformed("a head not ended by a blank line"))?;
    let mut lines = text.split("\r\n");
    let request = lines.next().ok_or(AskError::Unknown)?;
    let mut parts = request.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AskError::Unknown);
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || method.is_empty() || !method.bytes().all(is_token) {
        return Err(AskError::Unknown);
    }
    let rest = target.strip_prefix("http://").ok_or(AskError::Unknown)?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err(malformed("credentials in the request's URL"));
    }
    let (host, port) = name_and_port(authority, Some(80))?;
    let headers: Vec<(&str, &str)> = lines.map(field).collect::<Result<_, _>>()?;
    let values = |name: &str| -> Vec<&str> {
        headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v).collect()
    };
    match values("host").as_slice() {
        [] => {}
        [given] => {
            let (header_host, header_port) = name_and_port(given, Some(80))
                .map_err(|_| AskError::HostMismatch { host: host.clone(), header: (*given).to_owned() })?;
            if header_host != host || header_port != port {
                return Err(AskError::HostMismatch { host, header: (*given).to_owned() });
            }
        }
        several => return Err(AskError::HostHeaders(several.join(", "))),
    }
    let body = body_of(&values("content-length"), &values("transfer-encoding"), version)?;
    let close = ["connection", "proxy-connection"]
        .iter()
        .flat_map(|name| values(name))
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("close"));
    let mut out = format!("{method} {path} {version}\r\n");
    if values("host").is_empty() {
        let authority = if port == 80 { host.clone() } else { format!("{host}:{port}") };
        out.push_str(&format!("Host: {authority}\r\n"));
    }
    for (name, value) in &headers {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("proxy-") || matches!(lower.as_str(), "connection" | "keep-alive" | "upgrade") {
            continue;
        }
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    if close {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    Ok(RequestHead { host, port, rewritten: out.into_bytes(), body })
}

fn malformed(why: &str) -> AskError {
    AskError::Malformed(why.to_owned())
}

/// A token character (RFC 9110 5.6.2): what a method or a field name is made of.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Refuses what an origin might read otherwise than the proxy: a CR or LF that is not a CRLF, and
/// other control bytes.
fn check_bytes(text: &str) -> Result<(), AskError> {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let bad = match b {
            b'\r' => bytes.get(i + 1) != Some(&b'\n'),
            b'\n' => i == 0 || bytes[i - 1] != b'\r',
            b'\t' => false,
            _ => b < 0x20 || b == 0x7f,
        };
        if bad {
            return Err(malformed("a control byte, or a line not ended by CRLF, in the request head"));
        }
    }
    Ok(())
}

/// One header line: a token name, a colon, the value without its surrounding blanks. A folded line
/// (starting with a blank) or a name with blanks is refused.
fn field(line: &str) -> Result<(&str, &str), AskError> {
    let (name, value) = line.split_once(':').ok_or(AskError::Unknown)?;
    if name.is_empty() || !name.bytes().all(is_token) {
        return Err(malformed("a header line that is not `name: value`"));
    }
    Ok((name, value.trim_matches([' ', '\t'])))
}

/// How the body ends, from the Content-Length and Transfer-Encoding headers (RFC 9112 6.3, read
/// strictly: whatever an origin could frame otherwise is refused).
fn body_of(lengths: &[&str], encodings: &[&str], version: &str) -> Result<Body, AskError> {
    let why = |s: String| Err(AskError::BodyLength(s));
    match (lengths, encodings) {
        ([], []) => Ok(Body::Length(0)),
        ([length], []) => {
            if length.is_empty() || length.len() > 18 || !length.bytes().all(|b| b.is_ascii_digit()) {
                return why(format!("Content-Length {length:?}"));
            }
            length.parse().map(Body::Length).or_else(|_| why(format!("Content-Length {length:?}")))
        }
        (_, []) => why("more than one Content-Length".into()),
        ([], [coding]) if coding.eq_ignore_ascii_case("chunked") && version == "HTTP/1.1" => {
            Ok(Body::Chunked)
        }
        ([], [coding]) => why(format!("Transfer-Encoding {coding:?} (only chunked, in HTTP/1.1)")),
        ([], _) => why("more than one Transfer-Encoding".into()),
        _ => why("both Content-Length and Transfer-Encoding".into()),
    }
}

/// Where the reader is in the stream of requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body(u64),
    ChunkSize,
    Chunk(u64),
    /// The CRLF after a chunk's data.
    ChunkEnd,
    Trailers,
}

/// The requests a program sends on one connection opened to `host:port`, read as they stream: what
/// goes up comes out of [`RequestStream::feed`], request heads rewritten, bodies as they are.
#[derive(Debug)]
pub struct RequestStream {
    host: String,
    port: u16,
    state: State,
    /// A head, chunk-size line or trailer section not yet whole.
    pending: Vec<u8>,
}

impl RequestStream {
    pub fn new(host: &str, port: u16) -> RequestStream {
        RequestStream { host: host.to_owned(), port, state: State::Head, pending: Vec::new() }
    }

    /// The host and port the connection was opened to.
    pub fn host_and_port(&self) -> (&str, u16) {
        (&self.host, self.port)
    }

    /// Reads `input`, the next bytes from the program, and appends to `up` what may go up. An error:
    /// the request that cannot go up, and nothing from it on may (`up` holds what came before it).
    pub fn feed(&mut self, input: &[u8], up: &mut Vec<u8>) -> Result<(), AskError> {
        let mut at = 0;
        while at < input.len() {
            match self.state {
                State::Body(left) | State::Chunk(left) => {
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(input.len() - at);
                    up.extend_from_slice(&input[at..at + n]);
                    at += n;
                    let left = left - n as u64;
                    self.state = match (self.state, left) {
                        (State::Body(_), 0) => State::Head,
                        (State::Body(_), _) => State::Body(left),
                        (_, 0) => State::ChunkEnd,
                        _ => State::Chunk(left),
                    };
                }
                State::Head | State::ChunkSize | State::ChunkEnd | State::Trailers => {
                    let line_end = input[at..].iter().position(|b| *b == b'\n');
                    let take = line_end.map_or(input.len() - at, |i| i + 1);
                    let limit = if self.state == State::ChunkSize { MAX_CHUNK_LINE } else { MAX_HEAD };
                    if self.pending.len() + take > limit {
                        return Err(match self.state {
                            State::Head => AskError::TooLong,
                            _ => AskError::BodyLength(format!("a chunk line or trailers past {limit} bytes")),
                        });
                    }
                    self.pending.extend_from_slice(&input[at..at + take]);
                    at += take;
                    if line_end.is_some() {
                        self.line(up)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A line ended in `pending`: a head, a chunk line or a trailer section may be whole.
    fn line(&mut self, up: &mut Vec<u8>) -> Result<(), AskError> {
        let bad_chunk = || AskError::BodyLength("a chunked body that does not parse".into());
        match self.state {
            State::Head if self.pending == b"\r\n" => self.pending.clear(),
            State::Head if self.pending.ends_with(b"\r\n\r\n") => {
                let head = parse_head(&self.pending)?;
                if (head.host.as_str(), head.port) != (self.host.as_str(), self.port) {
                    return Err(AskError::OtherHost { host: head.host, port: head.port });
                }
                up.extend_from_slice(&head.rewritten);
                self.state = match head.body {
                    Body::Length(0) => State::Head,
                    Body::Length(n) => State::Body(n),
                    Body::Chunked => State::ChunkSize,
                };
                self.pending.clear();
            }
            State::Head => {}
            State::ChunkSize => {
                let line = self.pending.strip_suffix(b"\r\n").ok_or_else(bad_chunk)?;
                let line = std::str::from_utf8(line).map_err(|_| bad_chunk())?;
                let size = line.split(';').next().unwrap_or("");
                if size.is_empty()
                    || size.len() > 15
                    || !size.bytes().all(|b| b.is_ascii_hexdigit())
                    || line.bytes().any(|b| b < 0x20 && b != b'\t')
                {
                    return Err(bad_chunk());
                }
                let size = u64::from_str_radix(size, 16).map_err(|_| bad_chunk())?;
                up.append(&mut self.pending);
                self.state = if size == 0 { State::Trailers } else { State::Chunk(size) };
            }
            State::ChunkEnd => {
                if self.pending != b"\r\n" {
                    return Err(bad_chunk());
                }
                up.append(&mut self.pending);
                self.state = State::ChunkSize;
            }
            State::Trailers if self.pending.ends_with(b"\r\n\r\n") || self.pending == b"\r\n" => {
                let text = std::str::from_utf8(&self.pending).map_err(|_| bad_chunk())?;
                check_bytes(text)?;
                for line in text.split("\r\n").filter(|l| !l.is_empty()) {
                    let (name, _) = field(line)?;
                    if ["host", "content-length", "transfer-encoding"]
                        .iter()
                        .any(|n| name.eq_ignore_ascii_case(n))
                    {
                        return Err(AskError::BodyLength(format!("a {name} trailer")));
                    }
                }
                up.append(&mut self.pending);
                self.state = State::Head;
            }
            State::Trailers => {}
            State::Body(_) | State::Chunk(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a program sends on a connection opened to pypi.org:80, and what is judged: the requests
    /// that go up (their heads' first lines), or the words of the refusal after them.
    type Row = (&'static str, &'static str, Vec<&'static str>, Option<&'static str>);

    fn table() -> Vec<Row> {
        let get = "GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n";
        vec![
            ("one request", get, vec!["GET /simple/"], None),
            (
                "a second request on keep-alive, same host",
                "GET http://pypi.org/a HTTP/1.1\r\nHost: pypi.org\r\n\r\nGET http://pypi.org:80/b HTTP/1.1\r\nHost: PyPI.org:80\r\n\r\n",
                vec!["GET /a", "GET /b"],
                None,
            ),
            (
                "a pipelined second request to another host",
                "GET http://pypi.org/a HTTP/1.1\r\nHost: pypi.org\r\n\r\nGET http://other.test/b HTTP/1.1\r\nHost: other.test\r\n\r\n",
                vec!["GET /a"],
                Some("other.test:80"),
            ),
            (
                "a second request to the same host on another port",
                "GET http://pypi.org/a HTTP/1.1\r\n\r\nGET http://pypi.org:8080/b HTTP/1.1\r\n\r\n",
                vec!["GET /a"],
                Some("pypi.org:8080"),
            ),
            (
                "two Host headers that differ",
                "GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\nHost: other.test\r\n\r\n",
                vec![],
                Some("more than one Host header (pypi.org, other.test)"),
            ),
            (
                "two Host headers, the second request",
                "GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\n\r\nGET http://pypi.org/ HTTP/1.1\r\nhost: pypi.org\r\nHOST: other.test\r\n\r\n",
                vec!["GET /"],
                Some("more than one Host header"),
            ),
            (
                "a Host header naming another host",
                "GET http://pypi.org/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
                vec![],
                Some("the Host header (other.test)"),
            ),
            (
                "a chunked body, then a request",
                "POST http://pypi.org/up HTTP/1.1\r\nHost: pypi.org\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nGET h\r\n1F\r\nGET http://other.test/ HTTP/1.1\r\n0\r\nX-Sum: 1\r\n\r\nGET http://pypi.org/next HTTP/1.1\r\n\r\n",
                vec!["POST /up", "GET /next"],
                None,
            ),
            (
                "a chunked body, then a request to another host",
                "POST http://pypi.org/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET http://other.test/ HTTP/1.1\r\n\r\n",
                vec!["POST /up"],
                Some("other.test:80"),
            ),
            (
                "a body by length, then a request to another host",
                "POST http://pypi.org/up HTTP/1.1\r\nContent-Length: 35\r\n\r\nGET http://other.test/ HTTP/1.1\r\n\r\nGET http://other.test/ HTTP/1.1\r\n\r\n",
                vec!["POST /up"],
                Some("other.test:80"),
            ),
            (
                "both Content-Length and Transfer-Encoding",
                "POST http://pypi.org/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                vec![],
                Some("both Content-Length and Transfer-Encoding"),
            ),
            (
                "a length that is not a number",
                "POST http://pypi.org/ HTTP/1.1\r\nContent-Length: 3x\r\n\r\nabc",
                vec![],
                Some("Content-Length \"3x\""),
            ),
            (
                "a negative length",
                "POST http://pypi.org/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                vec![],
                Some("Content-Length"),
            ),
            (
                "two lengths",
                "POST http://pypi.org/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
                vec![],
                Some("more than one Content-Length"),
            ),
            (
                "another coding",
                "POST http://pypi.org/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                vec![],
                Some("only chunked"),
            ),
            (
                "chunked in HTTP/1.0",
                "POST http://pypi.org/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                vec![],
                Some("only chunked"),
            ),
            (
                "a chunk size that is not hex",
                "POST http://pypi.org/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                vec!["POST /"],
                Some("chunked body that does not parse"),
            ),
            (
                "a chunk longer than its size",
                "POST http://pypi.org/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
                vec!["POST /"],
                Some("chunked body that does not parse"),
            ),
            (
                "a Host trailer",
                "POST http://pypi.org/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nHost: other.test\r\n\r\n",
                vec!["POST /"],
                Some("a Host trailer"),
            ),
            (
                "a bare LF hiding a header",
                "GET http://pypi.org/ HTTP/1.1\r\nX: y\nHost: other.test\r\n\r\n",
                vec![],
                Some("not ended by CRLF"),
            ),
            (
                "a folded header",
                "GET http://pypi.org/ HTTP/1.1\r\nX: y\r\n Host: other.test\r\n\r\n",
                vec![],
                Some("not `name: value`"),
            ),
            (
                "a blank before the colon",
                "GET http://pypi.org/ HTTP/1.1\r\nHost : other.test\r\n\r\n",
                vec![],
                Some("not `name: value`"),
            ),
            (
                "an origin-form second request",
                "GET http://pypi.org/ HTTP/1.1\r\n\r\nGET /x HTTP/1.1\r\nHost: other.test\r\n\r\n",
                vec!["GET /"],
                Some("not a proxy request"),
            ),
            (
                "a CONNECT second request",
                "GET http://pypi.org/ HTTP/1.1\r\n\r\nCONNECT other.test:443 HTTP/1.1\r\n\r\n",
                vec!["GET /"],
                Some("not a proxy request"),
            ),
        ]
    }

    /// The first lines of the request heads in what went up.
    fn request_lines(up: &[u8]) -> Vec<String> {
        String::from_utf8_lossy(up)
            .split("\r\n")
            .filter(|l| l.ends_with(" HTTP/1.1") || l.ends_with(" HTTP/1.0"))
            // A rewritten head's target is in origin form; a body's text that looks like a request is not.
            .filter(|l| l.split(' ').nth(1).is_some_and(|target| target.starts_with('/')))
            .map(|l| l.rsplit_once(' ').map_or(l, |(start, _)| start).to_owned())
            .collect()
    }

    #[test]
    fn every_request_on_a_connection_is_read_whole_or_refused() {
        for (what, sent, want_up, want_refusal) in table() {
            // Fed whole, and byte by byte (a head or a chunk line split anywhere).
            for piece in [sent.len(), 1] {
                let mut stream = RequestStream::new("pypi.org", 80);
                let mut up = Vec::new();
                let got = sent.as_bytes().chunks(piece).try_for_each(|c| stream.feed(c, &mut up));
                assert_eq!(request_lines(&up), want_up, "{what} ({piece})");
                match (got, want_refusal) {
                    (Ok(()), None) => {}
                    (Err(e), Some(says)) => assert!(e.to_string().contains(says), "{what}: {e}"),
                    (got, want) => panic!("{what} ({piece}): {got:?}, wanted {want:?}"),
                }
            }
        }
    }

    #[test]
    fn a_chunked_body_goes_up_as_it_was_sent() {
        let body = "4\r\nwiki\r\n0\r\nX-Sum: 1\r\n\r\n";
        let sent = format!("POST http://pypi.org/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{body}");
        let mut up = Vec::new();
        RequestStream::new("pypi.org", 80).feed(sent.as_bytes(), &mut up).unwrap();
        assert!(String::from_utf8(up).unwrap().ends_with(&format!("\r\n\r\n{body}")));
    }

    #[test]
    fn a_request_is_rewritten_for_the_origin() {
        let head = parse_head(b"GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\nProxy-Authorization: x\r\nProxy-Connection: close\r\nConnection: keep-alive\r\nUpgrade: h2c\r\nAccept: */*\r\n\r\n").unwrap();
        assert_eq!(
            String::from_utf8(head.rewritten).unwrap(),
            "GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let head = parse_head(b"GET http://pypi.org:8080 HTTP/1.1\r\nAccept: */*\r\n\r\n").unwrap();
        assert_eq!(
            String::from_utf8(head.rewritten).unwrap(),
            "GET / HTTP/1.1\r\nHost: pypi.org:8080\r\nAccept: */*\r\n\r\n",
            "a Host header where there was none; kept alive as the program asked"
        );
    }
}
