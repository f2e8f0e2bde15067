//! What-if replay: re-evaluates recorded calls against a candidate policy and reports the calls whose
//! decision would change. The ledger is read by the caller; this module only needs what each call's
//! deciding record holds (the `started` record of a call that ran, the `blocked` record of one that did
//! not), including the policy's own decision where the ledger recorded it.

use crate::document::Decision;
use crate::evaluate::Analyzed;
use crate::evaluation::{EvalContext, Evaluation};
use crate::layer::PolicyLayer;
use crate::policy::Policy;
use portcullis_harness::{BlockedReason, DecidedBy, ExecutionAction};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One recorded call, as its deciding record holds it.
#[derive(Debug, Clone)]
pub struct RecordedCall {
    pub session_id: String,
    pub call_id: String,
    /// Microseconds since the epoch.
    pub at: i64,
    pub tool: String,
    /// Redacted arguments (a secret in a command reads `[REDACTED]`).
    pub arguments: Option<Value>,
    /// The action the tool described (recorded for calls that ran and calls the policy refused).
    pub action: Option<ExecutionAction>,
    pub cwd: Option<PathBuf>,
    /// The folder the call's session worked in (the hub's project), when recorded: where a draft's
    /// relative roots are anchored (else at `cwd`).
    pub project: Option<PathBuf>,
    /// Whether the call ran (`started`) or was blocked.
    pub ran: bool,
    pub blocked_reason: Option<BlockedReason>,
    pub decided_by: DecidedBy,
    /// What the policy said before any approval, as recorded (ledgers before schema 4 did not keep it:
    /// then it is inferred from the outcome).
    pub policy_decision: Option<Decision>,
}

/// The decision a recorded call got, in the words policy tests use: `allow`, `prompt` (the operator was
/// asked, whatever they answered), `forbidden`, `tool_denied`; `None` when a stage before the policy
/// decided (unknown tool, invalid arguments, a guardrail ...) so no policy can change it. The policy's
/// recorded decision when there is one; else (older ledgers) inferred from what settled the call.
pub fn recorded_decision(call: &RecordedCall) -> Option<&'static str> {
    if let Some(decision) = call.policy_decision {
        return Some(decision.as_str());
    }
    let asked = matches!(
        call.decided_by,
        DecidedBy::Operator { .. } | DecidedBy::SessionGrant { .. } | DecidedBy::ApprovalTimeout { .. }
    );
    if call.ran {
        return Some(if asked { "prompt" } else { "allow" });
    }
    match call.blocked_reason {
        Some(BlockedReason::ToolDenied) => Some("tool_denied"),
        Some(BlockedReason::ExecutionDenied) => {
            let unanswered = matches!(&call.decided_by, DecidedBy::Default { detail: Some(d) } if portcullis_harness::execution::prompt_left_unanswered(d));
            Some(if asked || unanswered { "prompt" } else { "forbidden" })
        }
        _ => None,
    }
}

/// A call whose decision would change.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayChange {
    pub session_id: String,
    pub call_id: String,
    pub at: i64,
    pub tool: String,
    /// The command or paths judged, one line.
    pub subject: String,
    pub before: String,
    pub after: String,
    /// What decides it now: `rule <id> (<file>)` or the reason.
    pub decided_by: String,
    /// What decided it before, when the baseline is a policy judged now (not the ledger's record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_by: Option<String>,
    /// The call ran then (else it was refused: by the policy, an operator, a timeout).
    #[serde(default)]
    pub ran: bool,
}

/// Totals of a replay.
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaySummary {
    /// Calls read from the ledger.
    pub calls: u64,
    /// Calls a policy decided (the others were settled before the policy stage).
    pub replayed: u64,
    pub unchanged: u64,
    pub changed: u64,
    /// Settled before the policy stage (unknown tool, invalid arguments, guardrails ...).
    pub skipped: u64,
    /// `before -> after` counts.
    pub transitions: BTreeMap<String, u64>,
    /// Calls whose decision stays, by decision (with `transitions`, the whole before x after matrix).
    #[serde(default)]
    pub kept: BTreeMap<String, u64>,
}

