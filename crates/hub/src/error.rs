//! The hub's errors, each with a stable code.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum HubError {
    #[error(transparent)]
    Policy(#[from] portcullis_policy::PolicyError),
    #[error(transparent)]
    Ledger(#[from] portcullis_ledger::LedgerStoreError),
    /// A folder, file or address the hub cannot use.
    #[error("{0}")]
    Config(String),
    #[error("cannot listen on {addr}: {source}{hint}")]
    Listen { addr: String, source: std::io::Error, hint: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The stdio MCP session failed.
    #[error("{0}")]
    Stdio(String),
}

impl HubError {
    pub fn code(&self) -> &'static str {
        match self {
            HubError::Policy(e) => e.code(),
            HubError::Ledger(e) => e.code(),
            HubError::Config(_) => "hub_config",
            HubError::Listen { .. } => "listen_failed",
            HubError::Io(_) => "io_failed",
            HubError::Stdio(_) => "stdio_failed",
        }
    }
}
