//! The server name a TLS client asks for (SNI), read from its first record, the ClientHello: a tunnel
//! `CONNECT`ed to an allowed host whose TLS names another (domain fronting, or a tunnel reused for a
//! host the rule does not name) is refused.

/// What the first bytes a client sent through a tunnel say about the host it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hello {
    /// Not TLS (SSH, plain text): no name to check.
    NotTls,
    /// Not a whole ClientHello yet: this many bytes are needed (the record's).
    Partial { needed: usize },
    /// A ClientHello without a server name.
    NoName,
    /// The server name asked for, lowercase.
    Name(String),
}

/// Reads `bytes`, the start of what a client sent.
pub fn server_name(bytes: &[u8]) -> Hello {
    // A TLS record: type 22 (handshake), version 3.x, a length.
    let [22, 3, _, hi, lo, ..] = bytes else {
        return if bytes.len() < 5 && bytes.first().is_none_or(|b| *b == 22) {
            Hello::Partial { needed: 5 }
        } else {
            Hello::NotTls
        };
    };
    let needed = 5 + usize::from(u16::from_be_bytes([*hi, *lo]));
    if bytes.len() < needed {
        return Hello::Partial { needed };
    }
    match client_hello_name(&bytes[5..needed]) {
        Some(Some(name)) => Hello::Name(name),
        Some(None) => Hello::NoName,
        None => Hello::NotTls,
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

/// The server name of a ClientHello handshake message (`None`: not one; `Some(None)`: no name).
fn client_hello_name(handshake: &[u8]) -> Option<Option<String>> {
    let mut c = Cursor(handshake);
    if c.u8()? != 1 {
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
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vector(2)?;
        if kind == 0 {
            let mut list = Cursor(Cursor(data).vector(2)?);
            while !list.0.is_empty() {
                let name_type = list.u8()?;
                let name = list.vector(2)?;
                if name_type == 0 {
                    let name = std::str::from_utf8(name).ok()?;
                    return Some(Some(name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()));
                }
            }
            return Some(None);
        }
    }
    Some(None)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ClientHello record asking for `name` (or none).
    pub(crate) fn client_hello(name: Option<&str>) -> Vec<u8> {
        let mut extensions = Vec::new();
        if let Some(name) = name {
            let mut entry = vec![0u8];
            entry.extend((name.len() as u16).to_be_bytes());
            entry.extend(name.as_bytes());
            let mut list = (entry.len() as u16).to_be_bytes().to_vec();
            list.extend(entry);
            extensions.extend(0u16.to_be_bytes());
            extensions.extend((list.len() as u16).to_be_bytes());
            extensions.extend(list);
        }
        // Another extension first (supported groups), as real clients send several.
        let mut all = vec![0, 10, 0, 4, 0, 2, 0, 29];
        all.extend(extensions);
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.push(0); // session id
        body.extend([0, 2, 0x13, 0x01]); // one cipher suite
        body.extend([1, 0]); // null compression
        body.extend((all.len() as u16).to_be_bytes());
        body.extend(all);
        let mut handshake = vec![1];
        handshake.extend(&(body.len() as u32).to_be_bytes()[1..]);
        handshake.extend(body);
        let mut record = vec![22, 3, 1];
        record.extend((handshake.len() as u16).to_be_bytes());
        record.extend(handshake);
        record
    }

    #[test]
    fn names_read_from_client_hellos() {
        assert_eq!(
            server_name(&client_hello(Some("Registry.npmjs.org"))),
            Hello::Name("registry.npmjs.org".into())
        );
        assert_eq!(server_name(&client_hello(None)), Hello::NoName);
        let whole = client_hello(Some("pypi.org"));
        assert_eq!(server_name(&whole[..3]), Hello::Partial { needed: 5 });
        assert_eq!(server_name(&whole[..20]), Hello::Partial { needed: whole.len() });
        assert_eq!(server_name(b"SSH-2.0-OpenSSH_9.2\r\n"), Hello::NotTls);
        assert_eq!(server_name(b"GET / HTTP/1.1\r\n"), Hello::NotTls);
        // A record that claims to be a handshake but is garbage inside.
        let mut broken = client_hello(Some("pypi.org"));
        broken[5] = 2;
        assert_eq!(server_name(&broken), Hello::NotTls);
    }
}
