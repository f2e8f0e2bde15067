//! What an operator can still do about a confined command's changes, through the command table (the
//! desktop app's ledger detail, the browser console, `portcullis api`): the plan of an undo of what its
//! copy-on-write commit replaced (or why there can be none), the changes still held for the operator,
//! the undo itself, and keeping or discarding what is held. The same work as `portcullis undo` and
//! `portcullis held` ([`portcullis_hub::undo_calls`], [`portcullis_hub::held_calls`]), named by the session and call the
//! ledger lists; every refusal is an [`ApiError`] whose code says which.

use super::error::{ApiError, ErrorCode};
use super::{Operator, OperatorApi};
use portcullis_ledger::LedgerReader;
use portcullis_sandbox::undo::UndoError;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

pub use portcullis_hub::{PathKind, UndoStep};

/// What an undo of a call would do now, or why it cannot be done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UndoPlan {
    /// The undo can be carried out now.
    pub possible: bool,
    /// The paths it would put back, in the order it would (empty when it cannot).
    pub steps: Vec<UndoStep>,
    /// Why not, when it cannot: the error `undo_call` would answer
    /// (`nothing_to_undo`, `undone_already`, `undo_incomplete`, `changed_since_commit`, `undo_failed`).
    pub refusal: Option<ApiError>,
}

/// One change held for the operator: where, and why the review did not commit it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HeldPath {
    /// The whole path (agent text: escape it where a person reads it).
    pub path: String,
    /// Why it was held (it quotes agent text: escape it too).
    pub why: String,
    /// What keeping it would do to the file, as the write tool's diff (none where the answer said
    /// already).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<super::file_change::FileChange>,
}

/// What the operator can still do about a call's changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct CallChanges {
    pub call_id: String,
    pub session: String,
    pub undo: UndoPlan,
    /// The call's changes held for the operator now (none once kept or discarded).
    pub held: Vec<HeldPath>,
}

/// An undo carried out: the paths put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct UndoDone {
    pub steps: Vec<UndoStep>,
}

/// The operator's answer on a call's held changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum HeldAnswer {
    /// Commit them, as any change is (never over a file changed since the command started).
    Keep,
    /// Drop them.
    Discard,
}

/// What keeping or discarding a call's held changes did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct HeldAnswered {
    /// The paths committed (keep).
    pub kept: Vec<String>,
    /// The paths a keep did not commit, with why (a file changed since the command started…).
    pub not_kept: Vec<HeldPath>,
    /// How many held changes were dropped (discard).
    pub discarded: u32,
}

/// The API's error for an undo refused or failed.
pub(crate) fn undo_error(e: UndoError, call_id: &str, session: &str) -> ApiError {
    let ids = json!({ "call_id": call_id, "session": session });
    let (code, details) = match &e {
        UndoError::NoRecord(_) => (ErrorCode::NothingToUndo, ids),
        UndoError::Undone => (ErrorCode::UndoneAlready, ids),
        UndoError::Incomplete => (ErrorCode::UndoIncomplete, ids),
        UndoError::ChangedSince(paths) => {
            (ErrorCode::ChangedSinceCommit, json!({ "call_id": call_id, "session": session, "paths": paths }))
        }
        UndoError::Io { path, .. } => {
            (ErrorCode::UndoFailed, json!({ "call_id": call_id, "session": session, "path": path }))
        }
        UndoError::BadRecord(..) => (ErrorCode::UndoFailed, ids),
    };
    let message = match &e {
        UndoError::Io { .. } => format!("the undo stopped part way: {e}"),
        UndoError::ChangedSince(_) => format!("nothing was put back: {e}"),
        _ => e.to_string(),
    };
    ApiError::new(code, message, details)
}

fn held_error(what: &str, e: &std::io::Error, call_id: &str, session: &str) -> ApiError {
    ApiError::new(
        ErrorCode::HeldChangesFailed,
        format!("the held changes could not be {what}: {e}"),
        json!({ "call_id": call_id, "session": session }),
    )
}

