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

use crate::call::{
    BlockedReason, CallArguments, CallContext, CallError, CallOutcome, DecidedBy, RuleRef, RunContext,
    ToolCall, ToolCallResult, error_codes,
};
use crate::events::{EventBus, EventPayload, GuardrailOutcome, ToolEvent};
use crate::execution::{
    ApprovalAnswer, ApprovalRequest, Approvals, ExecutionAction, ExecutionPolicy, PolicyDecision,
};
use crate::execution::{PolicyRequest, PolicyRuling, PolicyVerdict};
use crate::guardrail::{Guardrail, GuardrailRule, GuardrailStage, GuardrailSubject, GuardrailVerdict};
use crate::ledger::{Ledger, RecordKind, ToolCallRecord};
use crate::middleware::Middleware;
use crate::permission::{AllowAllPermissions, Permission, PermissionCheck};
use crate::redaction::Redactor;
use crate::registry::{RegisteredTool, ToolRegistry};
use crate::schema::{SchemaValidator, truncate};
use crate::time::Timestamp;
use crate::tool::{Catalog, ProgressReporter, ToolInvocation, ToolOutput};
use crate::validation::{ToolValidator, ValidatorVerdict};
use futures::FutureExt;
use serde_json::Value;
use std::any::Any;
use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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

/// Builds a [`Dispatcher`]. Defaults: default schema bounds, no host validators, guardrails or
/// middleware, every permission granted, no execution policy (allow, decided by default), no approver
/// (an "ask" is denied), no ledger, a fresh event bus, the default redactor (patterns + secret keys).
pub struct DispatcherBuilder {
    shared: Shared,
}

impl DispatcherBuilder {
    pub fn schema_validator(mut self, schema: SchemaValidator) -> Self {
        self.shared.schema = schema;
        self
    }

    pub fn validator(mut self, validator: Arc<dyn ToolValidator>) -> Self {
        self.shared.validators.push(validator);
        self
    }

    pub fn guardrail(mut self, guardrail: Arc<dyn Guardrail>) -> Self {
        self.shared.guardrails.push(guardrail);
        self
    }

    /// Middleware run in the order added at `tool_call`, in reverse at `tool_result`.
    pub fn middleware(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.shared.middleware.push(middleware);
        self
    }

    pub fn permissions(mut self, permissions: Arc<dyn PermissionCheck>) -> Self {
        self.shared.permissions = permissions;
        self
    }

    pub fn policy(mut self, policy: Arc<dyn ExecutionPolicy>) -> Self {
        self.shared.policy = Some(policy);
        self
    }

    pub fn approvals(mut self, approvals: Arc<dyn Approvals>) -> Self {
        self.shared.approvals = Some(approvals);
        self
    }

    pub fn ledger(mut self, ledger: Arc<dyn Ledger>) -> Self {
        self.shared.ledger = Some(ledger);
        self
    }

    pub fn events(mut self, events: EventBus) -> Self {
        self.shared.events = events;
        self
    }

    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.shared.redactor = redactor;
        self
    }

    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.shared.cancel_grace = grace;
        self
    }

    /// Longest wait for an approver's answer; then the call is denied, recorded as
    /// [`DecidedBy::ApprovalTimeout`]. `None` waits as long as the approver takes. Default 120 s.
    pub fn approval_timeout(mut self, limit: Option<Duration>) -> Self {
        self.shared.approval_timeout = limit;
        self
    }

    pub fn build(self) -> Dispatcher {
        Dispatcher { shared: Arc::new(self.shared) }
    }
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
    policy: Option<PolicyRuling>,
    started_at: Timestamp,
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
    started_at: Timestamp,
}

/// A refusal before execution, on its way to becoming a blocked result.
pub(crate) struct Refusal {
    reason: BlockedReason,
    error: CallError,
    decided_by: DecidedBy,
    matched_rules: Vec<RuleRef>,
    /// The action the policy or the operator refused (recorded so audits and replays see it).
    action: Option<ExecutionAction>,
    /// What the policy said, when the refusal came at or after the policy stage.
    policy: Option<PolicyRuling>,
}

