//! The dispatch pipeline. One call in, exactly one [`ToolCallResult`] out; the stage order is fixed:
//!
//! 1. middleware `tool_call` (may normalize, never grants)
//! 2. guardrails `tool_input`
//! 3. lookup → `unknown_tool`; grants → `tool_denied`; arguments must be a JSON object →
//!    `invalid_arguments` (`invalid_json_arguments` when they did not parse)
//! 4. permission `tool:<name>:execute` → `permission_denied`
//! 5. JSON Schema, then host validators → `validation_failed`
//! 6. the tool describes its action; the execution policy answers allow / deny / ask; ask goes to the
//!    approver → `execution_denied` unless allowed. The approved action is the one executed.
//! 7. `started` ledger record (durable first for a call with a side effect) + event → execute
//!    (progress → events + ledger snapshots)
//! 8. middleware `tool_result` → guardrails `tool_output` → redaction → finished | error
//!
//! Blocked calls never execute; each writes one `blocked` record and one `tool_execution_blocked` event.
//!
//! This module drives the stages in that order; they live in submodules: `builder` (assembly),
//! `guards` (1, 2, and the guardrails of 8), `admission` (3-5), `authorization` (6), `recorded` (7's
//! `started` and the redacted, bounded copies records show), `execute` (7), `finish` (8) and `blocked`
//! (a refusal's result, record and event).

use crate::call::{
    BlockedReason, CallArguments, CallContext, CallError, DecidedBy, RuleRef, RunContext, ToolCall,
};
use crate::error_code::CallErrorCode;
use crate::events::{EventBus, EventPayload, ToolEvent};
use crate::execution::{Approvals, ExecutionAction, ExecutionPolicy, PolicyRuling};
use crate::guardrail::{Guardrail, GuardrailStage, GuardrailSubject};
use crate::ledger::Ledger;
use crate::middleware::Middleware;
use crate::outcome::ToolCallResult;
use crate::permission::PermissionCheck;
use crate::redaction::Redactor;
use crate::registry::ToolRegistry;
use crate::schema::SchemaValidator;
use crate::time::Timestamp;
use crate::tool::{Catalog, ProgressReporter, ToolInvocation};
use crate::validation::ToolValidator;
use serde_json::Value;
use std::any::Any;
use std::borrow::Cow;
use std::sync::{Arc, RwLock};
use std::task::Poll;
use std::time::Duration;

mod admission;
mod authorization;
mod blocked;
mod builder;
mod ending;
mod execute;
mod finish;
mod guards;
mod recorded;

/// Longest guardrail refusal message, in bytes.
pub const MAX_GUARDRAIL_MESSAGE_BYTES: usize = 200;
/// The harness's own bound on waiting for an approver (the policy's default approval timeout). The
/// approver (the hub's broker) normally answers, or times out, first.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a cancelled tool may take to settle by itself before it is dropped.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Everything the pipeline needs, shared by clones of a [`Dispatcher`].
pub(crate) struct Shared {
    registry: RwLock<Arc<ToolRegistry>>,
    schema: SchemaValidator,
    validators: Vec<Arc<dyn ToolValidator>>,
    guardrails: Vec<Arc<dyn Guardrail>>,
    middleware: Vec<Arc<dyn Middleware>>,
    permissions: Arc<dyn PermissionCheck>,
    policy: Option<Arc<dyn ExecutionPolicy>>,
    approvals: Option<Arc<dyn Approvals>>,
    ledger: Option<Arc<dyn Ledger>>,
    events: EventBus,
    redactor: Redactor,
    cancel_grace: Duration,
    approval_timeout: Option<Duration>,
}

/// The dispatcher. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Dispatcher {
    pub(crate) shared: Arc<Shared>,
}

/// A batch call's hold on the batch gate while it executes.
enum BatchTurn<'a> {
    Alone { _held: tokio::sync::RwLockWriteGuard<'a, ()> },
    Shared { _held: tokio::sync::RwLockReadGuard<'a, ()> },
}

/// What stage 8 needs to know about a started call.
struct Finishing<'a> {
    ctx: &'a Arc<CallContext>,
    tool_name: Arc<str>,
    decided_by: DecidedBy,
    policy: Option<Box<PolicyRuling>>,
    /// When it started, if anyone keeps or sees the time (see `Shared::clock`).
    started_at: Option<Timestamp>,
    /// A copy of the arguments, kept only when output guardrails will look at them.
    arguments: Option<Value>,
}

/// What stage 7 needs to record and announce a call about to execute.
struct StartedCall<'a> {
    ctx: &'a Arc<CallContext>,
    tool_name: &'a Arc<str>,
    arguments: &'a Value,
    action: &'a ExecutionAction,
    decided_by: &'a DecidedBy,
    matched_rules: &'a [RuleRef],
    policy: Option<&'a PolicyRuling>,
    /// Read whenever there is a ledger (see `Shared::clock`), so the `started` record always has it.
    started_at: Option<Timestamp>,
    stages: crate::events::StageTimes,
}

