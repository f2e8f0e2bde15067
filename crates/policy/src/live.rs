//! The policy a dispatcher consults: the harness's [`ExecutionPolicy`] seam over a loaded [`Policy`],
//! replaceable while calls run (a reload swaps it; calls already evaluated keep their verdict).

use crate::document::Decision;
use crate::evaluation::{EvalContext, Evaluation};
use crate::policy::Policy;
use async_trait::async_trait;
use portcullis_harness::{
    DecidedBy, ExecutionAction, ExecutionPolicy, FileAccess, FileVerdict, PolicyDecision, PolicyRequest,
    PolicyVerdict, RuleRef, SandboxSupport,
};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// A shared, swappable policy that implements the harness's execution-policy seam.
pub struct LivePolicy {
    current: RwLock<Arc<Policy>>,
    /// The folder a call without a cwd is judged from.
    fallback_cwd: PathBuf,
    home: Option<PathBuf>,
    /// What the kernel can enforce here (the hub probes it at start; unknown means nothing).
    support: SandboxSupport,
}

impl LivePolicy {
    pub fn new(policy: Policy, fallback_cwd: PathBuf) -> Self {
        LivePolicy {
            current: RwLock::new(Arc::new(policy)),
            fallback_cwd,
            home: std::env::var_os("HOME").map(PathBuf::from),
            support: SandboxSupport::unavailable("no sandbox launcher was set up for this hub"),
        }
    }

    /// What the kernel can enforce on this machine (what the hub's probe found).
    pub fn with_sandbox_support(mut self, support: SandboxSupport) -> Self {
        self.support = support;
        self
    }

    pub fn sandbox_support(&self) -> &SandboxSupport {
        &self.support
    }

    /// Overrides the home folder `~` resolves to (tests, other users).
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// The policy in force now.
    pub fn current(&self) -> Arc<Policy> {
        match self.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Puts `policy` in force for every evaluation from now on.
    pub fn replace(&self, policy: Policy) {
        let policy = Arc::new(policy);
        match self.current.write() {
            Ok(mut guard) => *guard = policy,
            Err(poisoned) => *poisoned.into_inner() = policy,
        }
    }

    /// The context a call is judged in: its own cwd, else the fallback.
    pub fn context_for(&self, cwd: Option<&std::path::Path>) -> EvalContext {
        EvalContext {
            cwd: cwd.map_or_else(|| self.fallback_cwd.clone(), std::path::Path::to_path_buf),
            home: self.home.clone(),
        }
    }
}

/// The harness verdict of an evaluation: allow / ask / deny, with the deciding rule and every match.
pub fn verdict_of(evaluation: &Evaluation) -> PolicyVerdict {
    let decided_by = match (&evaluation.deciding_rule, &evaluation.deciding_place) {
        (Some(rule), _) => DecidedBy::Rule { rule_id: rule.id.clone(), source: rule.source.clone() },
        (None, Some(at)) => {
            DecidedBy::ProtectedPlace { kind: at.kind, place: at.place.clone(), path: at.path.clone() }
        }
        (None, None) => DecidedBy::Default { detail: evaluation.deciding_reason.clone() },
    };
    let reason = evaluation.deciding_reason.clone().unwrap_or_else(|| "allowed".into());
    let verdict = match evaluation.decision {
        Decision::Allow => PolicyVerdict::allow(decided_by),
        Decision::Contain => PolicyVerdict::contain(decided_by, reason),
        Decision::Prompt => PolicyVerdict::ask(decided_by, reason),
        Decision::Forbidden => PolicyVerdict::deny(decided_by, reason),
    };
    verdict
        .with_matched_rules(
            evaluation
                .matched_rules
                .iter()
                .map(|r| RuleRef {
                    id: r.id.clone(),
                    source: r.source.clone(),
                    decision: Some(r.decision.as_str().to_owned()),
                })
                .collect(),
        )
        .with_files(evaluation.accesses.iter().map(file_verdict).collect())
}

fn file_verdict(a: &crate::PathVerdict) -> FileVerdict {
    FileVerdict {
        path: a.path.clone(),
        access: match a.access {
            crate::Access::Read => FileAccess::Read,
            crate::Access::Write => FileAccess::Write,
        },
        recursive: a.recursive,
        via: a.via.clone(),
        decision: match a.decision {
            Decision::Allow => PolicyDecision::Allow,
            Decision::Contain => PolicyDecision::Contain,
            Decision::Prompt => PolicyDecision::Ask,
            Decision::Forbidden => PolicyDecision::Deny,
        },
        reason: a.reason.clone(),
    }
}

impl LivePolicy {
    /// The full evaluation (commands, paths, matched rules, reasons) of what tool `tool` described it
    /// would do, from `cwd` (the call's; else the fallback): what a live call is judged by.
    pub fn evaluation(
        &self,
        tool: &str,
        action: &ExecutionAction,
        cwd: Option<&std::path::Path>,
    ) -> Evaluation {
        self.judgement(tool, action, cwd).evaluation
    }