/// A call the policy (and an approver) let through: the action to execute, who decided, the rules that
/// matched, and what the policy itself said.
type Authorized = (ExecutionAction, DecidedBy, Vec<RuleRef>, Option<PolicyRuling>);

impl Refusal {
    pub(crate) fn new(
        reason: BlockedReason,
        code: &str,
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
}

pub(crate) use recorded::shown_name;
pub use recorded::{MAX_RECORDED_ARGUMENT_BYTES, MAX_SHOWN_NAME_BYTES, TRUNCATED_PREVIEW_BYTES};

/// Sleeps for `limit`, or never returns when there is none.
async fn sleep_or_forever(limit: Option<Duration>) {
    match limit {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending::<()>().await,
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Identifiers a guardrail's own name may contribute to a `pack` (garbage is replaced).
fn sanitize_ident(s: &str) -> String {
    let cleaned: String =
        s.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')).take(64).collect();
    if cleaned.is_empty() { "unnamed".to_owned() } else { cleaned }
}

impl Dispatcher {
    pub fn builder(registry: ToolRegistry) -> DispatcherBuilder {
        DispatcherBuilder {
            shared: Shared {
                registry: RwLock::new(Arc::new(registry)),
                schema: SchemaValidator::default(),
                validators: Vec::new(),
                guardrails: Vec::new(),
                middleware: Vec::new(),
                permissions: Arc::new(AllowAllPermissions),
                policy: None,
                approvals: None,
                ledger: None,
                events: EventBus::default(),
                redactor: Redactor::default(),
                cancel_grace: DEFAULT_CANCEL_GRACE,
                approval_timeout: Some(DEFAULT_APPROVAL_TIMEOUT),
            },
        }
    }

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
    pub async fn dispatch(&self, call: ToolCall, run: &RunContext) -> ToolCallResult {
        self.dispatch_gated(call, run, None).await
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
        let call = match shared.apply_call_middleware(call, &ctx).await {
            Ok(call) => call,
            Err((name, refusal)) => return shared.block(&ctx, shown_name(&name), refusal, None).await,
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
            if let Err(refusal) = shared.run_guardrails(subject, run).await {
                let args = args_view.into_owned();
                return shared.block(&ctx, Arc::from(call.name.as_str()), refusal, Some(&args)).await;
            }
        }

        // 3. lookup, grants, arguments shape.
        let registry = self.registry();
        let (entry, arguments) = match shared.admit(&registry, requested_name.as_deref(), call, run) {
            Ok(admitted) => admitted,
            Err(refused) => {
                let (name, refusal, args) = *refused;
                return shared.block(&ctx, name, refusal, args.as_ref()).await;
            }
        };
        let tool_name = entry.name.clone();

        // 4-6. permission, validation, execution policy and approval.
        let (action, decided_by, matched_rules, policy) =
            match shared.authorize(entry, &arguments, &ctx, &run.cancel).await {
                Ok(authorized) => authorized,
                Err(refusal) => return shared.block(&ctx, tool_name, refusal, Some(&arguments)).await,
            };

        // 7. started, execute.
        let _turn = match gate {
            Some(gate) if entry.spec().exclusive => Some(BatchTurn::Alone { _held: gate.write().await }),
            Some(gate) => Some(BatchTurn::Shared { _held: gate.read().await }),
            None => None,
        };
        if run.cancel.is_cancelled() {
            let error =
                CallError::new(error_codes::NOT_DISPATCHED, "the run was cancelled before this call started");
            return shared.fail_unstarted(&ctx, tool_name, error, decided_by, policy).await;
        }
        let action = Arc::new(action);
        let started_at = Timestamp::now();
        let start = StartedCall {
            ctx: &ctx,
            tool_name: &tool_name,
            arguments: &arguments,
            action: &action,
            decided_by: &decided_by,
            matched_rules: &matched_rules,
            policy: policy.as_ref(),
            started_at,
        };
        if let Err(error) = shared.announce_start(start).await {
            return shared.fail_unstarted(&ctx, tool_name, error, decided_by, policy).await;
        }
        let kept_arguments = (!shared.guardrails.is_empty()).then(|| arguments.clone());
        let invocation = ToolInvocation {
            arguments,
            action: (*action).clone(),
            call: ctx.clone(),
            progress: ProgressReporter {
                shared: Some(self.shared.clone()),
                call: ctx.clone(),
                tool_name: tool_name.clone(),
                started_at,
                decided_by: decided_by.clone(),
            },
            cancel: run.cancel.clone(),
            catalog: Catalog { registry: registry.clone(), grants: run.grants.clone() },
        };
        let outcome = shared.execute(entry, invocation, &run.cancel).await;

        // 8. middleware `tool_result`, guardrails `tool_output`, redaction, finished | error.
        let finishing =
            Finishing { ctx: &ctx, tool_name, decided_by, policy, started_at, arguments: kept_arguments };
        shared.finish(finishing, outcome, run).await
    }
}

impl Shared {
    async fn apply_call_middleware(
        &self,
        mut call: ToolCall,
        ctx: &CallContext,
    ) -> Result<ToolCall, (String, Refusal)> {
        for m in &self.middleware {
            let id = call.id.clone();
            let name = call.name.clone();
            let result = AssertUnwindSafe(m.tool_call(call, ctx)).catch_unwind().await;
            let why = match result {
                Ok(Ok(mut next)) => {
                    next.id = id; // the call id is not middleware's to change
                    call = next;
                    continue;
                }
                Ok(Err(e)) => e.to_string(),
                Err(panic) => format!("panicked: {}", panic_message(panic.as_ref())),
            };
            let mw = sanitize_ident(m.name());
            let message =
                truncate(&format!("Blocked by middleware {mw}: {why}"), MAX_GUARDRAIL_MESSAGE_BYTES);
            let refusal = Refusal::new(
                BlockedReason::GuardrailBlocked,
                error_codes::GUARDRAIL_BLOCKED,
                message,
                DecidedBy::Guardrail { pack: "middleware".into(), rule: mw },
            );
            return Err((name, refusal));
        }
        Ok(call)
    }

    /// Runs every guardrail of a stage; the first refusal wins. Failures refuse (fail closed).
    async fn run_guardrails(&self, subject: GuardrailSubject<'_>, run: &RunContext) -> Result<(), Refusal> {
        for g in &self.guardrails {
            let result = AssertUnwindSafe(g.check(subject)).catch_unwind().await;
            let (outcome, rule, detail, trip) = match result {
                Ok(Ok(GuardrailVerdict::Allow)) => {
                    self.emit_guardrail(&subject, g.name(), GuardrailOutcome::Allow, None, None);
                    continue;
                }
                Ok(Ok(GuardrailVerdict::Block { rule, message })) if rule.is_well_formed() => {
                    (GuardrailOutcome::Block, rule, message, false)
                }
                Ok(Ok(GuardrailVerdict::Tripwire { rule, message })) if rule.is_well_formed() => {
                    (GuardrailOutcome::Tripwire, rule, message, true)
                }
                Ok(Ok(GuardrailVerdict::Block { .. } | GuardrailVerdict::Tripwire { .. })) => (
                    GuardrailOutcome::Failed,
                    GuardrailRule::new(sanitize_ident(g.name()), "malformed_verdict"),
                    Some("the guardrail answered a malformed rule id".to_owned()),
                    false,
                ),
                Ok(Err(e)) => (
                    GuardrailOutcome::Failed,
                    GuardrailRule::new(sanitize_ident(g.name()), "guardrail_error"),
                    Some(format!("the guardrail failed: {e}")),
                    false,
                ),
                Err(panic) => (
                    GuardrailOutcome::Failed,
                    GuardrailRule::new(sanitize_ident(g.name()), "guardrail_panic"),
                    Some(format!("the guardrail panicked: {}", panic_message(panic.as_ref()))),
                    false,
                ),
            };
            let mut message = format!("Blocked by guardrail rule pack:{}/{}", rule.pack, rule.rule);
            if let Some(detail) = detail.as_deref().filter(|d| !d.is_empty()) {
                message.push_str(": ");
                message.push_str(detail);
            }
            let message = self.redactor.redact_str(&message).unwrap_or(message);
            let message = truncate(&message, MAX_GUARDRAIL_MESSAGE_BYTES);
            self.emit_guardrail(&subject, g.name(), outcome, Some(rule.clone()), Some(message.clone()));
            if trip {
                tracing::warn!(call_id = %subject.call.call_id, "guardrail tripwire: cancelling the run");
                run.cancel.cancel();
            }
            return Err(Refusal::new(
                BlockedReason::GuardrailBlocked,
                error_codes::GUARDRAIL_BLOCKED,
                message,
                DecidedBy::Guardrail { pack: rule.pack, rule: rule.rule },
            ));
        }
        Ok(())
    }

    fn emit_guardrail(
        &self,
        subject: &GuardrailSubject<'_>,
        guardrail: &str,
        outcome: GuardrailOutcome,
        rule: Option<GuardrailRule>,
        message: Option<String>,
    ) {
        if !self.events.has_subscribers() {
            return;
        }
        self.events.emit(ToolEvent {
            call: Arc::new(subject.call.clone()),
            tool_name: Arc::from(subject.tool_name),
            at: Timestamp::now(),
            payload: EventPayload::GuardrailDecision {
                stage: subject.stage,
                guardrail: sanitize_ident(guardrail),
                outcome,
                rule,
                message,
            },
        });
    }

    /// Stage 3: the tool must exist and be granted, the arguments must be a JSON object. A name that a
    /// grant denies stays denied even if middleware renamed it to something else.
    #[allow(clippy::type_complexity)] // the refusal travels with the name and arguments it concerns
    fn admit<'r>(
        &self,
        registry: &'r ToolRegistry,
        requested_name: Option<&str>,
        call: ToolCall,
        run: &RunContext,
    ) -> Result<(&'r RegisteredTool, Value), Box<(Arc<str>, Refusal, Option<Value>)>> {
        let ToolCall { name, arguments, .. } = call;
        let args_for_record = |arguments: &CallArguments| match arguments {
            CallArguments::Json(v) => Some(v.clone()),
            CallArguments::Unparsed { raw, .. } => Some(Value::String(raw.clone())),
        };
        if let Some(requested) = requested_name.filter(|r| *r != name)
            && let Some(scope) = run.grants.denying_scope(requested)
        {
            let refusal = Refusal::new(
                BlockedReason::ToolDenied,
                error_codes::TOOL_DENIED,
                format!(
                    "Tool {requested} is denied by grant scope {} (renamed to {name} by middleware)",
                    scope.name
                ),
                DecidedBy::Grants { scope: scope.name.clone() },
            );
            return Err(Box::new((shown_name(&name), refusal, args_for_record(&arguments))));
        }
        let Some(entry) = registry.get(&name) else {
            let refusal = Refusal::new(
                BlockedReason::UnknownTool,
                error_codes::UNKNOWN_TOOL,
                format!("Unknown tool: {name}"),
                DecidedBy::Registry,
            );
            let args = args_for_record(&arguments);
            return Err(Box::new((shown_name(&name), refusal, args)));
        };
        if let Some(scope) = run.grants.refusing_scope(&name) {
            let refusal = Refusal::new(
                BlockedReason::ToolDenied,
                error_codes::TOOL_DENIED,
                format!("Tool {name} is not granted (grant scope {})", scope.name),
                DecidedBy::Grants { scope: scope.name.clone() },
            );
            return Err(Box::new((entry.name.clone(), refusal, args_for_record(&arguments))));
        }
        match arguments {
            CallArguments::Json(Value::Object(map)) => Ok((entry, Value::Object(map))),
            CallArguments::Json(other) => {
                let refusal = Refusal::new(
                    BlockedReason::InvalidArguments,
                    error_codes::INVALID_ARGUMENTS,
                    format!("Arguments must be a JSON object, got {}", json_type(&other)),
                    DecidedBy::Validator { validator: "arguments".into() },
                );
                Err(Box::new((entry.name.clone(), refusal, Some(other))))
            }
            CallArguments::Unparsed { raw, error } => {
                let refusal = Refusal::new(
                    BlockedReason::InvalidArguments,
                    error_codes::INVALID_JSON_ARGUMENTS,
                    format!("Arguments are not valid JSON: {}", truncate(&error, 200)),
                    DecidedBy::Validator { validator: "arguments".into() },
                );
                Err(Box::new((entry.name.clone(), refusal, Some(Value::String(raw)))))
            }
        }
    }

    /// Stages 4-6: permission, validation, action description, policy and approval.
    async fn authorize(
        &self,
        entry: &RegisteredTool,
        arguments: &Value,
        ctx: &Arc<CallContext>,
        cancel: &CancellationToken,
    ) -> Result<Authorized, Refusal> {
        let name = &*entry.name;
        let permission = Permission::execute(name);
        if !self.permissions.allows(ctx, &permission) {
            return Err(Refusal::new(
                BlockedReason::PermissionDenied,
                error_codes::PERMISSION_DENIED,
                format!("Permission denied: {permission}"),
                DecidedBy::Permission { permission: permission.to_string() },
            ));
        }

        if let Err(issue) = self.schema.validate_tool(entry, arguments) {
            let mut refusal = Refusal::new(
                BlockedReason::ValidationFailed,
                error_codes::VALIDATION_FAILED,
                issue.message,
                DecidedBy::Validator { validator: "json_schema".into() },
            );
            refusal.error.details = issue.details;
            return Err(refusal);
        }
        for v in &self.validators {
            let verdict =
                std::panic::catch_unwind(AssertUnwindSafe(|| v.validate(entry.spec(), arguments, ctx)))
                    .unwrap_or_else(|panic| {
                        ValidatorVerdict::Message(format!(
                            "validator panicked: {}",
                            panic_message(panic.as_ref())
                        ))
                    });
            let (message, details) = match verdict {
                ValidatorVerdict::Pass => continue,
                ValidatorVerdict::Message(m) => (m, None),
                ValidatorVerdict::Structured(issue) => {
                    let message = match &issue.path {
                        Some(path) if !issue.message.starts_with(path.as_str()) => {
                            format!("{path}: {}", issue.message)
                        }
                        _ => issue.message.clone(),
                    };
                    (message, serde_json::to_value(&issue).ok())
                }
            };
            let mut refusal = Refusal::new(
                BlockedReason::ValidationFailed,
                error_codes::VALIDATION_FAILED,
                message,
                DecidedBy::Validator { validator: sanitize_ident(v.name()) },
            );
            refusal.error.details = details;
            return Err(refusal);
        }

        let action =
            std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.describe_action(arguments, ctx)))
                .unwrap_or_else(|panic| {
                    Err(crate::tool::ToolError::failed(format!(
                        "describing the action panicked: {}",
                        panic_message(panic.as_ref())
                    )))
                });
        let action = match action {
            Ok(a) => a,
            Err(e) => {
                let mut refusal = Refusal::new(
                    BlockedReason::ValidationFailed,
                    error_codes::VALIDATION_FAILED,
                    format!("cannot describe the action: {}", e.message),
                    DecidedBy::Validator { validator: "action".into() },
                );
                refusal.error.details = e.details;
                return Err(refusal);
            }
        };

        let Some(policy) = &self.policy else {
            return Ok((action, DecidedBy::DEFAULT, Vec::new(), None));
        };
        let request = PolicyRequest { call: ctx, tool: entry.spec(), arguments, action: &action };
        let verdict =
            AssertUnwindSafe(policy.evaluate(request)).catch_unwind().await.unwrap_or_else(|panic| {
                PolicyVerdict::deny(
                    DecidedBy::Default { detail: Some("policy failure".into()) },
                    format!("the execution policy panicked: {}", panic_message(panic.as_ref())),
                )
            });
        let ruling = PolicyRuling { decision: verdict.decision, decided_by: verdict.decided_by.clone() };
        match verdict.decision {
            PolicyDecision::Allow => Ok((action, verdict.decided_by, verdict.matched_rules, Some(ruling))),
            PolicyDecision::Deny => {
                let reason = verdict.reason.unwrap_or_else(|| "denied by the execution policy".into());
                let mut refusal = Refusal::new(
                    BlockedReason::ExecutionDenied,
                    error_codes::EXECUTION_DENIED,
                    reason,
                    verdict.decided_by,
                );
                refusal.matched_rules = verdict.matched_rules;
                refusal.action = Some(action);
                refusal.policy = Some(ruling);
                Err(refusal)
            }
            PolicyDecision::Ask => match self.ask(entry, arguments, ctx, action, verdict, cancel).await {
                Ok((action, decided_by, rules)) => Ok((action, decided_by, rules, Some(ruling))),
                Err(mut refusal) => {
                    refusal.policy = Some(ruling);
                    Err(refusal)
                }
            },
        }
    }

