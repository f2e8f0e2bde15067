//! The ledger's errors: one enum, each variant with a stable code, each message saying what and where.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum LedgerStoreError {
    #[error("{path}: no such ledger file")]
    Missing { path: PathBuf },
    #[error("{path}: not a Portcullis ledger ({why})")]
    NotALedger { path: PathBuf, why: String },
    #[error(
        "{path}: ledger schema version {found} is newer than this build understands (up to {supported}); \
         upgrade Portcullis to open it"
    )]
    NewerSchema { path: PathBuf, found: i64, supported: i64 },
    #[error(
        "{path}: ledger schema version {found} is older than this build's {current}; open it for writing once \
         (`portcullis ledger migrate --db FILE`) to migrate it"
    )]
    OlderSchema { path: PathBuf, found: i64, current: i64 },
    #[error("{path}: another process is writing this ledger")]
    Locked { path: PathBuf },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: SQLite: {source}")]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    /// The journal beside a ledger cannot be replayed; the ledger is not opened for writing (nothing in
    /// either file is changed).
    #[error("{path}: {why}")]
    Journal { path: PathBuf, why: String },
    #[error("invalid filter: {0}")]
    BadFilter(String),
    #[error("ledger writer failed: {0}")]
    Writer(String),
    #[error("ledger is closed")]
    Closed,
    #[error("export failed: {0}")]
    Export(String),
}

impl LedgerStoreError {
    /// A stable, machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            LedgerStoreError::Missing { .. } => "ledger_missing",
            LedgerStoreError::NotALedger { .. } => "not_a_ledger",
            LedgerStoreError::NewerSchema { .. } => "ledger_schema_newer",
            LedgerStoreError::OlderSchema { .. } => "ledger_schema_older",
            LedgerStoreError::Locked { .. } => "ledger_locked",
            LedgerStoreError::Io { .. } => "ledger_io",
            LedgerStoreError::Sqlite { .. } => "ledger_sqlite",
            LedgerStoreError::Journal { .. } => "ledger_journal_damaged",
            LedgerStoreError::BadFilter(_) => "bad_filter",
            LedgerStoreError::Writer(_) => "ledger_writer_failed",
            LedgerStoreError::Closed => "ledger_closed",
            LedgerStoreError::Export(_) => "export_failed",
        }
    }
}

/// Attaches the file path to SQLite errors.
pub(crate) trait AtPath<T> {
    fn at(self, path: &std::path::Path) -> Result<T, LedgerStoreError>;
}

impl<T> AtPath<T> for Result<T, rusqlite::Error> {
    fn at(self, path: &std::path::Path) -> Result<T, LedgerStoreError> {
        self.map_err(|source| LedgerStoreError::Sqlite { path: path.to_owned(), source })
    }
}
