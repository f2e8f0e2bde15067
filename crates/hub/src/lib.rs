//! Portcullis hub: the running service. It wires the harness, the policy, the coding tools, the SQLite
//! ledger and the MCP gateway; owns sessions, the approval broker, policy hot reload and the upstream
//! servers. Front ends never use it directly: `portcullis-api` (the command table, its clients, the
//! HTTP server and what starts a hub) is built on it, and is the only crate they depend on.

mod backend;
mod broker;
mod config;
mod connections;
mod console_logins;
mod effect_calls;
mod effects;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod held_calls;
mod hook;
mod hook_run;
mod hub;
mod hub_config;
mod manifest;
mod otel_export;
mod pins;
mod pipeline;
mod projects;
mod record_sinks;
mod refusals;
mod relay;
mod reload;
mod sandboxing;
mod secrets;
mod server_reports;
mod state;
mod team_ledger;
mod tls;
mod undo_calls;
mod upstreams;
mod waiting;

// The hub's whole public face: what the API crate (and the hub's tests and fuzz targets) use, named
// here once. Its modules are private, so nothing else reaches in.
pub use backend::HubBackend;
pub use broker::{AlwaysOffer, ApprovalBroker, BrokerError, BrokerEvent, PendingApproval, Reply};
pub use config::{
    DEFAULT_PORT, RuntimeInfo, config_dir, create_named_agent, default_ledger_path, keep_ledger_witness,
    ledger_key_path, ledger_public_key, load_or_create_operator_token, load_or_create_token, user_config_dir,
};
pub use connections::{BodyBound, ConnectionLimits, ConnectionSlots, read_body_within, serve_connections};
pub use console_logins::{
    ConsoleSettings, LoginCode, LoginCodes, NoSession, Sessions, check_operator_name, random_hex,
};
pub use effect_calls::EffectStage;
pub use effect_calls::MarkEffectError;
pub use effects::MarkError;
pub use error::HubError;
pub use held_calls::{discard_held, held_lines, held_of, keep_held};
pub use hook::{HookAnswer, HookDecision, MAX_HOOK_INPUT_BYTES, parse_input as parse_hook_input};
pub use hook_run::RunUpdate;
pub use hub::{Hub, coding_limits};
pub use hub_config::HubConfig;
pub use hub_config::undo_store_of;
pub use manifest::{load_manifests, manifest_json_schema, parse_manifest};
pub use otel_export::OtlpSettings;
pub use pins::AcceptRefused;
pub use pipeline::{Pipeline, builtin_tools, builtin_tools_confined};
pub use portcullis_mcp::sessions::SessionLimits;
pub use record_sinks::{JsonlFileSink, RecordSink, RecordSinks, RunningTail};
pub use refusals::RefusalRecorder;
pub use reload::{PolicyWatcher, watch as watch_policy};
pub use sandboxing::{default_launcher, entry_point as sandbox_entry_point, probe as probe_sandbox};
pub use secrets::environment_secrets;
pub use server_reports::{ServerFailure, UpstreamServer, UpstreamState, servers_of};
pub use state::{HubEvent, HubState, OpenSession};
pub use team_ledger::{TeamLedgerChoice, TeamLedgerSetting};
pub use tls::{TlsSource, load as load_tls};
pub use undo_calls::{PathKind, UndoReport, UndoStep, plan_of, undo_call, undo_of};
pub use upstreams::RestartRefused;