impl OperatorApi {
    /// The write roots a call's commands ran with, as its ledger records say (its profile's writable
    /// trees), and the hub's project: where its held changes can be.
    fn roots_of_call(&self, call_id: &str, session: &str) -> Result<Vec<PathBuf>, ApiError> {
        let timeline = LedgerReader::open(self.hub.ledger_path())?.timeline(call_id, Some(session))?;
        if timeline.records.is_empty() {
            return Err(ApiError::new(
                ErrorCode::CallNotFound,
                format!("no call {call_id} of session {session} in the hub's ledger"),
                json!({ "call_id": call_id, "session": session }),
            ));
        }
        let mut roots: Vec<PathBuf> = vec![self.hub.project().to_path_buf()];
        let profiles = timeline.records.iter().filter_map(|r| r.body.action.as_ref()?.sandbox.as_ref());
        for root in profiles.flat_map(|p| p.write.iter()) {
            if !roots.contains(root) {
                roots.push(root.clone());
            }
        }
        Ok(roots)
    }

    /// What the operator can still do about call `call_id` of `session`: its undo's plan (or why there
    /// is none) and its changes held now. `call_not_found` when the hub's ledger has no such call.
    pub fn call_changes(&self, call_id: &str, session: &str) -> Result<CallChanges, ApiError> {
        let roots = self.roots_of_call(call_id, session)?;
        let db = self.hub.ledger_path();
        let undo = match portcullis_hub::plan_of(db, call_id, session) {
            Ok(steps) => UndoPlan { possible: true, steps, refusal: None },
            Err(e) => UndoPlan {
                possible: false,
                steps: Vec::new(),
                refusal: Some(undo_error(e, call_id, session)),
            },
        };
        let held = portcullis_hub::held_of(&roots, call_id, session)
            .iter()
            .flat_map(|h| {
                h.note.changes.iter().map(|c| HeldPath {
                    path: h.layer.root.join(&c.path).display().to_string(),
                    why: c.why.clone(),
                    change: Some(super::file_change::held_change(
                        &h.layer.root.join(&c.path),
                        &h.layer.upper().join(&c.path),
                        self.hub.broker().redactor(),
                    )),
                })
            })
            .collect();
        Ok(CallChanges { call_id: call_id.to_owned(), session: session.to_owned(), undo, held })
    }

    /// Puts back what the commit of call `call_id` of `session` replaced, byte for byte; refused (and
    /// nothing touched) when a path changed since (`changed_since_commit`, naming the paths), when it
    /// was undone already, or when its record is gone or incomplete.
    pub fn undo_call(&self, call_id: &str, session: &str, operator: &Operator) -> Result<UndoDone, ApiError> {
        let steps = portcullis_hub::undo_of(self.hub.ledger_path(), call_id, session)
            .map_err(|e| undo_error(e, call_id, session))?;
        tracing::info!(%call_id, %session, paths = steps.len(), operator = operator.name(), "an operator undid a command's changes");
        Ok(UndoDone { steps })
    }

    /// Keeps (commits) or discards the changes of call `call_id` of `session` held for the operator.
    /// `no_held_changes` when none are held (answered already, or never held).
    pub fn answer_held(
        &self,
        call_id: &str,
        session: &str,
        answer: HeldAnswer,
        operator: &Operator,
    ) -> Result<HeldAnswered, ApiError> {
        let roots = self.roots_of_call(call_id, session)?;
        let held = portcullis_hub::held_of(&roots, call_id, session);
        if held.is_empty() {
            return Err(ApiError::new(
                ErrorCode::NoHeldChanges,
                format!("no changes of call {call_id} are held (kept or discarded already, or never held)"),
                json!({ "call_id": call_id, "session": session }),
            ));
        }
        let mut done = HeldAnswered { kept: Vec::new(), not_kept: Vec::new(), discarded: 0 };
        for h in &held {
            let root: &Path = &h.layer.root;
            match answer {
                HeldAnswer::Keep => {
                    let committed = portcullis_sandbox::held::keep(h)
                        .map_err(|e| held_error("kept", &e, call_id, session))?;
                    done.kept.extend(committed.kept.iter().map(|p| root.join(p).display().to_string()));
                    done.not_kept.extend(committed.discarded.iter().map(|(p, why)| HeldPath {
                        path: root.join(p).display().to_string(),
                        why: why.clone(),
                        change: None,
                    }));
                }
                HeldAnswer::Discard => {
                    portcullis_sandbox::held::discard(h)
                        .map_err(|e| held_error("discarded", &e, call_id, session))?;
                    done.discarded += u32::try_from(h.note.changes.len()).unwrap_or(u32::MAX);
                }
            }
        }
        tracing::info!(%call_id, %session, ?answer, kept = done.kept.len(), not_kept = done.not_kept.len(),
            discarded = done.discarded, operator = operator.name(), "an operator answered a command's held changes");
        Ok(done)
    }
}
