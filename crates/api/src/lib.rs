//! The operator API: the one set of functions every front end — the CLI, the HTTP operator API under
//! `/v1`, the desktop app — calls to see and steer a hub. Inputs and outputs are the transport types of
//! [`types`], never the crates' internal ones; every failure is an [`ApiError`] with a stable code.

pub mod always;
mod approvals;
pub mod call_changes;
mod call_detail;
pub mod call_query;
mod call_steps;
mod catalog;
mod client;
pub(crate) mod connections;
pub mod console_link;
pub mod decider;
pub mod draft_access;
pub mod draft_replay;
mod effects;
pub use portcullis_ledger::{EffectMarkOutcome, EffectRow, EffectState};
pub mod error;
pub mod events;
pub mod file_change;
mod hookup;
pub mod judge;
pub mod ledger;
pub mod ledger_address;
pub mod ledger_browse;
pub mod ledger_library;
pub mod line_diff;
mod live_rows;
pub mod notice;
pub mod one_call;
pub mod policy_check;
pub mod policy_files;
pub mod record_summary;
mod remote_client;
pub mod replay;
pub mod rule_activity;
pub mod table;
mod table_calls;
pub mod times;
pub mod types;
pub mod workbench;

// The front ends' doors over the table: the HTTP server (agents' `/mcp`, the operator's `/v1`, the
// console), and what starts a hub.
pub mod console;
mod hook_process;
mod hook_run_client;
pub mod launch;
pub mod operator_http;
mod operator_remote;
mod operator_rest;
pub mod server;
pub mod start;
pub mod stdio;
#[cfg(feature = "testing")]
pub mod testing;

pub use launch::{LaunchError, LaunchedHub, launch};
pub use server::{RunningHub, bind, serve, serve_on};

pub use client::hub_commands::{BATCH_EVERY, BATCH_ITEMS};
pub use client::ledger_commands::{ExportUpdate, OpenedLedger};
pub use client::{Client, Connected, HubState, Sink};
pub use error::{ApiError, ErrorCode};
pub use hookup::snippets as hookup_snippets;
/// The characters [`visible`] escapes, as ranges (generated into front ends, which escape the same).
pub use portcullis_harness::untrusted::escaped_ranges;
/// Agent text (commands, paths, tool names, reasons quoting them) made safe to show a person: control
/// and invisible characters written as visible escapes. Every front end escapes agent text with it.
pub use portcullis_harness::untrusted::visible;
pub use remote_client::{HubClient, RemoteClient};
pub use table::{COMMANDS, CommandInfo};
pub use table_calls::TableCalls;

use portcullis_hub::Hub;

/// Who answers through a front end, recorded with each answer: a name (`api`, `alice (terminal)`,
/// `alice (app)`) and the [`Channel`] it came through, both set by the front end, never taken from a
/// request's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    name: String,
    channel: Channel,
}

/// The front end an operator answers through, as an answer's receipt records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The desktop app.
    App,
    /// The browser console.
    Browser,
    /// A terminal: `portcullis serve`'s approver, the command line.
    Terminal,
    /// The HTTP operator API (the operator's token), and programs calling the API in process.
    Api,
}

impl Channel {
    /// The channel's word in receipts: `app`, `browser`, `terminal`, `api`.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::App => "app",
            Channel::Browser => "browser",
            Channel::Terminal => "terminal",
            Channel::Api => "api",
        }
    }
}

impl Operator {
    /// The operator of the API channel, by the name recorded for it.
    pub fn named(name: impl Into<String>) -> Self {
        Operator::through(Channel::Api, name)
    }

    /// The operator answering through `channel`, by the name recorded for them.
    pub fn through(channel: Channel, name: impl Into<String>) -> Self {
        Operator { name: name.into(), channel }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn channel(&self) -> Channel {
        self.channel
    }
}

/// The operator API of one hub.
#[derive(Clone)]
pub struct OperatorApi {
    hub: Hub,
}

impl OperatorApi {
    pub fn new(hub: Hub) -> Self {
        OperatorApi { hub }
    }

    /// Seals the hub's ledger now (see `SqliteLedger::seal_now`), so a verification finds every record
    /// so far sealed.
    pub async fn seal_ledger(&self) -> Result<(), ApiError> {
        self.hub.state.ledger.seal_now().await?;
        if let Some(dir) = self.hub.state.config.user_config() {
            portcullis_hub::keep_ledger_witness(&dir, &self.hub.state.config.db);
        }
        Ok(())
    }
}
