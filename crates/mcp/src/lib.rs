//! Portcullis MCP, on the official Rust SDK (`rmcp`): the gateway that serves the hub's registry to
//! agents (Streamable HTTP with a bearer token and Origin checks, or stdio), and the bridge that brings
//! upstream MCP servers' tools into the registry.

pub mod agent_identity;
pub mod agent_names;
pub mod backend;
mod call_rounds;
pub mod caller;
pub mod client_side;
mod connection;
pub mod convert;
#[cfg(test)]
mod door_tests;
pub mod envelope;
pub mod fast_lane;
#[doc(hidden)]
pub mod fuzzing;
pub mod gateway;
pub mod http;
pub mod idempotency;
pub mod input_rounds;
pub mod jsonrpc;
mod listen;
mod methods;
pub mod offered;
mod progress;
pub mod protocol_refusals;
pub mod relay;
pub mod route_headers;
pub mod sessions;
pub mod stateless;
pub mod upstream;
pub mod wire;
