//! Portcullis hub: the running service. It wires the harness, the policy, the coding tools, the SQLite
//! ledger and the MCP gateway; owns sessions, the approval broker, policy hot reload and the upstream
//! servers. Front ends never use it directly: `portcullis-api` (the command table, its clients, the
//! HTTP server and what starts a hub) is built on it, and is the only crate they depend on.

mod backend;
pub mod broker;
pub mod config;
pub mod connections;
pub mod console_logins;
pub mod effect_calls;
pub mod effects;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod held_calls;
pub mod hook;
pub mod hook_run;
pub mod hub;
mod hub_config;
pub mod manifest;
pub mod otel_export;
pub mod pins;
pub mod pipeline;
pub mod projects;
pub mod record_sinks;
pub mod refusals;
mod relay;
pub mod reload;
pub mod sandboxing;
pub mod secrets;
pub mod server_reports;
pub mod team_ledger;
#[doc(hidden)]
pub mod tls;
pub mod undo_calls;
pub mod upstreams;
pub mod waiting;

pub use broker::{AlwaysOffer, ApprovalBroker, BrokerError, BrokerEvent, PendingApproval, Reply};
pub use error::HubError;
pub use hub::{Hub, HubBackend, HubConfig, HubEvent};
pub use portcullis_mcp::sessions::SessionLimits;
