//! The hub the app runs in-process, started exactly as `portcullis serve` starts it (`hub::launch`: same
//! defaults, gateway on 127.0.0.1:7391, tokens, ledger, hot reload) and stopped cleanly at exit — or,
//! when another hub of this user already runs (`portcullis serve` on the port or the ledger), that hub,
//! attached over its operator API (the same command table, forwarded over HTTP with the operator's
//! token) instead of a second hub on the same ledger. Only when neither works does the window say why.

use crate::window_table::WindowTable;
use portcullis_api::start::{
    HubConfig, LaunchedHub, RemoteHub, default_ledger_path, launch, user_config_dir,
};
use portcullis_api::{
    ApiError, Channel, Client, Connected, ErrorCode, HubClient, HubState, Operator, OperatorApi, RemoteClient,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;

/// What the command line may change (as `portcullis serve --project DIR --port N --db FILE`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartOptions {
    pub project: Option<PathBuf>,
    pub port: Option<u16>,
    pub db: Option<PathBuf>,
}

impl StartOptions {
    /// Reads `--project DIR`, `--port N` and `--db FILE`; anything else is refused with a message.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<StartOptions, String> {
        let mut options = StartOptions::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--project" => options.project = Some(PathBuf::from(value()?)),
                "--db" => options.db = Some(PathBuf::from(value()?)),
                "--port" => {
                    let v = value()?;
                    options.port = Some(v.parse().map_err(|_| format!("--port {v}: not a port number"))?);
                }
                other => {
                    return Err(format!(
                        "unknown argument {other:?} (known: --project DIR, --port N, --db FILE)"
                    ));
                }
            }
        }
        Ok(options)
    }

    /// The hub's configuration: `portcullis serve`'s defaults with these options applied.
    pub fn config(&self) -> Result<HubConfig, String> {
        let project = match &self.project {
            Some(p) => p.clone(),
            None => std::env::current_dir().map_err(|e| format!("current directory: {e}"))?,
        };
        let db = match &self.db {
            Some(db) => db.clone(),
            None => default_ledger_path().map_err(|e| e.to_string())?,
        };
        let mut config = HubConfig::new(project, db);
        if let Some(port) = self.port {
            config.listen = SocketAddr::new(config.listen.ip(), port);
        }
        Ok(config)
    }
}

/// The app's hub: the launched hub (taken at exit to shut it down) and the window's client of the
/// command table (in process: its state, open ledgers, streams, the examples' cache; attached: the
/// running hub's table over HTTP).
pub struct HubHost {
    launched: Mutex<Option<LaunchedHub>>,
    /// The window's table: the first hub, and those attached since.
    table: WindowTable,
}

impl HubHost {
    /// Starts the hub (on the current tokio runtime); a failure is kept as the state the window shows.
    pub async fn start(options: &StartOptions) -> HubHost {
        let config = match options.config() {
            Ok(config) => config,
            Err(message) => return HubHost::not_running("bad_argument".into(), message),
        };
        let (project, ledger) = (config.project.display().to_string(), config.db.display().to_string());
        let config_dir = config.user_config();
        match launch(config).await {
            Ok(launched) => {
                let token_file =
                    user_config_dir().map(|d| d.join("token").display().to_string()).unwrap_or_default();
                let state = HubState::Running {
                    mcp_url: format!("http://{}/mcp", launched.running.addr),
                    token_file,
                    project,
                    ledger,
                };
                tracing::info!(?state, "hub started");
                let connected = Connected::Hub { api: launched.api(), state };
                let client = HubClient::InProcess(window_client(connected));
                HubHost { launched: Mutex::new(Some(launched)), table: window_table(client) }
            }
            Err(e) if e.code() == "hub_already_running" => match config_dir.as_deref().map(attach) {
                Some(Ok(remote)) => {
                    tracing::info!(api = remote.api_url(), "another hub runs: attached to it");
                    HubHost { launched: Mutex::new(None), table: window_table(HubClient::Attached(remote)) }
                }
                Some(Err(why)) => {
                    tracing::error!("another hub runs and could not be attached: {}", why.message);
                    HubHost::not_running(
                        e.code().into(),
                        format!("{e} (attaching to it failed: {})", why.message),
                    )
                }
                None => HubHost::not_running(e.code().into(), e.to_string()),
            },
            Err(e) => {
                tracing::error!(code = e.code(), "the hub did not start: {e}");
                HubHost::not_running(e.code().into(), e.to_string())
            }
        }
    }

    fn not_running(code: String, message: String) -> HubHost {
        let client = HubClient::InProcess(window_client(Connected::NoHub { code, message }));
        HubHost { launched: Mutex::new(None), table: window_table(client) }
    }

    /// The first hub's client.
    pub fn client(&self) -> &HubClient {
        self.table.first()
    }

    /// The window's table over its hubs.
    pub fn table(&self) -> &WindowTable {
        &self.table
    }

    /// Whether a hub is there to follow (in process, or attached).
    pub fn connected(&self) -> bool {
        match self.client() {
            HubClient::InProcess(client) => client.api().is_ok(),
            HubClient::Attached(_) => true,
        }
    }

    /// The in-process hub's operator API; `hub_unavailable` when the hub did not start or runs in
    /// another process (closing this window then stops nothing).
    pub fn api(&self) -> Result<&OperatorApi, ApiError> {
        match self.client() {
            HubClient::InProcess(client) => client.api(),
            HubClient::Attached(remote) => Err(ApiError::new(
                ErrorCode::HubUnavailable,
                format!("the hub runs in another process ({})", remote.api_url()),
                serde_json::json!({}),
            )),
        }
    }

    /// Stops the hub: calls in flight finish within the grace period or are recorded as interrupted.
    pub async fn shutdown(&self) {
        let launched = self.launched.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(launched) = launched
            && let Err(e) = launched.shutdown().await
        {
            tracing::error!("the hub did not shut down cleanly: {e}");
        }
    }
}

/// The hub of this user that already runs, attached as the window's operator (`alice (app)`).
fn attach(config_dir: &std::path::Path) -> Result<RemoteClient, ApiError> {
    Ok(RemoteClient::new(RemoteHub::running(config_dir)?.answering_as(app_operator().name())?))
}

fn window_table(first: HubClient) -> WindowTable {
    WindowTable::new(first, app_operator().name().to_owned())
}

/// The window's client: it answers as [`app_operator`], its library in the user's config folder.
fn window_client(connected: Connected) -> Client {
    let library = user_config_dir().map(|d| d.join("ledger-library.json"));
    Client::new(connected, app_operator(), library)
}

/// `alice (app)`: the user and the channel, as the terminal approver records `alice (terminal)`.
fn app_operator() -> Operator {
    match std::env::var("USER") {
        Ok(user) if !user.is_empty() => Operator::through(Channel::App, format!("{user} (app)")),
        _ => Operator::through(Channel::App, "app"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_like_serve() {
        let args = ["--project", "/p", "--port", "0", "--db", "/l.db"].map(String::from);
        let options = StartOptions::parse(args).unwrap();
        assert_eq!(options.project, Some(PathBuf::from("/p")));
        let config = options.config().unwrap();
        assert_eq!(config.listen.port(), 0);
        assert!(config.listen.ip().is_loopback());
        assert!(StartOptions::parse(["--nope".to_owned()]).is_err());
        assert!(StartOptions::parse(["--port".to_owned(), "x".to_owned()]).is_err());
    }

    #[test]
    fn without_options_the_gateway_is_servers_default() {
        let config = StartOptions::default().config().unwrap();
        assert_eq!(config.listen, SocketAddr::from(([127, 0, 0, 1], 7391)));
    }
}
