//! A call's lifecycle event read as pipeline steps: which stage it closes (grant, arguments, policy,
//! approval, execution…), what that stage decided and who decided, how long execution took. Computed
//! here, once, so that every front end that shows a call's timeline shows the same stages and words.

use super::types::{CallDecision, CallStep, Decider, DeciderKind, PipelineStage, StepOutcome};
use portcullis_harness::events::GuardrailOutcome;
use portcullis_harness::{BlockedReason, DecidedBy, EventPayload, ExecutionAction};

/// Whether the action ran contained (the policy allowed it without asking, inside contained walls).
pub(crate) fn is_contained(action: &ExecutionAction) -> bool {
    action.sandbox.as_ref().is_some_and(|s| s.contained.is_some())
}

/// The steps a lifecycle event closes, in pipeline order.
pub(crate) fn steps_of(payload: &EventPayload) -> Vec<CallStep> {
    match payload {
        EventPayload::GuardrailDecision { guardrail, outcome, rule, message, .. } => {
            let blocked = !matches!(outcome, GuardrailOutcome::Allow);
            let words = match rule {
                Some(rule) => format!("guardrail {guardrail} ({}/{})", rule.pack, rule.rule),
                None => format!("guardrail {guardrail}"),
            };
            vec![CallStep {
                decision: blocked.then_some(CallDecision::Denied),
                decided_by: Some(Decider::in_words(DeciderKind::Guardrail, words)),
                error: if blocked { message.clone() } else { None },
                ..step(
                    PipelineStage::Guardrail,
                    if blocked { StepOutcome::Blocked } else { StepOutcome::Passed },
                )
            }]
        }
        EventPayload::Blocked { reason, error, decided_by, policy_decided_by } => {
            let stage = blocked_stage(*reason, decided_by);
            let decision = match (decided_by, reason) {
                (DecidedBy::ApprovalTimeout { .. }, _) => CallDecision::Timeout,
                (
                    DecidedBy::Rule { .. } | DecidedBy::ProtectedPlace { .. } | DecidedBy::Default { .. },
                    BlockedReason::ExecutionDenied,
                ) => CallDecision::Forbidden,
                _ => CallDecision::Denied,
            };
            let mut steps = Vec::new();
            if stage == PipelineStage::Approval {
                // The policy asked first: its step names what made it ask.
                steps.push(asked(policy_decided_by.as_ref(), None));
            }
            steps.push(CallStep {
                decision: Some(decision),
                decided_by: Some(Decider::of(decided_by)),
                error: Some(error.to_string()),
                ..step(stage, StepOutcome::Blocked)
            });
            steps
        }
        EventPayload::Started { decided_by, policy_decided_by, stages, action, .. } => {
            let took = |us: u64| Some(us);
            let mut steps = vec![
                CallStep {
                    duration_us: took(stages.grant_us),
                    ..step(PipelineStage::Grant, StepOutcome::Passed)
                },
                CallStep {
                    duration_us: took(stages.arguments_us),
                    ..step(PipelineStage::Arguments, StepOutcome::Passed)
                },
            ];
            let decided = Some(Decider::of(decided_by));
            match decided_by {
                DecidedBy::Operator { .. } | DecidedBy::SessionGrant { .. } => {
                    // The policy asked (its step names what made it ask); an operator (or a session
                    // grant they gave) allowed it.
                    steps.push(asked(policy_decided_by.as_ref(), took(stages.policy_us)));
                    steps.push(CallStep {
                        decision: Some(CallDecision::Approved),
                        decided_by: decided,
                        duration_us: stages.approval_us,
                        ..step(PipelineStage::Approval, StepOutcome::Passed)
                    });
                }
                _ => steps.push(CallStep {
                    decision: Some(if is_contained(action) {
                        CallDecision::Contained
                    } else {
                        CallDecision::Allow
                    }),
                    decided_by: decided,
                    duration_us: took(stages.policy_us),
                    ..step(PipelineStage::Policy, StepOutcome::Passed)
                }),
            }
            // The start is announced once the ledger holds its `started` row.
            steps.push(CallStep {
                duration_us: took(stages.ledger_us),
                ..step(PipelineStage::Ledger, StepOutcome::Passed)
            });
            steps.push(step(PipelineStage::Execution, StepOutcome::Started));
            steps
        }
        EventPayload::Progress { .. } => vec![step(PipelineStage::Execution, StepOutcome::Progress)],
        EventPayload::Finished { duration_us, redaction_us, .. } => vec![
            CallStep {
                duration_us: Some(*redaction_us),
                ..step(PipelineStage::Redaction, StepOutcome::Passed)
            },
            CallStep {
                duration_us: Some(*duration_us),
                ..step(PipelineStage::Execution, StepOutcome::Finished)
            },
        ],
        EventPayload::Error { error, duration_us } => vec![CallStep {
            duration_us: Some(*duration_us),
            error: Some(error.to_string()),
            ..step(PipelineStage::Execution, StepOutcome::Error)
        }],
    }
}

