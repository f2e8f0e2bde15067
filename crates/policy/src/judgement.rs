//! One judgement of an action a tool described, for every caller: a live call (`live::LivePolicy`
//! judges here), a dry run (`policy check --call`, policy tests, the corpus) and a replay over a ledger.
//! They all judge here, so a rule that only one of them applied — the "sandbox required" deny — cannot
//! drift apart again.

use crate::document::{Decision, SandboxMode};
use crate::evaluate::Analyzed;
use crate::evaluation::{EvalContext, Evaluation};
use crate::policy::Policy;
use portcullis_harness::{ActionKind, Enforcement, ExecutionAction, SandboxProfile, SandboxSupport};

/// What the policy makes of an action: the evaluation (its decision, rules, places, reasons) and, for a
/// command, the walls it would run inside on this machine.
#[derive(Debug, Clone)]
pub struct ActionJudgement {
    pub evaluation: Evaluation,
    pub sandbox: Option<SandboxProfile>,
}

/// Judges `action`, which tool `tool` described, in `ctx`, on a machine that can enforce `support`,
/// with the walls a command would run inside (a live call, a dry run).
pub fn judge_action(
    policy: &Policy,
    tool: &str,
    action: &ExecutionAction,
    ctx: &EvalContext,
    support: &SandboxSupport,
) -> ActionJudgement {
    let mut evaluation = evaluate(policy, tool, action, ctx, None);
    if action.kind != ActionKind::Execute {
        return ActionJudgement { evaluation, sandbox: None };
    }
    let profile = command_walls(policy, &mut evaluation, ctx, support);
    ActionJudgement { evaluation, sandbox: Some(profile) }
}

/// The walls a command `evaluation` judged runs inside, on a machine that can enforce `support`: a
/// contained command's with its containment, or (where it cannot be contained) the decision raised to
/// a prompt with the reason; a policy that requires walls the machine cannot build forbids it.
pub fn command_walls(
    policy: &Policy,
    evaluation: &mut Evaluation,
    ctx: &EvalContext,
    support: &SandboxSupport,
) -> SandboxProfile {
    let mut profile = policy.sandbox_profile(evaluation, ctx, support);
    if evaluation.decision == Decision::Contain {
        let contained = match &profile.enforcement {
            Enforcement::Unconfined { reason } => Err(cannot_contain_here(reason)),
            Enforcement::Confined => policy.containment(evaluation, &profile, ctx),
        };
        match contained {
            Ok(containment) => contain(&mut profile, containment),
            Err(why) => {
                asked(evaluation, &why);
                profile = policy.sandbox_profile(evaluation, ctx, support);
            }
        }
    }
    require_walls(policy, &profile.enforcement, evaluation);
    profile
}

/// The same judgement's evaluation without building the walls (a replay over a million calls needs the
/// decision, not the file-system probes of each command's profile): the decision is the same.
pub fn decide_action(
    policy: &Policy,
    tool: &str,
    action: &ExecutionAction,
    ctx: &EvalContext,
    support: &SandboxSupport,
) -> Evaluation {
    decide_action_analyzed(policy, tool, action, ctx, support, None)
}

/// [`decide_action`] with the analysis of the action's command when the caller already has it (a
/// replay judging one call by two policies analyzes its command once); one of another command is not
/// used.
pub fn decide_action_analyzed(
    policy: &Policy,
    tool: &str,
    action: &ExecutionAction,
    ctx: &EvalContext,
    support: &SandboxSupport,
    analyzed: Option<&Analyzed>,
) -> Evaluation {
    let mut evaluation = evaluate(policy, tool, action, ctx, analyzed);
    // The rules' part of containing, and whether this machine confines at all; the files a live run
    // would hide are not looked for (a replay of a million calls), so a live run of a command whose
    // trees are too large to search is asked where this says contained.
    if evaluation.decision == Decision::Contain {
        let contained = match crate::sandbox::enforcement_on(support) {
            Enforcement::Unconfined { reason } => Err(cannot_contain_here(&reason)),
            Enforcement::Confined => policy.contained_rules(&evaluation).map(|_| ()),
        };
        if let Err(why) = contained {
            asked(&mut evaluation, &why);
        }
    }
    // Only a policy that requires the walls needs to know whether this machine builds them.
    if action.kind == ActionKind::Execute && policy.sandbox_mode() == SandboxMode::Required {
        require_walls(policy, &crate::sandbox::enforcement_on(support), &mut evaluation);
    }
    evaluation
}

fn evaluate(
    policy: &Policy,
    tool: &str,
    action: &ExecutionAction,
    ctx: &EvalContext,
    analyzed: Option<&Analyzed>,
) -> Evaluation {
    if action.kind == ActionKind::Mcp {
        let changed = action.operation == portcullis_harness::MCP_CHANGED_DEFINITION;
        return policy.evaluate_mcp_action(tool, action.target.as_deref(), changed);
    }
    policy.evaluate_action_analyzed(action, ctx, analyzed)
}

fn cannot_contain_here(reason: &str) -> String {
    format!("it cannot run contained here: {reason}")
}

/// A contained evaluation that cannot run contained is asked: the reason says what could not be read
/// and why it cannot be contained.
fn asked(evaluation: &mut Evaluation, why: &str) {
    let unread = evaluation.deciding_reason.clone().unwrap_or_else(|| "part of it cannot be read".into());
    evaluation.raise(Decision::Prompt, format!("{unread} — {why}"), None);
}

/// Puts the containment's walls into `profile`: its hidden files, and no host asked for.
fn contain(profile: &mut SandboxProfile, containment: portcullis_harness::Containment) {
    profile.hidden.extend(containment.hidden_by_globs.iter().cloned());
    if let Some(egress) = profile.egress.as_mut() {
        egress.ask = None;
    }
    profile.contained = Some(Box::new(containment));
}

/// A command the policy requires confined (`sandbox.mode: required`) is forbidden where the kernel
/// cannot confine it: raised into the evaluation itself, so its decision is the one every caller sees.
fn require_walls(policy: &Policy, enforcement: &Enforcement, evaluation: &mut Evaluation) {
    if let (Enforcement::Unconfined { reason }, SandboxMode::Required) = (enforcement, policy.sandbox_mode())
        && evaluation.decision != Decision::Forbidden
    {
        evaluation.raise(
            Decision::Forbidden,
            format!(
                "the policy requires the sandbox (sandbox.mode: required) and commands cannot be confined here: {reason}"
            ),
            None,
        );
    }
}
