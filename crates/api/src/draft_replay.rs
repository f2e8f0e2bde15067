//! What a policy draft would change, over a ledger of past calls: every recorded call judged by the
//! policy in force and by the hub's policy with the draft in its file's place, both now, so only what
//! the draft itself changes is reported (not what changed since the call was made). Streamed as it
//! goes (changes in batches, progress), stoppable, grouped by the rule that decides the changed calls,
//! loosened calls (anything that becomes `allow`) counted apart; and for one call, both traces.

use super::OperatorApi;
use super::error::{ApiError, ErrorCode};
use super::ledger::LedgerAddress;
use super::policy_files::located;
use super::replay::{LedgerCalls, ReplayEvent, across, compare_policies};
use portcullis_policy::replay::{Judged, Replay};
use portcullis_policy::{CallVerdict, Policy};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

pub use portcullis_policy::replay::{ReplayChange, ReplaySummary};

/// Changed calls sent one by one at most; past it they are only counted (the totals stay exact).
pub const MAX_LISTED_CHANGES: usize = 5_000;
/// Changed calls sent together.
const CHANGES_PER_BATCH: usize = 200;

/// What a draft replay reports as it goes.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DraftReplayUpdate {
    /// Records read so far, up to record `last_id` of `total_id`.
    Progress { records: u64, last_id: i64, total_id: i64 },
    /// More changed calls (in ledger order).
    Changes { changes: Vec<ReplayChange> },
    /// The replay ended (or was stopped).
    Done { outcome: DraftReplayOutcome },
    /// The replay could not go on.
    Failed { error: ApiError },
}

/// Changed calls decided by one rule (or reason) under the draft.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeGroup {
    /// `rule <id> (<file>)`, or the reason that decides them under the draft.
    pub decided_by: String,
    pub calls: u64,
    /// Of them, calls the draft allows that the policy in force did not.
    pub loosened: u64,
}

/// How a draft replay ended.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftReplayOutcome {
    pub ledger: String,
    /// Totals; `transitions` and `kept` make the before × after matrix.
    pub summary: ReplaySummary,
    /// Changed calls the draft allows that the policy in force did not.
    pub loosened: u64,
    /// Changed calls by what decides them under the draft, most first.
    pub groups: Vec<ChangeGroup>,
    /// Changed calls past [`MAX_LISTED_CHANGES`] (counted, not sent).
    pub unlisted: u64,
    pub stopped: bool,
    pub millis: u64,
}

/// One recorded call as the policy in force and the draft judge it now.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallTraces {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    /// `None` when the call holds nothing a policy judges (settled before the policy stage).
    pub before: Option<CallVerdict>,
    pub after: Option<CallVerdict>,
}

