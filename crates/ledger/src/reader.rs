//! The read-only handle on a ledger file ([`LedgerReader`]): opening it and checking what it is. Each
//! reading module (calls in `query.rs`, sessions, refusals, effects, tool pins, stats, verification, ...)
//! adds its own methods to it, so those modules depend on this handle only, not on the call listing nor
//! on the writer.

use crate::error::{AtPath, LedgerStoreError};
use crate::schema::{SCHEMA_VERSION, check_identity, identity};
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A read-only view of a ledger file.
pub struct LedgerReader {
    pub(crate) path: PathBuf,
    pub(crate) conn: Connection,
}

impl LedgerReader {
    /// Opens a ledger read-only. Refuses missing files, files that are not ledgers, newer schemas, and
    /// older ones (which `SqliteLedger::open` migrates).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LedgerStoreError> {
        let path = path.as_ref().to_owned();
        let conn = open_read_only(&path)?;
        let (_, version) = identity(&conn).at(&path)?;
        if version < SCHEMA_VERSION {
            return Err(LedgerStoreError::OlderSchema { path, found: version, current: SCHEMA_VERSION });
        }
        Ok(LedgerReader { path, conn })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens a read-only connection (works while another process writes).
fn open_read_only(path: &Path) -> Result<Connection, LedgerStoreError> {
    if !path.exists() {
        return Err(LedgerStoreError::Missing { path: path.to_owned() });
    }
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .at(path)?;
    conn.busy_timeout(Duration::from_secs(5)).at(path)?;
    check_identity(&conn, path, false)?;
    Ok(conn)
}
