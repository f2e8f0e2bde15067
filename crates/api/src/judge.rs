//! One way to judge a call. `policy check --call`, the policy files' test cases and the corpus send a
//! call through the pipeline the hub runs live — grants, arguments, JSON Schema, the tool's own
//! description of its action, the live policy — built by the same assembly (`hub::pipeline`), with the
//! tools' execution replaced by nothing and every prompt recorded and declined. What they report is
//! what a live call meets before an operator is asked; nothing runs.

use super::error::{ApiError, ErrorCode};
use async_trait::async_trait;
use portcullis_harness::{
    ApprovalAnswer, ApprovalRequest, Approvals, BlockedReason, CallContext, CallOutcome, DecidedBy,
    ExecutionAction, ExecutionPolicy, Grants, PolicyRequest, PolicyVerdict, Redactor, RunContext,
    SandboxSupport, Tool, ToolCall, ToolError, ToolInvocation, ToolOutput, ToolRegistry, ToolSpec,
};
use portcullis_hub::{Pipeline, builtin_tools};
use portcullis_policy::{Evaluation, LivePolicy, Policy, TestOutcome};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the pipeline made of a call, before any operator.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "judged", rename_all = "snake_case")]
pub enum Judged {
    /// The policy allows it: it would run.
    Allow,
    /// The policy asks an operator.
    Prompt,
    /// The policy forbids it (`execution_denied`).
    Forbidden,
    /// Refused before the policy: `unknown_tool`, `tool_denied`, `invalid_arguments`, `validation_failed`...
    Blocked { reason: String, detail: String },
}

impl Judged {
    /// As policy tests and the corpus name decisions: `allow`, `prompt`, `forbidden`, or the blocked reason.
    pub fn as_str(&self) -> &str {
        match self {
            Judged::Allow => "allow",
            Judged::Prompt => "prompt",
            Judged::Forbidden => "forbidden",
            Judged::Blocked { reason, .. } => reason,
        }
    }
}

/// A judged call with what the tool said it would do and the policy's full evaluation of it.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    pub judged: Judged,
    /// What the tool described (absent when the call was refused before).
    pub action: Option<ExecutionAction>,
    /// Commands, paths, matched rules with their files, reasons, the deciding rule.
    pub evaluation: Option<Evaluation>,
}

impl Judgement {
    /// As a call's verdict: blocked before the policy (with why), or the policy's evaluation.
    pub fn into_verdict(self) -> portcullis_policy::CallVerdict {
        use portcullis_policy::CallVerdict;
        match (self.judged, self.evaluation) {
            (Judged::Blocked { reason, detail }, _) => CallVerdict::Blocked { reason, detail },
            (_, Some(evaluation)) => CallVerdict::Evaluated(evaluation),
            (judged, None) => CallVerdict::Blocked {
                reason: judged.as_str().to_owned(),
                detail: "the tool described no action".into(),
            },
        }
    }
}

/// The tools a judge runs: the project's coding tools, described but never executed.
pub struct Judge {
    live: Arc<Recorded>,
    grants: Arc<Grants>,
    registry_specs: Vec<ToolSpec>,
    dispatcher: portcullis_harness::Dispatcher,
    described: Arc<Mutex<Option<ExecutionAction>>>,
    asked: Arc<Mutex<bool>>,
}

impl Judge {
    /// A judge for calls made in `cwd` under `policy` (its coding tools rooted at `cwd`), `~` being
    /// this user's home, commands judged as on a machine that can enforce `support` (what the hub's
    /// probe found): a policy that requires the sandbox allows there what it allows live.
    pub fn new(policy: Policy, cwd: &Path, support: SandboxSupport) -> Result<Judge, ApiError> {
        Judge::build(policy, cwd, std::env::var_os("HOME").map(PathBuf::from), support)
    }

    /// A judge with `~` resolving to `home` (policy tests and corpora name their own), on a machine
    /// judged unable to confine commands: the same answer on every machine.
    pub fn with_home(policy: Policy, cwd: &Path, home: Option<PathBuf>) -> Result<Judge, ApiError> {
        let unprobed = SandboxSupport::unavailable("judged without probing the kernel");
        Judge::build(policy, cwd, home, unprobed)
    }

    fn build(
        policy: Policy,
        cwd: &Path,
        home: Option<PathBuf>,
        support: SandboxSupport,
    ) -> Result<Judge, ApiError> {
        let (_, builtin) = builtin_tools(cwd, portcullis_hub::coding_limits(&policy))
            .map_err(|why| ApiError::new(ErrorCode::BadArgument, why, json!({ "folder": cwd })))?;
        let described = Arc::new(Mutex::new(None));
        let asked = Arc::new(Mutex::new(false));
        let mut registry = ToolRegistry::new();
        let specs: Vec<ToolSpec> = builtin.specs().cloned().collect();
        for spec in &specs {
            if let Some(tool) = builtin.get(&spec.name) {
                let dry = DryRun { inner: tool.tool.clone(), described: described.clone() };
                registry.register(Arc::new(dry)).map_err(|e| {
                    ApiError::new(
                        ErrorCode::BadArgument,
                        format!("cannot register {}: {e}", spec.name),
                        Value::Null,
                    )
                })?;
            }
        }
        let grants = policy.grants().clone();
        let live = Arc::new(Recorded {
            live: LivePolicy::new(policy, cwd.to_path_buf()).with_home(home).with_sandbox_support(support),
            last: Mutex::new(None),
        });
        let dispatcher = Pipeline {
            policy: live.clone(),
            approvals: Arc::new(Declining { asked: asked.clone() }),
            approval_bound: Duration::from_secs(5),
            redactor: Redactor::builder().build(),
            ledger: None,
        }
        .assemble(registry);
        Ok(Judge { live, grants, registry_specs: specs, dispatcher, described, asked })
    }

