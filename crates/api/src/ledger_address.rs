//! Which ledger a command names — a hub's own file or a team's ledger in PostgreSQL — and its reader,
//! asked the same questions with the same filters, so the ledger browser (in the app and in the
//! browser), export and the workbench's replay read either alike.

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

/// Opens the ledger `address` names, for reading (a team ledger: connects and checks its schema). Every
/// question, including what only one kind of ledger holds, is then asked of the one [`LedgerRead`].
pub fn open_reader(address: &LedgerAddress) -> Result<Box<dyn LedgerRead>, ApiError> {
    match address {
        LedgerAddress::File(path) => Ok(Box::new(LedgerReader::open(path)?)),
        LedgerAddress::Team { url, password_file } => {
            let db = TeamDb::parse(url, password_file.as_deref())?;
            Ok(Box::new(TeamReader::open(&db)?))
        }
    }
}