/// How a policy judges a recorded call now.
#[derive(Debug, Clone)]
pub enum Judged {
    /// A grant scope hides the tool.
    ToolDenied { scope: String },
    /// The policy's evaluation of the call's action, and what it judged (one line).
    Evaluated { evaluation: Box<Evaluation>, subject: String },
}

/// Most characters of a call's subject (its command or paths) in a change listed; control characters
/// kept, every place that shows a subject escapes them.
const SUBJECT_CHARS: usize = 120;

/// Most folders a replay keeps the policy anchored at (beyond, the cache starts over).
const MAX_ANCHORED_FOLDERS: usize = 256;

/// Re-evaluates calls against a policy.
pub struct Replay<'a> {
    policy: &'a Policy,
    /// Layers (by index) whose relative roots point at the project they are applied to (see
    /// [`crate::folders::roots_anchor`]): anchored at each call's project, as they judged it live.
    applied: Vec<usize>,
    /// The policy with those layers anchored at a folder, per folder (`None`: it does not load there).
    anchored: HashMap<PathBuf, Option<Policy>>,
    fallback_cwd: PathBuf,
    home: Option<PathBuf>,
    /// What the kernel can enforce here: a replay judges as a live call on this machine would.
    support: portcullis_harness::SandboxSupport,
    pub summary: ReplaySummary,
}

impl<'a> Replay<'a> {
    /// `fallback_cwd`: where calls recorded without a cwd are judged from; `support`: what the kernel
    /// can enforce on this machine (the hub's probe), so commands are judged as a live call would be.
    pub fn new(
        policy: &'a Policy,
        fallback_cwd: PathBuf,
        home: Option<PathBuf>,
        support: portcullis_harness::SandboxSupport,
    ) -> Self {
        let applied = (policy.layers().iter().enumerate())
            .filter(|(_, l)| crate::folders::anchored_where_applied(&l.source))
            .map(|(i, _)| i)
            .collect();
        Replay {
            policy,
            applied,
            anchored: HashMap::new(),
            fallback_cwd,
            home,
            support,
            summary: ReplaySummary::default(),
        }
    }

    /// Every layer anchored at each call's project, a project's own policy file too: for a ledger of
    /// many projects (a team's), where the policy replayed stands for the policy each project would
    /// have, not one project's policy judging the others' folders from outside.
    pub fn in_every_project(mut self) -> Self {
        self.applied = (0..self.policy.layers().len()).collect();
        self
    }

    /// The decision `call` would get now, with what decides it; `None` when the call holds no action
    /// its tool described (nothing to judge it by).
    pub fn decide(&mut self, call: &RecordedCall) -> Option<(String, String, String)> {
        self.decide_analyzed(call, None)
    }

    /// [`Replay::decide`] with the analysis of the call's command when the caller has it.
    fn decide_analyzed(
        &mut self,
        call: &RecordedCall,
        analyzed: Option<&Analyzed>,
    ) -> Option<(String, String, String)> {
        Some(match self.judge_analyzed(call, analyzed)? {
            Judged::ToolDenied { scope } => {
                ("tool_denied".into(), format!("grant scope {scope}"), call.tool.clone())
            }
            Judged::Evaluated { evaluation, subject } => {
                (evaluation.decision.as_str().to_owned(), deciding(&evaluation), subject)
            }
        })
    }

    /// How the policy judges `call` now, with the whole evaluation; `None` as for [`Replay::decide`].
    pub fn judge(&mut self, call: &RecordedCall) -> Option<Judged> {
        self.judge_analyzed(call, None)
    }

    fn judge_analyzed(&mut self, call: &RecordedCall, analyzed: Option<&Analyzed>) -> Option<Judged> {
        let Replay { policy, applied, anchored, fallback_cwd, home, support, .. } = self;
        let folder = call.project.as_deref().or(call.cwd.as_deref());
        let policy = policy_at(policy, applied, anchored, folder);
        if let Some(scope) = policy.grants().refusing_scope(&call.tool) {
            return Some(Judged::ToolDenied { scope: scope.name.clone() });
        }
        let action = call.action.as_ref()?;
        let subject = match (&action.kind, &action.target) {
            (portcullis_harness::ActionKind::Mcp, Some(target)) => format!("{} {target}", call.tool),
            (portcullis_harness::ActionKind::Mcp, None) => call.tool.clone(),
            _ => subject_of_action(action),
        };
        // Judged from where it ran (the action's folder, else the call's), as live.
        let cwd = action.cwd.as_ref().or(call.cwd.as_ref()).unwrap_or(fallback_cwd).clone();
        let ctx = EvalContext { cwd, home: home.clone() };
        // The one judgement live calls get (the "sandbox required" deny included); a command Claude Code
        // ran in its own shell is judged as it was, with its user's whole environment.
        let decide =
            || crate::judgement::decide_action_analyzed(policy, &call.tool, action, &ctx, support, analyzed);
        let evaluation = if action.sandbox.as_ref().is_some_and(|p| p.ran_by_the_agent()) {
            crate::shell::with_whole_environment(decide)
        } else {
            decide()
        };
        Some(Judged::Evaluated { evaluation: Box::new(evaluation), subject })
    }

