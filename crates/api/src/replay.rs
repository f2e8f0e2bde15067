//! Replaying a policy over a ledger through the operator API: what a draft (or the policy in force)
//! would have decided for every call the ledger holds, streamed as it goes (each change, and how far it
//! has read), and stoppable between batches. A draft named by path is judged as if placed in each
//! recorded call's project. A call recorded without the action its tool described (refused before the
//! tool described it, e.g. by a grant) is described now by the same tools, rooted at its project: every
//! call is judged from its tool's description, as live.

use super::error::ApiError;
use super::ledger::LedgerAddress;
use super::ledger_address::open_reader;
use portcullis_harness::{ActionKind, CallContext, ExecutionAction, SandboxSupport, ToolRegistry};
use portcullis_ledger::{LedgerRead, ReplayCursor, StoredKind, StoredPolicyDecision, StoredRecord};
use portcullis_policy::Decision;
use portcullis_policy::discovery::load_for;
use portcullis_policy::replay::{RecordedCall, Replay};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub use portcullis_policy::replay::{ReplayChange, ReplaySummary};

/// Records read per batch (between two checks of the stop flag).
pub const REPLAY_BATCH: usize = 2000;

/// What a replay reports as it goes.
#[derive(Debug)]
pub enum ReplayEvent<'a> {
    /// A call the policy would decide otherwise.
    Change(&'a ReplayChange),
    /// Records read so far, up to the record with id `last_id`.
    Progress { records: u64, last_id: i64 },
}

/// How a replay ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReplayOutcome {
    pub summary: ReplaySummary,
    /// The policy files replayed, in layer order.
    pub policies: Vec<String>,
    /// Stopped before the end (by `stop`, or by the reporter).
    pub stopped: bool,
}

/// Replays the policy of `policy_files` (else the one that applies in `cwd`) over the ledger at `db`,
/// judging commands as a live call on a machine that can enforce `support` would be judged (see
/// [`super::policy_check::probe_sandbox`]). `report` gets each change and the progress; returning false
/// stops the replay, as does `stop`.
pub fn replay_ledger(
    db: &LedgerAddress,
    policy_files: &[PathBuf],
    cwd: &Path,
    support: &SandboxSupport,
    stop: &AtomicBool,
    report: &mut dyn FnMut(ReplayEvent<'_>) -> bool,
) -> Result<ReplayOutcome, ApiError> {
    let (policy, sources) = load_for(policy_files, cwd)?;
    let (summary, stopped) = replay_policy(db, &policy, cwd, support, stop, report)?;
    Ok(ReplayOutcome { summary, policies: sources, stopped })
}

/// Replays `policy` (loaded, or amended in memory) over the ledger at `db`; the "." of its layers that
/// belong to no project is each call's project. The summary, and whether it stopped early.
pub(crate) fn replay_policy(
    db: &LedgerAddress,
    policy: &portcullis_policy::Policy,
    cwd: &Path,
    support: &SandboxSupport,
    stop: &AtomicBool,
    report: &mut dyn FnMut(ReplayEvent<'_>) -> bool,
) -> Result<(ReplaySummary, bool), ApiError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut replay = across(db, Replay::new(policy, cwd.to_path_buf(), home, support.clone()));
    let mut calls = LedgerCalls::open(db, policy, cwd)?;
    let stopped = calls.each(stop, report, &mut |call| replay.replay(call))?;
    Ok((replay.summary.clone(), stopped))
}

/// Replays `draft` over the ledger at `db` against `baseline` (the policy in force) as both judge each
/// call now: only what the draft itself changes is reported.
pub(crate) fn compare_policies(
    db: &LedgerAddress,
    baseline: &portcullis_policy::Policy,
    draft: &portcullis_policy::Policy,
    cwd: &Path,
    support: &SandboxSupport,
    stop: &AtomicBool,
    report: &mut dyn FnMut(ReplayEvent<'_>) -> bool,
) -> Result<(ReplaySummary, bool), ApiError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut before = across(db, Replay::new(baseline, cwd.to_path_buf(), home.clone(), support.clone()));
    let mut after = across(db, Replay::new(draft, cwd.to_path_buf(), home, support.clone()));
    let mut calls = LedgerCalls::open(db, draft, cwd)?;
    let stopped = calls.each(stop, report, &mut |call| after.compare(&mut before, call))?;
    Ok((after.summary.clone(), stopped))
}

/// A replay over a team ledger judges each call as if the policy were its own project's (see
/// [`Replay::in_every_project`]); over a hub's file, as the hub's layers are anchored.
pub(crate) fn across<'p>(db: &LedgerAddress, replay: Replay<'p>) -> Replay<'p> {
    match db {
        LedgerAddress::Team { .. } => replay.in_every_project(),
        LedgerAddress::File(_) => replay,
    }
}

