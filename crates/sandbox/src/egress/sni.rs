//! The server name a TLS client asks for (SNI), read from its ClientHello: a tunnel `CONNECT`ed to an
//! allowed host whose TLS names another (domain fronting, or a tunnel reused for a host the rule does
//! not name) is refused. A ClientHello may be split over several handshake records (TLS allows it, and
//! a server reassembles it): the proxy reassembles it the same way, so it judges the name the server
//! will read. What starts as a TLS handshake but does not parse as a whole ClientHello within
//! [`MAX_CLIENT_HELLO`] bytes is refused, never passed on unread.

/// The largest ClientHello handshake message read (its 4-byte header included). Real ones are under
/// 2 KiB (post-quantum key shares bring them near 2 KiB); a larger one is refused.
pub const MAX_CLIENT_HELLO: usize = 64 * 1024;
/// The most bytes of records read for one ClientHello: a client splitting it into tiny records pays
/// 5 bytes of record header each, and is refused past this.
pub const MAX_HELLO_RECORDS: usize = 2 * MAX_CLIENT_HELLO;
/// The largest TLS plaintext record fragment (RFC 8446 5.1: 2^14).
const MAX_FRAGMENT: usize = 16 * 1024;
/// A TLS record of the handshake protocol.
const HANDSHAKE_RECORD: u8 = 22;
/// The handshake message type of a ClientHello.
const CLIENT_HELLO: u8 = 1;

/// What the first bytes a client sent through a tunnel say about the host it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hello {
    /// Not TLS (SSH, plain text: the first byte is not a handshake record's): no name to read.
    NotTls,
    /// Not a whole ClientHello yet: at least this many bytes in all are needed.
    Partial { needed: usize },
    /// A whole ClientHello without a server name.
    NoName,
    /// The server name asked for, lowercase.
    Name(String),
}

/// Why bytes that start as a TLS handshake are not read as a ClientHello: the tunnel is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HelloError {
    #[error(
        "a TLS ClientHello longer than {MAX_CLIENT_HELLO} bytes (or split into more than {MAX_HELLO_RECORDS} bytes of records)"
    )]
    TooLong,
    #[error("a TLS ClientHello that does not parse: {0}")]
    Malformed(String),
}

/// Reads `bytes`, the start of what a client sent: the ClientHello's handshake message reassembled
/// from the consecutive handshake records that carry it.
pub fn server_name(bytes: &[u8]) -> Result<Hello, HelloError> {
    let malformed = |why: String| Err(HelloError::Malformed(why));
    match bytes.first() {
        None => return Ok(Hello::Partial { needed: 5 }),
        Some(&HANDSHAKE_RECORD) => {}
        Some(_) => return Ok(Hello::NotTls),
    }
    let mut message: Vec<u8> = Vec::new();
    let mut at = 0;
    loop {
        let Some(&[kind, major, _minor, hi, lo]) = bytes.get(at..at + 5) else {
            return Ok(Hello::Partial { needed: at + 5 });
        };
        if kind != HANDSHAKE_RECORD {
            return malformed(format!("a record of type {kind} before the ClientHello's end"));
        }
        if major != 3 {
            return malformed(format!("record version {major}.x"));
        }
        let length = usize::from(u16::from_be_bytes([hi, lo]));
        if length == 0 || length > MAX_FRAGMENT {
            return malformed(format!("a handshake record of {length} bytes"));
        }
        let end = at + 5 + length;
        if end > MAX_HELLO_RECORDS {
            return Err(HelloError::TooLong);
        }
        let Some(fragment) = bytes.get(at + 5..end) else {
            return Ok(Hello::Partial { needed: end });
        };
        message.extend_from_slice(fragment);
        at = end;
        let Some(&[handshake_type, a, b, c]) = message.get(..4) else { continue };
        if handshake_type != CLIENT_HELLO {
            return malformed(format!("handshake message type {handshake_type}, not a ClientHello"));
        }
        let whole = 4 + (usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c));
        if whole > MAX_CLIENT_HELLO {
            return Err(HelloError::TooLong);
        }
        if message.len() < whole {
            continue;
        }
        if message.len() > whole {
            // The client speaks next only after the server's answer: nothing may follow the hello.
            return malformed("more handshake bytes after the ClientHello".into());
        }
        return match client_hello_name(&message) {
            Some(Some(name)) => Ok(Hello::Name(name)),
            Some(None) => Ok(Hello::NoName),
            None => malformed("its fields overrun its length".into()),
        };
    }
}

