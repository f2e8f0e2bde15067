//! The CLI's client of the command table, in process: the same `api::Client` the desktop app and the
//! HTTP routes serve, over no hub (the CLI reads ledger files itself), answering as `cli`.

use crate::error::CliError;
use portcullis_api::ledger::LedgerAddress;
use portcullis_api::{ApiError, Channel, Client, Connected, ErrorCode, Operator};
use std::future::Future;
use std::path::PathBuf;

/// Runs `work` with an in-process client on a runtime of its own (the client's queries run on its
/// blocking pool); a team ledger it opens reads its password from `team_password_file` (else
/// `$PGPASSWORD`).
pub fn in_process<T, F>(
    team_password_file: Option<PathBuf>,
    work: impl FnOnce(Client) -> F,
) -> Result<T, CliError>
where
    F: Future<Output = Result<T, ApiError>>,
{
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
        ApiError::new(
            ErrorCode::BackendFailed,
            format!("no runtime for the client: {e}"),
            serde_json::json!({}),
        )
    })?;
    let connected = Connected::NoHub {
        code: "hub_unavailable".into(),
        message: "the command line reads ledger files itself".into(),
    };
    let client = Client::with_team_password(
        connected,
        Operator::through(Channel::Terminal, "cli"),
        None,
        team_password_file,
    );
    Ok(runtime.block_on(work(client))?)
}

/// What `open_ledger` is given for `address` (a file's path or a team ledger's URL) and the team
/// ledger's password file.
pub fn opened_as(address: &LedgerAddress) -> (String, Option<PathBuf>) {
    match address {
        LedgerAddress::File(path) => (path.display().to_string(), None),
        LedgerAddress::Team { url, password_file } => (url.clone(), password_file.clone()),
    }
}
