//! The stdio MCP server behind `portcullis mcp`, for clients that only spawn stdio servers. With a hub
//! running (its runtime file names a live process) it relays to the hub's gateway, so the hub's operator
//! answers prompts and its ledger records the calls; otherwise it runs an embedded headless hub (prompts
//! are then denied: nobody can answer them). What a person should know is handed to `notice`.

use portcullis_hub::HubError;
use portcullis_hub::{Hub, HubBackend, HubConfig};
use portcullis_hub::{RuntimeInfo, load_or_create_token};
use portcullis_mcp::gateway::GatewayHandler;
use portcullis_policy::discovery::user_config_dir;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where an embedded hub works, and whether to relay to a running one.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// The embedded hub's project folder.
    pub project: PathBuf,
    /// The embedded hub's ledger.
    pub db: PathBuf,
    /// The embedded hub's policy files (else the user's and the project's).
    pub policy_files: Vec<PathBuf>,
    /// Never relay: always run an embedded hub.
    pub embedded: bool,
}

/// Serves MCP on stdin/stdout until the client closes it.
pub async fn serve_stdio(options: StdioOptions, notice: &(dyn Fn(&str) + Sync)) -> Result<(), HubError> {
    let config_dir = user_config_dir();
    let running = if options.embedded { None } else { config_dir.as_deref().and_then(RuntimeInfo::read) };
    match (running, config_dir) {
        (Some(info), Some(dir)) => {
            let token = load_or_create_token(&dir)?;
            notice(&format!("relaying to the running hub at {}", info.mcp_url));
            // Claude Code names its session to the servers it starts: the hub records these calls in the
            // same ledger session as that session's hook calls.
            let agent = portcullis_mcp::agent_names::AgentNames {
                session: std::env::var("CLAUDE_CODE_SESSION_ID").ok().map(|id| format!("claude-{id}")),
                project: std::env::var("CLAUDE_PROJECT_DIR").ok(),
            };
            portcullis_mcp::relay::relay(info.mcp_url, token, agent).await.map_err(HubError::Stdio)
        }
        _ => embedded(options, notice).await,
    }
}

async fn embedded(options: StdioOptions, notice: &(dyn Fn(&str) + Sync)) -> Result<(), HubError> {
    let db = options.db.clone();
    let config = HubConfig {
        policy_files: options.policy_files,
        shutdown_grace: Duration::from_secs(5),
        unattended: true,
        // Published on a free loopback port, so `portcullis hook` and other `portcullis mcp` processes
        // use this hub (and its ledger) while it runs.
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..HubConfig::new(options.project, db.clone())
    };
    let hub = Hub::open(config).await?;
    let published = match crate::server::serve(hub.clone()).await {
        Ok(running) => Some(running),
        Err(e) => {
            notice(&format!("the embedded hub is not published to other processes: {e}"));
            None
        }
    };
    notice(&format!(
        "no hub is running: serving an embedded headless hub (policies: {}; ledger: {}); prompts are denied because no operator can answer them — start `portcullis serve` to approve calls",
        hub.policy_sources().join(", "),
        db.display()
    ));
    let _watcher = portcullis_hub::watch_policy(&hub).ok();
    let handler = GatewayHandler::new(Arc::new(HubBackend::new(hub.clone())), "stdio");
    let outcome = portcullis_mcp::gateway::serve_stdio(handler).await;
    match published {
        Some(running) => running.shutdown().await?,
        None => hub.close().await?,
    }
    outcome.map_err(|e| HubError::Stdio(format!("stdio session failed: {e}")))
}