    async fn ask(
        &self,
        entry: &RegisteredTool,
        arguments: &Value,
        ctx: &Arc<CallContext>,
        action: ExecutionAction,
        verdict: PolicyVerdict,
        cancel: &CancellationToken,
    ) -> Result<(ExecutionAction, DecidedBy, Vec<RuleRef>), Refusal> {
        let matched_rules = verdict.matched_rules.clone();
        let Some(approvals) = &self.approvals else {
            let mut refusal = Refusal::new(
                BlockedReason::ExecutionDenied,
                error_codes::EXECUTION_DENIED,
                "approval required, but no approver is configured",
                DecidedBy::Default { detail: Some(crate::execution::NO_APPROVER.into()) },
            );
            refusal.matched_rules = matched_rules;
            refusal.action = Some(action);
            return Err(refusal);
        };
        let (shown, _) = self.shown_arguments(arguments, Some(&action));
        let request = ApprovalRequest {
            call: ctx.clone(),
            tool_name: entry.name.to_string(),
            arguments: Arc::new(shown),
            // The approver sees a copy; the action executed is the one kept here.
            action: action.clone(),
            verdict,
        };
        let asking = AssertUnwindSafe(approvals.request(request)).catch_unwind();
        let limit = self.approval_timeout;
        let answer = tokio::select! {
            answered = asking => answered.unwrap_or_else(|panic| ApprovalAnswer::Deny {
                reason: format!("the approver panicked: {}", panic_message(panic.as_ref())),
                decided_by: DecidedBy::Default { detail: Some("approver failure".into()) },
            }),
            () = cancel.cancelled() => ApprovalAnswer::Deny {
                reason: "the run was cancelled while the call awaited approval".into(),
                decided_by: DecidedBy::Default { detail: Some(crate::execution::APPROVAL_WITHDRAWN.into()) },
            },
            () = sleep_or_forever(limit) => ApprovalAnswer::Deny {
                reason: format!(
                    "no answer to the approval request within {} s; the call is denied",
                    limit.map_or(0, |d| d.as_secs())
                ),
                decided_by: DecidedBy::ApprovalTimeout {
                    after_ms: limit.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                },
            },
        };
        match answer {
            ApprovalAnswer::Allow { decided_by } => Ok((action, decided_by, matched_rules)),
            ApprovalAnswer::Deny { reason, decided_by } => {
                let mut refusal = Refusal::new(
                    BlockedReason::ExecutionDenied,
                    error_codes::EXECUTION_DENIED,
                    reason,
                    decided_by,
                );
                refusal.matched_rules = matched_rules;
                refusal.action = Some(action);
                Err(refusal)
            }
        }
    }

