//! One tool call without a running hub (`portcullis call`): the policy found for a folder, the coding
//! tools rooted there, the front end's prompter (or none: every prompt denied), and optionally a ledger
//! session of its own — through the same pipeline assembly as the hub.

use super::error::{ApiError, ErrorCode};
use portcullis_harness::{Approvals, Redactor, RunContext, Timestamp, ToolCall, ToolCallResult};
use portcullis_hub::Pipeline;
use portcullis_ledger::{SessionInfo, SqliteLedger};
use portcullis_policy::approval::AlwaysTarget;
use portcullis_policy::discovery::load_for;
use portcullis_policy::{DenyingApprover, LivePolicy, OperatorApprover, SessionGrants};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use portcullis_policy::{Amendment, ApprovalChoice, ApprovalPrompt, Prompter};

/// One call and where it runs.
pub struct OneCall {
    pub tool: String,
    pub arguments: Value,
    /// The working folder: the coding tools' root, where the project policy is found.
    pub cwd: PathBuf,
    /// Policy files to use instead of the user's and the project's.
    pub policy_files: Vec<PathBuf>,
    /// Where "always" writes (one of the loaded policies); default: the base layer's file.
    pub always_file: Option<PathBuf>,
    /// The ledger to record the call in, in a session of its own.
    pub db: Option<PathBuf>,
    /// Who answers prompts; none: every prompt is denied, and says why.
    pub prompter: Option<Arc<dyn Prompter>>,
}

/// The client name a one-shot call's ledger session is recorded with.
pub const ONE_CALL_CLIENT: &str = "portcullis call";

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Runs `call` through the whole pipeline and returns its result (a refused call is a result too).
pub async fn call_once(call: OneCall) -> Result<ToolCallResult, ApiError> {
    let cwd = call.cwd;
    let (policy, sources) = load_for(&call.policy_files, &cwd)?;
    // "Always" writes to a loaded policy file: the one named, else the base layer's (strictest-wins
    // layering lets only it widen what is allowed), else (a first day) the user's, created.
    let always_file = match &call.always_file {
        Some(file) => Some(
            sources
                .iter()
                .find(|s| same_file(Path::new(s), file))
                .cloned()
                .map(AlwaysTarget::loaded)
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::BadArgument,
                        format!(
                            "always file {}: not one of the loaded policies ({})",
                            file.display(),
                            sources.join(", ")
                        ),
                        json!({ "file": file, "policies": sources }),
                    )
                })?,
        ),
        None => portcullis_policy::approval::always_target(
            &policy,
            portcullis_policy::discovery::user_config_dir().as_deref(),
        ),
    };
    // Commands run inside the sandbox when this binary is a launcher (the CLI's is).
    let launcher = portcullis_hub::default_launcher();
    let support = portcullis_hub::probe_sandbox(launcher.as_ref()).await;
    let (_, registry) = portcullis_hub::builtin_tools_confined(
        &cwd,
        portcullis_hub::coding_limits(&policy),
        launcher,
        call.db.as_deref().map(portcullis_hub::undo_store_of),
    )
    .map_err(|why| ApiError::new(ErrorCode::BadArgument, why, json!({ "folder": cwd })))?;
    let grants = policy.grants().clone();
    let timeout = Duration::from_secs(policy.approval_timeout_seconds());
    let live = Arc::new(LivePolicy::new(policy, cwd.clone()).with_sandbox_support(support));
    // Secrets from the environment never reach the ledger, nor an "always" rule.
    let redactor = Redactor::builder().secrets(portcullis_hub::environment_secrets()).build();
    let approvals: Arc<dyn Approvals> = match call.prompter {
        Some(prompter) => Arc::new(
            OperatorApprover::new(prompter, Arc::new(SessionGrants::new()), live.clone(), always_file)
                .with_redactor(redactor.clone()),
        ),
        None => Arc::new(DenyingApprover),
    };
    let session = format!("cli-{}-{}", std::process::id(), Timestamp::now().0);
    let ledger = match &call.db {
        Some(db) => {
            let ledger = Arc::new(SqliteLedger::open(db)?);
            ledger
                .begin_session(SessionInfo {
                    id: session.clone(),
                    client_name: Some(ONE_CALL_CLIENT.into()),
                    client_version: Some(env!("CARGO_PKG_VERSION").into()),
                    cwd: Some(cwd.display().to_string()),
                    policy_hash: Some(live.current().version().to_string()),
                    started_at: Timestamp::now(),
                    ended_at: None,
                })
                .await?;
            Some(ledger)
        }
        None => None,
    };
    let dispatcher = Pipeline {
        policy: live,
        approvals,
        // The operator approver has no timeout of its own: the harness's bound is the policy's.
        approval_bound: timeout,
        redactor,
        ledger: ledger.clone(),
    }
    .assemble(registry);
    let mut run = RunContext::new(session.clone(), "run-1").with_cwd(cwd.clone());
    run.grants = grants;
    let result = dispatcher.dispatch(ToolCall::new("call-1", call.tool, call.arguments), &run).await;
    if let Some(ledger) = ledger {
        ledger.end_session(&session, Timestamp::now()).await?;
        ledger.close().await?;
    }
    Ok(result)
}
