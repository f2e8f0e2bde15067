//! The CLI's one error type: each variant has a stable code, and is shown as one line on stderr.

use std::io;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CliError {
    /// An operator API call failed (its own code: the policy's or the ledger's when they failed).
    #[error("{}", .0.message)]
    Api(portcullis_api::ApiError),
    /// The hub could not start or stop (its own code).
    #[error("{message}")]
    Hub { code: &'static str, message: String },
    /// A `--since` / `--until` value that is not a time.
    #[error("{0}")]
    BadTime(String),
    /// An option value the ledger does not judge (a bucket width, an output path ...).
    #[error("{0}")]
    BadArgument(String),
    #[error("{0}")]
    CallNotFound(String),
    /// Writing the output (stdout or `--out`) failed.
    #[error("cannot write output: {0}")]
    Output(io::Error),
    #[error("cannot start the async runtime: {0}")]
    Runtime(io::Error),
    /// The reader of stdout went away (`| head`): not an error, the command just stops.
    #[error("output closed by the reader")]
    BrokenPipe,
}

impl CliError {
    /// A stable, machine-readable code: the ledger's or the policy's own when they failed.
    pub fn code(&self) -> &'static str {
        match self {
            CliError::Api(e) => e.code.as_str(),
            CliError::Hub { code, .. } => code,
            CliError::BadTime(_) => "bad_time",
            CliError::BadArgument(_) => "bad_argument",
            CliError::CallNotFound(_) => "call_not_found",
            CliError::Output(_) => "output_failed",
            CliError::Runtime(_) => "runtime_failed",
            CliError::BrokenPipe => "broken_pipe",
        }
    }

    /// The message on one line (SQLite and I/O messages may hold line breaks).
    pub fn one_line(&self) -> String {
        self.to_string().chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe { CliError::BrokenPipe } else { CliError::Output(e) }
    }
}

impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        match e.io_error_kind() {
            Some(io::ErrorKind::BrokenPipe) => CliError::BrokenPipe,
            _ => CliError::Output(io::Error::other(e)),
        }
    }
}

impl From<portcullis_api::ApiError> for CliError {
    fn from(e: portcullis_api::ApiError) -> Self {
        CliError::Api(e)
    }
}
