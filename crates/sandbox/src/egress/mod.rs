//! Egress by name: a command whose rules name hosts runs in a network namespace of its own whose one way
//! out is the hub's egress proxy. Inside, the launcher's second stage brings up loopback and relays
//! (`relay`) each TCP connection to the proxy port, and each DNS question, over a Unix socket the hub
//! opened for this one command (`gate`). The proxy reads what a program asks for (HTTP CONNECT, plain
//! HTTP, SOCKS5; names only: `ask`), lets through only the hosts the rules name, resolves them itself,
//! checks a tunnel's TLS server name (`sni`) and every plain HTTP request on a connection (`http`), and
//! records every connection (`proxy`).

pub mod ask;
pub mod gate;
pub mod http;
pub mod proxy;
mod refusals;
pub(crate) mod relay;
pub mod sni;

pub use gate::GateRecord;
pub use gate::{EgressGate, OpenGate};
pub use portcullis_harness::{Connection, ConnectionKind};
pub use proxy::{EgressRules, HostAnswer, HostAsker, Resolver, serve_connection};

/// The proxy's port on the namespace's loopback (the proxy variables name it). Any port would do: the
/// namespace is the command's alone.
pub const PROXY_PORT: u16 = 3128;
/// The first byte of each stream the relay opens to the gate: a command's TCP connection follows.
pub(crate) const TAG_STREAM: u8 = b'T';
/// The first byte of a DNS report: one line, the name asked, follows.
pub(crate) const TAG_DNS: u8 = b'D';

/// The variables that send programs to the proxy (both cases: libcurl reads only the lower-case
/// `http_proxy`; `NO_PROXY` emptied, so no host is meant to go around it). They replace the command's
/// own; a program that ignores them, or a command that changes them, finds no other way out.
pub(crate) const PROXY_VARIABLES: &[(&str, &str)] = &[
    ("HTTP_PROXY", "http://127.0.0.1:3128"),
    ("HTTPS_PROXY", "http://127.0.0.1:3128"),
    ("ALL_PROXY", "socks5h://127.0.0.1:3128"),
    ("http_proxy", "http://127.0.0.1:3128"),
    ("https_proxy", "http://127.0.0.1:3128"),
    ("all_proxy", "socks5h://127.0.0.1:3128"),
    ("NO_PROXY", ""),
    ("no_proxy", ""),
];
