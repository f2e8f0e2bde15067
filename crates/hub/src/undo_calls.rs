//! `portcullis undo <call>`: the operator puts back what a confined command's copy-on-write commit
//! replaced, from the record the hub keeps beside its ledger ([`portcullis_sandbox::undo`]). The call is
//! named by its id (and its session when several sessions have a call of that id); the plan is shown
//! first, and nothing is written unless asked.

use portcullis_sandbox::undo::{self, State, UndoError, UndoTarget};
use std::path::{Path, PathBuf};

/// What an undo would do or did: one line per path, and whether it was carried out.
#[derive(Debug, Clone)]
pub struct UndoReport {
    pub call: String,
    pub lines: Vec<String>,
    pub done: bool,
}

/// The record of `call` (of `session`, when given) in the undo store beside the ledger `db`.
fn target_of(db: &Path, call: &str, session: Option<&str>) -> Result<UndoTarget, String> {
    let store = crate::hub::undo_store_of(db);
    if let Some(session) = session {
        return Ok(UndoTarget::new(&store, session, call));
    }
    let suffix = UndoTarget::new(&store, "", call).key;
    let found: Vec<PathBuf> = std::fs::read_dir(&store)
        .map(|read| {
            read.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(&suffix)))
                .collect()
        })
        .unwrap_or_default();
    match found.as_slice() {
        [one] => {
            let key = one.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            Ok(UndoTarget { store, key })
        }
        [] => Err(format!(
            "no record of call {call} in {}: it changed no file through copy-on-write, or its record is gone",
            store.display()
        )),
        many => Err(format!(
            "{} sessions have a call {call}; name one with --session ({})",
            many.len(),
            many.iter()
                .filter_map(|p| p.file_name())
                .map(|n| n.to_string_lossy().trim_end_matches(&suffix).to_owned())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn describe(state: &State) -> &'static str {
    match state {
        State::Absent => "nothing",
        State::File { .. } => "a file",
        State::Symlink { .. } => "a link",
        State::Folder { .. } => "a folder",
    }
}

/// Shows (or, with `apply`, carries out) the undo of `call`. Refusals are errors that say why.
pub fn undo_call(db: &Path, call: &str, session: Option<&str>, apply: bool) -> Result<UndoReport, String> {
    let target = target_of(db, call, session)?;
    let record = undo::plan(&target).map_err(|e| e.to_string())?;
    let lines = record
        .entries
        .iter()
        .map(|e| {
            format!(
                "{}: {} now, {} again",
                portcullis_harness::untrusted::visible(&e.root.join(&e.path).display().to_string()),
                describe(&e.after),
                describe(&e.before)
            )
        })
        .collect();
    if !apply {
        return Ok(UndoReport { call: call.to_owned(), lines, done: false });
    }
    match undo::undo(&target) {
        Ok(_) => Ok(UndoReport { call: call.to_owned(), lines, done: true }),
        Err(e @ UndoError::Io { .. }) => Err(format!("the undo stopped part way: {e}")),
        Err(e) => Err(e.to_string()),
    }
}
