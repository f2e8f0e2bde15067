//! What a running hub holds, shared by its parts: the dispatcher, the live policy, the broker, the
//! ledger, the sessions, the upstream servers, the idempotency book. A leaf the hub's stages and
//! services read, so none of them needs the `Hub` handle that starts them.

use crate::broker::ApprovalBroker;
use crate::config::Credentials;
use crate::hub_config::HubConfig;
use crate::upstreams::Upstreams;
use portcullis_coding::Workspace;
use portcullis_harness::{Dispatcher, RunContext, Timestamp};
use portcullis_ledger::SqliteLedger;
use portcullis_policy::LivePolicy;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

/// Something operators watch: reloads, errors, connections.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum HubEvent {
    PolicyReloaded {
        sources: Vec<String>,
    },
    /// A changed policy did not load; the previous one stays in force.
    PolicyRejected {
        code: String,
        message: String,
    },
    SessionOpened {
        session_id: String,
        client: String,
        version: String,
    },
    SessionClosed {
        session_id: String,
    },
    /// A changed tool manifest did not load; the previous manifests stay in force.
    ManifestRejected {
        message: String,
    },
    /// An upstream server's tools or status changed.
    Upstreams {
        servers: Vec<crate::server_reports::UpstreamServer>,
    },
}

/// An agent session the hub has open.
#[derive(Debug, Clone)]
pub struct OpenSession {
    pub client: String,
    pub version: String,
    /// `http`, `stdio`, or `in-process`.
    pub transport: String,
    pub opened_at: Timestamp,
    /// Calls made so far, blocked ones included.
    pub calls: u64,
}

pub struct HubState {
    pub config: HubConfig,
    pub project: PathBuf,
    pub dispatcher: Dispatcher,
    pub live: Arc<LivePolicy>,
    pub broker: Arc<ApprovalBroker>,
    pub ledger: Arc<SqliteLedger>,
    pub sources: RwLock<Vec<String>>,
    pub tools_changed: watch::Sender<u64>,
    /// The digest of the upstream servers' resource and prompt lists agents were last told of.
    pub offered: std::sync::atomic::AtomicU64,
    pub events: broadcast::Sender<HubEvent>,
    pub sessions: AtomicU64,
    /// Sessions opened and not yet closed: ended at shutdown if their clients never said goodbye.
    pub open_sessions: std::sync::Mutex<std::collections::BTreeMap<String, OpenSession>>,
    pub calls_in_flight: AtomicU64,
    pub shutdown: CancellationToken,
    pub workspace: Arc<Workspace>,
    pub upstreams: Upstreams,
    /// The accepted definitions of upstream tools, and the tools held back since theirs changed.
    pub pins: crate::pins::ToolPins,
    pub manifests: RwLock<Vec<Arc<dyn portcullis_harness::Tool>>>,
    /// The agents' and the operator's tokens (none without a config folder: such a hub cannot serve).
    pub credentials: Option<Credentials>,
    /// The address the gateway listens on, once it serves.
    pub served_at: std::sync::OnceLock<std::net::SocketAddr>,
    /// `https` once the gateway serves TLS, else `http`.
    pub served_scheme: std::sync::OnceLock<&'static str>,
    /// The tail feeding the record sinks (none without sinks), drained at close.
    pub tail: std::sync::Mutex<Option<crate::record_sinks::RunningTail>>,
    /// The browser console's login codes not used yet (any operator front end mints them).
    pub console_codes: Arc<crate::console_logins::LoginCodes>,
    /// The effects agents' idempotency keys claimed (rebuilt from the ledger at start).
    pub effects: crate::effects::EffectBook,
    /// The policies of the projects hook calls came from (beside this hub's own).
    pub projects: crate::projects::ProjectPolicies,
    /// Hook calls being carried out: tickets of sandboxed runs, calls waiting for Claude Code's report.
    pub hook_runs: Arc<crate::hook_run::HookRuns>,
}

impl HubState {
    /// The run of an agent's MCP call: its session, its owner, the project as working folder.
    pub fn mcp_run(&self, session_id: &str, owner: &str) -> RunContext {
        RunContext::new(session_id.to_owned(), "mcp")
            .with_owner(owner.to_owned())
            .with_cwd(self.project.clone())
    }

    /// `https` when the gateway serves TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        self.served_scheme.get().copied().unwrap_or("http")
    }
}