/// A refusal before execution, on its way to becoming a blocked result.
pub(crate) struct Refusal {
    reason: BlockedReason,
    error: CallError,
    decided_by: DecidedBy,
    matched_rules: Vec<RuleRef>,
    /// The action the policy or the operator refused (recorded so audits and replays see it). Boxed,
    /// like `policy`: most refusals come before the policy stage, and a smaller refusal is cheaper to
    /// carry through the pipeline's futures.
    action: Option<Box<ExecutionAction>>,
    /// What the policy said, when the refusal came at or after the policy stage.
    policy: Option<Box<PolicyRuling>>,
}

/// A call the policy (and an approver) let through: the action to execute, who decided, the rules that
/// matched, and what the policy itself said (boxed: it is carried to the call's end, and without a
/// policy a `None` of its full size would be moved at each step).
type Authorized = (ExecutionAction, DecidedBy, Vec<RuleRef>, Option<Box<PolicyRuling>>);

impl Refusal {
    pub(crate) fn new(
        reason: BlockedReason,
        code: CallErrorCode,
        message: impl Into<String>,
        decided_by: DecidedBy,
    ) -> Self {
        Refusal {
            reason,
            error: CallError::new(code, message),
            decided_by,
            matched_rules: Vec::new(),
            action: None,
            policy: None,
        }
    }

    /// A refusal carrying an error made by the caller (its code, message and details).
    pub(crate) fn with_error(reason: BlockedReason, error: CallError, decided_by: DecidedBy) -> Self {
        Refusal { reason, error, decided_by, matched_rules: Vec::new(), action: None, policy: None }
    }
}

pub use builder::DispatcherBuilder;
pub(crate) use recorded::shown_name;
pub use recorded::{MAX_RECORDED_ARGUMENT_BYTES, MAX_SHOWN_NAME_BYTES, TRUNCATED_PREVIEW_BYTES};

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

