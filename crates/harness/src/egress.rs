//! The hosts a command may reach, as a rule's `network` names them (`registry.npmjs.org`,
//! `*.crates.io`, `github.com:443`): parsed once when the policy loads, matched against the name a
//! connection asks for, and intersected across policy layers (the strictest set wins). Names only: a raw
//! IP address is refused, since an address says nothing a reviewer can check.

use std::fmt;

/// Ports a host named without one may be reached on (the web's).
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// One host a rule names: a name or `*.` and a domain (any name under it, not the domain itself), and
/// a port (`None`: [`DEFAULT_PORTS`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    /// Lowercase, without a trailing dot; `*.domain` for a wildcard.
    host: String,
    port: Option<u16>,
}

impl HostPattern {
    /// Reads `text`, or says what is wrong with it.
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty host".into());
        }
        if text.starts_with('[') || text.matches(':').count() > 1 {
            return Err(format!("{text:?} is an IPv6 address: name the host instead"));
        }
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => {
                let port: u16 = port
                    .parse()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| format!("{text:?}: {port:?} is not a port (1 to 65535)"))?;
                (name, Some(port))
            }
            None => (text, None),
        };
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        let (wildcard, domain) = match name.strip_prefix("*.") {
            Some(domain) => (true, domain),
            None => (false, name.as_str()),
        };
        if domain == "*" || domain.is_empty() {
            return Err(format!("{text:?} names every host: write `true` for any host"));
        }
        let labels: Vec<&str> = domain.split('.').collect();
        for label in &labels {
            let good = !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-');
            if !good {
                return Err(format!(
                    "{text:?} is not a host name (letters, digits and hyphens between dots; `*.` only first)"
                ));
            }
        }
        if domain.len() > 253 {
            return Err(format!("{text:?} is longer than a host name can be"));
        }
        // No top-level domain is all digits: such a name is an address (`10.0.0.1`, `2130706433`).
        if labels.last().is_some_and(|l| l.chars().all(|c| c.is_ascii_digit())) {
            return Err(format!("{text:?} is an IP address: name the host instead"));
        }
        Ok(HostPattern { host: if wildcard { format!("*.{domain}") } else { domain.to_owned() }, port })
    }

    /// Whether a connection to `host` (a name, any case, perhaps with a trailing dot) on `port` is one
    /// this pattern allows.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        let name = match self.host.strip_prefix("*.") {
            Some(domain) => host.len() > domain.len() + 1 && host.ends_with(&format!(".{domain}")),
            None => host == self.host,
        };
        name && self.allows_port(port)
    }

    fn allows_port(&self, port: u16) -> bool {
        match self.port {
            Some(p) => p == port,
            None => DEFAULT_PORTS.contains(&port),
        }
    }

    /// Whether every connection `other` allows, this one allows too.
    pub fn covers(&self, other: &HostPattern) -> bool {
        let hosts = match (self.host.strip_prefix("*."), other.host.strip_prefix("*.")) {
            (None, None) => self.host == other.host,
            (None, Some(_)) => false,
            (Some(domain), Some(inner)) => inner == domain || inner.ends_with(&format!(".{domain}")),
            (Some(domain), None) => other.host.ends_with(&format!(".{domain}")),
        };
        let ports = match other.port {
            Some(p) => self.allows_port(p),
            None => self.port.is_none(),
        };
        hosts && ports
    }

    /// The connections both `a` and `b` allow, as patterns: each pattern of one that some pattern of the
    /// other covers.
    pub fn intersect(a: &[HostPattern], b: &[HostPattern]) -> Vec<HostPattern> {
        let mut both: Vec<HostPattern> = Vec::new();
        let kept = (a.iter().filter(|p| b.iter().any(|q| q.covers(p))))
            .chain(b.iter().filter(|q| a.iter().any(|p| p.covers(q))));
        for p in kept {
            if !both.contains(p) {
                both.push(p.clone());
            }
        }
        both
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// What a connection was: a TCP stream through the proxy, or a DNS question the sandbox's stub resolver
/// refused (the command has no resolver: the proxy resolves the names it lets through).
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionKind {
    #[default]
    Tcp,
    Dns,
}

/// One connection a confined command made or tried, as its call's record keeps it.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Connection {
    #[serde(default)]
    pub kind: ConnectionKind,
    /// The host asked for (`?` when the request could not be read). Untrusted text: the command chose it.
    pub host: String,
    pub port: u16,
    pub allowed: bool,
    /// Why it was refused, or the rule that allowed it.
    pub why: String,
    /// Bytes from the command to the host, and back.
    pub bytes_out: u64,
    pub bytes_in: u64,
}

impl Connection {
    /// A connection refused before any byte went out.
    pub fn refused(kind: ConnectionKind, host: String, port: u16, why: String) -> Connection {
        Connection { kind, host, port, allowed: false, why, bytes_out: 0, bytes_in: 0 }
    }

    /// One line for a person (untrusted text in it: escape it where it is shown): what was reached or
    /// refused, and why.
    pub fn summary(&self) -> String {
        let (host, port) = (&self.host, self.port);
        match (self.allowed, self.kind) {
            (true, _) => format!(
                "reached {host}:{port}: {} bytes out, {} bytes in ({})",
                self.bytes_out, self.bytes_in, self.why
            ),
            // The reason names the host already, or there was no host to name (an unreadable request).
            (false, _)
                if self.why.starts_with("network to ")
                    || self.why.starts_with("DNS lookup ")
                    || host == "?" =>
            {
                format!("refused: {}", self.why)
            }
            (false, ConnectionKind::Dns) => format!("refused: DNS lookup of {host}: {}", self.why),
            (false, ConnectionKind::Tcp) => format!("refused: {host}:{port}: {}", self.why),
        }
    }
}

