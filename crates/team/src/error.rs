//! What can go wrong with a team ledger, each with what and where; never a password.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("team ledger {url}: {why}")]
    BadUrl { url: String, why: String },
    #[error("the team ledger's password file {}: {why}", file.display())]
    PasswordFile { file: PathBuf, why: String },
    #[error("the team ledger's TLS roots {}: {why}", file.display())]
    TlsRoots { file: PathBuf, why: String },
    #[error("team ledger {url}: cannot connect: {why}")]
    Connect { url: String, why: String },
    #[error("team ledger {url}: {why}")]
    Database { url: String, why: String },
    #[error("team ledger {url}: no team ledger there yet (a hub shipping to it makes one)")]
    NotATeamLedger { url: String },
    #[error("{0}")]
    BadFilter(String),
    /// An export that could not be written (its file, its pipe).
    #[error("export: {0}")]
    Export(String),
    /// A row of the team ledger's own queries whose column is not of the type this build reads.
    #[error("a team ledger row does not read as this build expects: {0}")]
    BadRow(String),
    #[error(
        "team ledger {url}: its schema is version {found}, newer than this build's {supported}: upgrade Portcullis"
    )]
    NewerSchema { url: String, found: i32, supported: i32 },
    #[error(
        "team ledger {url}: its schema is version {found}, older than this build's {supported}: a hub of this build migrates it when it next ships"
    )]
    OlderSchema { url: String, found: i32, supported: i32 },
}

impl TeamError {
    /// The stable code front ends show.
    pub fn code(&self) -> &'static str {
        match self {
            TeamError::BadUrl { .. } | TeamError::PasswordFile { .. } | TeamError::TlsRoots { .. } => {
                "bad_team_ledger"
            }
            TeamError::Connect { .. } => "team_ledger_unreachable",
            TeamError::NotATeamLedger { .. } => "not_a_team_ledger",
            TeamError::BadFilter(_) => "bad_filter",
            TeamError::Export(_) => "export_failed",
            TeamError::Database { .. }
            | TeamError::NewerSchema { .. }
            | TeamError::OlderSchema { .. }
            | TeamError::BadRow(_) => "team_ledger_failed",
        }
    }
}

/// The text of a driver error, with the server's message when there is one (the driver's own
/// `Display` says only "db error").
pub(crate) fn driver_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            text
        }
    }
}