/// The calls a ledger holds (a hub's file, or a team ledger: every hub's), read in batches, each with
/// its session's project and (when the ledger holds none) the action its tool describes now.
pub(crate) struct LedgerCalls<'a> {
    source: Box<dyn LedgerRead>,
    /// Each session's project, by (hub's ledger id, session): the hub is "" in a hub's own file.
    projects: HashMap<(String, String), Option<PathBuf>>,
    tools: ToolsByFolder,
    cwd: &'a Path,
}

impl<'a> LedgerCalls<'a> {
    pub(crate) fn open(
        db: &LedgerAddress,
        policy: &portcullis_policy::Policy,
        cwd: &'a Path,
    ) -> Result<Self, ApiError> {
        Ok(LedgerCalls {
            source: open_reader(db)?,
            projects: HashMap::new(),
            tools: ToolsByFolder { limits: portcullis_hub::coding_limits(policy), folders: HashMap::new() },
            cwd,
        })
    }

    /// How far a replay reads: the id of a file's newest record, or how many records of a team ledger
    /// decide calls (its progress counts them).
    pub(crate) fn last_record_id(&self) -> Result<i64, ApiError> {
        Ok(self.source.replay_end()?)
    }

    /// The deciding record of call `call_id` (of `session`) as a recorded call, if the ledger holds it.
    pub(crate) fn one(&mut self, call_id: &str, session: &str) -> Result<Option<RecordedCall>, ApiError> {
        let (timeline, origin) = self.source.timeline(call_id, Some(session))?;
        let hub = origin.map(|o| o.ledger_id).unwrap_or_default();
        let deciding = timeline
            .records
            .into_iter()
            .find(|r| matches!(r.kind, StoredKind::Started | StoredKind::Blocked));
        match deciding {
            Some(record) => Ok(Some(self.complete(&hub, recorded_call(record))?)),
            None => Ok(None),
        }
    }