    /// Replays one call: `Some` when its decision would change from the one recorded.
    pub fn replay(&mut self, call: &RecordedCall) -> Option<ReplayChange> {
        let before = recorded_decision(call).map(|d| (d.to_owned(), None));
        self.replay_from(call, before, None)
    }

    /// Replays one call against what `baseline` (the policy in force) decides for it now, not what was
    /// recorded: `Some` when this policy would decide otherwise. A draft's own effect, whatever changed
    /// since the call was recorded.
    pub fn compare(&mut self, baseline: &mut Replay<'_>, call: &RecordedCall) -> Option<ReplayChange> {
        // Settled before the policy stage then: settled so now too.
        if recorded_decision(call).is_none() {
            return self.replay_from(call, None, None);
        }
        // Both policies judge the one analysis of the call's command (the parse is a good part of an
        // evaluation, and it depends on the command alone).
        // (Not for a command Claude Code ran in its own shell: that one is analyzed with its user's whole
        // environment, inside each judgement.)
        let analyzed = (call.action.as_ref())
            .filter(|a| a.kind == portcullis_harness::ActionKind::Execute)
            .filter(|a| !a.sandbox.as_ref().is_some_and(|p| p.ran_by_the_agent()))
            .and_then(|a| a.command.as_deref())
            .map(Analyzed::of);
        // One view of the file system for both (see `crate::snapshot`): each path looked at once.
        crate::snapshot::within(|| {
            let before = (baseline.decide_analyzed(call, analyzed.as_ref()))
                .map(|(decision, by, _)| (decision, Some(by)));
            self.replay_from(call, before, analyzed.as_ref())
        })
    }

    fn replay_from(
        &mut self,
        call: &RecordedCall,
        before: Option<(String, Option<String>)>,
        analyzed: Option<&Analyzed>,
    ) -> Option<ReplayChange> {
        self.summary.calls += 1;
        let Some((before, before_by)) = before else {
            self.summary.skipped += 1;
            return None;
        };
        let Some((after, decided_by, subject)) = self.decide_analyzed(call, analyzed) else {
            self.summary.skipped += 1;
            return None;
        };
        self.summary.replayed += 1;
        if after == before {
            self.summary.unchanged += 1;
            *self.summary.kept.entry(after).or_default() += 1;
            return None;
        }
        self.summary.changed += 1;
        *self.summary.transitions.entry(format!("{before} -> {after}")).or_default() += 1;
        Some(ReplayChange {
            session_id: call.session_id.clone(),
            call_id: call.call_id.clone(),
            at: call.at,
            tool: call.tool.clone(),
            subject,
            before,
            after,
            decided_by,
            before_by,
            ran: call.ran,
        })
    }
}