impl OperatorApi {
    /// Replays the draft of `file` over the ledger at `ledger` (else the hub's) against the policy in
    /// force. `report` gets each update; returning false stops the replay, as does `stop`.
    pub fn replay_policy_draft(
        &self,
        file: &str,
        text: &str,
        ledger: Option<&Path>,
        stop: &AtomicBool,
        report: &mut dyn FnMut(DraftReplayUpdate) -> bool,
    ) -> Result<DraftReplayOutcome, ApiError> {
        let started = Instant::now();
        let draft = Policy::from_layers_unchecked(self.layers_with_draft(file, text)?).map_err(located)?;
        let baseline = self.hub.live_policy().current();
        let support = self.hub.live_policy().sandbox_support().clone();
        let db = self.ledger_to_replay(ledger)?;
        let total_id = LedgerCalls::open(&db, &draft, self.hub.project())?.last_record_id()?;
        let mut pending: Vec<ReplayChange> = Vec::new();
        let (mut listed, mut unlisted, mut loosened) = (0usize, 0u64, 0u64);
        let mut groups: BTreeMap<String, ChangeGroup> = BTreeMap::new();
        let mut go_on = true;
        let (summary, stopped) =
            compare_policies(&db, &baseline, &draft, self.hub.project(), &support, stop, &mut |event| {
                match event {
                    ReplayEvent::Change(change) => {
                        let loosens = change.after == "allow";
                        loosened += u64::from(loosens);
                        let group = groups.entry(change.decided_by.clone()).or_insert_with(|| ChangeGroup {
                            decided_by: change.decided_by.clone(),
                            calls: 0,
                            loosened: 0,
                        });
                        group.calls += 1;
                        group.loosened += u64::from(loosens);
                        if listed < MAX_LISTED_CHANGES {
                            listed += 1;
                            pending.push(change.clone());
                        } else {
                            unlisted += 1;
                        }
                        if pending.len() >= CHANGES_PER_BATCH {
                            go_on =
                                report(DraftReplayUpdate::Changes { changes: std::mem::take(&mut pending) });
                        }
                    }
                    ReplayEvent::Progress { records, last_id } => {
                        if !pending.is_empty() {
                            go_on =
                                report(DraftReplayUpdate::Changes { changes: std::mem::take(&mut pending) });
                        }
                        go_on = go_on && report(DraftReplayUpdate::Progress { records, last_id, total_id });
                    }
                }
                go_on
            })?;
        if !pending.is_empty() {
            report(DraftReplayUpdate::Changes { changes: pending });
        }
        let mut groups: Vec<ChangeGroup> = groups.into_values().collect();
        groups.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.decided_by.cmp(&b.decided_by)));
        Ok(DraftReplayOutcome {
            ledger: db.to_string(),
            summary,
            loosened,
            groups,
            unlisted,
            stopped,
            millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// How the policy in force and the draft of `file` judge call `call_id` of `session` recorded in
    /// the ledger at `ledger` (else the hub's), both with their whole trace.
    pub fn draft_call_traces(
        &self,
        file: &str,
        text: &str,
        ledger: Option<&Path>,
        session: &str,
        call_id: &str,
    ) -> Result<CallTraces, ApiError> {
        let draft = Policy::from_layers_unchecked(self.layers_with_draft(file, text)?).map_err(located)?;
        let baseline = self.hub.live_policy().current();
        let db = self.ledger_to_replay(ledger)?;
        let mut calls = LedgerCalls::open(&db, &draft, self.hub.project())?;
        let Some(call) = calls.one(call_id, session)? else {
            return Err(ApiError::new(
                ErrorCode::CallNotFound,
                format!("the ledger holds no call {call_id} of session {session}"),
                json!({ "call_id": call_id, "session": session }),
            ));
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let project = self.hub.project().to_path_buf();
        let support = self.hub.live_policy().sandbox_support().clone();
        let verdict = |policy: &Policy| {
            across(&db, Replay::new(policy, project.clone(), home.clone(), support.clone())).judge(&call).map(
                |judged| match judged {
                    Judged::ToolDenied { scope } => CallVerdict::Blocked {
                        reason: "tool_denied".into(),
                        detail: format!("grant scope {scope} hides {}", call.tool),
                    },
                    Judged::Evaluated { evaluation, .. } => CallVerdict::Evaluated(*evaluation),
                },
            )
        };
        Ok(CallTraces {
            session_id: call.session_id.clone(),
            call_id: call.call_id.clone(),
            tool: call.tool.clone(),
            before: verdict(&baseline),
            after: verdict(&draft),
        })
    }

    /// The ledger a replay reads: the named file (which must exist), else the hub's.
    fn ledger_to_replay(&self, ledger: Option<&Path>) -> Result<LedgerAddress, ApiError> {
        match ledger {
            None => Ok(LedgerAddress::File(self.hub.ledger_path().to_path_buf())),
            Some(file) if file.is_file() => Ok(LedgerAddress::File(file.to_path_buf())),
            Some(url) if matches!(LedgerAddress::of(url, None), LedgerAddress::Team { .. }) => {
                Ok(self.ledger_address(url))
            }
            Some(file) => Err(ApiError::new(
                ErrorCode::BadArgument,
                format!("no ledger file at {}", file.display()),
                json!({ "field": "ledger", "file": file }),
            )),
        }
    }
}