/// What the call does, in one line, when the event says (its start carries the action).
pub(crate) fn action_of(payload: &EventPayload) -> Option<String> {
    match payload {
        EventPayload::Started { action, arguments, .. } => Some(one_line(action, arguments)),
        _ => None,
    }
}

/// The walls a command runs inside, in one line, when the event says (its start carries them):
/// `confined · writes /p · network closed · 512 processes`, or `UNCONFINED: <why>`.
pub(crate) fn sandbox_of(payload: &EventPayload) -> Option<String> {
    let EventPayload::Started { action, .. } = payload else { return None };
    Some(sandbox_line(action.sandbox.as_deref()?))
}

/// The connections a finished command made or tried through its egress proxy.
pub(crate) fn connections_of(payload: &EventPayload) -> Vec<portcullis_harness::Connection> {
    match payload {
        EventPayload::Finished { output, .. } => output.connections.clone(),
        _ => Vec::new(),
    }
}

/// One line for a profile (the live view's, the ledger's).
pub fn sandbox_line(p: &portcullis_harness::SandboxProfile) -> String {
    match &p.enforcement {
        portcullis_harness::Enforcement::Unconfined { reason } => format!("UNCONFINED: {reason}"),
        portcullis_harness::Enforcement::Confined => {
            let writes: Vec<String> = p.write.iter().map(|w| w.display().to_string()).collect();
            format!(
                "confined · writes {} · network {} · {} processes, {} MiB each",
                if writes.is_empty() { "nothing".to_owned() } else { writes.join(", ") },
                p.network_words(),
                p.limits.processes,
                p.limits.memory_mb
            )
        }
    }
}

/// At most this many characters of a call's arguments stand for an action with no command or path.
const ARGUMENTS_SHOWN: usize = 160;

fn one_line(action: &ExecutionAction, arguments: &serde_json::Value) -> String {
    if let Some(command) = &action.command {
        return command.clone();
    }
    let paths: Vec<String> = action.paths.iter().map(|p| p.display().to_string()).collect();
    if !paths.is_empty() {
        return format!("{} {}", action.operation, paths.join(" "));
    }
    // An upstream tool's call: its (redacted) arguments say what it does.
    let all = arguments.to_string();
    if all.chars().count() <= ARGUMENTS_SHOWN {
        return all;
    }
    all.chars().take(ARGUMENTS_SHOWN).collect::<String>() + "…"
}

fn step(stage: PipelineStage, outcome: StepOutcome) -> CallStep {
    CallStep { stage, outcome, decision: None, decided_by: None, duration_us: None, error: None }
}

/// The policy's step of a call it asked an operator about: what made it ask, when the event says.
fn asked(policy_decided_by: Option<&DecidedBy>, duration_us: Option<u64>) -> CallStep {
    CallStep {
        decision: Some(CallDecision::Prompt),
        decided_by: policy_decided_by.map(Decider::of),
        duration_us,
        ..step(PipelineStage::Policy, StepOutcome::Passed)
    }
}

