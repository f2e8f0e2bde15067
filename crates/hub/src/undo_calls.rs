//! `portcullis undo <call>`: the operator puts back what a confined command's copy-on-write commit
//! replaced, from the record the hub keeps beside its ledger ([`portcullis_sandbox::undo`]). The call is
//! named by its id (and its session when several sessions have a call of that id); the plan is shown
//! first, and nothing is written unless asked.

use portcullis_sandbox::undo::State;
use portcullis_sandbox::undo::{self, UndoError, UndoTarget};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What is at a path, as an undo step names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    Nothing,
    File,
    Link,
    Folder,
}

impl PathKind {
    pub fn of(state: &State) -> PathKind {
        match state {
            State::Absent => PathKind::Nothing,
            State::File { .. } => PathKind::File,
            State::Symlink { .. } => PathKind::Link,
            State::Folder { .. } => PathKind::Folder,
        }
    }

    /// In words, as `portcullis undo` prints it.
    pub fn words(self) -> &'static str {
        match self {
            PathKind::Nothing => "nothing",
            PathKind::File => "a file",
            PathKind::Link => "a link",
            PathKind::Folder => "a folder",
        }
    }
}

/// One path an undo puts back: what the commit left there (`now`) and what the undo puts there again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UndoStep {
    /// The whole path (agent text: escape it where a person reads it).
    pub path: String,
    pub now: PathKind,
    pub again: PathKind,
}

impl UndoStep {
    /// The step on one line, escaped: `PATH: a file now, a file again`.
    pub fn line(&self) -> String {
        format!(
            "{}: {} now, {} again",
            portcullis_harness::untrusted::visible(&self.path),
            self.now.words(),
            self.again.words()
        )
    }
}

/// What an undo would do or did: one line per path, and whether it was carried out.
#[derive(Debug, Clone)]
pub struct UndoReport {
    pub call: String,
    pub lines: Vec<String>,
    pub done: bool,
}

/// The one of `found` (each with its key) that is the call `call`, or why there is none or more than one.
pub fn the_one<T>(found: Vec<(String, T)>, call: &str, none: impl FnOnce() -> String) -> Result<T, String> {
    let suffix = UndoTarget::new(Path::new(""), "", call).key;
    match found.len() {
        0 => Err(none()),
        1 => found.into_iter().next().map(|(_, one)| one).ok_or_else(none),
        n => Err(format!(
            "{n} sessions have a call {call}; name one with --session ({})",
            found.iter().map(|(key, _)| key.trim_end_matches(&suffix)).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The record of `call` (of `session`, when given) in the undo store beside the ledger `db`.
fn target_of(db: &Path, call: &str, session: Option<&str>) -> Result<UndoTarget, String> {
    let store = crate::hub_config::undo_store_of(db);
    let found: Vec<(String, UndoTarget)> = std::fs::read_dir(&store)
        .map(|read| {
            read.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|key| UndoTarget::names_call(key, call, session))
                .map(|key| (key.clone(), UndoTarget { store: store.clone(), key }))
                .collect()
        })
        .unwrap_or_default();
    the_one(found, call, || {
        format!(
            "no record of call {call} in {}: it changed no file through copy-on-write, or its record is gone",
            store.display()
        )
    })
}

/// The record of call `call` of `session` beside the ledger `db` (both named: the ledger's detail knows them).
fn exact_target(db: &Path, call: &str, session: &str) -> UndoTarget {
    UndoTarget::new(&crate::hub_config::undo_store_of(db), session, call)
}

fn steps_of(record: &undo::Record) -> Vec<UndoStep> {
    record
        .entries
        .iter()
        .map(|e| UndoStep {
            path: e.root.join(&e.path).display().to_string(),
            now: PathKind::of(&e.after),
            again: PathKind::of(&e.before),
        })
        .collect()
}

/// What the undo of call `call` of `session` would put back now, or why it cannot.
pub fn plan_of(db: &Path, call: &str, session: &str) -> Result<Vec<UndoStep>, UndoError> {
    undo::plan(&exact_target(db, call, session)).map(|record| steps_of(&record))
}

/// Carries out the undo of call `call` of `session`: the paths put back (the plan's steps).
pub fn undo_of(db: &Path, call: &str, session: &str) -> Result<Vec<UndoStep>, UndoError> {
    let target = exact_target(db, call, session);
    let steps = steps_of(&undo::plan(&target)?);
    undo::undo(&target)?;
    Ok(steps)
}

/// Shows (or, with `apply`, carries out) the undo of `call`. Refusals are errors that say why.
pub fn undo_call(db: &Path, call: &str, session: Option<&str>, apply: bool) -> Result<UndoReport, String> {
    let target = target_of(db, call, session)?;
    let record = undo::plan(&target).map_err(|e| e.to_string())?;
    let lines = steps_of(&record).iter().map(UndoStep::line).collect();
    if !apply {
        return Ok(UndoReport { call: call.to_owned(), lines, done: false });
    }
    match undo::undo(&target) {
        Ok(_) => Ok(UndoReport { call: call.to_owned(), lines, done: true }),
        Err(e @ UndoError::Io { .. }) => Err(format!("the undo stopped part way: {e}")),
        Err(e) => Err(e.to_string()),
    }
}
