//! The reader behind a browsed ledger: a hub's own file or a team's ledger in PostgreSQL, asked the
//! same questions with the same filters, so the ledger browser (in the app and in the browser) and the
//! workbench's replay read either alike.

use super::error::ApiError;
use portcullis_ledger::{LedgerRead, LedgerReader};
use portcullis_team::{TeamDb, TeamReader};
use std::path::{Path, PathBuf};

/// Which ledger to open: a file, or a team ledger's `postgres://` URL (its password from
/// `password_file`, else `$PGPASSWORD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerAddress {
    File(PathBuf),
    Team { url: String, password_file: Option<PathBuf> },
}

impl std::fmt::Display for LedgerAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LedgerAddress::File(path) => write!(f, "{}", path.display()),
            // Masked as everywhere a URL is shown (one with a password is refused when opened).
            LedgerAddress::Team { url, .. } => f.write_str(&portcullis_team::target::shown_of(url)),
        }
    }
}

impl LedgerAddress {
    /// What `--db` named: a `postgres://` URL is a team ledger, anything else a file.
    pub fn of(text: &Path, password_file: Option<&Path>) -> LedgerAddress {
        match text.to_str().filter(|t| portcullis_team::is_team_url(t)) {
            Some(url) => {
                LedgerAddress::Team { url: url.to_owned(), password_file: password_file.map(Path::to_owned) }
            }
            None => LedgerAddress::File(text.to_owned()),
        }
    }
}

/// A ledger opened for reading, of either kind.
pub enum AnyReader {
    File(LedgerReader),
    Team(Box<TeamReader>),
}

impl AnyReader {
    /// Opens the ledger `address` names (a team ledger: connects and checks its schema).
    pub fn open(address: &LedgerAddress) -> Result<AnyReader, ApiError> {
        match address {
            LedgerAddress::File(path) => Ok(AnyReader::File(LedgerReader::open(path)?)),
            LedgerAddress::Team { url, password_file } => {
                let db = TeamDb::parse(url, password_file.as_deref())?;
                Ok(AnyReader::Team(Box::new(TeamReader::open(&db)?)))
            }
        }
    }

    /// The calls, counts, timelines, stats and sessions every ledger answers alike (paging is the
    /// trait's, written once); what only one kind has (a file's verification, a team's hubs) is asked
    /// of the arm itself.
    pub fn read(&self) -> &(dyn LedgerRead + 'static) {
        match self {
            AnyReader::File(r) => r,
            AnyReader::Team(r) => r.as_ref(),
        }
    }
}

/// An open ledger answers every [`LedgerRead`] question itself (`reader.calls(…)`).
impl std::ops::Deref for AnyReader {
    type Target = dyn LedgerRead;
    fn deref(&self) -> &Self::Target {
        self.read()
    }
}