/// The operation of the approval a confined command's proxy raises for a host its rule does not name.
pub const CONNECT: &str = "connect";

/// The action of a prompt for `host:port`: nothing else, so a session grant for it covers the host
/// whatever command of the session asks next.
pub fn host_action(host: &str, port: u16) -> crate::ExecutionAction {
    let mut action = crate::ExecutionAction::new(crate::ActionKind::Network, CONNECT);
    action.target = Some(format!("{host}:{port}"));
    action
}

/// Whether this action is a host prompt's (see [`host_action`]).
pub fn asks_for_host(action: &crate::ExecutionAction) -> bool {
    action.kind == crate::ActionKind::Network && action.operation == CONNECT && action.target.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> HostPattern {
        HostPattern::parse(text).unwrap()
    }

    #[test]
    fn what_a_rule_may_name() {
        let table: &[(&str, Option<&str>)] = &[
            ("registry.npmjs.org", Some("registry.npmjs.org")),
            ("Registry.NPMjs.org.", Some("registry.npmjs.org")),
            ("*.crates.io", Some("*.crates.io")),
            ("github.com:443", Some("github.com:443")),
            ("localhost", Some("localhost")),
            ("pypi.internal:8080", Some("pypi.internal:8080")),
            ("", None),
            ("*", None),
            ("*.", None),
            ("a.*.io", None),
            ("10.0.0.1", None),
            ("2130706433", None),
            ("127.1", None),
            ("[::1]", None),
            ("::1", None),
            ("fe80::1:443", None),
            ("github.com:0", None),
            ("github.com:65536", None),
            ("github.com:https", None),
            ("-bad.example", None),
            ("under_score.example", None),
            ("sp ace.example", None),
        ];
        for (text, want) in table {
            let got = HostPattern::parse(text).map(|h| h.to_string()).ok();
            assert_eq!(got.as_deref(), *want, "{text:?}");
        }
    }

    #[test]
    fn which_connections_a_host_allows() {
        let table: &[(&str, &str, u16, bool)] = &[
            ("registry.npmjs.org", "registry.npmjs.org", 443, true),
            ("registry.npmjs.org", "REGISTRY.npmjs.org.", 80, true),
            ("registry.npmjs.org", "registry.npmjs.org", 22, false),
            ("registry.npmjs.org", "evil.registry.npmjs.org", 443, false),
            ("registry.npmjs.org", "registry.npmjs.org.evil.com", 443, false),
            ("*.crates.io", "static.crates.io", 443, true),
            ("*.crates.io", "a.b.crates.io", 443, true),
            ("*.crates.io", "crates.io", 443, false),
            ("*.crates.io", "evilcrates.io", 443, false),
            ("github.com:443", "github.com", 443, true),
            ("github.com:443", "github.com", 80, false),
            ("github.com:22", "github.com", 22, true),
        ];
        for (pattern, host, port, want) in table {
            assert_eq!(p(pattern).matches(host, *port), *want, "{pattern} {host}:{port}");
        }
    }

    #[test]
    fn the_strictest_set_wins_across_layers() {
        let set = |texts: &[&str]| texts.iter().map(|t| p(t)).collect::<Vec<_>>();
        let names = |v: Vec<HostPattern>| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        let table: &[(&[&str], &[&str], &[&str])] = &[
            (&["registry.npmjs.org"], &["registry.npmjs.org", "github.com"], &["registry.npmjs.org"]),
            (&["*.crates.io"], &["static.crates.io"], &["static.crates.io"]),
            (&["*.crates.io"], &["*.static.crates.io"], &["*.static.crates.io"]),
            (&["github.com"], &["github.com:443"], &["github.com:443"]),
            (&["github.com:22"], &["github.com"], &[]),
            (&["a.example"], &["b.example"], &[]),
        ];
        for (a, b, want) in table {
            assert_eq!(names(HostPattern::intersect(&set(a), &set(b))), *want, "{a:?} and {b:?}");
            assert_eq!(names(HostPattern::intersect(&set(b), &set(a))).len(), want.len(), "{b:?} and {a:?}");
        }
    }

    #[test]
    fn a_connection_in_one_line_per_kind_of_outcome() {
        let reached = Connection {
            kind: ConnectionKind::Tcp,
            host: "api.test".into(),
            port: 443,
            allowed: true,
            why: "rule `fetch` (p.json)".into(),
            bytes_out: 10,
            bytes_in: 20,
        };
        let refused = |kind, host: &str, why: &str| Connection::refused(kind, host.into(), 443, why.into());
        let rows = [
            (reached, "reached api.test:443: 10 bytes out, 20 bytes in (rule `fetch` (p.json))"),
            (
                refused(
                    ConnectionKind::Tcp,
                    "b.test",
                    "network to b.test:443 refused: rule `fetch` allows a",
                ),
                "refused: network to b.test:443 refused: rule `fetch` allows a",
            ),
            (
                refused(ConnectionKind::Tcp, "?", "\"*.x\" is not a host name"),
                "refused: \"*.x\" is not a host name",
            ),
            (refused(ConnectionKind::Tcp, "b.test", "no answer"), "refused: b.test:443: no answer"),
            (
                refused(ConnectionKind::Dns, "x.test", "no resolver"),
                "refused: DNS lookup of x.test: no resolver",
            ),
        ];
        for (connection, line) in rows {
            assert_eq!(connection.summary(), line);
        }
    }
}