/// The policy a call is judged with: `policy` with its layers `applied` (those that belong to no
/// project) anchored at `folder` (the call's project), built once per folder into `anchored`; or the
/// policy as loaded (already anchored there, or no folder known). A free function over the replay's
/// fields, so the caller keeps the others (the machine's support) borrowed beside it.
fn policy_at<'p>(
    policy: &'p Policy,
    applied: &[usize],
    anchored: &'p mut HashMap<PathBuf, Option<Policy>>,
    folder: Option<&Path>,
) -> &'p Policy {
    let layers = policy.layers();
    let Some(folder) = folder.filter(|f| applied.iter().any(|&i| layers[i].project_root.as_path() != *f))
    else {
        return policy;
    };
    if anchored.len() >= MAX_ANCHORED_FOLDERS && !anchored.contains_key(folder) {
        anchored.clear();
    }
    let built = anchored.entry(folder.to_path_buf()).or_insert_with(|| {
        let layers: Vec<PolicyLayer> = (layers.iter().enumerate())
            .map(|(i, layer)| {
                let mut layer = layer.clone();
                if applied.contains(&i) {
                    layer.project_root = folder.to_path_buf();
                }
                layer
            })
            .collect();
        let protected = policy.protected();
        Policy::from_layers_unchecked(layers)
            .map(|p| p.with_protected(|z| z.absorb(protected)))
            .inspect_err(|e| {
                tracing::warn!(folder = %folder.display(), error = %e, "the policy does not load anchored at this folder; judged as loaded")
            })
            .ok()
    });
    built.as_ref().unwrap_or(policy)
}

fn deciding(evaluation: &Evaluation) -> String {
    match (&evaluation.deciding_rule, &evaluation.deciding_place) {
        (Some(rule), _) => format!("rule {} ({})", rule.id, rule.source),
        (None, Some(at)) => at.kind.describe(&at.place, &at.path),
        (None, None) => evaluation.deciding_reason.clone().unwrap_or_else(|| "no rule; allowed".into()),
    }
}

fn subject_of_action(action: &ExecutionAction) -> String {
    match &action.command {
        Some(command) => crate::evaluation::cut(command, SUBJECT_CHARS),
        None => crate::evaluation::cut(
            &action.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            SUBJECT_CHARS,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(decided_by: DecidedBy) -> RecordedCall {
        RecordedCall {
            session_id: "s".into(),
            call_id: "c".into(),
            at: 0,
            tool: "shell".into(),
            arguments: None,
            action: None,
            cwd: None,
            project: None,
            ran: false,
            blocked_reason: Some(BlockedReason::ExecutionDenied),
            decided_by,
            policy_decision: None,
        }
    }

    /// Issue 10: the policy's recorded decision stands, whatever settled the call; without one (older
    /// ledgers) it is inferred from the outcome.
    #[test]
    fn the_recorded_policy_decision_stands() {
        let rows: [(DecidedBy, Option<Decision>, &str); 4] = [
            // An approver that failed: inferred as forbidden, but the policy said prompt.
            (
                DecidedBy::Default { detail: Some("approver failure".into()) },
                Some(Decision::Prompt),
                "prompt",
            ),
            (DecidedBy::Default { detail: Some("approver failure".into()) }, None, "forbidden"),
            (DecidedBy::ApprovalTimeout { after_ms: 5 }, Some(Decision::Prompt), "prompt"),
            (
                DecidedBy::Rule { rule_id: "r".into(), source: "p.json".into() },
                Some(Decision::Forbidden),
                "forbidden",
            ),
        ];
        for (decided_by, recorded, expected) in rows {
            let call = RecordedCall { policy_decision: recorded, ..blocked(decided_by.clone()) };
            assert_eq!(recorded_decision(&call), Some(expected), "{decided_by:?} {recorded:?}");
        }
    }

    #[test]
    fn a_prompt_nobody_could_answer_was_a_prompt() {
        let unanswered = blocked(DecidedBy::Default { detail: Some(portcullis_harness::NO_APPROVER.into()) });
        assert_eq!(recorded_decision(&unanswered), Some("prompt"));
        let timed_out = blocked(DecidedBy::ApprovalTimeout { after_ms: 5 });
        assert_eq!(recorded_decision(&timed_out), Some("prompt"));
        // Issue 10: withdrawn (the run was cancelled while waiting) and handed to the agent's own prompt.
        for detail in [portcullis_harness::execution::APPROVAL_WITHDRAWN, portcullis_harness::AGENT_PROMPT] {
            let call = blocked(DecidedBy::Default { detail: Some(detail.into()) });
            assert_eq!(recorded_decision(&call), Some("prompt"), "{detail}");
        }
        let approver_failed = blocked(DecidedBy::Default { detail: Some("approver failure".into()) });
        assert_eq!(recorded_decision(&approver_failed), Some("forbidden"));
        let by_rule = blocked(DecidedBy::Rule { rule_id: "r".into(), source: "p.json".into() });
        assert_eq!(recorded_decision(&by_rule), Some("forbidden"));
    }
}