/// The stage that blocked a call, by the pipeline's reason (and, for an execution denial, who decided).
fn blocked_stage(reason: BlockedReason, decided_by: &DecidedBy) -> PipelineStage {
    match reason {
        BlockedReason::GuardrailBlocked => PipelineStage::Guardrail,
        BlockedReason::UnknownTool | BlockedReason::ToolDenied => PipelineStage::Grant,
        BlockedReason::InvalidArguments | BlockedReason::ValidationFailed => PipelineStage::Arguments,
        BlockedReason::PermissionDenied => PipelineStage::Permission,
        // Decided by the effect its idempotency key claimed in the ledger, before the pipeline.
        BlockedReason::DuplicateEffect | BlockedReason::EffectConflict | BlockedReason::OutcomeUnknown => {
            PipelineStage::Ledger
        }
        BlockedReason::ExecutionDenied => match decided_by {
            DecidedBy::Operator { .. }
            | DecidedBy::ApprovalTimeout { .. }
            | DecidedBy::SessionGrant { .. } => PipelineStage::Approval,
            _ => PipelineStage::Policy,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portcullis_harness::{CallError, CallErrorCode};

    #[test]
    fn a_timed_out_approval_is_its_own_decision_at_the_approval_stage() {
        let steps = steps_of(&EventPayload::Blocked {
            reason: BlockedReason::ExecutionDenied,
            error: CallError::new(CallErrorCode::ExecutionDenied, "nobody answered"),
            decided_by: DecidedBy::ApprovalTimeout { after_ms: 120_000 },
            policy_decided_by: Some(DecidedBy::ProtectedPlace {
                kind: portcullis_harness::ProtectedKind::Executed,
                place: "a git hook".into(),
                path: "/p/.git/hooks/pre-commit".into(),
            }),
        });
        assert_eq!(steps.len(), 2);
        // The policy asked because of the protected place, and says so.
        assert_eq!((steps[0].stage, steps[0].decision), (PipelineStage::Policy, Some(CallDecision::Prompt)));
        let asked = steps[0].decided_by.as_ref().unwrap();
        assert_eq!(asked.kind, DeciderKind::ProtectedPlace);
        assert_eq!(asked.words, "protected place (executed content): a git hook at /p/.git/hooks/pre-commit");
        assert_eq!(steps[1].stage, PipelineStage::Approval);
        assert_eq!(steps[1].decision, Some(CallDecision::Timeout));
        assert_eq!(
            steps[1].decided_by.as_ref().map(|d| d.words.as_str()),
            Some("nobody answered within 120 s")
        );
    }

    #[test]
    fn a_forbidding_rule_blocks_at_the_policy_stage() {
        let steps = steps_of(&EventPayload::Blocked {
            reason: BlockedReason::ExecutionDenied,
            error: CallError::new(CallErrorCode::ExecutionDenied, "rm -rf / is forbidden"),
            decided_by: DecidedBy::Rule { rule_id: "no-rm".into(), source: "/p/policy.json".into() },
            policy_decided_by: None,
        });
        assert_eq!(
            (steps[0].stage, steps[0].decision),
            (PipelineStage::Policy, Some(CallDecision::Forbidden))
        );
        assert_eq!(steps[0].error.as_deref(), Some("execution_denied: rm -rf / is forbidden"));
    }

    #[test]
    fn an_unknown_tool_is_refused_at_the_grant_stage() {
        let steps = steps_of(&EventPayload::Blocked {
            reason: BlockedReason::UnknownTool,
            error: CallError::new(CallErrorCode::UnknownTool, "no tool nope"),
            decided_by: DecidedBy::Registry,
            policy_decided_by: None,
        });
        assert_eq!((steps[0].stage, steps[0].decision), (PipelineStage::Grant, Some(CallDecision::Denied)));
    }
}