impl Dispatcher {
    /// The registry calls resolve against now.
    pub fn registry(&self) -> Arc<ToolRegistry> {
        match self.shared.registry.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Swaps in a new registry; calls already past lookup finish with the old one.
    pub fn replace_registry(&self, registry: ToolRegistry) {
        let mut slot = match self.shared.registry.write() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        *slot = Arc::new(registry);
    }

    pub fn events(&self) -> &EventBus {
        &self.shared.events
    }

    pub fn schema_validator(&self) -> &SchemaValidator {
        &self.shared.schema
    }

    pub fn redactor(&self) -> &Redactor {
        &self.shared.redactor
    }

    pub fn ledger(&self) -> Option<&Arc<dyn Ledger>> {
        self.shared.ledger.as_ref()
    }

    /// Runs one call through the whole pipeline.
    /// (The pipeline's own future, not one wrapping it: every wrapper copies it once more.)
    pub fn dispatch<'a>(
        &'a self,
        call: ToolCall,
        run: &'a RunContext,
    ) -> impl Future<Output = ToolCallResult> + Send + 'a {
        self.dispatch_gated(call, run, None)
    }

    /// The pipeline, with an optional batch gate: an exclusive tool executes holding it for writing,
    /// any other tool for reading, so an exclusive tool never runs beside another call of its batch
    /// (whatever name the call had before middleware).
    pub(crate) async fn dispatch_gated(
        &self,
        call: ToolCall,
        run: &RunContext,
        gate: Option<&tokio::sync::RwLock<()>>,
    ) -> ToolCallResult {
        let shared = &self.shared;
        let ctx = Arc::new(run.call(call.id.clone()));

        // 1. middleware `tool_call`.
        let requested_name = (!shared.middleware.is_empty()).then(|| call.name.clone());
        let call = if shared.middleware.is_empty() {
            call
        } else {
            // Boxed, like every stage a host may leave out: its future would grow every call's.
            match Box::pin(shared.apply_call_middleware(call, &ctx)).await {
                Ok(call) => call,
                Err((name, refusal)) => {
                    return shared.block(&ctx, shown_name(&name), refusal, None).await;
                }
            }
        };

        // 2. guardrails `tool_input`.
        if !shared.guardrails.is_empty() {
            let args_view: Cow<'_, Value> = match &call.arguments {
                CallArguments::Json(v) => Cow::Borrowed(v),
                CallArguments::Unparsed { raw, .. } => Cow::Owned(Value::String(raw.clone())),
            };
            let subject = GuardrailSubject {
                stage: GuardrailStage::ToolInput,
                call: &ctx,
                tool_name: &call.name,
                arguments: &args_view,
                output: None,
            };
            if let Err(refusal) = Box::pin(shared.run_guardrails(subject, run)).await {
                let args = args_view.into_owned();
                return shared.block(&ctx, Arc::from(call.name.as_str()), refusal, Some(args)).await;
            }
        }

        // 3. lookup, grants, arguments shape.
        let registry = self.registry();
        let mut stages = crate::events::StageTimes::when(shared.events.has_subscribers());
        let admitting = stages.clock();
        let admitted = shared.admit(&registry, requested_name.as_deref(), call, run);
        stages.grant_us = crate::events::micros_since(admitting);
        let (entry, arguments) = match admitted {
            Ok(admitted) => admitted,
            Err(refused) => {
                let (name, refusal, args) = *refused;
                return shared.block(&ctx, name, refusal, args).await;
            }
        };
        let tool_name = entry.name.clone();

        // 4-6. permission, validation, execution policy and approval.
        let (action, decided_by, matched_rules, policy) =
            match (shared.check_and_describe(entry, &arguments, &ctx, &mut stages), &shared.policy) {
                (Ok(action), None) => (action, DecidedBy::DEFAULT, Vec::new(), None),
                // Boxed: the policy's future is large and only hosts with a policy need it.
                (Ok(action), Some(policy)) => {
                    let judged =
                        shared.judge(policy, entry, &arguments, &ctx, action, &run.cancel, &mut stages);
                    match Box::pin(judged).await {
                        Ok(authorized) => authorized,
                        Err(refusal) => return shared.block(&ctx, tool_name, refusal, Some(arguments)).await,
                    }
                }
                (Err(refusal), _) => return shared.block(&ctx, tool_name, refusal, Some(arguments)).await,
            };

        // 7. started, execute.
        let _turn = match gate {
            Some(gate) if entry.spec().exclusive => Some(BatchTurn::Alone { _held: gate.write().await }),
            Some(gate) => Some(BatchTurn::Shared { _held: gate.read().await }),
            None => None,
        };
        if run.cancel.is_cancelled() {
            let error = CallError::new(
                CallErrorCode::NotDispatched,
                "the run was cancelled before this call started",
            );
            return Box::pin(shared.fail_unstarted(&ctx, tool_name, error, decided_by, policy)).await;
        }
        let started_at = shared.clock();
        let start = StartedCall {
            ctx: &ctx,
            tool_name: &tool_name,
            arguments: &arguments,
            action: &action,
            decided_by: &decided_by,
            matched_rules: &matched_rules,
            policy: policy.as_deref(),
            started_at,
            stages,
        };
        if (shared.ledger.is_some() || shared.events.has_subscribers())
            && let Err(error) = shared.announce_start(start).await
        {
            return Box::pin(shared.fail_unstarted(&ctx, tool_name, error, decided_by, policy)).await;
        }
        let kept_arguments = (!shared.guardrails.is_empty()).then(|| arguments.clone());
        let invocation = ToolInvocation {
            arguments,
            action,
            call: ctx.clone(),
            progress: ProgressReporter {
                sink: Some(self.shared.clone()),
                call: ctx.clone(),
                tool_name: tool_name.clone(),
                // Progress records (the only readers) exist only with a ledger, and then it was read.
                started_at: started_at.unwrap_or_default(),
                decided_by: decided_by.clone(),
            },
            cancel: run.cancel.clone(),
            catalog: Catalog { registry: registry.clone(), grants: run.grants.clone() },
            asks: (shared.approvals.clone()).map(|approvals| {
                crate::OperatorAsk::new(
                    approvals,
                    ctx.clone(),
                    tool_name.to_string(),
                    shared.approval_timeout,
                )
            }),
        };
        let mut running = Shared::start(entry, invocation);
        let outcome = match execute::poll_once(&mut running).await {
            Poll::Ready(settled) => execute::outcome_of(settled),
            // Boxed: only a tool that does not finish at its first poll pays for the wait on
            // cancellation and its grace period.
            Poll::Pending => Box::pin(shared.keep_executing(running, &run.cancel)).await,
        };

        // 8. middleware `tool_result`, guardrails `tool_output`, redaction, finished | error.
        let finishing =
            Finishing { ctx: &ctx, tool_name, decided_by, policy, started_at, arguments: kept_arguments };
        if shared.middleware.is_empty() && shared.guardrails.is_empty() {
            shared.conclude(finishing, outcome).await
        } else {
            // Boxed: only hosts with result middleware or output guardrails pay for this future.
            Box::pin(shared.finish(finishing, outcome, run)).await
        }
    }
}

impl Shared {
    /// The wall clock, read only for someone who keeps or sees it: the ledger's records and the events
    /// carry a call's times; without either, nothing would read them (two clock reads were ~5 % of a
    /// call's instructions).
    fn clock(&self) -> Option<Timestamp> {
        (self.ledger.is_some() || self.events.has_subscribers()).then(Timestamp::now)
    }

    fn emit(&self, ctx: &Arc<CallContext>, tool_name: &Arc<str>, payload: EventPayload) {
        self.events.emit(ToolEvent {
            call: ctx.clone(),
            tool_name: tool_name.clone(),
            at: Timestamp::now(),
            payload,
        });
    }
}