    /// Feeds every deciding record to `judge` and reports what it returns; true when stopped early.
    fn each(
        &mut self,
        stop: &AtomicBool,
        report: &mut dyn FnMut(ReplayEvent<'_>) -> bool,
        judge: &mut dyn FnMut(&RecordedCall) -> Option<ReplayChange>,
    ) -> Result<bool, ApiError> {
        let mut at = ReplayCursor::default();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(true);
            }
            let batch = self.source.replay_batch(&at, REPLAY_BATCH)?;
            let Some((hub, last)) = batch.last() else { return Ok(false) };
            at = ReplayCursor { hub: hub.clone(), id: last.id, read: at.read + batch.len() as u64 };
            // The calls of a batch are judged against one view of the file system (a what-if report over
            // a few milliseconds of records; the next batch looks again).
            let stopped = portcullis_policy::snapshot::within(|| -> Result<bool, ApiError> {
                for (hub, record) in batch {
                    if !matches!(record.kind, StoredKind::Started | StoredKind::Blocked) {
                        continue;
                    }
                    let call = self.complete(&hub, recorded_call(record))?;
                    if let Some(change) = judge(&call)
                        && !report(ReplayEvent::Change(&change))
                    {
                        return Ok(true);
                    }
                }
                Ok(false)
            })?;
            if stopped {
                return Ok(true);
            }
            let last_id = self.source.replay_reached(&at);
            if !report(ReplayEvent::Progress { records: at.read, last_id }) {
                return Ok(true);
            }
        }
    }

    /// `call` (of hub `hub`) with its session's project, and its action described now if the ledger
    /// holds none.
    fn complete(&mut self, hub: &str, mut call: RecordedCall) -> Result<RecordedCall, ApiError> {
        let key = (hub.to_owned(), call.session_id.clone());
        call.project = match self.projects.get(&key) {
            Some(project) => project.clone(),
            None => {
                let cwd = self.source.session_cwd(hub, &call.session_id)?;
                let project = cwd.map(PathBuf::from);
                self.projects.insert(key, project.clone());
                project
            }
        };
        // A team ledger's call whose session said no folder ran on another hub, in a project of its
        // own: the folder the call ran in stands for it (rather than the replaying hub's project, where
        // every path of the other hub's would be outside).
        if call.project.is_none() && self.source.spans_hubs() {
            call.project = call.cwd.clone();
        }
        if call.action.is_none() {
            call.action = self.tools.describe(&call, self.cwd);
        }
        Ok(call)
    }
}

/// The built-in tools rooted at each folder calls were made in, to describe a call the ledger holds no
/// description of (`None` for a folder that is gone).
struct ToolsByFolder {
    limits: portcullis_coding::Limits,
    folders: HashMap<PathBuf, Option<ToolRegistry>>,
}

impl ToolsByFolder {
    /// What `call`'s tool says it would do, as the tool describes it now; an upstream tool's call is an
    /// `mcp` action (judged by its name). `None`: the tool is unknown, or its arguments describe nothing.
    fn describe(&mut self, call: &RecordedCall, fallback: &Path) -> Option<ExecutionAction> {
        if call.tool.starts_with("mcp:") {
            return Some(ExecutionAction::new(ActionKind::Mcp, "call"));
        }
        let folder =
            call.project.clone().or_else(|| call.cwd.clone()).unwrap_or_else(|| fallback.to_path_buf());
        let ToolsByFolder { limits, folders } = self;
        let registry = folders
            .entry(folder.clone())
            .or_insert_with(|| portcullis_hub::builtin_tools(&folder, limits.clone()).ok().map(|(_, r)| r))
            .as_ref()?;
        let tool = registry.get(&call.tool)?;
        let context = CallContext {
            session_id: call.session_id.as_str().into(),
            run_id: "replay".into(),
            call_id: call.call_id.as_str().into(),
            owner: "replay".into(),
            cwd: call.cwd.clone().map(|c| c.into()),
            mcp: None,
        };
        tool.tool.describe_action(call.arguments.as_ref()?, &context).ok()
    }
}

/// The call a deciding record (started or blocked) describes.
fn recorded_call(record: StoredRecord) -> RecordedCall {
    RecordedCall {
        session_id: record.head.session_id,
        call_id: record.head.call_id,
        at: record.head.at.0,
        tool: record.head.tool,
        // The record is the only holder of its body's values: taken, not copied.
        arguments: record.body.arguments.map(std::sync::Arc::unwrap_or_clone),
        action: record.body.action.map(std::sync::Arc::unwrap_or_clone),
        cwd: record.body.cwd.map(PathBuf::from),
        project: None,
        ran: record.kind == StoredKind::Started,
        blocked_reason: record.head.reason,
        decided_by: record.body.decided_by,
        policy_decision: record.head.policy_decision.map(|d| match d {
            StoredPolicyDecision::Allow => Decision::Allow,
            StoredPolicyDecision::Prompt => Decision::Prompt,
            StoredPolicyDecision::Forbidden => Decision::Forbidden,
        }),
    }
}
