//! The CLI's client of the command table, in process: the same `api::Client` the desktop app and the
//! HTTP routes serve, over no hub (the CLI reads ledger files itself), answering as `cli`.

use crate::error::CliError;
use portcullis_api::{ApiError, Channel, Client, Connected, ErrorCode, Operator};
use std::future::Future;

/// Runs `work` with an in-process client on a runtime of its own (the client's queries run on its
/// blocking pool).
pub fn in_process<T, F>(work: impl FnOnce(Client) -> F) -> Result<T, CliError>
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
    let client = Client::new(connected, Operator::through(Channel::Terminal, "cli"), None);
    Ok(runtime.block_on(work(client))?)
}