    /// The tools this judge knows.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.registry_specs
    }

    /// Judges `tool` with `arguments`, as called from `cwd` (one call at a time: `&mut`).
    pub async fn judge(&mut self, tool: &str, arguments: Value, cwd: &Path) -> Judgement {
        *lock(&self.described) = None;
        *lock(&self.asked) = false;
        *lock(&self.live.last) = None;
        let mut run = RunContext::new("judge", "judge").with_cwd(cwd.to_path_buf());
        run.grants = self.grants.clone();
        let result = self.dispatcher.dispatch(ToolCall::new("judged", tool, arguments), &run).await;
        let action = lock(&self.described).take();
        // The evaluation the pipeline's verdict came from: judged once (none when refused before it).
        let evaluation = lock(&self.live.last).take();
        let judged = match &result.outcome {
            CallOutcome::Finished { .. } | CallOutcome::Error { .. } => Judged::Allow,
            CallOutcome::Blocked { .. } if *lock(&self.asked) => Judged::Prompt,
            CallOutcome::Blocked { reason: BlockedReason::ExecutionDenied, .. } => Judged::Forbidden,
            CallOutcome::Blocked { reason, error } => Judged::Blocked {
                reason: serde_json::to_value(reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                detail: error.message.clone(),
            },
        };
        Judgement { judged, action, evaluation }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A tool as the judge runs it: described by the real tool, never executed.
struct DryRun {
    inner: Arc<dyn Tool>,
    described: Arc<Mutex<Option<ExecutionAction>>>,
}

#[async_trait]
impl Tool for DryRun {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn describe_action(&self, arguments: &Value, call: &CallContext) -> Result<ExecutionAction, ToolError> {
        let action = self.inner.describe_action(arguments, call)?;
        *lock(&self.described) = Some(action.clone());
        Ok(action)
    }

    async fn execute(&self, _invocation: ToolInvocation) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(""))
    }
}

/// The live policy as a dry run consults it: the evaluation each verdict came from is kept, so the
/// judge reports that very evaluation rather than judging the call a second time.
struct Recorded {
    live: LivePolicy,
    last: Mutex<Option<Evaluation>>,
}

#[async_trait]
impl ExecutionPolicy for Recorded {
    async fn evaluate(&self, request: PolicyRequest<'_>) -> PolicyVerdict {
        let (verdict, evaluation) = self.live.verdict(&request);
        *lock(&self.last) = Some(evaluation);
        verdict
    }
}

/// Records that the policy asked, and declines (nothing runs).
struct Declining {
    asked: Arc<Mutex<bool>>,
}

#[async_trait]
impl Approvals for Declining {
    async fn request(&self, _request: ApprovalRequest) -> ApprovalAnswer {
        *lock(&self.asked) = true;
        ApprovalAnswer::Deny {
            reason: "judged only: the policy asks an operator".into(),
            decided_by: DecidedBy::Default { detail: Some("judge".into()) },
        }
    }
}

/// Judges one call (`policy check --call`): the policy found for `cwd` (or `files`), the coding tools
/// rooted at `cwd`.
pub async fn judge_call(
    files: &[PathBuf],
    cwd: &Path,
    tool: &str,
    arguments: Value,
) -> Result<Judgement, ApiError> {
    let (policy, _) = portcullis_policy::discovery::load_for(files, cwd)?;
    let mut judge = Judge::new(policy, cwd, probe_sandbox().await)?;
    Ok(judge.judge(tool, arguments, cwd).await)
}

/// Runs every test case of `policy`'s files through the judge (the coding tools rooted at each case's
/// project), `~` being `home`.
pub async fn run_policy_tests(policy: &Policy, home: Option<PathBuf>) -> Result<Vec<TestOutcome>, ApiError> {
    let mut judges: HashMap<PathBuf, Judge> = HashMap::new();
    let mut outcomes = Vec::new();
    for call in policy.test_calls(home.as_deref()) {
        let (got, decided_by) = match &call.cwd {
            Err(why) => ("invalid_cwd".to_owned(), why.clone()),
            Ok(cwd) => {
                let judge = match judges.entry(call.project.clone()) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(e) => {
                        let copy = Policy::from_layers_unchecked(policy.layers().to_vec())?;
                        e.insert(Judge::with_home(copy, &call.project, home.clone())?)
                    }
                };
                let judgement = judge.judge(&call.tool, call.arguments.clone(), cwd).await;
                let decided_by = match (&judgement.judged, &judgement.evaluation) {
                    (Judged::Blocked { detail, .. }, _) => detail.clone(),
                    (_, Some(e)) => e
                        .deciding_rule
                        .as_ref()
                        .map(|r| format!("rule {} ({})", r.id, r.source))
                        .unwrap_or_else(|| e.reasons.last().cloned().unwrap_or_else(|| "default".into())),
                    (_, None) => "default".into(),
                };
                (judgement.judged.as_str().to_owned(), decided_by)
            }
        };
        outcomes.push(TestOutcome {
            source: call.source,
            name: call.name,
            passed: got == call.expect,
            expected: call.expect,
            got,
            decided_by,
        });
    }
    Ok(outcomes)
}

/// What this machine can confine, found by running this binary's sandbox launcher once (nothing when
/// this binary is not one).
pub async fn probe_sandbox() -> portcullis_harness::SandboxSupport {
    portcullis_hub::probe_sandbox(portcullis_hub::default_launcher().as_ref()).await
}
