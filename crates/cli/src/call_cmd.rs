//! `portcullis call TOOL ARGS`: one tool call through the whole harness pipeline — grants, JSON Schema,
//! the policy, an approver (this terminal, or a denier), the coding tools, and optionally a ledger.

use crate::args::{ApproverKind, CallArgs};
use crate::error::CliError;
use crate::policy_cmd::working_dir;
use crate::terminal::TerminalPrompter;
use portcullis_coding::{Workspace, register_coding_tools};
use portcullis_harness::{
    Approvals, CallOutcome, Content, Dispatcher, Redactor, RunContext, ToolCall, ToolCallResult, ToolRegistry,
};
use portcullis_ledger::{SessionInfo, SqliteLedger};
use portcullis_policy::discovery::load_for;
use portcullis_policy::{DenyingApprover, LivePolicy, OperatorApprover, SessionGrants};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

pub fn call(args: &CallArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let cwd = working_dir(&args.files)?;
    let arguments: Value = serde_json::from_str(&args.arguments)
        .map_err(|e| CliError::BadArgument(format!("the arguments are not JSON: {e}")))?;
    let (policy, sources) = load_for(&args.files.policies, &cwd)?;
    // "Always" writes to a loaded policy file: the one named, else the base layer's (strictest-wins
    // layering lets only it widen what is allowed).
    let always_file = match &args.always_file {
        Some(file) => {
            Some(sources.iter().find(|s| same_file(Path::new(s), file)).cloned().ok_or_else(|| {
                CliError::BadArgument(format!(
                    "--always-file {}: not one of the loaded policies ({})",
                    file.display(),
                    sources.join(", ")
                ))
            })?)
        }
        None => portcullis_policy::approval::default_always_file(&sources),
    };
    let limits = portcullis_hub::hub::coding_limits(&policy);
    let workspace = Arc::new(
        Workspace::new(&cwd)
            .map_err(|e| CliError::BadArgument(format!("workspace {}: {}", cwd.display(), e.message)))?
            .with_limits(limits),
    );
    let mut registry = ToolRegistry::new();
    register_coding_tools(&mut registry, &workspace)
        .map_err(|e| CliError::BadArgument(format!("cannot register the coding tools: {e}")))?;
    let grants = policy.grants().clone();
    let timeout = Duration::from_secs(policy.approval_timeout_seconds());
    let live = Arc::new(LivePolicy::new(policy, cwd.clone()));
    // Secrets from the environment never reach the ledger, nor an "always" rule.
    let redactor = Redactor::builder().secrets(portcullis_hub::hub::environment_secrets()).build();
    // The terminal when asked for (or, by default, when there is one); otherwise every prompt is denied.
    let prompter = match args.approver {
        Some(ApproverKind::Deny) => None,
        Some(ApproverKind::Terminal) => Some(TerminalPrompter::controlling().ok_or_else(|| {
            CliError::BadArgument("--approver terminal: this process has no terminal (/dev/tty)".into())
        })?),
        None => TerminalPrompter::controlling(),
    };
    let approver: Arc<dyn Approvals> = match prompter {
        Some(prompter) => Arc::new(
            OperatorApprover::new(
                Arc::new(prompter),
                Arc::new(SessionGrants::new()),
                live.clone(),
                always_file,
            )
            .with_redactor(redactor.clone()),
        ),
        None => Arc::new(DenyingApprover),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(CliError::Runtime)?;
    let session = format!("cli-{}-{}", std::process::id(), portcullis_harness::Timestamp::now().0);
    let result: Result<ToolCallResult, CliError> = runtime.block_on(async {
        let ledger = match &args.db {
            Some(db) => {
                let ledger = Arc::new(SqliteLedger::open(db)?);
                ledger
                    .begin_session(SessionInfo {
                        id: session.clone(),
                        client_name: Some("portcullis call".into()),
                        client_version: Some(env!("CARGO_PKG_VERSION").into()),
                        cwd: Some(cwd.display().to_string()),
                        policy_hash: None,
                        started_at: portcullis_harness::Timestamp::now(),
                        ended_at: None,
                    })
                    .await?;
                Some(ledger)
            }
            None => None,
        };
        let mut builder = Dispatcher::builder(registry)
            .redactor(redactor)
            .policy(live.clone())
            .approvals(approver)
            .approval_timeout(Some(timeout));
        if let Some(ledger) = &ledger {
            builder = builder.ledger(ledger.clone());
        }
        let dispatcher = builder.build();
        let mut run = RunContext::new(session.clone(), "run-1").with_cwd(cwd.clone());
        run.grants = grants;
        let result = dispatcher.dispatch(ToolCall::new("call-1", args.tool.clone(), arguments), &run).await;
        if let Some(ledger) = ledger {
            ledger.end_session(&session, portcullis_harness::Timestamp::now()).await?;
            ledger.close().await?;
        }
        Ok(result)
    });
    let result = result?;
    if args.json {
        writeln!(out, "{}", serde_json::to_value(&result)?)?;
    } else {
        match &result.outcome {
            CallOutcome::Finished { output } => {
                for content in &output.content {
                    match content {
                        Content::Text { text } => writeln!(out, "{text}")?,
                        other => writeln!(out, "{}", serde_json::to_value(other)?)?,
                    }
                }
            }
            CallOutcome::Blocked { reason, error } => {
                writeln!(out, "blocked ({reason}): {}", error.message)?;
            }
            CallOutcome::Error { error } => writeln!(out, "error [{}]: {}", error.code, error.message)?,
        }
    }
    let ok = matches!(&result.outcome, CallOutcome::Finished { output } if !output.is_error);
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