    /// The one judgement ([`crate::judgement::judge_action`]) of what tool `tool` described, from `cwd`
    /// (the action's own, else the call's, else the fallback), on this machine.
    pub fn judgement(
        &self,
        tool: &str,
        action: &ExecutionAction,
        cwd: Option<&std::path::Path>,
    ) -> crate::judgement::ActionJudgement {
        self.judgement_by(&self.current(), tool, action, cwd, &self.support)
    }

    /// [`LivePolicy::judgement`] by `policy` (the one in force when the caller took it), where the
    /// command runs with `support`.
    fn judgement_by(
        &self,
        policy: &Policy,
        tool: &str,
        action: &ExecutionAction,
        cwd: Option<&std::path::Path>,
        support: &SandboxSupport,
    ) -> crate::judgement::ActionJudgement {
        let ctx = self.context_for(action.cwd.as_deref().or(cwd));
        crate::judgement::judge_action(policy, tool, action, &ctx, support)
    }

    /// The verdict of a request, with the evaluation it came from (a dry run keeps it rather than
    /// judging twice).
    pub fn verdict(&self, request: &PolicyRequest<'_>) -> (PolicyVerdict, Evaluation) {
        self.verdict_on(request, &self.support)
    }

    /// [`LivePolicy::verdict`] for a command that runs elsewhere than this hub's launcher, with
    /// `support` (the Claude Code hook: Claude Code runs the command itself, outside every wall).
    pub fn verdict_on(
        &self,
        request: &PolicyRequest<'_>,
        support: &SandboxSupport,
    ) -> (PolicyVerdict, Evaluation) {
        // One policy for the judgement and the version recorded with it (a reload may swap it between).
        let policy = self.current();
        let judged = self.judgement_by(
            &policy,
            &request.tool.name,
            request.action,
            request.call.cwd.as_deref(),
            support,
        );
        tracing::debug!(
            tool = %request.tool.name,
            decision = judged.evaluation.decision.as_str(),
            rule = judged.evaluation.deciding_rule.as_ref().map(|r| r.id.as_str()),
            "policy evaluated"
        );
        let mut verdict = verdict_of(&judged.evaluation);
        verdict.policy_version = Some(policy.version().clone());
        let verdict = match judged.sandbox {
            Some(profile) => verdict.with_sandbox(Some(profile)),
            None => verdict,
        };
        (verdict, judged.evaluation)
    }
}

#[async_trait]
impl ExecutionPolicy for LivePolicy {
    async fn evaluate(&self, request: PolicyRequest<'_>) -> PolicyVerdict {
        self.verdict(&request).0
    }
}

impl std::fmt::Debug for LivePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivePolicy").field("fallback_cwd", &self.fallback_cwd).finish_non_exhaustive()
    }
}
