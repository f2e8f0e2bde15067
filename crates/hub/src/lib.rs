//! Portcullis hub: the running service. It wires the harness, the policy, the coding tools, the SQLite
//! ledger and the MCP gateway; owns sessions, the approval broker and policy hot reload; and serves
//! agents (`/mcp`) and operators (`/v1`) on a loopback port.
//!
//! Front ends use two doors only: [`api`] (the command table, [`operator_commands!`], and its
//! [`api::Client`]) and [`start`] (what starts a hub). The other modules are public for the hub's own
//! integration tests, benches and fuzzers; a front end importing them fails the fence test.

pub mod api;
mod backend;
pub mod broker;
pub mod config;
pub mod connections;
pub mod console;
mod effect_calls;
pub mod effects;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
mod held_calls;
pub mod hook;
mod hook_process;
pub mod hook_run;
mod hook_run_client;
pub mod hub;
mod hub_config;
pub mod launch;
pub mod manifest;
pub mod operator_http;
mod operator_remote;
mod operator_rest;
pub mod otel_export;
mod pins;
pub mod pipeline;
pub mod projects;
pub mod record_sinks;
pub mod refusals;
mod relay;
pub mod reload;
pub mod sandboxing;
pub mod secrets;
pub mod server;
pub mod start;
pub mod stdio;
pub mod team_ledger;
#[cfg(feature = "testing")]
pub mod testing;
#[doc(hidden)]
pub mod tls;
mod undo_calls;
pub mod upstreams;
pub mod waiting;

pub use broker::{AlwaysOffer, ApprovalBroker, BrokerError, BrokerEvent, PendingApproval, Reply};
pub use error::HubError;
pub use hub::{Hub, HubBackend, HubConfig, HubEvent};
pub use launch::{LaunchError, LaunchedHub, launch};
pub use portcullis_mcp::sessions::SessionLimits;
pub use server::{RunningHub, bind, serve, serve_on};