    async fn execute(
        &self,
        entry: &RegisteredTool,
        invocation: ToolInvocation,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, CallError> {
        let run = AssertUnwindSafe(entry.tool.execute(invocation)).catch_unwind();
        tokio::pin!(run);
        let settled = tokio::select! {
            biased;
            settled = &mut run => settled,
            () = cancel.cancelled() => match tokio::time::timeout(self.cancel_grace, &mut run).await {
                Ok(settled) => settled,
                Err(_) => {
                    return Err(CallError::new(
                        error_codes::CANCELLED,
                        "the run was cancelled and the tool did not stop within the grace period",
                    ));
                }
            },
        };
        match settled {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(e)) => Err(CallError { code: e.code, message: e.message, details: e.details }),
            Err(panic) => Err(CallError::new(
                error_codes::TOOL_PANICKED,
                format!("the tool panicked: {}", panic_message(panic.as_ref())),
            )),
        }
    }

    /// Stage 8.
    async fn finish(
        &self,
        finishing: Finishing<'_>,
        mut outcome: Result<ToolOutput, CallError>,
        run: &RunContext,
    ) -> ToolCallResult {
        let Finishing { ctx, tool_name, decided_by, policy, started_at, arguments } = finishing;
        if !self.middleware.is_empty() {
            let call = ToolCall::new(ctx.call_id.clone(), tool_name.to_string(), Value::Null);
            for m in self.middleware.iter().rev() {
                outcome = AssertUnwindSafe(m.tool_result(&call, outcome, ctx))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| {
                        Err(CallError::new(
                            error_codes::TOOL_ERROR,
                            format!(
                                "result middleware {} panicked: {}",
                                m.name(),
                                panic_message(panic.as_ref())
                            ),
                        ))
                    });
            }
        }
        if let (Ok(output), false) = (&outcome, self.guardrails.is_empty()) {
            let subject = GuardrailSubject {
                stage: GuardrailStage::ToolOutput,
                call: ctx,
                tool_name: &tool_name,
                arguments: arguments.as_ref().unwrap_or(&Value::Null),
                output: Some(output),
            };
            if let Err(refusal) = self.run_guardrails(subject, run).await {
                outcome = Err(refusal.error);
            }
        }
        let (outcome, redacted) = match outcome {
            Ok(mut output) => {
                let redacted = self.redactor.redact_output(&mut output);
                (CallOutcome::Finished { output: Arc::new(output) }, redacted)
            }
            Err(mut error) => {
                let redacted = self.redactor.redact_error(&mut error);
                (CallOutcome::Error { error }, redacted)
            }
        };
        let now = Timestamp::now();
        let duration_us = now.micros_since(started_at);
        if let Some(ledger) = &self.ledger {
            let kind = if matches!(outcome, CallOutcome::Finished { .. }) {
                RecordKind::Finished
            } else {
                RecordKind::Error
            };
            let mut record = ToolCallRecord::new(kind, ctx.clone(), tool_name.clone(), decided_by.clone());
            record.at = now;
            record.started_at = Some(started_at);
            record.policy = policy;
            record.redacted = redacted;
            match &outcome {
                CallOutcome::Finished { output } => record.output = Some(output.clone()),
                CallOutcome::Error { error } | CallOutcome::Blocked { error, .. } => {
                    record.error = Some(error.clone())
                }
            }
            if let Err(e) = ledger.record(record).await {
                tracing::error!(call_id = %ctx.call_id, error = %e, "terminal ledger record not written");
            }
        }
        if self.events.has_subscribers() {
            let payload = match &outcome {
                CallOutcome::Finished { output } => {
                    EventPayload::Finished { output: output.clone(), duration_us }
                }
                CallOutcome::Error { error } | CallOutcome::Blocked { error, .. } => {
                    EventPayload::Error { error: error.clone(), duration_us }
                }
            };
            self.emit(ctx, &tool_name, payload);
        }
        ToolCallResult { call_id: ctx.call_id.clone(), tool_name, outcome, decided_by, redacted }
    }

    /// A call that passed every check but did not start (run cancelled, ledger refused `started`).
    pub(crate) async fn fail_unstarted(
        &self,
        ctx: &Arc<CallContext>,
        tool_name: Arc<str>,
        mut error: CallError,
        decided_by: DecidedBy,
        policy: Option<PolicyRuling>,
    ) -> ToolCallResult {
        let redacted = self.redactor.redact_error(&mut error);
        if let Some(ledger) = &self.ledger {
            let mut record =
                ToolCallRecord::new(RecordKind::Error, ctx.clone(), tool_name.clone(), decided_by.clone());
            record.error = Some(error.clone());
            record.policy = policy;
            record.redacted = redacted;
            if let Err(e) = ledger.record(record).await {
                tracing::error!(call_id = %ctx.call_id, error = %e, "error record not written");
            }
        }
        if self.events.has_subscribers() {
            self.emit(ctx, &tool_name, EventPayload::Error { error: error.clone(), duration_us: 0 });
        }
        ToolCallResult {
            call_id: ctx.call_id.clone(),
            tool_name,
            outcome: CallOutcome::Error { error },
            decided_by,
            redacted,
        }
    }

    /// Turns a refusal into the blocked result, its event and its ledger record.
    pub(crate) async fn block(
        &self,
        ctx: &Arc<CallContext>,
        tool_name: Arc<str>,
        refusal: Refusal,
        arguments: Option<&Value>,
    ) -> ToolCallResult {
        let Refusal { reason, mut error, decided_by, matched_rules, action, policy } = refusal;
        let mut redacted = self.redactor.redact_error(&mut error);
        tracing::debug!(call_id = %ctx.call_id, tool = %tool_name, %reason, "tool call blocked");
        if let Some(ledger) = &self.ledger {
            let mut record =
                ToolCallRecord::new(RecordKind::Blocked, ctx.clone(), tool_name.clone(), decided_by.clone());
            if let Some(args) = arguments {
                let (shown, args_redacted) = self.shown_arguments(args, action.as_ref());
                redacted |= args_redacted;
                record.arguments = Some(Arc::new(shown));
            }
            if let Some(action) = action {
                let (shown, action_redacted) = self.shown_action(&action);
                redacted |= action_redacted;
                record.action = Some(Arc::new(shown));
            }
            record.error = Some(error.clone());
            record.blocked_reason = Some(reason);
            record.matched_rules = matched_rules;
            record.policy = policy;
            record.redacted = redacted;
            if let Err(e) = ledger.record(record).await {
                tracing::error!(call_id = %ctx.call_id, error = %e, "blocked record not written");
            }
        }
        if self.events.has_subscribers() {
            self.emit(
                ctx,
                &tool_name,
                EventPayload::Blocked { reason, error: error.clone(), decided_by: decided_by.clone() },
            );
        }
        ToolCallResult {
            call_id: ctx.call_id.clone(),
            tool_name,
            outcome: CallOutcome::Blocked { reason, error },
            decided_by,
            redacted,
        }
    }

    fn emit(&self, ctx: &Arc<CallContext>, tool_name: &Arc<str>, payload: EventPayload) {
        self.events.emit(ToolEvent {
            call: ctx.clone(),
            tool_name: tool_name.clone(),
            at: Timestamp::now(),
            payload,
        });
    }

    pub(crate) async fn emit_progress(&self, reporter: &ProgressReporter, mut progress: Value) {
        let ctx = &reporter.call;
        let tool_name = &reporter.tool_name;
        let redacted = self.redactor.redact_value(&mut progress);
        if let Some(ledger) = &self.ledger {
            let mut record = ToolCallRecord::new(
                RecordKind::Progress,
                ctx.clone(),
                tool_name.clone(),
                reporter.decided_by.clone(),
            );
            record.started_at = Some(reporter.started_at);
            record.progress = Some(progress.clone());
            record.redacted = redacted;
            if let Err(e) = ledger.record(record).await {
                tracing::error!(call_id = %ctx.call_id, error = %e, "progress record not written");
            }
        }
        if self.events.has_subscribers() {
            self.emit(ctx, tool_name, EventPayload::Progress { progress });
        }
    }
}
