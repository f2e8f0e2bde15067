//! The hub's egress proxy (issue 35, being built): the only way out of a command's network namespace
//! once egress by name is enforced. It reads what a program asks for (HTTP CONNECT, plain HTTP, SOCKS5;
//! names only), lets through only the hosts the command's rules name, resolves them itself, checks a
//! tunnel's TLS server name, and records every connection. Not yet wired into the sandbox: a command whose
//! rules name hosts still runs with no network (see `network_use` in the policy crate).

pub mod ask;
pub mod proxy;
pub mod sni;

pub use proxy::{Connection, EgressRules, Resolver, serve_connection};
