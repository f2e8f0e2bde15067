//! What the ledger browser remembers between runs: the ledger files opened lately (newest first) and
//! views saved by name (a ledger and the query string of its filters). One small JSON file in the
//! user's config folder — a folder the sandbox hides from agents — replaced atomically on each change;
//! a file that cannot be read is reported, never overwritten by an empty library.

use super::error::{ApiError, ErrorCode};
use portcullis_harness::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::Path;

/// Most ledgers the recent list keeps.
pub const MAX_RECENT: usize = 10;
/// Most saved views.
pub const MAX_VIEWS: usize = 100;
/// Longest view name and query, in bytes.
pub const MAX_VIEW_NAME: usize = 120;
pub const MAX_VIEW_QUERY: usize = 4096;

/// A ledger file opened lately.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct RecentLedger {
    pub path: String,
    pub opened_at: Timestamp,
}

/// A view saved by name: which ledger (none: the hub's own) and its filters as a query string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SavedView {
    pub name: String,
    pub ledger: Option<String>,
    pub query: String,
}

/// The recent ledgers and saved views.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LedgerLibrary {
    #[serde(default)]
    pub recent: Vec<RecentLedger>,
    #[serde(default)]
    pub views: Vec<SavedView>,
}

fn unreadable(file: &Path, why: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        ErrorCode::BadArgument,
        format!("{}: cannot read the ledger library: {why}", file.display()),
        json!({ "file": file }),
    )
}

impl LedgerLibrary {
    /// The library kept in `file` (empty when there is none yet).
    pub fn load(file: &Path) -> Result<LedgerLibrary, ApiError> {
        match std::fs::read_to_string(file) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| unreadable(file, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LedgerLibrary::default()),
            Err(e) => Err(unreadable(file, e)),
        }
    }

    fn store(&self, file: &Path) -> Result<(), ApiError> {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| unreadable(file, e))?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| unreadable(file, e))?;
        super::policy_files::write_atomically(file, &text).map_err(|e| {
            ApiError::new(
                ErrorCode::OutputFailed,
                format!("{}: cannot write the ledger library: {e}", file.display()),
                json!({ "file": file }),
            )
        })
    }

    /// Puts `ledger` first in the recent list of `file` (once), keeping [`MAX_RECENT`].
    pub fn remember(file: &Path, ledger: &str, at: Timestamp) -> Result<LedgerLibrary, ApiError> {
        let mut library = LedgerLibrary::load(file)?;
        library.recent.retain(|r| r.path != ledger);
        library.recent.insert(0, RecentLedger { path: ledger.to_owned(), opened_at: at });
        library.recent.truncate(MAX_RECENT);
        library.store(file)?;
        Ok(library)
    }

    /// Saves `view` under its name (replacing a view of that name).
    pub fn save_view(file: &Path, view: SavedView) -> Result<LedgerLibrary, ApiError> {
        let name = view.name.trim();
        if name.is_empty() || name.len() > MAX_VIEW_NAME || view.query.len() > MAX_VIEW_QUERY {
            return Err(ApiError::new(
                ErrorCode::BadArgument,
                format!(
                    "a view needs a name of 1 to {MAX_VIEW_NAME} bytes and a query of at most {MAX_VIEW_QUERY}"
                ),
                json!({ "name": view.name }),
            ));
        }
        let mut library = LedgerLibrary::load(file)?;
        let view = SavedView { name: name.to_owned(), ..view };
        library.views.retain(|v| v.name != view.name);
        if library.views.len() >= MAX_VIEWS {
            return Err(ApiError::new(
                ErrorCode::BadArgument,
                format!("at most {MAX_VIEWS} views are kept: delete one first"),
                json!({ "name": view.name }),
            ));
        }
        library.views.push(view);
        library.views.sort_by_key(|v| v.name.to_lowercase());
        library.store(file)?;
        Ok(library)
    }

    /// Deletes the view named `name` (nothing when there is none).
    pub fn delete_view(file: &Path, name: &str) -> Result<LedgerLibrary, ApiError> {
        let mut library = LedgerLibrary::load(file)?;
        library.views.retain(|v| v.name != name);
        library.store(file)?;
        Ok(library)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_keeps_newest_first_once_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.json");
        for i in 0..12 {
            LedgerLibrary::remember(&file, &format!("/l{i}.db"), Timestamp(i)).unwrap();
        }
        let lib = LedgerLibrary::remember(&file, "/l5.db", Timestamp(99)).unwrap();
        assert_eq!(lib.recent.len(), MAX_RECENT);
        assert_eq!(lib.recent[0].path, "/l5.db");
        assert_eq!(lib.recent.iter().filter(|r| r.path == "/l5.db").count(), 1);
        assert_eq!(LedgerLibrary::load(&file).unwrap(), lib);
    }

    #[test]
    fn views_replace_by_name_and_bad_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.json");
        let view =
            |name: &str, query: &str| SavedView { name: name.into(), ledger: None, query: query.into() };
        LedgerLibrary::save_view(&file, view("blocked", "status=blocked")).unwrap();
        let lib = LedgerLibrary::save_view(&file, view(" blocked ", "status=blocked&tool=shell")).unwrap();
        assert_eq!(lib.views, [view("blocked", "status=blocked&tool=shell")]);
        assert_eq!(LedgerLibrary::save_view(&file, view("  ", "")).unwrap_err().code, ErrorCode::BadArgument);
        assert!(LedgerLibrary::delete_view(&file, "blocked").unwrap().views.is_empty());
    }

    #[test]
    fn an_unreadable_library_is_reported_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.json");
        std::fs::write(&file, "{ not json").unwrap();
        assert!(LedgerLibrary::remember(&file, "/x.db", Timestamp(1)).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
    }
}