/// A reader over a byte slice that fails (`None`) rather than run past its end.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|b| usize::from(b[0]))
    }

    fn u16(&mut self) -> Option<usize> {
        self.take(2).map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    /// A field of `len_bytes` length then its bytes.
    fn vector(&mut self, len_bytes: usize) -> Option<&'a [u8]> {
        let n = if len_bytes == 1 { self.u8()? } else { self.u16()? };
        self.take(n)
    }
}

/// The server name of a whole ClientHello handshake message (`None`: it does not parse; `Some(None)`:
/// no name). Read as strictly as a server reads it: a second `server_name` extension, a second host
/// name in it, or bytes past the extensions make it unreadable (a server could take the other one).
fn client_hello_name(handshake: &[u8]) -> Option<Option<String>> {
    let mut c = Cursor(handshake);
    if c.u8()? != usize::from(CLIENT_HELLO) {
        return None;
    }
    let length = c.take(3)?;
    let length = usize::from(length[0]) << 16 | usize::from(length[1]) << 8 | usize::from(length[2]);
    let mut c = Cursor(c.take(length)?);
    c.take(2 + 32)?; // version, random
    c.vector(1)?; // session id
    c.vector(2)?; // cipher suites
    c.vector(1)?; // compression methods
    if c.0.is_empty() {
        return Some(None);
    }
    let mut extensions = Cursor(c.vector(2)?);
    if !c.0.is_empty() {
        return None;
    }
    let mut found = None;
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vector(2)?;
        if kind != 0 {
            continue;
        }
        if found.is_some() {
            return None;
        }
        let mut data = Cursor(data);
        let mut list = Cursor(data.vector(2)?);
        if !data.0.is_empty() {
            return None;
        }
        let mut name_here = None;
        while !list.0.is_empty() {
            let name_type = list.u8()?;
            let name = list.vector(2)?;
            if name_type == 0 {
                if name_here.is_some() {
                    return None;
                }
                let name = std::str::from_utf8(name).ok()?;
                name_here = Some(name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase());
            }
        }
        found = Some(name_here);
    }
    Some(found.flatten())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The `server_name` extension naming `name`.
    fn sni_extension(name: &str) -> Vec<u8> {
        let mut entry = vec![0u8];
        entry.extend((name.len() as u16).to_be_bytes());
        entry.extend(name.as_bytes());
        let mut list = (entry.len() as u16).to_be_bytes().to_vec();
        list.extend(entry);
        let mut extension = 0u16.to_be_bytes().to_vec();
        extension.extend((list.len() as u16).to_be_bytes());
        extension.extend(list);
        extension
    }

    /// A ClientHello handshake message (4-byte header and body) with these extensions after a
    /// supported-groups one, as real clients send several.
    fn hello_message(extensions: &[u8]) -> Vec<u8> {
        let mut all = vec![0, 10, 0, 4, 0, 2, 0, 29];
        all.extend(extensions);
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.push(0); // session id
        body.extend([0, 2, 0x13, 0x01]); // one cipher suite
        body.extend([1, 0]); // null compression
        body.extend((all.len() as u16).to_be_bytes());
        body.extend(all);
        let mut handshake = vec![CLIENT_HELLO];
        handshake.extend(&(body.len() as u32).to_be_bytes()[1..]);
        handshake.extend(body);
        handshake
    }

    fn message_naming(name: Option<&str>) -> Vec<u8> {
        hello_message(&name.map(sni_extension).unwrap_or_default())
    }

    /// `message` in handshake records, split at these offsets of the message.
    fn records(message: &[u8], splits: &[usize]) -> Vec<u8> {
        let mut bounds = vec![0];
        bounds.extend(splits);
        bounds.push(message.len());
        let mut out = Vec::new();
        for pair in bounds.windows(2) {
            let fragment = &message[pair[0]..pair[1]];
            out.extend([HANDSHAKE_RECORD, 3, 1]);
            out.extend((fragment.len() as u16).to_be_bytes());
            out.extend(fragment);
        }
        out
    }

    /// A minimal ClientHello in one record asking for `name` (or none).
    pub(crate) fn client_hello(name: Option<&str>) -> Vec<u8> {
        records(&message_naming(name), &[])
    }

    /// A ClientHello asking for `name`, split into records at these offsets of its handshake message.
    pub(crate) fn split_client_hello(name: &str, splits: &[usize]) -> Vec<u8> {
        records(&message_naming(Some(name)), splits)
    }

    /// Where `name` starts in the handshake message asking for it.
    fn name_offset(name: &str) -> usize {
        let message = message_naming(Some(name));
        message.windows(name.len()).position(|w| w == name.as_bytes()).unwrap()
    }

    /// What was sent, and what is read from it: the name, or the words of the refusal.
    type Row = (&'static str, Vec<u8>, Result<Hello, &'static str>);

    fn table() -> Vec<Row> {
        let name = |n: &str| Ok(Hello::Name(n.into()));
        let whole = client_hello(Some("pypi.org"));
        let in_name = name_offset("other.test") + 3;
        let message = message_naming(Some("other.test"));
        let (first, second) = (records(&message[..20], &[]), records(&message[20..], &[]));
        let interleaved = [first.clone(), vec![20, 3, 3, 0, 1, 1], second.clone()].concat();
        let alert_between = [first.clone(), vec![21, 3, 3, 0, 2, 1, 0], second].concat();
        let mut too_long_header = message_naming(Some("a.test"));
        too_long_header[1..4].copy_from_slice(&[0x01, 0x10, 0x00]);
        let mut overrun = message_naming(Some("a.test"));
        overrun[4 + 2 + 32 + 1..4 + 2 + 32 + 3].copy_from_slice(&[0x7f, 0x00]);
        let mut not_hello = message_naming(Some("a.test"));
        not_hello[0] = 2;
        let two_names = hello_message(&[sni_extension("allowed.test"), sni_extension("other.test")].concat());
        // A 64 KiB hello (within the bound) in records of one byte: 6 bytes a byte, past the records' bound.
        let mut big = vec![CLIENT_HELLO, 0, 0xff, 0];
        big.extend(vec![0u8; 30_000]);
        let tiny = records(&big, &(1..big.len()).collect::<Vec<_>>());
        let mut version_2 = whole.clone();
        version_2[1] = 2;
        vec![
            ("one record", client_hello(Some("Registry.npmjs.org.")), name("registry.npmjs.org")),
            ("one record, no name", client_hello(None), Ok(Hello::NoName)),
            ("split in 2 inside the name", split_client_hello("other.test", &[in_name]), name("other.test")),
            (
                "split in 2 inside the 4-byte header",
                split_client_hello("other.test", &[2]),
                name("other.test"),
            ),
            ("split in 3", split_client_hello("other.test", &[1, in_name]), name("other.test")),
            (
                "split in 3 around the extension",
                split_client_hello("other.test", &[3, in_name - 9]),
                name("other.test"),
            ),
            (
                "one byte a record",
                split_client_hello("x.test", &(1..message_naming(Some("x.test")).len()).collect::<Vec<_>>()),
                name("x.test"),
            ),
            ("a record header only", whole[..3].to_vec(), Ok(Hello::Partial { needed: 5 })),
            ("a record cut short", whole[..20].to_vec(), Ok(Hello::Partial { needed: whole.len() })),
            ("the first of two records", first, Ok(Hello::Partial { needed: 25 + 5 })),
            ("nothing yet", Vec::new(), Ok(Hello::Partial { needed: 5 })),
            ("a change-cipher-spec record between", interleaved, Err("a record of type 20")),
            ("an alert record between", alert_between, Err("a record of type 21")),
            ("a handshake of 69 KiB", records(&too_long_header, &[]), Err("longer than")),
            ("records of one byte past the bound", tiny, Err("longer than")),
            ("fields overrunning the message", records(&overrun, &[]), Err("overrun")),
            ("a ServerHello", records(&not_hello, &[]), Err("type 2, not a ClientHello")),
            ("two server_name extensions", records(&two_names, &[]), Err("does not parse")),
            (
                "more in the hello's last record",
                records(&[message_naming(Some("a.test")), vec![1, 0]].concat(), &[]),
                Err("more handshake bytes"),
            ),
            ("record version 2", version_2, Err("record version 2")),
            ("an empty record", vec![22, 3, 1, 0, 0], Err("a handshake record of 0 bytes")),
            ("SSH", b"SSH-2.0-OpenSSH_9.2\r\n".to_vec(), Ok(Hello::NotTls)),
            ("HTTP", b"GET / HTTP/1.1\r\n".to_vec(), Ok(Hello::NotTls)),
            ("TLS application data", vec![23, 3, 3, 0, 1, 0], Ok(Hello::NotTls)),
        ]
    }

    #[test]
    fn client_hellos_read_over_records_and_refused_when_they_do_not_parse() {
        for (what, bytes, want) in table() {
            match (server_name(&bytes), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{what}"),
                (Err(e), Err(says)) => assert!(e.to_string().contains(says), "{what}: {e}"),
                (got, want) => panic!("{what}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn every_prefix_of_a_split_hello_is_partial_until_the_whole() {
        let bytes = split_client_hello("other.test", &[2, name_offset("other.test") + 3]);
        for end in 0..bytes.len() {
            assert!(
                matches!(server_name(&bytes[..end]), Ok(Hello::Partial { needed }) if needed > end),
                "{end}"
            );
        }
        assert_eq!(server_name(&bytes), Ok(Hello::Name("other.test".into())));
    }
}
