//! The upstream servers as operators see them (where each stands, since when, its tools, restarts,
//! last error, stderr tail): made here, beside the supervisors, because the hub's own events carry them
//! as well as the command table.

use portcullis_harness::Timestamp;
use portcullis_mcp::upstream::{UpstreamReport, UpstreamStatus, UpstreamTransport};
use serde::{Deserialize, Serialize};

/// An upstream MCP server: where it stands and since when, its tools, how often it was restarted, its
/// last error and the last lines it wrote to stderr.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamServer {
    pub id: String,
    /// `stdio` or `http`; empty for a server that could not be specified.
    pub transport: String,
    /// The command line it runs, or its URL (never its headers).
    pub endpoint: String,
    /// `"state"` and what goes with it, beside the id.
    #[serde(flatten)]
    pub state: UpstreamState,
    /// When it entered this state (a tools refresh while ready does not move it).
    pub since: Timestamp,
    /// Its tools in the registry: the last listed ones while it reconnects.
    pub tools: usize,
    /// Connection attempts after the first: each reconnect after it went down or failed to connect, and
    /// each restart an operator asked for.
    pub restarts: u64,
    /// The last error that took it down or kept it from connecting; kept once it is back.
    pub last_error: Option<ServerFailure>,
    /// Its last stderr lines (at most 50, each at most 1 KiB), oldest first, across restarts; empty for
    /// HTTP servers. Server text: escape it wherever a person reads it.
    pub stderr_tail: Vec<String>,
}

/// Where an upstream server stands.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum UpstreamState {
    /// Starting and listing its tools.
    Connecting,
    Ready {
        /// Tools left out, with why (invalid name, schema too large, over the tool limit).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<String>,
    },
    /// Down: connecting again in `retry_in_ms` (the `failures`-th failure in a row). A server that could
    /// not be specified at all (a missing environment variable) is failed with 0 failures and is not
    /// retried until the policy or environment changes.
    Failed { error: String, failures: u32, retry_in_ms: u64 },
    /// No longer supervised (the hub shuts down).
    Stopped,
}

/// An error that took an upstream server down, and when.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFailure {
    pub message: String,
    pub at: Timestamp,
}

/// Every upstream server as operators see it, in policy order.
pub fn servers_of(upstreams: &crate::upstreams::Upstreams) -> Vec<UpstreamServer> {
    upstreams
        .reports_with_transport()
        .into_iter()
        .map(|(id, transport, report)| server_of(id, transport, report))
        .collect()
}

fn server_of(id: String, transport: Option<UpstreamTransport>, report: UpstreamReport) -> UpstreamServer {
    let (transport, endpoint) = match transport {
        Some(UpstreamTransport::Stdio { command, args, .. }) => {
            ("stdio".to_owned(), std::iter::once(command).chain(args).collect::<Vec<_>>().join(" "))
        }
        // The URL only: its headers may hold secrets.
        Some(UpstreamTransport::Http { url, .. }) => ("http".to_owned(), url),
        None => (String::new(), String::new()),
    };
    let state = match report.status {
        UpstreamStatus::Connecting => UpstreamState::Connecting,
        UpstreamStatus::Ready { tools: _, skipped } => UpstreamState::Ready { skipped },
        UpstreamStatus::Failed { error, failures, retry_in_ms } => {
            UpstreamState::Failed { error, failures, retry_in_ms }
        }
        UpstreamStatus::Stopped => UpstreamState::Stopped,
    };
    UpstreamServer {
        id,
        transport,
        endpoint,
        state,
        since: report.since,
        tools: report.tools,
        restarts: report.restarts,
        last_error: report.last_error.map(|f| ServerFailure { message: f.message, at: f.at }),
        stderr_tail: report.stderr_tail,
    }
}
