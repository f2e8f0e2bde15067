//! Starting a hub that serves agents, the one way every such front end does it (`portcullis serve`, the
//! desktop app): bind first (a port in use leaves no token or ledger behind), open the hub, serve the
//! gateway and the operator routes, watch the policies for hot reload — and, when another hub of this
//! user already holds the port or the ledger, say so with what its runtime file tells about it.

use crate::OperatorApi;
use crate::server::{RunningHub, bind, serve_on};
use portcullis_hub::HubError;
use portcullis_hub::PolicyWatcher;
use portcullis_hub::RuntimeInfo;
use portcullis_hub::{Hub, HubConfig};

/// A hub that serves agents, with its policy watcher; [`LaunchedHub::shutdown`] stops it cleanly.
pub struct LaunchedHub {
    pub running: RunningHub,
    _watcher: PolicyWatcher,
}

impl LaunchedHub {
    /// The operator API of this hub.
    pub fn api(&self) -> OperatorApi {
        OperatorApi::new(self.running.hub.clone())
    }

    /// Stops watching, stops accepting, lets calls finish within the grace period (those still running
    /// are recorded as interrupted), then flushes and closes the ledger.
    pub async fn shutdown(self) -> Result<(), HubError> {
        let LaunchedHub { running, _watcher } = self;
        drop(_watcher);
        running.shutdown().await
    }
}

/// Why a hub did not start.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Another hub of this user holds the port or the ledger: a second one must not start beside it.
    #[error("a Portcullis hub is already running for this user{}: {source}", about(.other.as_ref()))]
    AlreadyRunning {
        /// What the other hub's runtime file says, when it has one and its process lives.
        other: Option<RuntimeInfo>,
        source: HubError,
    },
    #[error(transparent)]
    Failed(#[from] HubError),
}

/// What the other hub's runtime file says, as words.
fn about(other: Option<&RuntimeInfo>) -> String {
    other.map(|o| format!(" (pid {}, MCP at {}, ledger {})", o.pid, o.mcp_url, o.ledger)).unwrap_or_default()
}

impl LaunchError {
    /// A stable code: `hub_already_running`, else the hub error's own.
    pub fn code(&self) -> &'static str {
        match self {
            LaunchError::AlreadyRunning { .. } => "hub_already_running",
            LaunchError::Failed(e) => e.code(),
        }
    }
}

/// Binds the gateway, opens the hub, serves it and starts hot reload. The policy watcher runs on the
/// current tokio runtime.
pub async fn launch(config: HubConfig) -> Result<LaunchedHub, LaunchError> {
    let other = || config.user_config().and_then(|dir| RuntimeInfo::read(&dir));
    let listener = match bind(&config).await {
        Ok(listener) => listener,
        Err(e @ HubError::Listen { .. }) => {
            // The port is taken: by another hub when its runtime file names this address.
            let listen = format!("http://{}/mcp", config.listen);
            return Err(match other().filter(|o| o.mcp_url == listen) {
                Some(o) => LaunchError::AlreadyRunning { other: Some(o), source: e },
                None => LaunchError::Failed(e),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let hub = match Hub::open(config.clone()).await {
        Ok(hub) => hub,
        Err(e @ HubError::Ledger(portcullis_ledger::LedgerStoreError::Locked { .. })) => {
            return Err(LaunchError::AlreadyRunning { other: other(), source: e });
        }
        Err(e) => return Err(e.into()),
    };
    let running = serve_on(hub.clone(), listener).await?;
    let watcher = portcullis_hub::watch_policy(&hub)
        .map_err(|e| HubError::Config(format!("watching the policies for changes: {e}")))?;
    Ok(LaunchedHub { running, _watcher: watcher })
}
