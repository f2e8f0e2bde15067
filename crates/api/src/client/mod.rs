//! One front end's door to a hub: every command of the table ([`crate::operator_commands`]) is a method
//! of [`Client`], and the state a front end would otherwise keep itself — the ledgers it holds open, its
//! exports, replays and event feeds, the examples' parse cache, where its library file lives — is kept
//! here, bounded and expiring, so that the app, the HTTP routes and the CLI share it instead of
//! rebuilding it each.

pub(super) mod hub_commands;
mod jobs;
pub(super) mod ledger_commands;
mod open_ledgers;
mod workbench_commands;

pub use jobs::Sink;

use super::error::{ApiError, ErrorCode};
use super::{Operator, OperatorApi};
use jobs::Jobs;
use open_ledgers::OpenLedgers;
use portcullis_policy::ExampleCommands;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Where a front end's hub runs, or why it does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum HubState {
    Running {
        /// The gateway agents connect to.
        mcp_url: String,
        /// The file holding the agents' bearer token.
        token_file: String,
        project: String,
        ledger: String,
    },
    /// The hub did not start; `code` is `hub_already_running` when another hub holds the port or ledger.
    NotRunning { code: String, message: String },
}

/// What a front end is connected to: a running hub's API and where it runs, or why none runs (ledger
/// files can still be browsed then).
#[derive(Clone)]
pub enum Connected {
    Hub { api: OperatorApi, state: HubState },
    NoHub { code: String, message: String },
}

/// A front end's client of the operator API (cheap to clone: clones share their state).
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientState>,
}

struct ClientState {
    connected: Connected,
    operator: Operator,
    /// The recent ledgers and saved views (`ledger-library.json` in the user's config folder).
    library: Option<PathBuf>,
    /// Where a team ledger's password is, for a client with no hub to say (else `$PGPASSWORD`).
    team_password_file: Option<PathBuf>,
    ledgers: OpenLedgers,
    jobs: Jobs,
    examples: Mutex<ExampleCommands>,
}

impl Client {
    /// A client of `connected` whose answers are recorded as `operator`'s, keeping its library in
    /// `library` (none: the library commands say there is no config folder).
    pub fn new(connected: Connected, operator: Operator, library: Option<PathBuf>) -> Client {
        Client::with_team_password(connected, operator, library, None)
    }

    /// [`Client::new`] of a client that opens team ledgers with the password in `team_password_file`
    /// when no hub names one (the command line's `--password-file`).
    pub fn with_team_password(
        connected: Connected,
        operator: Operator,
        library: Option<PathBuf>,
        team_password_file: Option<PathBuf>,
    ) -> Client {
        Client {
            inner: Arc::new(ClientState {
                connected,
                operator,
                library,
                team_password_file,
                ledgers: OpenLedgers::default(),
                jobs: Jobs::default(),
                examples: Mutex::new(ExampleCommands::default()),
            }),
        }
    }

    /// The running hub's API, or `hub_unavailable` with why none runs.
    pub fn api(&self) -> Result<&OperatorApi, ApiError> {
        match &self.inner.connected {
            Connected::Hub { api, .. } => Ok(api),
            Connected::NoHub { message, .. } => Err(ApiError::new(
                ErrorCode::HubUnavailable,
                format!("no hub runs here: {message}"),
                json!({}),
            )),
        }
    }

    /// Who answers through this client, as the ledger records it.
    pub fn operator(&self) -> &Operator {
        &self.inner.operator
    }

    fn state_now(&self) -> HubState {
        match &self.inner.connected {
            Connected::Hub { state, .. } => state.clone(),
            Connected::NoHub { code, message } => {
                HubState::NotRunning { code: code.clone(), message: message.clone() }
            }
        }
    }

    fn hub_ledger(&self) -> Option<String> {
        match &self.inner.connected {
            Connected::Hub { state: HubState::Running { ledger, .. }, .. } => Some(ledger.clone()),
            _ => None,
        }
    }

    fn library_file(&self) -> Result<PathBuf, ApiError> {
        self.inner.library.clone().ok_or_else(|| {
            ApiError::new(ErrorCode::BadArgument, "no config folder: set HOME or XDG_CONFIG_HOME", json!({}))
        })
    }

    fn examples(&self) -> MutexGuard<'_, ExampleCommands> {
        self.inner.examples.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs `work` on the blocking pool: a ledger query or replay never holds the async runtime.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(ApiError::new(ErrorCode::BackendFailed, format!("the work stopped: {e}"), json!({})))
    })
}
